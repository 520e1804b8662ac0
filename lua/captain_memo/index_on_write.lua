---Re-indexing a note file after it is written: debounced per file, then one request that the
---worker thread answers, so the editor never waits on parsing or embedding. Which files count
---(the note and skill folders) is decided by the library; this only says which file was written.
local bridge = require("captain_memo.bridge")
local log = require("captain_memo.log")

local M = {}

-- Writes of one file closer together than this become one re-index (`:w` twice, `:wa`, a
-- formatter that writes again after a save).
M.DELAY_MS = 400

local timers = {} ---@type table<string, uv.uv_timer_t>
local last_error = nil

local function shown(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

---What the user is told about a finished re-index: problems as a warning, a change as a passing
---status line, nothing at all for a file outside the note folders.
---@param path string
---@param report table the library's IndexReport as JSON
local function reported(path, report)
  last_error = nil
  local problems = {}
  for _, skipped in ipairs(report.skipped_files) do
    problems[#problems + 1] = "skipped: " .. skipped.reason
  end
  for _, warning in ipairs(report.warnings) do
    problems[#problems + 1] = warning.message
  end
  if #problems > 0 then
    log.warn(shown(path) .. ": " .. table.concat(problems, "; "))
  elseif report.indexed + report.updated + report.removed > 0 then
    log.status(("re-indexed %s: %d new, %d updated, %d removed"):format(shown(path), report.indexed, report.updated,
      report.removed))
  end
  if report.files > 0 then
    require("captain_memo.ambient").forget_cache()
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "CaptainMemoIndexed", modeline = false, data = report })
end

---Ask the worker thread to re-index `path` now.
---@param path string absolute
function M.index(path)
  bridge.request("index", { path = path }, {
    quiet = true, -- no "starting" message for a write; a failure is reported below
    on_result = function(report)
      reported(path, report)
    end,
    on_error = function(message)
      -- Once, not on every write, while the same thing stays broken.
      if message ~= last_error then
        last_error = message
        log.error(("could not re-index %s: %s"):format(shown(path), message))
      end
    end,
  })
end

---Called after a buffer with a note-like name (plugin/captain_memo.lua) is written.
---@param buf integer
---@param file string
function M.written(buf, file)
  if not require("captain_memo").options().index_on_write or vim.bo[buf].buftype ~= "" then
    return
  end
  local path = vim.fn.fnamemodify(file, ":p")
  local timer = timers[path]
  if timer then
    timer:stop()
  else
    timer = assert(vim.uv.new_timer())
    timers[path] = timer
  end
  timer:start(M.DELAY_MS, 0, vim.schedule_wrap(function()
    timers[path] = nil
    timer:close()
    M.index(path)
  end))
end

---Files written whose re-index has not been sent yet.
---@return string[]
function M.waiting()
  return vim.tbl_keys(timers)
end

return M
