"""A read-only store in the editor: a real Neovim and its Python host run as the user the store is
read-only for (readonly_support.py says how the fault is made real). Lookups work and say once that
nothing is recorded; a save fails naming the permission, never damage."""

from __future__ import annotations

import os
import shutil

import pytest

from nvim_support import child_env, close, rplugin_manifest, requires_nvim, start_editor
from readonly_support import (AS_ROOT, NOBODY, as_reader, lock, make_store, reader_home, reader_python,  # noqa: F401
                              requires_reader, shared_tmp)

pytestmark = [requires_nvim, requires_reader, pytest.mark.nvim]


def messages(editor, level: int) -> list[str]:
    return [n["msg"] for n in editor.notifications() if n["level"] == level]


def test_lookups_work_and_a_save_names_the_permission(shared_tmp, local_embedder):
    db = make_store(shared_tmp / "store", local_embedder)
    lock(db)
    home = reader_home(shared_tmp / "home")
    # The reading user cannot open pytest's manifest folder: give it its own copy.
    manifest = home / "rplugin.vim"
    shutil.copy(rplugin_manifest(), manifest)
    env = child_env(home, HOME=str(home), CAPTAIN_MEMO_DB=str(db), NVIM_RPLUGIN_MANIFEST=str(manifest))
    host = reader_python(home)
    if host is None:
        pytest.skip("no Python installed that the reading user can start")
    if AS_ROOT:
        os.chown(manifest, NOBODY, NOBODY)
    before = db.read_bytes()
    editor = start_editor(home, env, prefix=tuple(as_reader()))
    try:
        assert editor.lua("return vim.uv.getuid()") == (NOBODY if AS_ROOT else os.getuid())
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
        editor.wait_for("(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
                        "if n.level == 4 then return true end end end)()", what="the save to fail")
        errors = messages(editor, 4)
        assert len(errors) == 1, editor.notifications()
        assert "cannot write to" in errors[0] and "permission denied" in errors[0], errors
        assert "damaged" not in errors[0] and "restore a backup" not in errors[0]
    finally:
        close(editor)
    assert db.read_bytes() == before
