"""`captain-memo doctor` names work left unfinished."""

import json

from captain_memo.cli import main
from captain_memo.store import Store


def test_doctor_reports_an_interrupted_reindex(db_file, capsys):
    store = Store(db_file)
    with store.write() as conn:
        store.set_meta(conn, "reindex_table", "vec_chunks_2")
        store.set_meta(conn, "reindex_model", "ollama:nomic-embed-text")
    store.close()

    assert main(["--db", str(db_file), "doctor", "--json"]) == 1
    items = {row["item"]: row for row in json.loads(capsys.readouterr().out)}
    assert items["reindex"]["ok"] is False
    assert "ollama:nomic-embed-text" in items["reindex"]["detail"]
    assert "captain-memo reindex" in items["reindex"]["detail"]


def test_doctor_is_clean_without_one(db_file, capsys):
    Store(db_file).close()
    assert main(["--db", str(db_file), "doctor", "--json"]) == 0
    items = {row["item"]: row for row in json.loads(capsys.readouterr().out)}
    assert items["reindex"] == {"item": "reindex", "ok": True, "detail": "none pending"}
