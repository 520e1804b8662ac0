---`:CaptainMemo {subcommand}`: one command, its subcommands and their completion.
local M = {}

local function memo()
  return require("captain_memo")
end

---name -> { run = function(args, cmd), complete = list|nil, desc }
M.subcommands = {
  lookup = {
    desc = "look up the token under the cursor (or the selection)",
    run = function(_, cmd)
      memo().lookup({ range = cmd.range })
    end,
  },
  recall = {
    desc = "recall with a free-text query (asks when none is given)",
    run = function(args)
      memo().recall(table.concat(args, " "))
    end,
  },
  changes = {
    desc = "what changed in this file lately: the newest observations touching it",
    run = function()
      memo().changes()
    end,
  },
  save = {
    desc = "save the selected lines as a memory",
    run = function(_, cmd)
      memo().save({ range = cmd.range, line1 = cmd.line1, line2 = cmd.line2 })
    end,
  },
  note = {
    desc = "write a note in a scratch buffer; :w saves it",
    complete = { "memory", "skill", "observation" },
    run = function(args)
      memo().note(args[1])
    end,
  },
  explain = {
    desc = "toggle the explanation of the selected result",
    run = function()
      local ui = require("captain_memo.ui")
      if not ui.is_open() then
        require("captain_memo.log").warn("no results are open; run a lookup or recall first")
        return
      end
      ui.toggle_explain()
    end,
  },
  ambient = {
    desc = "turn the ambient hint on, off or toggle it",
    complete = { "on", "off", "toggle" },
    run = function(args)
      local ambient = require("captain_memo.ambient")
      local want = args[1] or "toggle"
      if want == "toggle" then
        ambient.configure(not ambient.enabled)
      elseif want == "on" or want == "off" then
        ambient.configure(want == "on")
      else
        require("captain_memo.log").error(("ambient takes on, off or toggle, not %q"):format(want))
        return
      end
      require("captain_memo.log").info("ambient hint " .. (ambient.enabled and "on" or "off"))
    end,
  },
  build = {
    desc = "make or update the plugin's own Python environment (in the background)",
    run = function()
      require("captain_memo.build").in_background()
    end,
  },
  log = {
    desc = "open the log file",
    run = function()
      vim.cmd.split(vim.fn.fnameescape(require("captain_memo.log").path()))
    end,
  },
}

---Run `:CaptainMemo` with the arguments Neovim passed (nvim_create_user_command's table).
---@param cmd table
function M.run(cmd)
  local args = vim.deepcopy(cmd.fargs)
  local name = table.remove(args, 1) or "lookup"
  local sub = M.subcommands[name]
  if not sub then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    require("captain_memo.log").error(("unknown subcommand %q; use one of %s"):format(name, table.concat(names, ", ")))
    return
  end
  sub.run(args, cmd)
end

---Completion of `:CaptainMemo`: subcommands, then a subcommand's arguments.
function M.complete(arglead, cmdline, _)
  local rest = cmdline:gsub("^.-CaptainMemo!?%s*", "")
  local words = vim.split(rest, "%s+", { trimempty = false })
  local candidates
  if #words <= 1 then
    candidates = vim.tbl_keys(M.subcommands)
  else
    local sub = M.subcommands[words[1]]
    candidates = sub and sub.complete or {}
  end
  table.sort(candidates)
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, candidates)
end

return M
