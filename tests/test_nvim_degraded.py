"""With the embedding endpoint down, a lookup still answers from the keyword leg and the footer
says so in the warning colour (a real closed port on 127.0.0.1, the real HTTP provider)."""

from __future__ import annotations

import socket

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_lookup_with_the_embedding_endpoint_down(tmp_path, monkeypatch):
    """#5: keyword results and a footer warning; no error notification."""
    from captain_memo.base.git_context import git_context
    from captain_memo.config import embed_config
    from captain_memo.embeddings import make_embedder
    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    url = f"http://127.0.0.1:{closed_port()}"
    down = {"CAPTAIN_MEMO_EMBED_PROVIDER": "ollama", "CAPTAIN_MEMO_EMBED_URL": url}
    for name, value in down.items():
        monkeypatch.setenv(name, value)
    repo = make_repo(tmp_path)
    project = git_context(repo).project
    db = tmp_path / "memo.db"
    # Stored while the endpoint is down: keyword-indexed now, vectors filled in later by backfill.
    engine = Engine(Store(db), make_embedder(embed_config()))
    engine.remember_many(
        [
            NewMemory(
                body="get_effective_contract_price applies the contract discount.",
                title="Contract price",
                project=project,
            ),
            NewMemory(body="Round to two decimal places only at the end.", title="Rounding", project=project),
        ]
    )
    engine.close()

    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db), **down), cwd=repo)
    try:
        path = repo / "src" / "billing" / "price.py"
        editor.nvim.command(f"edit {path}")
        line = path.read_text().splitlines()[2]
        editor.lua("vim.api.nvim_win_set_cursor(0, {3, ...})", line.index("contract_price"))
        editor.nvim.command("CaptainMemo lookup")
        # The HTTP provider retries a refused connection for ~0.75 s: long enough to show the wait.
        editor.wait_for(
            "(function() local b = vim.fn.bufnr('captain-memo://results') "
            "return b > 0 and vim.api.nvim_buf_get_lines(b, 0, -1, false)[1] == 'searching…' end)()",
            what="searching…",
        )
        lines = editor.results()
        assert "Contract price" in lines[0] and len(lines) == 1, lines
        [(text, group)] = editor.footer()
        assert "legs: keyword · failed: vector leg" in text and group == "CaptainMemoFooterWarn", text
        assert not [n for n in editor.notifications() if n["level"] >= 3], editor.notifications()
        log = (tmp_path / "xdg_state_home" / "nvim" / "captain-memo.log").read_text()
        assert "vector leg failed" in log and url in log, "the detail is in the log file"
    finally:
        close(editor)


def test_a_damaged_database_is_one_line_naming_the_file_and_what_to_do(tmp_path, local_embedder):
    """Real damage found mid-request (the memories table's root page overwritten): one error line,
    no Python exception name or traceback; a file restored from a backup works without a restart."""
    import os
    import shutil

    import sqlean

    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    db = tmp_path / "memo.db"
    engine = Engine(Store(db), local_embedder)
    engine.remember_many(
        [NewMemory(body=f"Service {i} listens on port {8000 + i}.", title=f"service {i}") for i in range(30)]
    )
    engine.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.close()
    backup = tmp_path / "backup.db"
    shutil.copy(db, backup)
    conn = sqlean.connect(str(db))
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as handle:
        handle.seek((page - 1) * 4096)
        handle.write(os.urandom(4096))

    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)))
    try:
        # Wide enough for the whole line; a narrower screen shows its start and the log has the rest.
        editor.lua("vim.o.columns = 400")
        editor.nvim.command("CaptainMemo recall which port does service 7 listen on")
        editor.wait_for(
            "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
            "if n.level == vim.log.levels.ERROR then return true end end end)()",
            what="the error",
        )
        [error] = [n["msg"] for n in editor.notifications() if n["level"] >= 4]
        assert error.startswith(f"Captain Memo: {db} failed: database disk image is malformed;"), error
        assert "run `captain-memo doctor` to check it, restore a backup" in error
        assert "DatabaseError" not in error and "internal error" not in error and "\n" not in error
        assert "Traceback" not in editor.nvim.command_output("messages")
        assert editor.buffer_named("captain-memo://results") is None, "the searching… window is closed"

        shutil.copy(backup, db)
        editor.nvim.command("CaptainMemo recall which port does service 7 listen on")
        assert "service 7" in editor.results()[0]
    finally:
        close(editor)
