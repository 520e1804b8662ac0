---Captain Memo for Neovim: options, setup and the functions behind every command and mapping.
---
---Nothing here starts Python: the remote plugin host starts on the first request.
local M = {}

M.defaults = {
  -- Global key mappings. None is set unless named here; the recommended set is
  --   keymaps = { lookup = "<leader>ml", save = "<leader>ms", recall = "<leader>mr" }
  -- lookup works in Normal and Visual mode, save in Visual mode, recall in Normal mode.
  keymaps = { lookup = false, save = false, recall = false },
  window = {
    width = 0.8, -- results window width: a fraction of the editor's columns (<= 1) or a column count
    height = 10, -- most result lines shown at once
    preview_height = 10, -- lines of the preview/explanation window under the results; 0 hides it
    border = "rounded", -- border of both windows: "rounded", "single", "double", "solid", "shadow", "none"
  },
  limit = 10, -- results per lookup or recall
  profile = nil, -- ranking profile "v3", "v2" or "legacy"; nil: $CAPTAIN_MEMO_RANK_PROFILE, else v3
  embedding = {
    provider = nil, -- "local" (built in, offline), "ollama" or "openai"; nil: $CAPTAIN_MEMO_EMBED_PROVIDER, else local
    url = nil, -- endpoint of the ollama/openai provider; nil: $CAPTAIN_MEMO_EMBED_URL, else its usual address
    model = nil, -- model name for ollama/openai; nil: $CAPTAIN_MEMO_EMBED_MODEL, else the provider's default
    -- Text put before each search query / each document; "" is none. nil: $CAPTAIN_MEMO_EMBED_QUERY_PREFIX /
    -- $CAPTAIN_MEMO_EMBED_DOCUMENT_PREFIX, else the model's own (nomic-embed-text, e5, bge...: doc/embeddings.md).
    query_prefix = nil,
    document_prefix = nil,
  },
  db = nil, -- database file; nil: $CAPTAIN_MEMO_DB, else $CAPTAIN_MEMO_HOME/memo.db, else the XDG data folder
  share_worktrees = true, -- worktrees of one repository share one project; false gives each its own
  ambient = false, -- hint at the end of the line when memories name the code-shaped token the cursor rests on
  searching_delay = 100, -- milliseconds before "searching…" appears for a result still on its way
  -- A selection or note that looks like it holds credentials (private keys, API tokens,
  -- password = ...): "ask" shows what was found and offers save anyway / save redacted / cancel;
  -- "redact" stores it with each credential replaced by [REDACTED <kind>]; "allow" stores it as it
  -- is, with a warning. $CAPTAIN_MEMO_REDACT_SECRETS=1 redacts whatever this says.
  secrets = "ask",
  -- Writing a Markdown or text file under a note or skill folder (docs/decisions/, docs/adr/,
  -- .captain-memo/memory/, .captain-memo/skills/, $CAPTAIN_MEMO_NOTE_DIRS, $CAPTAIN_MEMO_SKILL_DIRS)
  -- re-indexes it in the background, 0.4 s after the last write of that file. Other Markdown and
  -- text files are left alone, but the first write of one starts the Python host if nothing has
  -- yet (about a third of a second, once).
  index_on_write = true,
  log_file = nil, -- where failures are detailed; nil: stdpath("log") .. "/captain-memo.log"
  -- The Python that runs the plugin. nil: the plugin's own environment, made by its build step
  -- (build.lua, :CaptainMemo build) under stdpath("data"); else g:python3_host_prog, else python3.
  python = nil,
}

local options = nil

---The options in force: the defaults merged with the last setup() call.
---@return table
function M.options()
  return options or vim.deepcopy(M.defaults)
end

-- Options whose default is nil are absent from M.defaults but still known.
local NIL_DEFAULTS = { profile = true, db = true, log_file = true, python = true }
local TABLES = { keymaps = true, window = true, embedding = true }
---What a save does with text that looks like a credential (the library checks the same names).
M.SECRET_POLICIES = { "ask", "redact", "allow" }

local function check(opts)
  if type(opts) ~= "table" then
    error("captain_memo.setup: expected a table of options, got " .. type(opts), 0)
  end
  for key, value in pairs(opts) do
    if M.defaults[key] == nil and not NIL_DEFAULTS[key] then
      error(("captain_memo.setup: unknown option %q"):format(tostring(key)), 0)
    end
    if TABLES[key] and type(value) ~= "table" then
      error(("captain_memo.setup: option %q must be a table, got %s"):format(key, type(value)), 0)
    end
  end
  for action in pairs(opts.keymaps or {}) do
    if M.defaults.keymaps[action] == nil and action ~= "note" and action ~= "changes" then
      error(
        ("captain_memo.setup: unknown keymap %q; use lookup, save, recall, note or changes"):format(tostring(action)),
        0
      )
    end
  end
  if opts.secrets ~= nil and not vim.tbl_contains(M.SECRET_POLICIES, opts.secrets) then
    local names = '"' .. table.concat(M.SECRET_POLICIES, '", "') .. '"'
    names = names:gsub(', ("[^"]+")$', " or %1")
    error(("captain_memo.setup: secrets must be %s, got %s"):format(names, vim.inspect(opts.secrets)), 0)
  end
  if opts.index_on_write ~= nil and type(opts.index_on_write) ~= "boolean" then
    error("captain_memo.setup: index_on_write must be true or false, got " .. vim.inspect(opts.index_on_write), 0)
  end
  local limit = opts.limit
  if limit ~= nil and (type(limit) ~= "number" or limit < 1 or limit ~= math.floor(limit)) then
    error("captain_memo.setup: limit must be a whole number of at least 1, got " .. vim.inspect(limit), 0)
  end
end

---Merge `opts` over the defaults and apply them. Safe to call again: each call starts from the
---defaults, and mappings, autocommands and highlights are replaced, never doubled. Bad options are
---refused before anything changes.
---@param opts table|nil
function M.setup(opts)
  opts = opts or {}
  check(opts)
  options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  require("captain_memo.highlights").setup()
  require("captain_memo.keymaps").apply(options.keymaps)
  require("captain_memo.ambient").configure(options.ambient)
  return options
end

---Look up the code-shaped token under the cursor (or the selection in Visual mode).
---@param opts {visual: boolean}|nil
function M.lookup(opts)
  require("captain_memo.actions").lookup(opts or {})
end

---Recall with a free-text query; asks for one when `query` is empty.
---@param query string|nil
function M.recall(query)
  require("captain_memo.actions").recall(query)
end

---What changed in the current buffer's file lately (the newest observations touching it).
function M.changes()
  require("captain_memo.actions").changes()
end

---Save the selected lines (or lines `line1`..`line2`) as a memory.
---@param opts {line1: integer, line2: integer}|nil
function M.save(opts)
  require("captain_memo.actions").save(opts or {})
end

---Open a scratch buffer; writing it (`:w`) saves its text as a memory of `kind`.
---@param kind string|nil
function M.note(kind)
  require("captain_memo.actions").note(kind)
end

return M
