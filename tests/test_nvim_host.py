"""The Python host the plugin starts itself: which Python, what a user hears when it cannot run,
and a host killed for real is started again by the next request (real Neovim, real processes)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest
from nvim_support import child_env, close, requires_nvim, start_editor
from test_nvim_lookup import shop  # noqa: F401 - the same repository and notes

pytestmark = [requires_nvim, pytest.mark.nvim]


def test_a_host_python_without_pynvim_is_named_with_the_fix(tmp_path):
    """The plugin's own environment is not built and g:python3_host_prog names a Python without
    pynvim: the request fails with one line naming that Python, why it was chosen, and the fix."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if not python or subprocess.run([python, "-c", "import pynvim"], capture_output=True).returncode == 0:
        pytest.skip("needs a Python without pynvim")
    editor = start_editor(tmp_path, cwd=tmp_path)
    try:
        editor.nvim.command(f"let g:python3_host_prog = '{python}'")
        editor.nvim.command("CaptainMemo recall rounding")
        editor.wait_for(
            "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
            "if n.msg:find('host stopped', 1, true) then return true end end end)()",
            what="the host's failure",
        )
        said = [n["msg"] for n in editor.notifications() if "host stopped" in n["msg"]]
    finally:
        close(editor)
    assert len(said) == 1, said
    assert f"{python} (g:python3_host_prog): it has no pynvim; run :CaptainMemo build" in said[0], said


def test_a_killed_host_is_started_again_by_the_next_request(shop):  # noqa: F811 - the fixture imported above
    tmp = shop["tmp"]
    editor = start_editor(tmp, child_env(tmp, CAPTAIN_MEMO_DB=str(shop["db"])), cwd=shop["repo"])
    try:
        editor.nvim.command("CaptainMemo recall rounding money")
        assert any("Rounding money" in line for line in editor.results())
        pid = editor.lua("return vim.fn.jobpid(require('captain_memo.host').job())")
        os.kill(pid, signal.SIGKILL)
        editor.wait_for("require('captain_memo.host').job() == nil", what="the host's exit to be seen")
        editor.lua("vim.g.captain_memo_test_results = nil")
        editor.nvim.command("CaptainMemo recall contract price")
        assert any("Contract price entry point" in line for line in editor.results())
        again = editor.lua("return vim.fn.jobpid(require('captain_memo.host').job())")
        stopped = [n["msg"] for n in editor.notifications() if "host stopped" in n["msg"]]
    finally:
        close(editor)
    assert again != pid
    assert stopped == [], "a host that dies with nothing pending is only logged, not announced"


def test_build_without_a_python_says_what_it_needs_and_what_it_found(tmp_path):
    """:CaptainMemo build on a machine with no Python on PATH: one error naming the need."""
    empty = tmp_path / "no-python"
    empty.mkdir()
    editor = start_editor(tmp_path, child_env(tmp_path, PATH=str(empty)), cwd=tmp_path)
    try:
        editor.nvim.command("unlet g:python3_host_prog")  # the test editors set it; a new user has none
        editor.nvim.command("CaptainMemo build")
        editor.wait_for(
            "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
            "if n.level == vim.log.levels.ERROR then return true end end end)()",
            what="the build's error",
        )
        errors = [n["msg"] for n in editor.notifications() if n["level"] == 4]
    finally:
        close(editor)
    assert len(errors) == 1, errors
    assert errors[0].startswith("Captain Memo: building needs Python 3.11 or newer; found no python3 or python on PATH")
    assert not (tmp_path / "xdg_data_home" / "nvim" / "captain-memo" / "venv").exists()
