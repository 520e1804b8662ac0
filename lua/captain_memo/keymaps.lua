---Global mappings named in setup({ keymaps = ... }); each maps to a <Plug> mapping.
local M = {}

-- action -> the modes it is mapped in and its <Plug> target.
M.actions = {
  lookup = { modes = { "n", "x" }, plug = "<Plug>(CaptainMemoLookup)", desc = "Captain Memo: look up the token under the cursor" },
  save = { modes = { "x" }, plug = "<Plug>(CaptainMemoSave)", desc = "Captain Memo: save the selection" },
  recall = { modes = { "n" }, plug = "<Plug>(CaptainMemoRecall)", desc = "Captain Memo: recall" },
  note = { modes = { "n" }, plug = "<Plug>(CaptainMemoNote)", desc = "Captain Memo: write a note" },
  changes = { modes = { "n" }, plug = "<Plug>(CaptainMemoChanges)", desc = "Captain Memo: what changed in this file lately" },
}

local applied = {} ---@type {mode: string, lhs: string}[]

---Replace the previous setup's mappings with those named in `keymaps` (action -> lhs or false).
---@param keymaps table<string, string|false>
function M.apply(keymaps)
  for _, map in ipairs(applied) do
    pcall(vim.keymap.del, map.mode, map.lhs)
  end
  applied = {}
  for action, lhs in pairs(keymaps or {}) do
    local spec = M.actions[action]
    if not spec then
      error(("captain_memo.setup: unknown keymap %q; use one of lookup, save, recall, note"):format(action), 0)
    end
    if lhs then
      for _, mode in ipairs(spec.modes) do
        vim.keymap.set(mode, lhs, spec.plug, { remap = true, desc = spec.desc })
        applied[#applied + 1] = { mode = mode, lhs = lhs }
      end
    end
  end
end

return M
