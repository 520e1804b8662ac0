""":checkhealth captain_memo on a working setup and on broken ones (real Neovim, real Python)."""

from __future__ import annotations

import re

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]


def checkhealth(editor) -> str:
    editor.nvim.command("checkhealth captain_memo")
    return "\n".join(editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))


def test_health_reports_ok_on_a_working_setup(tmp_path):
    repo = make_repo(tmp_path)
    from captain_memo.store import Store

    db = tmp_path / "memo.db"
    Store(db).close()
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=repo, observe=False)
    try:
        editor.nvim.command(f"edit {repo / 'src' / 'billing' / 'price.py'}")
        report = checkhealth(editor)
    finally:
        close(editor)
    assert "ERROR" not in report and "WARNING" not in report, report
    for item in (
        "neovim",
        "python host",
        "remote plugin",
        "pynvim",
        "package",
        "sqlite",
        "sqlite-vec",
        "fts5",
        "database",
        "embedding",
        "repository",
    ):
        assert re.search(rf"OK {re.escape(item)}: ", report), f"{item} missing from\n{report}"
    assert f"{db} is writable" in report
    assert re.search(rf"OK repository: {re.escape(str(repo))} on main", report), report


def test_health_names_the_failing_item(tmp_path):
    bad = tmp_path / "memo.db"
    bad.write_bytes(b"not a database at all " * 200)
    env = child_env(
        tmp_path,
        CAPTAIN_MEMO_DB=str(bad),
        CAPTAIN_MEMO_EMBED_PROVIDER="ollama",
        CAPTAIN_MEMO_EMBED_URL="http://127.0.0.1:9",
    )
    editor = start_editor(tmp_path, env, cwd=tmp_path, observe=False)
    try:
        report = checkhealth(editor)
    finally:
        close(editor)
    assert re.search(r"ERROR database: .*not a usable", report), report
    assert re.search(r"WARNING embedding: .*127\.0\.0\.1:9", report), report
    assert re.search(r"OK sqlite-vec: ", report) and re.search(r"OK repository: not inside a git repository", report), (
        report
    )


def test_health_names_a_missing_python_package(tmp_path):
    """A host program without captain_memo (the system Python) is named, with what to install."""
    import shutil
    import subprocess

    python = shutil.which("python3", path="/usr/bin:/bin")
    if (
        not python
        or subprocess.run([python, "-c", "import captain_memo"], capture_output=True, cwd=tmp_path).returncode == 0
    ):
        pytest.skip("needs a Python without captain_memo")
    editor = start_editor(tmp_path, cwd=tmp_path, observe=False)
    try:
        editor.nvim.command(f"let g:python3_host_prog = '{python}'")
        report = checkhealth(editor)
    finally:
        close(editor)
    assert re.search(r"ERROR (pynvim|package): ", report), report
