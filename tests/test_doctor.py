"""`captain-memo doctor` names work left unfinished, and a vector table of two models."""

import json

from captain_memo.cli.main import main
from captain_memo.store import Store


def doctor(db_file, capsys) -> tuple[int, dict]:
    """Exit status and the checks of `doctor --json`, by item."""
    code = main(["--db", str(db_file), "doctor", "--json"])
    return code, {row["item"]: row for row in json.loads(capsys.readouterr().out)}


def failed(db_file, capsys, item: str) -> tuple[str, dict]:
    """The detail of a check that must fail (and make doctor exit 1), with all the checks."""
    code, items = doctor(db_file, capsys)
    assert code == 1 and items[item]["ok"] is False, items
    return items[item]["detail"], items


def test_doctor_reports_an_interrupted_reindex(db_file, capsys):
    store = Store(db_file)
    with store.write() as conn:
        store.set_meta(conn, "reindex_table", "vec_chunks_2")
        store.set_meta(conn, "reindex_model", "ollama:nomic-embed-text")
    store.close()

    detail, _ = failed(db_file, capsys, "reindex")
    assert "ollama:nomic-embed-text" in detail and "captain-memo reindex" in detail


def test_doctor_is_clean_without_one(db_file, capsys):
    Store(db_file).close()
    code, items = doctor(db_file, capsys)
    assert code == 0
    assert items["reindex"] == {"item": "reindex", "ok": True, "detail": "none pending"}


def test_doctor_finds_a_vector_table_of_two_models(db_file, local_embedder, capsys):
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory
    from captain_memo.store.db import vector_blob

    engine = Engine(Store(db_file), local_embedder)
    engine.remember_many(
        [NewMemory(body=f"Note {i}: step {i * 7} of the runbook for service {i % 5}.") for i in range(30)]
    )
    engine.close()
    code, items = doctor(db_file, capsys)
    assert code == 0
    assert items["vectors"]["ok"] is True and "24 sampled vectors are local:" in items["vectors"]["detail"]

    # What two concurrent reindex runs once left: a third of the live table written by another
    # model of the same dimension.
    store = Store(db_file)
    stranger = HashEmbedder(dim=384, model_id="test:other")
    with store.write() as conn:
        rows = conn.execute("SELECT id, text FROM chunks WHERE id % 3 = 0").fetchall()
        for (chunk_id, _), vector in zip(rows, stranger.embed([text for _, text in rows])):
            conn.execute(f"UPDATE {store.vec_table} SET embedding = ? WHERE rowid = ?", (vector_blob(vector), chunk_id))
    store.close()
    detail, items = failed(db_file, capsys, "vectors")
    assert "were not made by local:all-MiniLM-L6-v2-int8" in detail and "captain-memo reindex" in detail
    assert all(row["ok"] for name, row in items.items() if name != "vectors")  # the rest looks healthy
