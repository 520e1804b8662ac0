---The results float, its preview/explanation float and the keys in them.
local bridge = require("captain_memo.bridge")
local format = require("captain_memo.format")
local log = require("captain_memo.log")

local M = {}

local ns = vim.api.nvim_create_namespace("captain_memo_results")
local RESULTS, PREVIEW = "captain-memo://results", "captain-memo://preview"

---@class captain_memo.View
---@field buf integer|nil
---@field win integer|nil
---@field pbuf integer|nil
---@field pwin integer|nil
---@field result table|nil
---@field hits table[]
---@field explain boolean
---@field origin integer|nil window the request came from
---@field context string|nil file whose repository the request used
local view = { hits = {}, explain = false }

local function valid(win)
  return win ~= nil and vim.api.nvim_win_is_valid(win)
end

---Whether the results window is open and still shows the results (`:edit` inside it replaces them).
local function results_shown()
  return valid(view.win) and view.buf ~= nil and vim.api.nvim_buf_is_valid(view.buf)
    and vim.api.nvim_win_get_buf(view.win) == view.buf
end

local function window_options()
  return require("captain_memo").options().window
end

---Sizes and places both floats: centred, results on top, preview under them.
local function geometry(lines)
  local o = window_options()
  local cols = vim.o.columns
  local rows = vim.o.lines - vim.o.cmdheight - 1
  local border = (o.border == "none" or o.border == "") and 0 or 2
  local width = o.width <= 1 and math.floor(cols * o.width) or o.width
  width = math.max(20, math.min(width, cols - border))
  -- Without a border the footer is a virtual line under the results: one more row for it.
  local height = math.max(1, math.min(lines, o.height, rows - border)) + (border == 0 and 1 or 0)
  local ph = view.explain and math.max(o.preview_height, 13) or o.preview_height
  ph = math.max(0, math.min(ph, rows - height - 2 * border))
  local total = height + border + (ph > 0 and ph + border or 0)
  return {
    width = width,
    height = height,
    preview_height = ph,
    row = math.max(0, math.floor((rows - total) / 2)),
    col = math.max(0, math.floor((cols - width - border) / 2)),
    border = border,
  }
end

local function scratch(name)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, buf, name)
  return buf
end

local function set_lines(buf, lines, spans)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, s in ipairs(spans or {}) do
    pcall(vim.api.nvim_buf_set_extmark, buf, ns, s[1], s[2], { end_col = s[3], hl_group = s[4] })
  end
end

local function current_hit()
  if not results_shown() or #view.hits == 0 then
    return nil
  end
  return view.hits[vim.api.nvim_win_get_cursor(view.win)[1]]
end

local function footer_chunks(warn_text)
  if not view.result then
    return { { " searching… ", "CaptainMemoSearching" } }
  end
  local text, warn = format.footer(view.result)
  return { { warn_text or text, warn and "CaptainMemoFooterWarn" or "CaptainMemoFooter" } }
end

local function win_config(g, kind)
  local o = window_options()
  local config = {
    relative = "editor",
    style = "minimal",
    border = o.border,
    width = g.width,
    col = g.col,
    zindex = 50,
  }
  if kind == "results" then
    config.row, config.height = g.row, g.height
    -- The words asked for, typed or taken from a buffer: Neovim's own notation for a control character.
    local query = view.query and vim.fn.strtrans((view.query:gsub("%s+", " ")))
    local title = query and (" Captain Memo: " .. format.truncate(query, g.width - 20) .. " ") or " Captain Memo "
    if g.border > 0 then
      config.title, config.title_pos = title, "left"
      config.footer, config.footer_pos = footer_chunks(), "right"
    end
  else
    config.row, config.height, config.focusable = g.row + g.height + g.border, g.preview_height, false
  end
  return config
end

local function render_preview(g)
  if g.preview_height == 0 then
    if valid(view.pwin) then
      vim.api.nvim_win_close(view.pwin, true)
    end
    view.pwin = nil
    return
  end
  if not (view.pbuf and vim.api.nvim_buf_is_valid(view.pbuf)) then
    view.pbuf = scratch(PREVIEW)
  end
  local config = win_config(g, "preview")
  if valid(view.pwin) then
    vim.api.nvim_win_set_config(view.pwin, config)
  else
    view.pwin = vim.api.nvim_open_win(view.pbuf, false, config)
    vim.wo[view.pwin].wrap = true
    vim.wo[view.pwin].linebreak = true
  end
  local hit = current_hit()
  if not hit then
    set_lines(view.pbuf, {})
  elseif view.explain then
    set_lines(view.pbuf, format.explanation(hit, view.result and view.result.profile))
  else
    local lines = format.preview(hit)
    set_lines(view.pbuf, lines, { { 0, 0, #lines[1], "CaptainMemoExplainHeader" }, { 1, 0, #lines[2], "CaptainMemoAge" } })
    -- A long chunk opens at the lines that matched, one line of context above them.
    local match = format.preview_match(hit, lines)
    local top = (match and match > g.preview_height) and (match - 1) or 1
    vim.api.nvim_win_call(view.pwin, function()
      vim.fn.winrestview({ topline = top, lnum = match or 1, col = 0 })
    end)
  end
end

---Place both windows for `line_count` result lines (opening them when needed).
local function layout(line_count, enter)
  local g = geometry(line_count)
  local config = win_config(g, "results")
  if results_shown() then
    vim.api.nvim_win_set_config(view.win, config)
    if enter then
      vim.api.nvim_set_current_win(view.win)
    end
  else
    view.buf = scratch(RESULTS)
    view.win = vim.api.nvim_open_win(view.buf, enter, config)
    vim.wo[view.win].cursorline = true
    vim.wo[view.win].wrap = false
    M.attach(view.buf)
  end
  return g
end

---Show "searching…" (or a status) while an answer is late; the editor stays usable meanwhile.
---@param query string
---@param origin integer
function M.searching(query, origin)
  view.query, view.result, view.hits, view.origin = query, nil, {}, origin
  layout(1, false)
  set_lines(view.buf, { "searching…" }, { { 0, 0, #"searching…", "CaptainMemoSearching" } })
  render_preview({ preview_height = 0 })
end

---Fill the results window with a recall's answer and focus it.
---@param result table recall JSON with `context`
---@param origin integer window the request came from
---@param context string|nil
function M.show(result, origin, context)
  require("captain_memo.highlights").setup()
  -- A new list starts on the preview: `e` is about the hit it was pressed on, not every list after.
  view.explain = false
  view.query, view.result, view.hits = result.query, result, result.hits or {}
  view.origin, view.context = origin, context
  if valid(view.win) then
    vim.api.nvim_win_set_cursor(view.win, { 1, 0 })
  end
  M.render(true)
  vim.api.nvim_exec_autocmds("User", {
    pattern = "CaptainMemoResults",
    modeline = false,
    data = { query = result.query, count = #view.hits, elapsed_ms = result.elapsed_ms, legs = result.legs },
  })
end

---Redraw the windows from the current state, keeping the cursor on the same line.
---@param enter boolean|nil
function M.render(enter)
  local g = layout(math.max(1, #view.hits), enter)
  local lines, spans = {}, {}
  for i, hit in ipairs(view.hits) do
    local line, line_spans = format.hit_line(hit, g.width)
    lines[i] = line
    for _, s in ipairs(line_spans) do
      spans[#spans + 1] = { i - 1, s[1], s[2], s[3] }
    end
  end
  if #lines == 0 then
    lines = { ("No memory matches %q."):format(view.query or "") }
    spans = { { 0, 0, #lines[1], "CaptainMemoSearching" } }
  end
  local cursor = valid(view.win) and math.min(vim.api.nvim_win_get_cursor(view.win)[1], #lines) or 1
  set_lines(view.buf, lines, spans)
  if g.border == 0 and view.result then
    -- No border, no footer: the same words as a virtual line under the results.
    vim.api.nvim_buf_set_extmark(view.buf, ns, #lines - 1, 0, { virt_lines = { footer_chunks() } })
  end
  vim.api.nvim_win_set_cursor(view.win, { math.max(1, cursor), 0 })
  render_preview(g)
end

function M.close()
  bridge.cancel("results")
  -- Not ipairs over { view.pwin, view.win }: while "searching…" shows there is no preview, and
  -- ipairs stops at that nil, which left the results window open after a failed search.
  for _, win in ipairs({ view.pwin or -1, view.win or -1 }) do
    if valid(win) then
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
  view.win, view.pwin, view.buf, view.pbuf = nil, nil, nil, nil
  view.explain = false
  if valid(view.origin) then
    vim.api.nvim_set_current_win(view.origin)
  end
end

---Whether the results window is open.
---@return boolean
function M.is_open()
  return results_shown()
end

---The window a new request should treat as its origin: never one of ours.
---@return integer
function M.origin_window()
  local win = vim.api.nvim_get_current_win()
  if (win == view.win or win == view.pwin) and valid(view.origin) then
    return view.origin
  end
  return win
end

function M.toggle_explain()
  view.explain = not view.explain
  M.render(false)
end

---The request context of a follow-up action: the file the results were asked from.
local function context_args(extra)
  return vim.tbl_extend("force", { context = view.context }, extra)
end

local function show_memory(memory)
  local buf = vim.api.nvim_create_buf(true, true)
  vim.bo[buf].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, buf, ("captain-memo://memory/%s"):format(memory.id))
  local shown = memory.shown or {} -- escaped by the host (captain_memo/presentation/window.py)
  local lines = { "# " .. (shown.title or ""), "", "<!-- " .. (shown.meta or "") .. " -->", "" }
  vim.list_extend(lines, shown.body or {})
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "markdown"
  vim.api.nvim_win_set_buf(0, buf)
end

---<CR>: open the hit in full. A hit with a source file jumps there at once; the memory is opened
---on the Python side too, which counts as the strongest surfacing for Tide.
function M.open_selected()
  local hit = current_hit()
  if not hit then
    return
  end
  local file = hit.source and hit.source.file
  M.close()
  if file then
    vim.cmd.edit(vim.fn.fnameescape(file))
    local last = vim.api.nvim_buf_line_count(0)
    local chunk = hit.chunk or {}
    local line = chunk.snippet_line or chunk.line_start or hit.source.line_start or 1
    vim.api.nvim_win_set_cursor(0, { math.min(math.max(line, 1), last), 0 })
    vim.cmd("normal! zz")
  end
  bridge.request("open", context_args({ id = hit.id }), {
    on_result = function(memory)
      if not file then
        show_memory(memory)
      end
    end,
  })
end

---s: mark the selected hit superseded by another hit of the list.
function M.supersede_selected()
  local hit = current_hit()
  if not hit then
    return
  end
  local others = vim.tbl_filter(function(h)
    return h.id ~= hit.id
  end, view.hits)
  if #others == 0 then
    log.warn("no other hit in the list to supersede it with")
    return
  end
  vim.ui.select(others, {
    prompt = ("#%s %s is superseded by:"):format(hit.id, (hit.shown or {}).title or ""),
    format_item = function(h)
      return ("#%s %s"):format(h.id, (h.shown or {}).title or "")
    end,
  }, function(choice)
    if not choice then
      return
    end
    bridge.request("supersede", context_args({ old = hit.id, new = choice.id }), {
      on_result = function()
        hit.superseded_by = choice.id
        if M.is_open() then
          M.render(false)
        end
        require("captain_memo.ambient").forget_cache()
        log.info(("#%s is now superseded by #%s"):format(hit.id, choice.id))
      end,
    })
  end)
end

---d: forget the selected hit, after confirmation.
function M.forget_selected()
  local hit = current_hit()
  if not hit then
    return
  end
  vim.ui.select({ "Forget it", "Keep it" }, { prompt = ("Forget #%s %s?"):format(hit.id, (hit.shown or {}).title or "") }, function(_, idx)
    if idx ~= 1 then
      return
    end
    bridge.request("forget", context_args({ id = hit.id }), {
      on_result = function()
        view.hits = vim.tbl_filter(function(h)
          return h.id ~= hit.id
        end, view.hits)
        if M.is_open() then
          M.render(false)
        end
        require("captain_memo.ambient").forget_cache()
        log.info(("forgot #%s %s"):format(hit.id, (hit.shown or {}).title or ""))
      end,
    })
  end)
end

---Keys and autocommands of the results buffer.
---@param buf integer
function M.attach(buf)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "Captain Memo: " .. desc })
  end
  map("<CR>", M.open_selected, "open the memory in full")
  map("e", M.toggle_explain, "toggle the explanation")
  map("s", M.supersede_selected, "mark superseded by another hit")
  map("d", M.forget_selected, "forget the memory")
  map("q", M.close, "close")
  map("<Esc>", M.close, "close")
  local group = vim.api.nvim_create_augroup("CaptainMemoResults", { clear = true })
  vim.api.nvim_create_autocmd("CursorMoved", {
    group = group,
    buffer = buf,
    callback = function()
      if view.result then
        render_preview(geometry(math.max(1, #view.hits)))
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufLeave", {
    group = group,
    buffer = buf,
    callback = function()
      -- Leaving for another window closes the floats; a prompt opened from them does not.
      vim.schedule(function()
        local win = vim.api.nvim_get_current_win()
        if win == view.win and valid(win) and vim.api.nvim_win_get_buf(win) ~= view.buf then
          -- A file was opened inside the float: it belongs in the window the request came from.
          local opened = vim.api.nvim_win_get_buf(win)
          M.close()
          vim.api.nvim_win_set_buf(0, opened)
        elseif valid(view.win) and win ~= view.win and win ~= view.pwin then
          local origin = view.origin
          view.origin = nil
          M.close()
          view.origin = origin
        end
      end)
    end,
  })
end

return M
