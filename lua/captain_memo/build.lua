---:CaptainMemo build: the build step (install.lua) run in the background, its progress notified.
local log = require("captain_memo.log")

local M = {}

local running = false
local STEP_MS = 50 -- how often the build's coroutine is resumed to look at its commands

function M.in_background()
  if running then
    log.warn("a build is already running")
    return
  end
  running = true
  local build = coroutine.create(function()
    return require("captain_memo.install").build({ yield = coroutine.yield, say = log.info })
  end)
  local last
  local function step()
    local ok, result = coroutine.resume(build)
    if not ok then
      running = false
      log.error(tostring(result):match("^[^\n]*"), tostring(result))
      return
    end
    if coroutine.status(build) == "dead" then
      running = false
      log.info("built; restart Neovim (or run a command) to use " .. result)
      return
    end
    if result and result ~= last then
      last = result
      log.status(result .. "…")
    end
    vim.defer_fn(step, STEP_MS)
  end
  step()
end

return M
