---Highlight groups, all declared with `default = true` so a colour scheme or the user wins.
local M = {}

M.groups = {
  CaptainMemoRank = { link = "LineNr" }, -- the rank column of a results line
  CaptainMemoScore = { link = "Number" }, -- the score column
  CaptainMemoKind = { link = "Type" }, -- memory / skill / observation
  CaptainMemoTitle = { link = "NormalFloat" }, -- the title or first line
  CaptainMemoSuperseded = { link = "Comment" }, -- the title of a superseded memory
  CaptainMemoAge = { link = "Comment" }, -- "3d"
  CaptainMemoBranch = { link = "Constant" }, -- the branch a memory was written on
  CaptainMemoSource = { link = "Directory" }, -- file and lines, or where it was typed
  CaptainMemoFooter = { link = "FloatFooter" }, -- profile, legs and time under the results
  CaptainMemoFooterWarn = { link = "WarningMsg" }, -- the footer when only one search leg answered
  CaptainMemoSearching = { link = "Comment" }, -- "searching…"
  CaptainMemoStatus = { link = "ModeMsg" }, -- start-up and progress messages
  CaptainMemoHint = { link = "Comment" }, -- the ambient hint at the end of a line
  CaptainMemoExplainHeader = { link = "Title" }, -- first line of an explanation
  CaptainMemoExplainLabel = { link = "Identifier" }, -- "vector similarity", "× branch", …
  CaptainMemoExplainValue = { link = "Number" }, -- a score or multiplier that counted
  CaptainMemoExplainMuted = { link = "Comment" }, -- a multiplier that did not fire
  CaptainMemoExplainScore = { link = "Title" }, -- the final "= score" line
}

function M.define()
  for name, spec in pairs(M.groups) do
    vim.api.nvim_set_hl(0, name, vim.tbl_extend("force", spec, { default = true }))
  end
end

local defined = false

---Define the groups once, and again after every colour scheme change (`:hi clear` drops them).
function M.setup()
  M.define()
  if defined then
    return
  end
  defined = true
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("CaptainMemoHighlights", { clear = true }),
    callback = M.define,
  })
end

return M
