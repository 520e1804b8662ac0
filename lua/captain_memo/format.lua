---Text of the results window: one line per hit, the preview, the explanation and the footer.
---Pure functions from a recall's JSON as the editor's host sends it (shown_recall in
---captain_memo/presentation/window.py) to lines and highlight spans, so they are tested without a window.
local M = {}

local KIND = { memory = "mem", skill = "skill", observation = "obs" }

-- What a hit shows comes from Python (captain_memo/presentation/window.py): its age, heading path,
-- branch, place, marks and preview lines, every stored text escaped already. Here it is laid out.
local function shown(hit)
  return hit.shown or {}
end

---`text` cut to `width` display cells, with an ellipsis when cut.
---@param text string
---@param width integer
---@return string
function M.truncate(text, width)
  if width <= 0 then
    return ""
  end
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local out, used = {}, 0
  for i = 0, vim.fn.strchars(text) - 1 do
    local ch = vim.fn.strcharpart(text, i, 1)
    local w = vim.fn.strdisplaywidth(ch)
    if used + w > width - 1 then
      break
    end
    out[#out + 1] = ch
    used = used + w
  end
  return table.concat(out) .. "…"
end

local function pad(text, width)
  return text .. string.rep(" ", math.max(0, width - vim.fn.strdisplaywidth(text)))
end

---One results line: rank, score, kind, title (or first line), age, branch, source.
---@param hit table
---@param width integer
---@return string line, table spans {start_col, end_col, group} in bytes
function M.hit_line(hit, width)
  local kind = KIND[hit.kind] or hit.kind
  local rank = ("%2d"):format(hit.rank)
  local score = ("%.3f"):format(hit.score or 0)
  local left = rank .. "  " .. score .. "  " .. pad(kind, 5) .. "  "
  local right_parts = {
    { shown(hit).age or "", "CaptainMemoAge" },
    { shown(hit).branch or "", "CaptainMemoBranch" },
    { shown(hit).where or "", "CaptainMemoSource" },
  }
  local room = width - vim.fn.strdisplaywidth(left)
  local function right_width()
    local w = 0
    for _, part in ipairs(right_parts) do
      if part[1] ~= "" then
        w = w + 2 + vim.fn.strdisplaywidth(part[1])
      end
    end
    return w
  end
  -- A title needs room to be read: give up the source, then the branch, before squeezing it.
  while #right_parts > 1 and room - right_width() < 20 do
    table.remove(right_parts)
  end
  local title = M.truncate(shown(hit).title or "", math.max(8, room - right_width()))
  local line = left .. pad(title, math.max(0, room - right_width()))
  local spans = {
    { 0, #rank, "CaptainMemoRank" },
    { #rank + 2, #rank + 2 + #score, "CaptainMemoScore" },
    { #rank + 4 + #score, #rank + 4 + #score + #kind, "CaptainMemoKind" },
  }
  local title_group = hit.superseded_by and "CaptainMemoSuperseded" or "CaptainMemoTitle"
  spans[#spans + 1] = { #left, #left + #title, title_group }
  for _, part in ipairs(right_parts) do
    if part[1] ~= "" then
      line = line .. "  "
      spans[#spans + 1] = { #line, #line + #part[1], part[2] }
      line = line .. part[1]
    end
  end
  return line, spans
end

---The footer, as the CLI prints it under its list; `warn` when a leg or a store did not answer.
---@param result table
---@return string text, boolean warn
function M.footer(result)
  local warning = result.warning
  return " " .. (result.footer or "") .. " ", type(warning) == "string" and warning ~= ""
end

---The selected hit's own chunk under a short header: its heading path, then kind, id, branch, the
---chunk's own lines, age, author; the chunk's text follows without the heading it starts with.
---@param hit table
---@return string[]
function M.preview(hit)
  local s = shown(hit)
  local lines = { s.title or "", s.meta or "" }
  if s.superseded and s.superseded ~= "" then
    lines[#lines + 1] = s.superseded
  end
  lines[#lines + 1] = ""
  vim.list_extend(lines, s.body or {})
  return lines
end

---The line of `lines` (a preview) where the hit's matching lines begin, or nil: the first line of
---its snippet, as the recall found it (a cut line's ellipses set aside).
---@param hit table
---@param lines string[]
---@return integer|nil
function M.preview_match(hit, lines)
  local snippet = (hit.chunk or {}).snippet or ""
  local want = vim.trim((snippet:match("^[^\n]*") or ""):gsub("^… ", ""):gsub(" …$", ""))
  want = want:sub(1, 40)
  if want == "" then
    return nil
  end
  for i = 3, #lines do
    if lines[i]:find(want, 1, true) then
      return i
    end
  end
  return nil
end

-- The multipliers of the ranking, in the order they apply (captain_memo/ranking/pipeline.py).
M.FACTORS = {
  { "identifier", "identifier" },
  { "rare_token", "rare token" },
  { "branch", "branch" },
  { "superseded", "superseded" },
  { "recency", "recency" },
  { "tide", "tide" },
}

local function number(value)
  if type(value) ~= "number" then
    return nil
  end
  return ("%.4f"):format(value)
end

---The explanation of a hit: both leg scores, the fused score, every multiplier (1 when it did not
---fire) and the product, which is the hit's score.
---@param hit table
---@param profile string|nil
---@return string[] lines, table spans {line (0-based), start_col, end_col, group}
function M.explanation(hit, profile)
  local ex = hit.explain or {}
  local lines, spans = {}, {}
  local function row(label, value, note, muted)
    local head = pad(label, 20) .. " "
    local text = head .. pad(value, 8)
    if note and note ~= "" then
      text = text .. "  " .. note
    end
    spans[#spans + 1] = { #lines, 0, #head - 1, "CaptainMemoExplainLabel" }
    spans[#spans + 1] = { #lines, #head, #head + #value, muted and "CaptainMemoExplainMuted" or "CaptainMemoExplainValue" }
    lines[#lines + 1] = text
  end
  local from = hit.store == "team" and ("  (#" .. hit.id .. ", team store)") or ""
  lines[#lines + 1] = ("#%d  %s%s"):format(hit.rank, shown(hit).title or "", from)
  spans[#spans + 1] = { 0, 0, #lines[1], "CaptainMemoExplainHeader" }
  row("vector similarity", number(ex.vector) or "-", number(ex.vector) and "" or "not found by the vector leg", not ex.vector)
  -- Raw bm25 spans orders of magnitude (tiny in a small store): significant digits, not decimals.
  local bm25 = type(ex.bm25) == "number" and ("%.3g"):format(ex.bm25) or nil
  local keyword_note = bm25 and ("bm25 " .. bm25) or "not found by the keyword leg"
  if bm25 and (shown(hit).keyword_note or "") ~= "" then
    keyword_note = keyword_note .. ", " .. shown(hit).keyword_note
  end
  row("keyword score", number(ex.keyword) or "-", keyword_note, not ex.keyword)
  local weighed = ""
  if type(ex.code_vector_weight) == "number" then
    weighed = ("source code: vector ×%.2f + keyword ×%.2f, "):format(ex.code_vector_weight, 1 - ex.code_vector_weight)
  end
  row("fused", number(ex.fused) or "-", weighed .. (profile and ("profile " .. profile) or ""))
  local fired, used, details = {}, {}, {}
  for i, f in ipairs(ex.factors or {}) do
    fired[f.name] = fired[f.name] or {}
    table.insert(fired[f.name], f)
    details[f] = (shown(hit).details or {})[i] or ""
  end
  local product_parts = { number(ex.fused) or "?" }
  local function factor_rows(name, label)
    used[name] = true
    if not fired[name] then
      row("× " .. label, "1", "not applied", true)
      return
    end
    for _, f in ipairs(fired[name]) do
      row("× " .. label, number(f.value), details[f])
      product_parts[#product_parts + 1] = number(f.value)
    end
  end
  for _, known in ipairs(M.FACTORS) do
    factor_rows(known[1], known[2])
  end
  for _, f in ipairs(ex.factors or {}) do
    if not used[f.name] then
      factor_rows(f.name, (f.name:gsub("_", " ")))
    end
  end
  local product = #product_parts > 1 and table.concat(product_parts, " × ") or "no multiplier applied"
  row("= score", number(hit.score) or "-", product)
  spans[#spans + 1] = { #lines - 1, 0, #"= score", "CaptainMemoExplainScore" }
  return lines, spans
end

return M
