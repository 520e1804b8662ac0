---Ambient hint (opt-in): when the cursor rests on a code-shaped token that stored memories name
---exactly, "2 memories" appears at the end of the line; the lookup key opens them.
---
---Cheap by construction: it runs on CursorHold only (never while typing), asks the keyword leg
---only (no embedding), answers asynchronously, and remembers each token's count for a minute.
local bridge = require("captain_memo.bridge")
local token = require("captain_memo.token")

local M = {}

local ns = vim.api.nvim_create_namespace("captain_memo_hint")
local GROUP = "CaptainMemoAmbient"
local TTL_SECONDS = 60
local cache = {} ---@type table<string, {count: integer, at: number}>
local shown = nil ---@type {buf: integer, row: integer, token: string}|nil

---Forget cached counts (after a save, a forget or a supersede).
function M.forget_cache()
  cache = {}
end

function M.clear()
  if shown and vim.api.nvim_buf_is_valid(shown.buf) then
    vim.api.nvim_buf_clear_namespace(shown.buf, ns, 0, -1)
  end
  shown = nil
end

local function render(buf, row, tok, count)
  M.clear()
  if count <= 0 then
    return
  end
  local text = count == 1 and "1 memory" or (count .. " memories")
  vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
    virt_text = { { "  ◆ " .. text, "CaptainMemoHint" } },
    virt_text_pos = "eol",
    hl_mode = "combine",
  })
  shown = { buf = buf, row = row, token = tok }
end

---The code-shaped query under the cursor, or nil.
local function current_query()
  local line = vim.api.nvim_get_current_line()
  local found = token.at(line, vim.api.nvim_win_get_cursor(0)[2])
  local query = found and token.query(found)
  return token.is_code_shaped(query) and query or nil
end

---CursorHold: show the hint for the token under the cursor, from the cache or the keyword leg.
function M.check()
  local buf = vim.api.nvim_get_current_buf()
  if vim.bo[buf].buftype ~= "" then
    return
  end
  local query = current_query()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if not query then
    M.clear()
    return
  end
  local file = vim.api.nvim_buf_get_name(buf)
  local context = file ~= "" and vim.fn.fnamemodify(file, ":p") or vim.fn.getcwd()
  local key = vim.fn.fnamemodify(context, ":h") .. "\0" .. query
  local hit = cache[key]
  if hit and os.time() - hit.at < TTL_SECONDS then
    render(buf, row, query, hit.count)
    return
  end
  bridge.request("hint", { token = query, context = context }, {
    channel = "hint",
    quiet = true,
    on_result = function(result)
      cache[key] = { count = result.count, at = os.time() }
      -- Only if the cursor still rests on the same token of the same buffer.
      if vim.api.nvim_get_current_buf() == buf and vim.api.nvim_win_get_cursor(0)[1] - 1 == row
        and current_query() == query then
        render(buf, row, query, result.count)
      end
    end,
  })
end

---Moving off the hinted token removes its hint.
local function moved()
  if not shown then
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if vim.api.nvim_get_current_buf() ~= shown.buf or row ~= shown.row or current_query() ~= shown.token then
    M.clear()
  end
end

---Turn the hint on or off.
---@param enabled boolean
function M.configure(enabled)
  local group = vim.api.nvim_create_augroup(GROUP, { clear = true })
  M.enabled = enabled and true or false
  if not enabled then
    M.clear()
    return
  end
  vim.api.nvim_create_autocmd("CursorHold", { group = group, callback = M.check })
  vim.api.nvim_create_autocmd({ "CursorMoved", "BufLeave" }, { group = group, callback = moved })
  vim.api.nvim_create_autocmd("InsertEnter", { group = group, callback = M.clear })
end

return M
