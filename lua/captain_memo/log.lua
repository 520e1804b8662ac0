---Failures reach the user as one notification line; the detail goes to the log file.
local M = {}

---@return string
function M.path()
  local configured = require("captain_memo").options().log_file
  return configured or (vim.fn.stdpath("log") .. "/captain-memo.log")
end

---Append lines to the log file; a log that cannot be written must not become a second error.
---@param level string
---@param text string
function M.write(level, text)
  local path = M.path()
  pcall(vim.fn.mkdir, vim.fn.fnamemodify(path, ":h"), "p")
  local file = io.open(path, "a")
  if file then
    file:write(os.date("%Y-%m-%d %H:%M:%S "), level, " nvim: ", text, "\n")
    file:close()
  end
end

local function one_line(text)
  return (tostring(text):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

---One readable line for the user; the detail (if any) goes to the log file. `logged` says the
---detail is there already (the Python side wrote it).
---@param message string
---@param detail string|nil
---@param logged boolean|nil
function M.error(message, detail, logged)
  if detail then
    M.write("ERROR", message .. "\n" .. detail)
  end
  local suffix = (detail or logged) and (" (details: " .. M.path() .. ")") or ""
  vim.notify("Captain Memo: " .. one_line(message) .. suffix, vim.log.levels.ERROR)
end

---@param message string
function M.warn(message)
  vim.notify("Captain Memo: " .. one_line(message), vim.log.levels.WARN)
end

---@param message string
function M.info(message)
  vim.notify("Captain Memo: " .. one_line(message), vim.log.levels.INFO)
end

---A transient line in the command area (not kept in :messages).
---@param message string
function M.status(message)
  vim.api.nvim_echo({ { "Captain Memo: " .. one_line(message), "CaptainMemoStatus" } }, false, {})
end

return M
