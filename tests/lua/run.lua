-- A small runner for the Lua unit tests: `nvim -l tests/lua/run.lua SPEC.lua ...`.
-- Each spec file returns a list of { name, function } run in order; a failing assertion raises.
-- Prints one PASS/FAIL line per test and exits non-zero when any failed (or none ran).
local failed, passed = 0, 0
for _, file in ipairs(arg) do
  for _, case in ipairs(dofile(file)) do
    local name, fn = case[1], case[2]
    local ok, err = xpcall(fn, debug.traceback)
    if ok then
      passed = passed + 1
      io.stdout:write("PASS ", name, "\n")
    else
      failed = failed + 1
      io.stdout:write("FAIL ", name, "\n", tostring(err), "\n")
    end
  end
end
io.stdout:write(("%d passed, %d failed\n"):format(passed, failed))
os.exit(failed == 0 and passed > 0 and 0 or 1)
