"""The editor's host and an MCP server hold their store for as long as they run: a store moved away
or replaced meanwhile is noticed before the next request, its last writes stay in it, and the
file now at the path is what they serve (store/held_file.py).

Real files and SQLite throughout; the editor's request handler runs here as the plugin's host runs
it, the MCP server is a real `captain-memo mcp` process spoken to with the MCP SDK's stdio client."""

from __future__ import annotations

import shutil

from embed_support import provider_env
from fakes import HashEmbedder
from mcp_support import connect, run
from service_support import bodies

from captain_memo.editor.editor_requests import EditorService
from captain_memo.memo import Memo


def test_the_editor_host_follows_a_store_moved_away_and_one_put_back(tmp_path):
    db = tmp_path / "memo.db"
    editor = EditorService(
        deliver=lambda reply: None, memo_factory=lambda s: Memo.open(db, HashEmbedder(), warm=True), serve=False
    )
    settings = {"db": str(db), "secrets": "allow"}

    def ask(op: str, **args) -> dict:
        reply = editor.handle({"id": 1, "op": op, "settings": settings, "args": {"context": str(tmp_path), **args}})
        assert reply["ok"], reply
        return reply["result"]

    try:
        ask("save", text="alpha: the invoice total is rounded once")
        ask("save", text="beta: the ledger closes at midnight UTC")
        db.rename(tmp_path / "moved.db")
        ask("save", text="gamma: saved after the move")
        assert bodies(tmp_path / "moved.db") == [
            "alpha: the invoice total is rounded once",
            "beta: the ledger closes at midnight UTC",
        ]
        assert bodies(db) == ["gamma: saved after the move"]

        shutil.copyfile(db, tmp_path / "backup.db")  # the store is complete in its file when idle
        ask("save", text="delta: saved after the backup")
        (tmp_path / "backup.db").rename(db)
        found = [hit["text"] for hit in ask("recall", query="gamma delta saved")["hits"]]
        assert any(text.startswith("gamma") for text in found) and not any("delta" in t for t in found)
    finally:
        editor.close()


def test_an_mcp_server_follows_a_store_moved_away(embed_server, tmp_path):
    db = tmp_path / "memo.db"
    env = provider_env("openai", embed_server.url)

    async def body():
        async with connect(db, tmp_path, env=env) as session:
            for text in ("alpha: the invoice total is rounded once", "beta: the ledger closes at midnight UTC"):
                assert not (await session.call_tool("remember", {"text": text})).is_error
            db.rename(tmp_path / "moved.db")
            assert not (await session.call_tool("remember", {"text": "gamma: saved after the move"})).is_error
            found = await session.call_tool("recall", {"query": "invoice ledger gamma", "detail": "full"})
            return [hit["excerpt"] for hit in found.structured_content["hits"]]

    found = run(body)
    assert found == ["gamma: saved after the move"]
    assert bodies(tmp_path / "moved.db") == [
        "alpha: the invoice total is rounded once",
        "beta: the ledger closes at midnight UTC",
    ]
    assert bodies(db) == ["gamma: saved after the move"]
