"""`captain-memo mcp` started without a client: stdin at its end at once is a session that ended
(status 0, nothing said), and stdin or stdout not open at all is one line saying so, never a
traceback. Real processes, their descriptors closed by a real shell."""

from __future__ import annotations

import os
import subprocess

import pytest
from mcp_support import server_command

pytestmark = pytest.mark.mcp


def mcp_with(redirections: str, tmp_path) -> subprocess.CompletedProcess:
    """``captain-memo mcp`` run by ``sh`` with ``redirections`` applied to it (``0<&-``, ...)."""
    command, args = server_command()
    script = f'exec "$@" {redirections}'
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db")}
    return subprocess.run(
        ["sh", "-c", script, "sh", command, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )


def test_stdin_at_its_end_at_once_ends_quietly(tmp_path):
    done = mcp_with("< /dev/null", tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (tmp_path / "memo.db").exists(), "a session that asked nothing creates no store"


@pytest.mark.parametrize("closed, named", [("0<&-", "stdin"), ("< /dev/null 1>&-", "stdout")])
def test_stdin_or_stdout_not_open_is_one_line_saying_so(tmp_path, closed, named):
    done = mcp_with(closed, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("captain-memo: mcp: ") and f"{named} is not open" in line, line
    assert done.stdout == ""
