"""A read-only store in the editor: a real Neovim and its Python host run as the user the store is
read-only for (readonly_support.py says how the fault is made real). Lookups work and say once that
nothing is recorded; a save fails naming the permission, never damage."""

from __future__ import annotations

import os

import pytest
from nvim_support import child_env, close, requires_nvim, rplugin_manifest, start_editor
from readonly_support import (  # noqa: F401
    as_reader,
    lock,
    make_store,
    reader_home,
    reader_python,
    requires_reader,
)

pytestmark = [requires_nvim, requires_reader, pytest.mark.nvim]


def messages(editor, level: int) -> list[str]:
    return [n["msg"] for n in editor.notifications() if n["level"] == level]


def test_lookups_work_and_a_save_names_the_permission(shared_tmp, local_embedder):
    db = make_store(shared_tmp / "store", local_embedder)
    lock(db)
    home = reader_home(shared_tmp / "home")
    env = child_env(home, HOME=str(home), CAPTAIN_MEMO_DB=str(db), NVIM_RPLUGIN_MANIFEST=str(rplugin_manifest()))
    host = reader_python()
    before = db.read_bytes()
    editor = start_editor(home, env, prefix=tuple(as_reader()))
    try:
        assert editor.lua("return vim.uv.getuid()") == os.getuid()
        editor.nvim.command(f"let g:python3_host_prog = '{host}'")
        editor.nvim.command("CaptainMemo recall deploy port of service 3")
        assert any("service 3" in line for line in editor.results())
        editor.lua("vim.g.captain_memo_test_results = nil")
        editor.nvim.command("CaptainMemo recall service 4")
        editor.results()
        warnings = [m for m in messages(editor, 3) if "read-only" in m]
        assert len(warnings) == 1, editor.notifications()
        assert "recalls are not recorded" in warnings[0]
        log = (home / "xdg_state_home" / "nvim" / "captain-memo.log").read_text(encoding="utf-8")
        assert "not recorded (permission denied: this user may not write the file)" in log + warnings[0]

        editor.nvim.command("enew")
        editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'a line worth keeping'})")
        editor.nvim.command("CaptainMemo save")
        editor.wait_for(
            "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
            "if n.level == 4 then return true end end end)()",
            what="the save to fail",
        )
        errors = messages(editor, 4)
        assert len(errors) == 1, editor.notifications()
        assert "cannot write to" in errors[0] and "permission denied" in errors[0], errors
        assert "damaged" not in errors[0] and "restore a backup" not in errors[0]
    finally:
        close(editor)
    assert db.read_bytes() == before
