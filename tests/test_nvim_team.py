"""The team store from a real Neovim: with CAPTAIN_MEMO_TEAM_DB set, the save dialog asks where to
save (local first), a selection saved to the team lands in the team store, and a lookup lists it
beside the local memories with its t-id; a note buffer asks the same on `:w`; without a team store
the dialog does not ask."""

from __future__ import annotations

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor
from sources_support import git

pytestmark = [requires_nvim, pytest.mark.nvim]

# Answers the "Save to:" prompt with `vim.g.captain_memo_test_store` and records every prompt shown.
ANSWER_STORE = """
vim.g.captain_memo_test_prompts = {}
vim.ui.select = function(items, opts, cb)
  local prompts = vim.g.captain_memo_test_prompts
  table.insert(prompts, opts.prompt)
  vim.g.captain_memo_test_prompts = prompts
  if opts.kind == 'captain_memo_store' then
    for i, item in ipairs(items) do
      if item == vim.g.captain_memo_test_store then return cb(item, i) end
    end
  end
  cb(items[1], 1)
end
"""


def saved_message(editor) -> str:
    editor.wait_for(
        "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
        "if n.msg:find('saved #') then return true end end end)()",
        what="the save",
    )
    return next(n["msg"] for n in editor.notifications() if "saved #" in n["msg"])


def test_a_selection_saved_to_the_team_store_and_found_by_a_lookup(tmp_path, local_embedder):
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    team_db = tmp_path / "team.db"
    env = child_env(tmp_path, CAPTAIN_MEMO_DB=str(tmp_path / "memo.db"), CAPTAIN_MEMO_TEAM_DB=f"sqlite:///{team_db}")
    editor = start_editor(tmp_path, env, cwd=repo)
    try:
        editor.lua(ANSWER_STORE)
        editor.lua("vim.g.captain_memo_test_store = 'team'")
        path = repo / "src" / "billing" / "price.py"
        editor.nvim.command(f"edit {path}")
        editor.nvim.input("3GVj:CaptainMemo save<CR>")
        message = saved_message(editor)
        assert "saved #t1 price = " in message and message.endswith("on main to the team store")
        assert "Save to:" in editor.lua("return vim.g.captain_memo_test_prompts")
        store = Store(team_db)
        memory = store.get(1)
        store.close()
        assert memory.project == "github.com/Acme/Shop" and memory.source.path == "src/billing/price.py"
        assert memory.source.origin == "editor"

        editor.lua("vim.g.captain_memo_test_results = nil")
        editor.nvim.command("CaptainMemo recall effective contract price quantity")
        lines = editor.results()
        assert any("price = self.get_effective_contract_price" in line for line in lines), lines
        preview = "\n".join(editor.lines_of("captain-memo://preview"))
        assert "#t1" in preview
    finally:
        close(editor)


def test_without_a_team_store_the_dialog_does_not_ask_where(tmp_path, local_embedder):
    repo = make_repo(tmp_path)
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(tmp_path / "memo.db")), cwd=repo)
    try:
        editor.lua(ANSWER_STORE)
        editor.nvim.command(f"edit {repo / 'src' / 'billing' / 'price.py'}")
        editor.nvim.input("3GVj:CaptainMemo save<CR>")
        message = saved_message(editor)
        assert "saved #1 " in message and "team" not in message
        assert "Save to:" not in editor.lua("return vim.g.captain_memo_test_prompts")
    finally:
        close(editor)


def test_a_note_buffer_asks_where_to_save_and_can_go_to_the_team_store(tmp_path, local_embedder):
    """`:CaptainMemo note` then `:w`: with a team store the note is saved where the user answers
    (here the team store, its buffer renamed to the t-id); cancelling saves nothing."""
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    team_db, db = tmp_path / "team.db", tmp_path / "memo.db"
    env = child_env(tmp_path, CAPTAIN_MEMO_DB=str(db), CAPTAIN_MEMO_TEAM_DB=f"sqlite:///{team_db}")
    editor = start_editor(tmp_path, env, cwd=repo)
    try:
        editor.lua(ANSWER_STORE)
        editor.nvim.command(f"edit {repo / 'src' / 'billing' / 'price.py'}")
        editor.nvim.command("CaptainMemo note")
        lines = ["# Freeze before the month-end run", "", "No deploys on the last two working days."]
        editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", lines)
        editor.lua("vim.g.captain_memo_test_store = 'team'")
        editor.nvim.command("write")
        message = saved_message(editor)
        assert "saved #t1 Freeze before the month-end run" in message and message.endswith("to the team store")
        assert "Save to:" in editor.lua("return vim.g.captain_memo_test_prompts")
        assert editor.lua("return vim.api.nvim_buf_get_name(0)") == "captain-memo://memory/t1"
        team = Store(team_db)
        memory = team.get(1)
        team.close()
        assert memory.title == "Freeze before the month-end run" and memory.project == "github.com/Acme/Shop"
        assert not db.exists() or Store(db).counts()["memories"] == 0

        editor.nvim.command("CaptainMemo note")
        editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", ["# Kept to myself", "", "a draft"])
        editor.lua(
            "vim.ui.select = function(items, opts, cb) if opts.kind == 'captain_memo_store' then cb(nil) "
            "else cb(items[1], 1) end end"
        )
        editor.nvim.command("write")
        editor.wait_for(
            "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
            "if n.msg:find('nothing was saved') then return true end end end)()",
            what="the cancelled save",
        )
        assert editor.lua("return vim.bo.modified") is True
    finally:
        close(editor)
