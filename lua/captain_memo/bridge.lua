---Requests to the remote plugin and their answers.
---
---Every request is an asynchronous notification (Neovim never waits on Python); the answer comes
---back through `receive`, called by the remote plugin. A request on a channel supersedes the
---channel's older requests: their answers are dropped here, and the Python side skips them when
---they have not started yet.
local log = require("captain_memo.log")

local M = {}

local seq = 0
local pending = {} ---@type table<integer, {op: string, channel: string|nil, handlers: table}>
local latest = {} ---@type table<string, integer>
local starting = false

---Whether the Python host has answered once in this Neovim.
M.host_ready = false

---The options the library reads, as every request (and the health check) sends them.
---@return table
function M.settings()
  local o = require("captain_memo").options()
  return {
    db = o.db,
    provider = o.embedding.provider,
    url = o.embedding.url,
    model = o.embedding.model,
    query_prefix = o.embedding.query_prefix,
    document_prefix = o.embedding.document_prefix,
    profile = o.profile,
    limit = o.limit,
    share_worktrees = o.share_worktrees,
    log_file = log.path(),
    secrets = o.secrets,
  }
end

local function unreachable(err)
  return tostring(err)
end

---Send `op` with `args`.
---handlers: on_result(result), on_error(message), on_slow() (the answer is late),
---channel (newer requests supersede older ones), quiet (failures only logged, no start message).
---@return integer|nil id
function M.request(op, args, handlers)
  handlers = handlers or {}
  seq = seq + 1
  local id = seq
  local channel = handlers.channel
  if channel then
    latest[channel] = id
  end
  if not M.host_ready and not handlers.quiet and not starting then
    starting = true
    log.status("starting (the first request starts the Python host and opens the database)…")
    vim.cmd.redraw()
  end
  pending[id] = { op = op, channel = channel, handlers = handlers }
  local payload = { id = id, op = op, channel = channel, settings = M.settings(), args = args }
  local ok, err = pcall(require("captain_memo.host").notify, payload)
  if not ok then
    pending[id] = nil
    starting = false
    M.host_ready = false
    if handlers.on_error then
      handlers.on_error(unreachable(err))
    end
    if handlers.quiet then
      log.write("ERROR", unreachable(err) .. "\n" .. tostring(err))
    else
      log.error(unreachable(err), tostring(err))
    end
    return nil
  end
  if handlers.on_slow then
    local delay = require("captain_memo").options().searching_delay
    vim.defer_fn(function()
      if pending[id] and (not channel or latest[channel] == id) then
        handlers.on_slow()
      end
    end, delay)
  end
  return id
end

-- A host that stops takes its unanswered requests with it: each hears so once, the user once.
require("captain_memo.host").on_exit = function(message)
  local waiting = pending
  pending = {}
  starting = false
  M.host_ready = false
  local told = false
  for _, p in pairs(waiting) do
    if p.handlers.on_error then
      M.guarded(p.handlers.on_error, message)
    end
    told = told or not p.handlers.quiet
  end
  if told then
    log.error(message)
  else
    log.write("ERROR", message)
  end
end

---Drop whatever answer is still on its way on `channel`.
---@param channel string
function M.cancel(channel)
  latest[channel] = -1
  for id, p in pairs(pending) do
    if p.channel == channel then
      pending[id] = nil
    end
  end
end

---Whether a request on `channel` is still waiting for its answer.
---@param channel string
---@return boolean
function M.busy(channel)
  for _, p in pairs(pending) do
    if p.channel == channel then
      return true
    end
  end
  return false
end

---Run an answer's handler; a failure in it becomes one notification line, not a trace that the
---remote plugin host would print over the command line.
function M.guarded(fn, ...)
  local ok, err = xpcall(fn, debug.traceback, ...)
  if not ok then
    log.error("internal error: " .. tostring(err):match("^[^\n]*"), tostring(err))
  end
end

-- Python's None arrives as vim.NIL inside tables; plain nil keeps every consumer simple.
local function denil(value)
  if value == vim.NIL then
    return nil
  end
  if type(value) == "table" then
    for k, v in pairs(value) do
      value[k] = denil(v)
    end
  end
  return value
end

---Called by the remote plugin with an answer (or a status event).
---@param reply table
function M.receive(reply)
  reply = denil(reply)
  if reply.event == "notice" then
    log.warn(reply.text)
    return
  end
  if reply.event == "status" then
    for _, p in pairs(pending) do
      if not p.handlers.quiet then
        log.status(reply.text)
        break
      end
    end
    return
  end
  M.host_ready = true
  if starting then
    starting = false
    vim.api.nvim_echo({ { "" } }, false, {})
  end
  local p = pending[reply.id]
  if not p then
    return
  end
  pending[reply.id] = nil
  if p.channel and latest[p.channel] ~= reply.id then
    return
  end
  if reply.ok then
    if p.handlers.on_result then
      M.guarded(p.handlers.on_result, reply.result)
    end
    return
  end
  if p.handlers.on_error then
    M.guarded(p.handlers.on_error, reply.error)
  end
  local message = reply.internal and ("internal error in " .. tostring(reply.op) .. ": " .. reply.error) or reply.error
  if p.handlers.quiet then
    log.write("ERROR", message)
  else
    log.error(message, nil, reply.internal)
  end
end

return M
