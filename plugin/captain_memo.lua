-- Captain Memo: defines :CaptainMemo and the <Plug> mappings only. Every module loads on first
-- use and the Python host starts on the first request, so start-up stays as fast as without it.
if vim.g.loaded_captain_memo then
  return
end
vim.g.loaded_captain_memo = true
if vim.fn.has("nvim-0.10") ~= 1 then
  vim.api.nvim_echo({ { "Captain Memo needs Neovim 0.10 or newer", "WarningMsg" } }, true, {})
  return
end

vim.api.nvim_create_user_command("CaptainMemo", function(cmd)
  require("captain_memo.commands").run(cmd)
end, {
  nargs = "*",
  range = true,
  desc = "Captain Memo: lookup, recall, changes, save, note, explain, ambient, log",
  complete = function(...)
    return require("captain_memo.commands").complete(...)
  end,
})

local function plug(modes, name, fn, desc)
  for _, mode in ipairs(modes) do
    vim.keymap.set(mode, "<Plug>(" .. name .. ")", fn, { desc = desc })
  end
end

plug({ "n", "x" }, "CaptainMemoLookup", function()
  require("captain_memo").lookup()
end, "Captain Memo: look up the token under the cursor or the selection")
plug({ "x" }, "CaptainMemoSave", function()
  require("captain_memo").save()
end, "Captain Memo: save the selection")
plug({ "n" }, "CaptainMemoRecall", function()
  require("captain_memo").recall()
end, "Captain Memo: recall")
plug({ "n" }, "CaptainMemoNote", function()
  require("captain_memo").note()
end, "Captain Memo: write a note")
plug({ "n" }, "CaptainMemoChanges", function()
  require("captain_memo").changes()
end, "Captain Memo: what changed in this file lately")

-- Re-index a note file after it is written (:help captain-memo.index_on_write). The suffixes are
-- the library's NOTE_SUFFIXES (captain_memo/sources/settings.py); writing any other file runs
-- nothing of the plugin's. Whether the file lies under a note or skill folder is the library's call.
local note_patterns = {}
for _, suffix in ipairs({ "md", "markdown", "mdown", "mkd", "mdx", "mdc", "txt", "rst", "adoc", "asciidoc" }) do
  table.insert(note_patterns, "*." .. suffix)
  table.insert(note_patterns, "*." .. suffix:upper())
end
vim.api.nvim_create_autocmd("BufWritePost", {
  group = vim.api.nvim_create_augroup("CaptainMemoIndexOnWrite", {}),
  pattern = note_patterns,
  desc = "Captain Memo: re-index a note file after it is written",
  callback = function(ev)
    require("captain_memo.index_on_write").written(ev.buf, ev.match)
  end,
})
