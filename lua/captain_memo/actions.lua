---What the commands and mappings do: build a request from the editor's state and send it.
local bridge = require("captain_memo.bridge")
local log = require("captain_memo.log")
local token = require("captain_memo.token")
local ui = require("captain_memo.ui")

local M = {}

M.KINDS = { "memory", "skill", "observation" }
local KIND_HELP = { memory = "a curated note", skill = "a how-to", observation = "something noticed in passing" }

---The absolute path of a buffer's file, nil for a buffer without one.
---@param buf integer
---@return string|nil
local function buffer_file(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or vim.bo[buf].buftype ~= "" then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

---Where a request's repository and branch come from: the buffer's file, not Neovim's working
---folder; a buffer without a file falls back to the working folder.
---@param win integer
---@return string
local function context_of(win)
  return buffer_file(vim.api.nvim_win_get_buf(win)) or vim.fn.getcwd(win)
end

local function leave_visual()
  if vim.fn.mode():match("^[vV\22]") then
    vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "nx", false)
  end
end

---Send a request whose answer is a recall (`recall`, `changes`) and show it in the results window.
---@param op string
---@param label string what the window says it is searching for
local function ask(op, args, label, origin, context)
  bridge.request(op, args, {
    channel = "results",
    on_slow = function()
      ui.searching(label, origin)
    end,
    on_result = function(result)
      if result.notice and result.notice ~= "" then
        log.info(result.notice) -- a question about time: its window, or the date it was read against
      end
      ui.show(result, origin, context)
    end,
    on_error = function()
      if ui.is_open() then
        ui.close()
      end
    end,
  })
end

---Recall `query` and show the answer in the results window.
---@param query string
function M.search(query)
  local origin = ui.origin_window()
  local context = context_of(origin)
  ask("recall", { query = query, context = context }, query, origin, context)
end

---What changed in the current buffer's file lately: the newest observations touching it.
function M.changes()
  local origin = ui.origin_window()
  local file = buffer_file(vim.api.nvim_win_get_buf(origin))
  if not file then
    log.warn("this buffer has no file: no changes to list")
    return
  end
  ask("changes", { context = file }, "changes to " .. vim.fn.fnamemodify(file, ":t"), origin, file)
end

---The token under the cursor, or the selection in Visual mode (or after a `:'<,'>` range).
---@param opts {visual: boolean|nil, range: integer|nil}
function M.lookup(opts)
  local query, missing
  if opts.visual or (opts.range and opts.range > 0) or vim.fn.mode():match("^[vV\22]") then
    local sel = token.selection()
    leave_visual()
    query, missing = sel and vim.trim(sel.text), "the selection is empty"
  else
    local found = token.under_cursor()
    query, missing = found and token.query(found), "no identifier under the cursor or right before it"
  end
  if not query or query == "" then
    log.warn("nothing to look up: " .. missing)
    return
  end
  M.search(query)
end

---Recall with free text; asks for it when `query` is empty.
---@param query string|nil
function M.recall(query)
  if query and vim.trim(query) ~= "" then
    M.search(vim.trim(query))
    return
  end
  vim.ui.input({ prompt = "Recall: " }, function(input)
    -- The answered prompt would stay on the command line under the results and after them.
    vim.api.nvim_echo({ { "" } }, false, {})
    if input and vim.trim(input) ~= "" then
      M.search(vim.trim(input))
    end
  end)
end

---The text to save: the live selection, the `:'<,'>` selection, lines `line1`..`line2`, or the
---cursor line.
local function text_to_save(opts)
  if vim.fn.mode():match("^[vV\22]") then
    local sel = token.selection()
    leave_visual()
    return sel
  end
  if opts.range and opts.range > 0 then
    local marked = token.selection()
    if marked and marked.line_start == opts.line1 and marked.line_end == opts.line2 then
      return marked
    end
    local lines = vim.api.nvim_buf_get_lines(0, opts.line1 - 1, opts.line2, false)
    return { text = table.concat(lines, "\n"), line_start = opts.line1, line_end = opts.line2 }
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  return { text = vim.api.nvim_get_current_line(), line_start = row, line_end = row }
end

local function first_line(text)
  for line in vim.gsplit(text, "\n", { plain = true }) do
    local trimmed = vim.trim(line)
    if trimmed ~= "" then
      return vim.fn.strcharpart(trimmed, 0, 80)
    end
  end
  return ""
end

local function ask_kind(callback)
  vim.ui.select(M.KINDS, {
    prompt = "Kind:",
    format_item = function(kind)
      return kind .. " (" .. KIND_HELP[kind] .. ")"
    end,
  }, callback)
end

-- Where a save goes when a team store is set (CAPTAIN_MEMO_TEAM_DB): this machine's store, or the
-- team store everyone on the project reads. Local is first, so <CR> keeps a note private.
M.STORES = { "local", "team" }
local STORE_HELP = { ["local"] = "only you", team = "everyone on the project" }

---Ask where to save when there is a team store; `callback` gets "local", "team" or nil (cancel).
---@param team boolean whether a team store is set
local function ask_store(team, callback)
  if not team then
    callback("local")
    return
  end
  vim.ui.select(M.STORES, {
    prompt = "Save to:",
    kind = "captain_memo_store",
    format_item = function(store)
      return store .. " (" .. STORE_HELP[store] .. ")"
    end,
  }, callback)
end

-- The answers to "this looks like it holds credentials", and the `secrets` policy each asks for.
M.SECRET_CHOICES = { "save anyway", "save redacted", "cancel" }
local SECRET_POLICY = { ["save anyway"] = "allow", ["save redacted"] = "redact" }
local FINDINGS_SHOWN = 3

---Ask what to do with text the library found credentials in; `decide` gets "allow", "redact" or
---nil (cancel).
---@param findings {text: string}[]
---@param decide fun(policy: string|nil)
local function ask_about_secrets(findings, decide)
  local shown = {}
  for i = 1, math.min(#findings, FINDINGS_SHOWN) do
    shown[i] = findings[i].text
  end
  if #findings > FINDINGS_SHOWN then
    shown[#shown + 1] = ("and %d more"):format(#findings - FINDINGS_SHOWN)
  end
  vim.ui.select(M.SECRET_CHOICES, {
    prompt = "Captain Memo: this looks like it holds credentials (" .. table.concat(shown, "; ") .. "):",
    kind = "captain_memo_secrets",
  }, function(choice)
    decide(SECRET_POLICY[choice])
  end)
end

---Send a save request and report the stored memory. When the text looks like it holds
---credentials and the `secrets` option is "ask", nothing is stored until the user chooses; the
---choice goes back with the same text.
local function store(args, on_saved)
  bridge.request("save", args, {
    on_result = function(saved)
      if not saved.saved then
        ask_about_secrets(saved.findings, function(policy)
          if policy then
            store(vim.tbl_extend("force", args, { secrets = policy }), on_saved)
          else
            log.warn("nothing was saved")
          end
        end)
        return
      end
      require("captain_memo.ambient").forget_cache()
      local where = saved.branch and (" on " .. saved.branch) or ""
      local message = ("saved #%s %s%s"):format(saved.id, saved.title ~= "" and saved.title or "(untitled)", where)
      if saved.store == "team" then
        message = message .. " to the team store"
      end
      if #saved.kept > 0 then
        log.warn(message .. "; credentials stored as they are: " .. table.concat(saved.kept, "; "))
      elseif #saved.redacted > 0 then
        log.info(message .. ("; %d credential(s) redacted"):format(#saved.redacted))
      else
        log.info(message)
      end
      if on_saved then
        on_saved(saved)
      end
    end,
  })
end

---Ask for a title (prefilled from the first line of `shown`), a kind and, with a team store, where
---to save it; then store `args`.
local function ask_title_and_store(args, shown, team)
  vim.ui.input({ prompt = "Title: ", default = first_line(shown) }, function(title)
    if title == nil then
      return
    end
    ask_kind(function(kind)
      if not kind then
        return
      end
      ask_store(team, function(where)
        if not where then
          return
        end
        args.title, args.kind, args.store = title, kind, where
        store(args)
      end)
    end)
  end)
end

---Save the selection (or the given lines) with its file, lines, filetype, repository, branch and
---commit. The credential check runs first: only then is the title asked for, prefilled from the
---first line of the text with any credential redacted, so no token is ever shown in the prompt.
---@param opts {range: integer|nil, line1: integer|nil, line2: integer|nil}
function M.save(opts)
  local buf = vim.api.nvim_get_current_buf()
  local sel = text_to_save(opts)
  if not sel or vim.trim(sel.text) == "" then
    log.warn("nothing to save: the selection is empty")
    return
  end
  local file = buffer_file(buf)
  local args = {
    text = sel.text,
    path = file,
    context = file or vim.fn.getcwd(),
    line_start = sel.line_start,
    line_end = sel.line_end,
    filetype = vim.bo[buf].filetype,
  }
  bridge.request("check", { text = sel.text }, {
    on_result = function(checked)
      if #checked.findings == 0 or require("captain_memo").options().secrets ~= "ask" then
        ask_title_and_store(args, checked.redacted, checked.team)
        return
      end
      ask_about_secrets(checked.findings, function(policy)
        if not policy then
          log.warn("nothing was saved")
          return
        end
        args.secrets = policy
        ask_title_and_store(args, checked.redacted, checked.team)
      end)
    end,
  })
end

local note_count = 0

---Save a note buffer: its first line (without leading `#`) is the title, the rest the text.
---@param buf integer
function M.write_note(buf)
  local state = vim.b[buf].captain_memo_note
  if state.saved then
    vim.bo[buf].modified = false
    log.info(("this note is saved as #%s; :CaptainMemo note starts a new one"):format(state.saved))
    return
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, "\n")
  if vim.trim(text) == "" then
    log.warn("nothing to save: the note is empty")
    return
  end
  local title, rest = nil, {}
  for _, line in ipairs(lines) do
    if title == nil and vim.trim(line) ~= "" then
      title = vim.trim((line:gsub("^%s*#+%s*", "")))
    elseif title ~= nil then
      rest[#rest + 1] = line
    end
  end
  local body = vim.trim(table.concat(rest, "\n"))
  local args = { text = body ~= "" and body or title, title = title, kind = state.kind, context = state.context }
  local function saved_as(saved)
    if vim.api.nvim_buf_is_valid(buf) then
      vim.b[buf].captain_memo_note = vim.tbl_extend("force", state, { saved = saved.id })
      vim.bo[buf].modified = false
      pcall(vim.api.nvim_buf_set_name, buf, ("captain-memo://memory/%s"):format(saved.id))
    end
  end
  -- With a team store, ask where the note goes, as the selection's dialog does; the credential
  -- check itself runs with the save (a note's text was typed here, never shown in a prompt).
  bridge.request("check", { text = args.text }, {
    on_result = function(checked)
      ask_store(checked.team, function(where)
        if not where then
          log.warn("nothing was saved")
          return
        end
        args.store = where
        store(args, saved_as)
      end)
    end,
  })
end

---A scratch buffer for a note; `:w` saves it as a memory of `kind`.
---@param kind string|nil
function M.note(kind)
  kind = kind or "memory"
  if not vim.tbl_contains(M.KINDS, kind) then
    log.error(("unknown kind %q; use one of %s"):format(kind, table.concat(M.KINDS, ", ")))
    return
  end
  local context = context_of(ui.origin_window())
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  note_count = note_count + 1
  pcall(vim.api.nvim_buf_set_name, buf, ("captain-memo://note/%d"):format(note_count))
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.b[buf].captain_memo_note = { kind = kind, context = context }
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = buf,
    callback = function(ev)
      M.write_note(ev.buf)
    end,
  })
  log.status(("new %s: the first line is the title; :w saves it"):format(kind))
end

return M
