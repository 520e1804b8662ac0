---:CaptainMemo build: the build step (install.lua) run in the background, its progress notified.
local log = require("captain_memo.log")

local M = {}

local running = false
-- install.lua's messages name the plugin (a shell shows them bare); log.lua names it once more.
local function bare(message)
  return (tostring(message):gsub("^Captain Memo: ", ""))
end

local STEP_MS = 50 -- how often the build's coroutine is resumed to look at its commands

function M.in_background()
  if running then
    log.warn("a build is already running")
    return
  end
  running = true
  local build = coroutine.create(function()
    return require("captain_memo.install").build({
      yield = coroutine.yield,
      say = function(message)
        log.info(bare(message))
      end,
    })
  end)
  local last
  local function step()
    local ok, result = coroutine.resume(build)
    if not ok then
      running = false
      log.error(bare(result):match("^[^\n]*"), bare(result))
      return
    end
    if coroutine.status(build) == "dead" then
      running = false
      require("captain_memo.host").stop() -- the next request starts the host from the new environment
      log.info("built; the next request runs from " .. result)
      return
    end
    if result and result ~= last then
      last = result
      log.status(bare(result) .. "…")
    end
    vim.defer_fn(step, STEP_MS)
  end
  step()
end

return M
