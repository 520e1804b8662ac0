---The plugin's own Python: a virtual environment holding captain-memo and pynvim, made by the
---build step (build.lua), so nothing is installed into the system's Python (PEP 668 forbids it on
---Debian 12+, Ubuntu 23.04+, Fedora and Homebrew) and g:python3_host_prog is left alone.
---
---This file requires nothing else of the plugin: build.lua loads it by path, before the plugin is
---on 'runtimepath' (mini.deps' post_install, `nvim -l build.lua`).
local M = {}

local MINIMUM = { 3, 11 }
local VERSION = "import sys; print('%d.%d.%d' % sys.version_info[:3])"
local TAIL = 12 -- lines of a failed step's output quoted in the error; the whole output goes to the log

---The plugin's folder: three above this file (lua/captain_memo/install.lua).
---@return string
function M.plugin_dir()
  local here = debug.getinfo(1, "S").source:gsub("^@", "")
  return vim.fs.normalize(vim.fn.fnamemodify(here, ":p:h:h:h"))
end

---Where the build step makes the environment: one per Neovim data folder (NVIM_APPNAME included).
---@return string
function M.venv_dir()
  return vim.fs.normalize(vim.fn.stdpath("data") .. "/captain-memo/venv")
end

---@param venv string|nil
---@return string
function M.venv_python(venv)
  venv = venv or M.venv_dir()
  if vim.fn.has("win32") == 1 then
    return venv .. "/Scripts/python.exe"
  end
  return venv .. "/bin/python"
end

local function version_ok(text)
  local major, minor = (text or ""):match("^(%d+)%.(%d+)")
  major, minor = tonumber(major), tonumber(minor)
  return major ~= nil and (major > MINIMUM[1] or (major == MINIMUM[1] and minor >= MINIMUM[2]))
end

---A Python 3.11+ to make the environment with: g:python3_host_prog where set (only read), else
---python3, else python on PATH. Returns the path and version, or nil and what was tried.
---@return string|nil, string
function M.base_python()
  local tried = {}
  local names = { "python3", "python" }
  if type(vim.g.python3_host_prog) == "string" and vim.g.python3_host_prog ~= "" then
    table.insert(names, 1, vim.g.python3_host_prog)
  end
  for _, name in ipairs(names) do
    local path = vim.fn.exepath(vim.fn.expand(name))
    if path ~= "" then
      local done = vim.system({ path, "-c", VERSION }, { text = true }):wait()
      local version = vim.trim(done.stdout or "")
      if done.code == 0 and version_ok(version) then
        return path, version
      end
      table.insert(tried, ("%s (%s)"):format(path, done.code == 0 and version or "does not run"))
    end
  end
  return nil, #tried > 0 and table.concat(tried, ", ") or "no python3 or python on PATH"
end

local function log_path()
  return vim.fn.stdpath("log") .. "/captain-memo-build.log"
end

local function append_log(cmd, done)
  local file = io.open(log_path(), "a")
  if file then
    file:write(("%s $ %s (exit %d)\n%s%s\n"):format(os.date("%Y-%m-%d %H:%M:%S"), table.concat(cmd, " "), done.code, done.stdout or "", done.stderr or ""))
    file:close()
  end
end

local function failure(what, done)
  local said = vim.trim(done.stderr or "") ~= "" and done.stderr or done.stdout or ""
  local lines = vim.split(vim.trim(said), "\n", { trimempty = true })
  local tail = vim.list_slice(lines, math.max(1, #lines - TAIL + 1))
  return ("Captain Memo: %s (exit %d); the whole output is in %s:\n%s"):format(what, done.code, log_path(), table.concat(tail, "\n"))
end

---Runs a command to its end: while it runs, `yield` (lazy.nvim's build coroutine, or
---:CaptainMemo build's) is handed the message; without one, Neovim waits for it.
local function runner(yield)
  return function(cmd, message)
    local finished
    local job = vim.system(cmd, { text = true }, function(done)
      finished = done
    end)
    if yield then
      while not finished do
        yield(message)
      end
    else
      finished = job:wait()
    end
    append_log(cmd, finished)
    return finished
  end
end

local function works(python)
  return vim.fn.executable(python) == 1 and vim.system({ python, "-c", "import sys" }):wait().code == 0
end

---Make (or bring up to date) the plugin's environment and install the plugin's Python package into
---it, editable, so the Python side always matches this checkout's Lua side.
---opts: dir (the plugin's folder), say(message) for progress, yield(message) to run without
---blocking inside a coroutine. Raises an error naming what failed; returns the environment's Python.
---@param opts table|nil
---@return string
function M.build(opts)
  opts = opts or {}
  local say = opts.say or opts.yield or print
  local run = runner(opts.yield)
  local dir = opts.dir or M.plugin_dir()
  local venv = M.venv_dir()
  local python = M.venv_python(venv)
  vim.fn.mkdir(vim.fn.stdpath("log"), "p")
  if not works(python) then
    local base, seen = M.base_python()
    if not base then
      error("Captain Memo: building needs Python " .. table.concat(MINIMUM, ".") .. " or newer; found " .. seen, 0)
    end
    say(("Captain Memo: making its Python environment %s with %s (Python %s)"):format(venv, base, seen))
    local made = run({ base, "-m", "venv", "--clear", venv }, "making the Python environment")
    if made.code ~= 0 then
      local hint = "\n(Debian and Ubuntu ship venv apart: sudo apt install python3-venv)"
      error(failure("cannot make a virtual environment with " .. base, made) .. hint, 0)
    end
  end
  say(("Captain Memo: installing %s into %s (the first time takes a minute)"):format(dir, venv))
  local pip = { python, "-m", "pip", "install", "--disable-pip-version-check", "--editable", dir }
  local installed = run(pip, "installing captain-memo and its dependencies")
  if installed.code ~= 0 then
    error(failure("pip could not install the plugin's Python package", installed), 0)
  end
  local check = run({ python, "-c", "import pynvim, captain_memo; print(captain_memo.__file__)" }, "checking")
  if check.code ~= 0 then
    error(failure(python .. " cannot import pynvim and captain_memo after the install", check), 0)
  end
  say("Captain Memo: ready; its Python is " .. python)
  return python
end

return M
