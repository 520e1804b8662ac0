---:checkhealth captain-memo (or captain_memo, the module's name)
---
---The library's checks run in a separate Python process started from the configured host program,
---so a broken remote plugin host is reported rather than hidden behind it.
local M = {}

local SCRIPT = [[
import json, sys
sys.path = [p for p in sys.path if p != ""]  # the package the host imports, not one in Neovim's folder
try:
    import pynvim
except ImportError as exc:
    print(json.dumps([{"item": "pynvim", "status": "error", "detail": str(exc)}]))
    sys.exit(0)
version = getattr(pynvim, "__version__", None) or ".".join(str(p) for p in pynvim.VERSION[:3])
print(json.dumps([{"item": "pynvim", "status": "ok", "detail": "pynvim " + version + " (" + sys.executable + ")"}]))
try:
    from captain_memo.editor import health_main
except Exception as exc:
    print(json.dumps([{"item": "package", "status": "error",
                       "detail": "captain_memo cannot be imported: %s; run :CaptainMemo build" % exc}]))
    sys.exit(0)
sys.exit(health_main(sys.argv[1:]))
]]

local function report(item, status, detail)
  local text = item .. ": " .. detail
  if status == "ok" then
    vim.health.ok(text)
  elseif status == "warn" then
    vim.health.warn(text)
  else
    vim.health.error(text)
  end
end

local function settings_json()
  return vim.json.encode(require("captain_memo.bridge").settings())
end

---The file whose repository is reported: the buffer :checkhealth was run from.
local function context_file()
  local alt = vim.fn.bufnr("#")
  for _, buf in ipairs({ alt, vim.api.nvim_get_current_buf() }) do
    if buf > 0 and vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "" then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" then
        return vim.fn.fnamemodify(name, ":p")
      end
    end
  end
  return vim.fn.getcwd()
end

function M.check()
  vim.health.start("Captain Memo")
  -- Both names are found by a plain :checkhealth; each run has its own health:// buffer, so a
  -- mark on it keeps the second name from starting Python and probing everything again.
  local buf = vim.api.nvim_get_current_buf()
  if vim.b[buf].captain_memo_checked then
    vim.health.info("captain-memo and captain_memo name one plugin: its checks are above")
    return
  end
  vim.b[buf].captain_memo_checked = true
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    report("neovim", "ok", version)
  else
    report("neovim", "error", version .. ": Captain Memo needs 0.10 or newer")
  end

  local host = require("captain_memo.host")
  local prog, how = host.python()
  if not prog or vim.fn.executable(prog) ~= 1 then
    report("python host", "error", ("%s (%s): run :CaptainMemo build to make the plugin's own environment"):format(tostring(prog), how))
    return
  end
  local built = vim.fn.executable(require("captain_memo.install").venv_python()) == 1
  local own = built and "" or "; the plugin's own environment is not built: :CaptainMemo build"
  report("python host", "ok", ("%s (%s%s)"):format(prog, how, own))

  if vim.fn.filereadable(host.plugin_file()) == 1 then
    report("remote plugin", "ok", host.plugin_file() .. ", hosted by the plugin itself (no :UpdateRemotePlugins needed)")
  else
    report("remote plugin", "error", host.plugin_file() .. " is missing: the plugin's folder is incomplete")
  end

  local done = vim.system({ prog, "-c", SCRIPT, settings_json(), context_file() }, { text = true }):wait(60000)
  local items = {}
  for line in vim.gsplit(done.stdout or "", "\n", { trimempty = true }) do
    local ok, decoded = pcall(vim.json.decode, line)
    if ok and type(decoded) == "table" then
      vim.list_extend(items, decoded)
    end
  end
  if #items == 0 then
    local why = vim.trim(done.stderr or "")
    report("python", "error", ("%s failed (exit %s): %s"):format(prog, tostring(done.code), why ~= "" and why or "no output"))
    return
  end
  for _, item in ipairs(items) do
    report(item.item, item.status, item.detail)
  end
  report("log file", "ok", require("captain_memo.log").path())
end

return M
