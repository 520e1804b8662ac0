---The lookup token: the code-shaped token under the cursor, or the selected text.
---
---A token is taken whole across `_`, `.`, `/`, `::` and `->`, so `self.get_effective_contract_price`
---comes out whole from anywhere inside it, as do `src/billing/price.py` and `std::vector`; camelCase
---(`useEffect`) is one word already. A `-` joins only inside paths and file names
---(`doc/captain-memo.txt`), never in `a-b`. The cursor may be on the token or just after it; on
---anything else there is no token. Pure functions on a line and a column, so they are tested
---without a window.
local M = {}

local function is_word(ch)
  if ch == nil or ch == "" then
    return false
  end
  -- Bytes >= 0x80 belong to UTF-8 letters: never split an identifier inside them.
  return ch:match("[%w_]") ~= nil or ch:byte() >= 0x80
end

---A joiner is a separator that keeps a token whole: `.`, `/`, `::`, `->`. Returns its length or 0.
local function joiner_len(line, i)
  local ch = line:sub(i, i)
  if ch == "." or ch == "/" then
    return 1
  end
  local two = line:sub(i, i + 1)
  if two == "::" or two == "->" then
    return 2
  end
  return 0
end

---Maximal runs of word bytes and joiners, with `-` kept between word bytes (decided later).
---@return {[1]: integer, [2]: integer}[] spans, 1-based inclusive
local function runs(line)
  local out, i, n = {}, 1, #line
  while i <= n do
    local s = i
    while i <= n do
      local ch = line:sub(i, i)
      local j = joiner_len(line, i)
      if is_word(ch) then
        i = i + 1
      elseif j > 0 then
        i = i + j
      elseif ch == "-" and i > s and is_word(line:sub(i - 1, i - 1)) and is_word(line:sub(i + 1, i + 1)) then
        i = i + 1
      else
        break
      end
    end
    if i > s then
      out[#out + 1] = { s, i - 1 }
    else
      i = i + 1
    end
  end
  return out
end

---Split a run at its plain hyphens unless it looks like a path or file name.
local function pieces(line, s, e)
  local text = line:sub(s, e)
  if not text:find("-", 1, true) or text:find("[/.]") then
    return { { s, e } }
  end
  local out, start = {}, s
  for i = s, e do
    if line:sub(i, i) == "-" and line:sub(i + 1, i + 1) ~= ">" then
      if i > start then
        out[#out + 1] = { start, i - 1 }
      end
      start = i + 1
    end
  end
  if start <= e then
    out[#out + 1] = { start, e }
  end
  return out
end

---Drop joiners hanging off either end: a sentence's final `.`, a leading `.` of a method chain,
---a dangling `::` or `->`. A leading `./` or `/` of a path stays.
local function trim(text)
  local changed = true
  while changed and text ~= "" do
    changed = false
    for _, lead in ipairs({ "::", "->", "-" }) do
      if text:sub(1, #lead) == lead then
        text, changed = text:sub(#lead + 1), true
      end
    end
    if text:sub(1, 1) == "." and text:sub(2, 2) ~= "/" and text:sub(2, 2) ~= "." then
      text, changed = text:sub(2), true
    end
    for _, tail in ipairs({ "::", "->", "-", "." }) do
      if #text > #tail and text:sub(-#tail) == tail then
        text, changed = text:sub(1, -#tail - 1), true
      end
    end
  end
  return text
end

---The token covering 1-based byte `pos` of `line`, or nil.
local function token_covering(line, pos)
  for _, run in ipairs(runs(line)) do
    if pos >= run[1] and pos <= run[2] then
      for _, piece in ipairs(pieces(line, run[1], run[2])) do
        if pos >= piece[1] and pos <= piece[2] then
          local token = trim(line:sub(piece[1], piece[2]))
          return token:find("[%w_\128-\255]") and token or nil
        end
      end
      return nil
    end
  end
  return nil
end

---The token the cursor is on, or the one right before it (the cursor on the `(` after a name, on
---the space after it, or past its end in Insert mode), at byte column `col` (0-based, as in
---nvim_win_get_cursor) of `line`; nil when there is neither: leading indentation, blank space
---between words, punctuation alone.
---@param line string
---@param col integer
---@return string|nil
function M.at(line, col)
  local pos = col + 1
  if pos < 1 or pos > #line + 1 then
    return nil
  end
  return token_covering(line, pos) or (pos > 1 and token_covering(line, pos - 1)) or nil
end

---Mirrors captain_memo.ranking.query.is_code_shaped: contains `_`, `.` or `/`, or a lower-to-upper
---camelCase hump; ALL-CAPS and plain words never count.
---@param token string|nil
---@return boolean
function M.is_code_shaped(token)
  if not token or not token:find("%w") then
    return false
  end
  if token:find("[_./]") then
    return true
  end
  return token:find("[%l%d]%u") ~= nil
end

-- A receiver names the object, not the thing: `self.price` is about `price`.
local RECEIVERS = { "self.", "this.", "cls.", "this->", "self::", "Self::" }

---The query for a token: the token without a leading receiver, so `self.get_effective_contract_price`
---asks for `get_effective_contract_price`, the form notes mention.
---@param token string
---@return string
function M.query(token)
  for _, receiver in ipairs(RECEIVERS) do
    if token:sub(1, #receiver) == receiver and #token > #receiver then
      return token:sub(#receiver + 1)
    end
  end
  return token
end

---The lookup token in the current window: the token under the cursor or right before it, else
---nil. Never Vim's <cword>, which jumps ahead to the next word (from indentation to `self`).
---@return string|nil
function M.under_cursor()
  local pos = vim.api.nvim_win_get_cursor(0)
  return M.at(vim.api.nvim_get_current_line(), pos[2])
end

---The selected text with its first and last line. In Visual mode the live selection is read;
---afterwards (from a `:'<,'>` command) the `'<` and `'>` marks are.
---@return {text: string, line_start: integer, line_end: integer}|nil
function M.selection()
  local mode = vim.fn.mode()
  local p1, p2, kind
  if mode == "v" or mode == "V" or mode == "\22" then
    p1, p2, kind = vim.fn.getpos("v"), vim.fn.getpos("."), mode
  else
    p1, p2, kind = vim.fn.getpos("'<"), vim.fn.getpos("'>"), vim.fn.visualmode()
    if kind == "" then
      return nil
    end
  end
  if p1[2] == 0 or p2[2] == 0 then
    return nil
  end
  local lines = vim.fn.getregion(p1, p2, { type = kind })
  return {
    text = table.concat(lines, "\n"),
    line_start = math.min(p1[2], p2[2]),
    line_end = math.max(p1[2], p2[2]),
  }
end

return M
