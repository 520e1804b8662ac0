-- Token extraction under the cursor (lua/captain_memo/token.lua).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local token = require("captain_memo.token")
local T = {}
local function test(name, fn)
  T[#T + 1] = { name, fn }
end

local CALL = "        price = self.get_effective_contract_price(contract)"

test("dotted chain from its first byte", function()
  H.eq(token.at(CALL, H.col(CALL, "self")), "self.get_effective_contract_price")
end)

test("dotted chain from its last byte", function()
  H.eq(token.at(CALL, H.col(CALL, "price(", 4)), "self.get_effective_contract_price")
end)

test("dotted chain from the dot and from inside a word", function()
  H.eq(token.at(CALL, H.col(CALL, ".get")), "self.get_effective_contract_price")
  H.eq(token.at(CALL, H.col(CALL, "contract_price", 3)), "self.get_effective_contract_price")
end)

test("token ends at a parenthesis: the argument is its own token", function()
  H.eq(token.at(CALL, H.col(CALL, "(contract", 1)), "contract")
end)

test("on the parenthesis right after a name: that name, the whole of it", function()
  H.eq(token.at(CALL, H.col(CALL, "(contract")), "self.get_effective_contract_price")
  local line = "class Base(abc.ABC):"
  H.eq(token.at(line, H.col(line, "):")), "abc.ABC")
  H.eq(token.at(line, H.col(line, "(abc")), "Base")
end)

test("leading indentation gives no token, not the first word after it", function()
  for col = 0, H.col(CALL, "price") - 1 do
    H.eq(token.at(CALL, col), nil, "column " .. col)
  end
  H.eq(token.at("\t\treturn x", 1), nil)
end)

test("blank space and punctuation not right after a token give none", function()
  H.eq(token.at(CALL, H.col(CALL, "= ")), nil)
  H.eq(token.at(CALL, H.col(CALL, "= ") + 1), nil)
  H.eq(token.at("x  =  (( y", H.col("x  =  (( y", "( y")), nil)
  H.eq(token.at("f(a))", 4), nil, "a closing parenthesis after another")
  H.eq(token.at(CALL, #CALL), nil)
  H.eq(token.at("", 0), nil)
  H.eq(token.at("   ", 1), nil)
end)

test("just past a token: the space after it, or the end of the line in Insert mode", function()
  H.eq(token.at(CALL, H.col(CALL, " = ")), "price")
  local line = "    value = compute_total"
  H.eq(token.at(line, #line), "compute_total")
  H.eq(token.at(line, #line + 1), nil)
  H.eq(token.at(CALL, #CALL - 1), "contract", "the closing parenthesis right after the argument")
end)

test("token at the very start and the very end of a line", function()
  local line = "useEffect(() => x)  tail.end"
  H.eq(token.at(line, 0), "useEffect")
  H.eq(token.at(line, #line - 1), "tail.end")
end)

test("paths, with hyphens kept inside them", function()
  local line = "see src/billing/price.py and doc/captain-memo.txt, ./run.sh or ../up/x.lua"
  H.eq(token.at(line, H.col(line, "billing")), "src/billing/price.py")
  H.eq(token.at(line, H.col(line, "memo")), "doc/captain-memo.txt")
  H.eq(token.at(line, H.col(line, "run")), "./run.sh")
  H.eq(token.at(line, H.col(line, "up/")), "../up/x.lua")
end)

test("plain hyphenated words split at the hyphen", function()
  local line = "a well-known fact"
  H.eq(token.at(line, H.col(line, "known")), "known")
  H.eq(token.at(line, H.col(line, "well")), "well")
end)

test("scope and arrow operators join", function()
  local line = "std::vector<int> v; node->next->value;"
  H.eq(token.at(line, H.col(line, "vector")), "std::vector")
  H.eq(token.at(line, H.col(line, "next")), "node->next->value")
end)

test("a sentence-final period and dangling joiners are dropped", function()
  local line = "Call billing.total. Then ::x and y->"
  H.eq(token.at(line, H.col(line, "total")), "billing.total")
  H.eq(token.at(line, H.col(line, "total.", 5)), "billing.total")
  H.eq(token.at(line, H.col(line, "::x", 2)), "x")
  H.eq(token.at(line, H.col(line, "y->")), "y")
end)

test("a leading method-chain dot is dropped", function()
  local line = "  .then(done)"
  H.eq(token.at(line, H.col(line, "then")), "then")
end)

test("camelCase and UTF-8 identifiers stay whole", function()
  local line = "const [s, setState] = useState(größe_wert)"
  H.eq(token.at(line, H.col(line, "State]") - 2), "setState")
  H.eq(token.at(line, H.col(line, "ße")), "größe_wert")
end)

test("the query drops a receiver", function()
  H.eq(token.query("self.get_effective_contract_price"), "get_effective_contract_price")
  H.eq(token.query("this.props"), "props")
  H.eq(token.query("this->size"), "size")
  H.eq(token.query("self."), "self.")
  H.eq(token.query("selfish.x"), "selfish.x")
  H.eq(token.query("src/billing/price.py"), "src/billing/price.py")
end)

test("code-shaped like the ranker's rule", function()
  for _, yes in ipairs({ "get_price", "a.b", "src/x", "useEffect", "x2Y" }) do
    H.truthy(token.is_code_shaped(yes), yes .. " is code-shaped")
  end
  for _, no in ipairs({ "HTTP", "TODO", "plain", "Price", "_", "", "std::vector" }) do
    H.eq(token.is_code_shaped(no), false, no)
  end
  H.eq(token.is_code_shaped(nil), false)
end)

test("under the cursor: the token on or right before it, never the next word", function()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { CALL, "just   words here", "abc.ABC(" })
  vim.api.nvim_win_set_cursor(0, { 1, H.col(CALL, "effective") })
  H.eq(token.under_cursor(), "self.get_effective_contract_price")
  -- Vim's <cword> would take the next word here (`self` from the indentation, `words` here).
  vim.api.nvim_win_set_cursor(0, { 1, 2 })
  H.eq(token.under_cursor(), nil)
  vim.api.nvim_win_set_cursor(0, { 2, H.col("just   words", "   ", 1) })
  H.eq(token.under_cursor(), nil)
  vim.api.nvim_win_set_cursor(0, { 3, H.col("abc.ABC(", "(") })
  H.eq(token.under_cursor(), "abc.ABC")
end)

test("selection: charwise and linewise, from the marks", function()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "one two three", "four five", "six" })
  vim.cmd("normal! 1G04lvjl\27")
  H.eq(token.selection(), { text = "two three\nfour f", line_start = 1, line_end = 2 })
  vim.cmd("normal! 2GVj\27")
  H.eq(token.selection(), { text = "four five\nsix", line_start = 2, line_end = 3 })
end)

return T
