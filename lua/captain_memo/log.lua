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

local PREFIX = "Captain Memo: "
local MORE = " (:CaptainMemo log)"

---The columns a message may take without a hit-enter prompt: the command line's width less the
---ruler and showcmd (v:echospace), less one so the last column stays free.
local function room()
  return math.max(20, vim.v.echospace - 1)
end

---`message` as one line that fits the command area. A longer one is cut, written whole to the log
---file and pointed to; `logged` says it is there already.
---@return string
local function fitted(level, message, suffix, logged)
  local text = PREFIX .. one_line(message)
  if vim.fn.strdisplaywidth(text .. suffix) <= room() then
    return text .. suffix
  end
  if not logged then
    M.write(level, message)
  end
  return require("captain_memo.format").truncate(text, room() - vim.fn.strdisplaywidth(MORE)) .. MORE
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
  local suffix = (detail or logged) and " (details: :CaptainMemo log)" or ""
  vim.notify(fitted("ERROR", message, suffix, detail ~= nil), vim.log.levels.ERROR)
end

---@param message string
function M.warn(message)
  vim.notify(fitted("WARN", message, ""), vim.log.levels.WARN)
end

---@param message string
function M.info(message)
  vim.notify(fitted("INFO", message, ""), vim.log.levels.INFO)
end

---A transient line in the command area (not kept in :messages), cut to fit it.
---@param message string
function M.status(message)
  local text = require("captain_memo.format").truncate(PREFIX .. one_line(message), room())
  vim.api.nvim_echo({ { text, "CaptainMemoStatus" } }, false, {})
end

return M
