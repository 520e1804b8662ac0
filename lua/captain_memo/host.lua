---The Python that runs the plugin, and the remote-plugin host the plugin starts with it.
---
---The host is pynvim's own, started here with the plugin's file, so neither :UpdateRemotePlugins
---nor g:python3_host_prog is needed. Its Python is the `python` option, else the plugin's own
---environment (made by build.lua), else g:python3_host_prog, else python3 on PATH. The job starts
---without waiting for Python, so the editor never blocks on it.
local install = require("captain_memo.install")

local M = {}

-- When Neovim exits, the host's stdin closes and start_host ends (raising EOFError): the plugin then
-- stops serving its stores while its threads can still finish the calls taken
-- (captain_memo_nvim.loop_ended), before the interpreter's exit shuts its thread pools.
local HOST = table.concat({
  "import sys",
  "sys.path = [p for p in sys.path if p != '']",
  "import pynvim",
  "try:",
  "    pynvim.start_host()",
  "finally:",
  "    plugin = sys.modules.get('captain_memo_nvim')",
  "    plugin and plugin.loop_ended()",
}, "\n")
local STDERR_LINES = 20 -- the host's last lines of stderr, quoted when it stops

local channel = nil ---@type integer|nil
local stderr = {} ---@type string[]

---Called with a message when the host stops while Neovim is not exiting (set by the bridge).
---@type fun(message: string)|nil
M.on_exit = nil

---@return string
function M.plugin_file()
  return install.plugin_dir() .. "/rplugin/python3/captain_memo_nvim.py"
end

---The Python that runs (or would run) the plugin, and why that one.
---@return string|nil python, string how
function M.python()
  local chosen = require("captain_memo").options().python
  if type(chosen) == "string" and chosen ~= "" then
    return vim.fn.exepath(vim.fn.expand(chosen)) ~= "" and vim.fn.exepath(vim.fn.expand(chosen)) or chosen,
      "the python option"
  end
  local own = install.venv_python()
  if vim.fn.executable(own) == 1 then
    return own, "the plugin's own environment"
  end
  local prog = vim.g.python3_host_prog
  if type(prog) == "string" and prog ~= "" then
    return vim.fn.expand(prog), "g:python3_host_prog"
  end
  local found = vim.fn.exepath("python3")
  if found ~= "" then
    return found, "python3 on PATH"
  end
  return nil, "no Python found"
end

local function collect(_, data)
  for _, line in ipairs(data or {}) do
    if line ~= "" then
      table.insert(stderr, line)
      if #stderr > STDERR_LINES then
        table.remove(stderr, 1)
      end
    end
  end
end

local function exited(code)
  channel = nil
  if vim.v.exiting ~= vim.NIL or not M.on_exit then
    return
  end
  local said = table.concat(stderr, "\n")
  local python, how = M.python()
  if said:find("No module named", 1, true) then -- the install is missing: building it is the fix
    local why = said:find("No module named 'pynvim'", 1, true) and "it has no pynvim" or stderr[#stderr]
    M.on_exit(("the Python host stopped: %s (%s): %s; run :CaptainMemo build"):format(tostring(python), how, why))
    return
  end
  -- Killed (128 + the signal) or crashed: nothing to build; the next request starts it again.
  local why = code > 128 and ("killed by signal " .. (code - 128)) or stderr[#stderr] or ("exit " .. code)
  M.on_exit(("the Python host stopped (%s); it starts again with the next request"):format(why))
end

local function start()
  local python, how = M.python()
  if not python then
    error("no Python 3 found: run :CaptainMemo build to make the plugin's own environment", 0)
  end
  stderr = {}
  local ok, job = pcall(vim.fn.jobstart, { python, "-c", HOST, M.plugin_file() }, {
    rpc = true,
    on_stderr = collect,
    on_exit = function(_, code)
      exited(code)
    end,
  })
  if not ok or job <= 0 then
    error(("cannot start the Python host %s (%s)"):format(python, how), 0)
  end
  channel = job
  return job
end

---Hand `payload` to the remote plugin's CaptainMemoRequest, starting the host first if needed.
---@param payload table
function M.notify(payload)
  local job = channel or start()
  -- pynvim names a plugin's handlers "<its path>:function:<name>".
  vim.rpcnotify(job, M.plugin_file() .. ":function:CaptainMemoRequest", { payload })
end

---Stop the host, if it runs; the next request starts it again.
function M.stop()
  if channel then
    vim.fn.jobstop(channel)
  end
end

---The host's job id (for jobpid()), or nil when it is not running.
---@return integer|nil
function M.job()
  return channel
end

return M
