-- Assertions for the Lua unit tests.
local H = {}

function H.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(("%sexpected %s, got %s"):format(what and (what .. ": ") or "", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function H.truthy(value, what)
  if not value then
    error((what or "expected a true value") .. ", got " .. vim.inspect(value), 2)
  end
end

function H.raises(fn, pattern)
  local ok, err = pcall(fn)
  if ok then
    error("expected an error matching " .. pattern, 2)
  end
  if not tostring(err):find(pattern) then
    error(("expected an error matching %q, got %q"):format(pattern, tostring(err)), 2)
  end
end

---The 0-based column of the `n`-th occurrence of `needle` in `line` plus `offset`.
function H.col(line, needle, offset)
  local s = line:find(needle, 1, true)
  assert(s, needle .. " not in " .. line)
  return s - 1 + (offset or 0)
end

return H
