-- An emulation of lazy.nvim's install-and-build contract, for tests/test_nvim_install.py: lazy.nvim
-- itself comes from GitHub, which the tests cannot reach. What it emulates, from lazy.nvim's
-- documentation (lazy.folke.io, "Plugin Spec" and "Developers > Building"):
--   * a plugin lives in `dir` (a local plugin) or stdpath("data")/lazy/<name> (where lazy clones it;
--     the test puts the files there, as the clone would);
--   * `build` is a function (called with the plugin), a ":" command (run after lazy loads the
--     plugin), a shell command, or a Lua file; without `build`, a build.lua in the plugin's folder
--     is loaded with loadfile() and called, before the plugin is on 'runtimepath';
--   * the plugin is loaded afterwards (here at once, as lazy does on the first use of its `cmd`):
--     its folder goes on 'runtimepath' and its plugin/ files are sourced;
--   * builds run inside a coroutine that lazy resumes from its scheduler while the editor keeps
--     working; whatever the build yields is shown as its progress.
-- It records what a user would see: vim.g.lazy_progress (the yielded messages), vim.g.lazy_built
-- (true, or the error's text) and vim.g.lazy_ticks (scheduler steps taken while the build ran).
local M = {}

local STEP_MS = 10

local function load(dir)
  vim.opt.rtp:prepend(dir)
  for _, file in ipairs(vim.fn.glob(dir .. "/plugin/**/*.{vim,lua}", false, true)) do
    vim.cmd.source(vim.fn.fnameescape(file))
  end
end

local function builder(plugin)
  local build = plugin.build
  if build == nil and vim.uv.fs_stat(plugin.dir .. "/build.lua") then
    build = "build.lua"
  end
  if type(build) == "function" then
    return function()
      build(plugin)
    end
  end
  if type(build) == "string" and build:sub(1, 1) == ":" then
    return function()
      load(plugin.dir)
      vim.cmd(build:sub(2))
    end
  end
  if type(build) == "string" and build:match("%.lua$") then
    return function()
      local chunk = assert(loadfile(plugin.dir .. "/" .. build))
      chunk()
    end
  end
  return nil
end

local function run_build(fn, after)
  vim.g.lazy_progress = {}
  vim.g.lazy_ticks = 0
  local co = coroutine.create(fn)
  local function step()
    local ok, msg = coroutine.resume(co)
    vim.g.lazy_ticks = vim.g.lazy_ticks + 1
    if not ok then
      vim.g.lazy_built = tostring(msg)
      return
    end
    if type(msg) == "string" then
      local progress = vim.g.lazy_progress
      if progress[#progress] ~= msg then
        table.insert(progress, msg)
        vim.g.lazy_progress = progress
      end
    end
    if coroutine.status(co) == "dead" then
      after()
      vim.g.lazy_built = true
    else
      vim.defer_fn(step, STEP_MS)
    end
  end
  vim.schedule(step)
end

---Install (the files are in place already) and build each plugin of `spec`.
function M.setup(spec)
  for _, item in ipairs(spec) do
    local name = item.name or vim.fn.fnamemodify(item.dir or item[1], ":t")
    local plugin = vim.tbl_extend("force", item, { name = name })
    plugin.dir = item.dir and vim.fs.normalize(item.dir) or (vim.fn.stdpath("data") .. "/lazy/" .. name)
    local function loaded()
      if not vim.tbl_contains(vim.opt.rtp:get(), plugin.dir) then
        load(plugin.dir)
      end
    end
    local fn = builder(plugin)
    if fn then
      run_build(fn, loaded)
    else
      loaded()
    end
  end
end

return M
