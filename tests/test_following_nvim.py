"""Neovim's host follows the repositories indexed into its store: a commit made beside the editor
(by an agent, a shell) is what `:CaptainMemo changes` lists first, with no command run. A real
Neovim, the real remote plugin host, the real local model and a real git repository."""

from __future__ import annotations

import sqlite3
import time

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor
from sources_support import git, write

pytestmark = [requires_nvim, pytest.mark.nvim]

WITHIN = 15.0  # seconds: stored within ~1 s of the commit; a shared 2-core machine is slower


def stored(db, sha: str) -> bool:
    # Not read-only: one (mode=ro) met "disk I/O error" while the engine truncated the WAL under it.
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute("SELECT 1 FROM memories WHERE source_key = ?", (f"commit:{sha}",)).fetchone() is not None
    finally:
        conn.close()


def test_a_commit_beside_the_editor_is_listed_without_a_command(tmp_path, local_embedder):
    from captain_memo.engine.core import Engine
    from captain_memo.sources.git_history import index_history
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    engine = Engine(Store(db), local_embedder)
    index_history(engine, repo)  # `index --git`: the store follows the repository from now on
    engine.close()
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=tmp_path)
    try:
        price = repo / "src" / "billing" / "price.py"
        editor.nvim.command(f"edit {price}")
        editor.nvim.command("CaptainMemo changes")  # the host opens the store and serves it
        editor.results()
        write(repo, "src/billing/price.py", "# prices are rounded once\n")
        git(repo, "commit", "-qam", "Round prices once, at the total")
        sha = git(repo, "rev-parse", "HEAD")
        deadline = time.monotonic() + WITHIN
        while not stored(db, sha):
            assert time.monotonic() < deadline, "the commit was not stored by the editor's host"
            time.sleep(0.05)
        editor.lua("vim.g.captain_memo_test_results = nil")
        editor.nvim.command("CaptainMemo changes")
        rows = [line for line in editor.results() if "obs" in line]
        assert "Round prices once" in rows[0], rows
    finally:
        close(editor)
