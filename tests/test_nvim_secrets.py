"""Credentials in what is saved from Neovim: found by the library before anything is stored, and
the user chooses (vim.ui.select answered by the test as a user would); the `secrets` option
decides without asking. Real Neovim, the real remote plugin host and the local model."""

from __future__ import annotations

import re

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]
TOKEN = "ghp_" + "a1B2c3D4e5" * 4

# Answers the credentials question from a queue and records what it was asked; other questions
# (the kind) keep the shared answer, the first item.
ANSWER_SECRETS = """
vim.g.test_secret_answers = ...
vim.g.test_secret_asked = {}
local plain = vim.ui.select
vim.ui.select = function(items, opts, cb)
  if opts.kind ~= 'captain_memo_secrets' then return plain(items, opts, cb) end
  local asked = vim.g.test_secret_asked
  table.insert(asked, { prompt = opts.prompt, items = items })
  vim.g.test_secret_asked = asked
  local answers = vim.g.test_secret_answers
  local answer = table.remove(answers, 1)
  vim.g.test_secret_answers = answers
  cb(answer)
end
"""


def notes_matching(editor, pattern: str, count: int = 1) -> list[str]:
    editor.wait_for(
        f"(function() local n = 0 for _, x in ipairs(vim.g.captain_memo_test_notes) do "
        f"if x.msg:find({pattern!r}) then n = n + 1 end end return n >= {count} end)()",
        what=f"a notification matching {pattern!r}",
    )
    return [n["msg"] for n in editor.notifications() if re.search(pattern, n["msg"])]


def memories(db):
    from captain_memo.store import Store

    if not db.exists():
        return []
    store = Store(db)
    try:
        return store.list_memories()
    finally:
        store.close()


def test_a_selection_with_a_token_is_held_until_the_user_chooses(tmp_path):
    repo = make_repo(tmp_path)
    config = repo / "config.py"
    config.write_text(f'DATABASE = "postgres://db/shop"\nGITHUB_TOKEN = "{TOKEN}"\nTIMEOUT = 30\n')
    db = tmp_path / "memo.db"
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=repo)
    try:
        editor.lua(ANSWER_SECRETS, ["cancel", "save redacted"])
        editor.nvim.command(f"edit {config}")
        editor.nvim.input("ggVG:CaptainMemo save<CR>")
        assert notes_matching(editor, "nothing was saved") == ["Captain Memo: nothing was saved"]
        assert memories(db) == []
        [asked] = editor.lua("return vim.g.test_secret_asked")
        assert asked["items"] == ["save anyway", "save redacted", "cancel"]
        assert "line 2: GitHub token (ghp_…)" in asked["prompt"] and TOKEN not in asked["prompt"]

        editor.nvim.input("ggVG:CaptainMemo save<CR>")
        [saved] = notes_matching(editor, "saved #")
        assert saved.endswith("; 1 credential(s) redacted"), saved
        [memory] = memories(db)
        assert TOKEN not in memory.body and 'GITHUB_TOKEN = "[REDACTED GitHub token]"' in memory.body
        assert (memory.source.path, memory.source.line_start, memory.source.line_end) == ("config.py", 1, 3)
    finally:
        close(editor)


def test_a_note_is_saved_anyway_on_request_and_redacted_by_the_option(tmp_path):
    db = tmp_path / "memo.db"
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)))
    secret_note = ["# Staging box", "", 'password = "hunter2-correct-horse" until the rotation']
    try:
        editor.lua(ANSWER_SECRETS, ["save anyway"])
        editor.nvim.command("CaptainMemo note")
        editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", secret_note)
        editor.nvim.command("write")
        [warning] = notes_matching(editor, "saved #")
        assert "credentials stored as they are: line 1: password or key assignment (hunt…)" in warning
        assert [n["level"] for n in editor.notifications() if n["msg"] == warning] == [3]  # WARN
        assert editor.lua("return vim.bo.modified") is False
        [kept] = memories(db)
        assert "hunter2-correct-horse" in kept.body

        editor.lua("require('captain_memo').setup({ secrets = 'redact' })")
        editor.nvim.command("CaptainMemo note")
        editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", [*secret_note[:2], "second " + secret_note[2]])
        editor.nvim.command("write")
        notes_matching(editor, "saved #", count=2)
        assert len(editor.lua("return vim.g.test_secret_asked")) == 1, "the option decides: no second question"
        redacted = next(m for m in memories(db) if m.id != kept.id)
        assert "hunter2" not in redacted.body and "[REDACTED password or key assignment]" in redacted.body
    finally:
        close(editor)
