-- Captain Memo's build step: makes the plugin's own Python environment and installs the plugin's
-- Python package into it (lua/captain_memo/install.lua). lazy.nvim runs this file on install and
-- update by itself; other managers call it from their hook, and `nvim -l build.lua` runs it from a
-- shell. It is found by its own path, so it works before the plugin is on 'runtimepath'.
local here = debug.getinfo(1, "S").source:gsub("^@", "")
local dir = vim.fn.fnamemodify(here, ":p:h")
local install = dofile(dir .. "/lua/captain_memo/install.lua")

-- lazy.nvim runs build files in a coroutine and shows what they yield as progress; other managers'
-- coroutines (packer's) do not expect a yield, so only lazy's is handed one.
local yield = package.loaded["lazy"] ~= nil and coroutine.isyieldable() and coroutine.yield or nil
install.build({ dir = dir, yield = yield })
