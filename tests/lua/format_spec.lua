-- Lines of the results window, its footer and the explanation (lua/captain_memo/format.lua), laid
-- out from the texts the host computes (`shown`, captain_memo/presentation/window.py; the hits the
-- host really sends are checked in tests/test_nvim_lua.py).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local format = require("captain_memo.format")
local T = {}
local function test(name, fn)
  T[#T + 1] = { name, fn }
end

local function hit(over)
  return vim.tbl_deep_extend("force", {
    rank = 1, id = 12, kind = "memory", title = "Contract price entry point", text = "get_effective_contract_price…",
    score = 1.278696, age_days = 3.2, branch = "main",
    source = { path = "src/billing/price.py", line_start = 6, line_end = 8, label = "src/billing/price.py:6-8" },
    explain = {
      vector = 0.848932, keyword = 1.0, bm25 = 0.000002, fused = 0.894252,
      factors = { { name = "identifier", value = 1.3, detail = "get_effective_contract_price" },
                  { name = "branch", value = 1.1, detail = "main" } },
      product = 1.278696,
    },
    shown = {
      age = "3d", title = "Contract price entry point", branch = "main", where = "src/billing/price.py:6-8",
      meta = "memory · #12 · main · src/billing/price.py:6-8 · 3d", superseded = "",
      body = { "get_effective_contract_price…" }, details = { "get_effective_contract_price", "main" },
    },
  }, over or {})
end

test("a results line holds rank, score, kind, title, age, branch and source", function()
  local line, spans = format.hit_line(hit(), 120)
  H.truthy(line:find("^ 1  1%.279  mem    Contract price entry point"), line)
  H.truthy(line:find("3d  main  src/billing/price%.py:6%-8$"), line)
  H.eq(vim.fn.strdisplaywidth(line), 120)
  local groups = {}
  for _, s in ipairs(spans) do
    groups[#groups + 1] = s[3]
    H.eq(line:sub(s[1] + 1, s[2]) ~= "", true, "span " .. s[3] .. " covers text")
  end
  H.eq(groups, { "CaptainMemoRank", "CaptainMemoScore", "CaptainMemoKind", "CaptainMemoTitle",
                 "CaptainMemoAge", "CaptainMemoBranch", "CaptainMemoSource" })
end)

test("a narrow window gives up the source, then the branch, before the title", function()
  local line = format.hit_line(hit(), 60)
  H.truthy(line:find("Contract price entry point  +3d  main$"), line)
  H.eq(vim.fn.strdisplaywidth(line), 60)
  line = format.hit_line(hit({ shown = { branch = "feature/a-very-long-branch-name" } }), 60)
  H.truthy(line:find("Contract price entry point  +3d$"), line)
  local long = format.hit_line(hit({ shown = { title = string.rep("é", 200) } }), 60)
  H.truthy(vim.fn.strdisplaywidth(long) <= 60, long)
  H.truthy(long:find("…", 1, true), "a cut title ends with an ellipsis")
end)

test("a superseded hit's title uses its own highlight", function()
  local _, spans = format.hit_line(hit({ superseded_by = 14 }), 120)
  H.eq(spans[4][3], "CaptainMemoSuperseded")
end)

test("the footer is the host's line, in the warning colour when something did not answer", function()
  local footer = "profile v2 · legs: vector + keyword · 12 ms"
  local text, warn = format.footer({ footer = footer, warning = "" })
  H.eq(text, " " .. footer .. " ")
  H.eq(warn, false)
  footer = "profile v2 · legs: keyword · failed: vector leg · 3 ms"
  text, warn = format.footer({ footer = footer, warning = "only the keyword leg answered (vector leg failed: down)" })
  H.eq(text, " " .. footer .. " ")
  H.eq(warn, true)
end)

test("a team hit's explanation names its store and its team id", function()
  local lines = format.explanation(hit({ id = "t7", store = "team" }), "v3")
  H.truthy(lines[1]:find("(#t7, team store)", 1, true), lines[1])
  H.eq((format.explanation(hit(), "v3"))[1]:find("team", 1, true), nil)
end)

test("the explanation lists every multiplier and multiplies out to the score", function()
  local lines = format.explanation(hit(), "v2")
  local text = table.concat(lines, "\n")
  for _, label in ipairs({ "vector similarity", "keyword score", "fused", "× identifier", "× rare token",
                           "× branch", "× superseded", "× recency", "× tide", "= score" }) do
    H.truthy(text:find(label, 1, true), label .. " is listed")
  end
  H.truthy(text:find("× branch%s+1%.1000%s+main"), text)
  H.truthy(text:find("× tide%s+1%s+not applied"), text)
  local product = 1
  for _, line in ipairs(lines) do
    local value = line:match("^fused%s+([%d.]+)") or line:match("^× [%a ]-%s+([%d.]+)")
    if value then
      product = product * tonumber(value)
    end
  end
  local score = tonumber(text:match("= score%s+([%d.]+)"))
  H.truthy(math.abs(product - score) < 1e-3, ("product %f, score %f"):format(product, score))
end)

test("with no multiplier the score row says so rather than repeat the fused score", function()
  local bare = hit({ score = 0.308 })
  bare.explain.factors, bare.explain.fused = {}, 0.308
  local last = format.explanation(bare, "v3")
  last = last[#last]
  H.truthy(last:find("no multiplier applied", 1, true), last)
  H.eq(select(2, last:gsub("0%.3080", "")), 1, last)
end)

test("a hit's preview shows its heading path, its header line, a superseded mark and its lines", function()
  local h = hit({
    id = "t8", store = "team", author = "alice",
    chunk = { title = "Guide > Fixtures > tmp_path_factory", label = "doc/guide.md:33-35",
              snippet = "More.", line_start = 33, line_end = 35 },
    shown = { title = "Guide > Fixtures > tmp_path_factory", where = "doc/guide.md:33-35",
              meta = "memory · #t8 · main · doc/guide.md:33-35 · 3d · team, by alice",
              superseded = "superseded by #t9", body = { "Return a TempPathFactory.", "More." } },
  })
  local lines = format.preview(h)
  H.eq(lines, { "Guide > Fixtures > tmp_path_factory", "memory · #t8 · main · doc/guide.md:33-35 · 3d · team, by alice",
                "superseded by #t9", "", "Return a TempPathFactory.", "More." })
  H.eq(format.preview_match(h, lines), 6)
  local line = format.hit_line(h, 120)
  H.truthy(line:find("Guide > Fixtures > tmp_path_factory", 1, true) and line:find("doc/guide.md:33-35", 1, true), line)
end)

test("the fused row says when a chunk was weighed as source code, and only then", function()
  local code = format.explanation(hit({ explain = { code_vector_weight = 0.85 } }), "v3")
  H.truthy(code[4]:find("source code: vector ×0.85 + keyword ×0.15, profile v3", 1, true), code[4])
  for _, absent in ipairs({ vim.NIL, nil }) do
    local prose = format.explanation(hit({ explain = { code_vector_weight = absent } }), "v3")
    H.eq(prose[4]:find("source code", 1, true), nil, prose[4])
  end
end)

test("a leg that did not find the hit is shown as absent, not zero", function()
  local h = hit()
  h.explain.vector = nil
  local lines = format.explanation(h, "v2")
  H.truthy(lines[2]:find("not found by the vector leg", 1, true), lines[2])
end)

return T
