-- setup(): option merging, validation, and being safe to call twice (lua/captain_memo/init.lua).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local memo = require("captain_memo")
local T = {}
local function test(name, fn)
  T[#T + 1] = { name, fn }
end

local function mapped(mode, lhs)
  return vim.fn.maparg(lhs, mode) ~= ""
end

test("defaults without setup, and no global mapping", function()
  H.eq(memo.options().limit, 10)
  H.eq(memo.options().keymaps, { lookup = false, save = false, recall = false })
  H.eq(mapped("n", "<leader>ml"), false)
end)

test("nested options merge over the defaults", function()
  local o = memo.setup({ window = { border = "single" }, embedding = { provider = "ollama" }, limit = 5 })
  H.eq(o.window.border, "single")
  H.eq(o.window.width, memo.defaults.window.width)
  H.eq(o.window.height, memo.defaults.window.height)
  H.eq(o.embedding.provider, "ollama")
  H.eq(o.embedding.url, nil)
  H.eq(o.limit, 5)
  H.eq(memo.defaults.window.border, "rounded", "the defaults are never changed")
end)

test("a second setup replaces the first, it does not add to it", function()
  memo.setup({ limit = 3, window = { border = "double" } })
  local o = memo.setup({ window = { width = 100 } })
  H.eq(o.limit, 10)
  H.eq(o.window.border, "rounded")
  H.eq(o.window.width, 100)
end)

test("keymaps: set when named, moved or removed by the next setup", function()
  memo.setup({ keymaps = { lookup = "<leader>ml", save = "<leader>ms", recall = "<leader>mr" } })
  H.truthy(mapped("n", "<leader>ml") and mapped("x", "<leader>ml"), "lookup in Normal and Visual mode")
  H.truthy(mapped("x", "<leader>ms"), "save in Visual mode")
  H.eq(mapped("n", "<leader>ms"), false)
  H.eq(vim.fn.maparg("<leader>mr", "n"), "<Plug>(CaptainMemoRecall)")
  memo.setup({ keymaps = { lookup = "gm" } })
  H.eq(mapped("n", "<leader>ml"), false)
  H.eq(mapped("n", "<leader>mr"), false)
  H.truthy(mapped("n", "gm"))
  memo.setup({})
  H.eq(mapped("n", "gm"), false)
end)

test("ambient autocommands are not doubled by a second setup", function()
  memo.setup({ ambient = true })
  memo.setup({ ambient = true })
  local holds = vim.api.nvim_get_autocmds({ group = "CaptainMemoAmbient", event = "CursorHold" })
  H.eq(#holds, 1)
  memo.setup({ ambient = false })
  H.eq(#vim.api.nvim_get_autocmds({ group = "CaptainMemoAmbient" }), 0)
end)

test("highlight groups are defaults a colour scheme can override", function()
  vim.api.nvim_set_hl(0, "CaptainMemoHint", { fg = "#123456" })
  memo.setup({})
  H.eq(vim.api.nvim_get_hl(0, { name = "CaptainMemoHint" }).fg, 0x123456)
  H.eq(vim.api.nvim_get_hl(0, { name = "CaptainMemoScore", link = true }).link, "Number")
end)

test("bad options are refused with a message naming them", function()
  H.raises(function() memo.setup({ limt = 3 }) end, 'unknown option "limt"')
  H.raises(function() memo.setup({ limit = 0 }) end, "limit must be a whole number")
  H.raises(function() memo.setup({ window = "big" }) end, 'option "window" must be a table')
  H.raises(function() memo.setup({ keymaps = { lokup = "x" } }) end, 'unknown keymap "lokup"')
  H.eq(memo.options().keymaps.lokup, nil, "a refused setup changes nothing")
  H.raises(function() memo.setup("yes") end, "expected a table")
  H.raises(function() memo.setup({ secrets = "never" }) end, 'secrets must be "ask", "redact" or "allow"')
  H.raises(function() memo.setup({ index_on_write = "yes" }) end, "index_on_write must be true or false")
end)

test("secrets and index_on_write: defaults and merging", function()
  H.eq(memo.options().secrets, "ask")
  H.eq(memo.options().index_on_write, true)
  local o = memo.setup({ secrets = "redact", index_on_write = false })
  H.eq(o.secrets, "redact")
  H.eq(o.index_on_write, false)
  H.eq(memo.setup({}).secrets, "ask")
end)

return T
