"""The vector leg under real endpoint faults: recall answers from the keyword leg, says so once in
the log and in the result, and every memory saved meanwhile is kept and gets its vector later.

Each fault is made by a real HTTP server on 127.0.0.1 (embed_support.FaultServer) or by closing
its port; nothing here is mocked.
"""

from __future__ import annotations

import json
import logging

import pytest
from embed_support import MODEL, provider_env, start_server, stop_server

from captain_memo.cli.main import main
from captain_memo.embeddings.http import OllamaEmbedder, OpenAIEmbedder
from captain_memo.engine.core import Engine
from captain_memo.store import NewMemory, Store
from captain_memo.store.reindex import fill_missing

SEED = [
    NewMemory(body="The invoice builder rounds once, on the total, never per line.", title="Rounding"),
    NewMemory(body="Webhook deliveries are retried three times with exponential backoff.", title="Webhooks"),
    NewMemory(body="parse_config reads settings.yaml once at start and caches it.", title="Config"),
]
NEW = NewMemory(
    body="The zanzibar cache key includes the tenant id, so tenants never share entries.", title="Zanzibar cache"
)
QUERY = "zanzibar tenant cache"
# Each fault, and the words its one log line must carry.
FAULTS = {
    "down": "cannot connect",
    "drop": "dropped the connection",
    "stall": "no answer from",
    "http500": "answered 500",
    "garbage": "not JSON",
    "wrong_dim": "dimension 5",
    "nan": "NaN",
}


def make_provider(kind: str, url: str):
    # A short timeout so "stall" costs little (yet room for a busy machine); one quick retry.
    options = dict(timeout=1.5, retries=1, backoff=0.01)
    return OllamaEmbedder(url, MODEL, **options) if kind == "ollama" else OpenAIEmbedder(url, MODEL, **options)


def break_server(server, mode: str) -> None:
    if mode == "down":
        server.down()
    else:
        server.mode = mode


def mend_server(server) -> None:
    if server._server is None:
        server.up()
    server.mode = "ok"


def vector_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "vector leg" in r.getMessage()]


def assert_consistent(store, memories: int, pending: int) -> None:
    counts = store.counts()
    assert counts["memories"] == memories
    assert counts["chunks"] == counts["fts_rows"] == counts["vectors"] + counts["pending_vectors"]
    assert counts["pending_vectors"] == pending


@pytest.mark.parametrize("kind", ["ollama", "openai"])
@pytest.mark.parametrize("mode", list(FAULTS))
def test_fault_gives_keyword_results_and_loses_nothing(mode, kind, fault_server, db_file, caplog):
    caplog.set_level(logging.WARNING, logger="captain_memo")
    engine = Engine(Store(db_file), make_provider(kind, fault_server.url))
    try:
        engine.remember_many(SEED)
        break_server(fault_server, mode)

        # Saving while the endpoint fails: the memory and its keyword rows are stored at once.
        caplog.clear()
        new_id = engine.remember(NEW)
        assert engine.store.get(new_id).body == NEW.body
        assert_consistent(engine.store, memories=4, pending=1)
        assert any(FAULTS[mode] in line for line in vector_lines(caplog))

        # Recall: keyword-only, said once in the log and in the result; the new memory is found.
        caplog.clear()
        result = engine.recall(QUERY, record=False)
        assert result.legs == ("keyword",) and result.degraded
        assert FAULTS[mode] in result.failures["vector"]
        assert result.hits[0].memory.id == new_id
        lines = vector_lines(caplog)
        assert len(lines) == 1 and FAULTS[mode] in lines[0] and fault_server.url in lines[0]

        # The endpoint is back: the next save fills in the missing vector.
        mend_server(fault_server)
        engine.remember(NewMemory(body="Quarterly reports are generated on the first Monday."))
        assert_consistent(engine.store, memories=5, pending=0)
        result = engine.recall(QUERY, record=False)
        assert result.legs == ("vector", "keyword")
        assert result.hits[0].memory.id == new_id and result.hits[0].vector is not None
    finally:
        engine.close()


def test_a_new_process_catches_a_wrong_dimension_from_the_store(fault_server, db_file, caplog):
    """A fresh embedder has seen no vector yet; the store tells it the dimension to expect."""
    first = Engine(Store(db_file), make_provider("ollama", fault_server.url))
    first.remember_many(SEED)
    first.close()
    fault_server.mode = "wrong_dim"
    engine = Engine(Store(db_file), make_provider("ollama", fault_server.url))
    try:
        result = engine.recall("webhook retries", record=False)
        assert result.legs == ("keyword",)
        assert "this store holds 384-d ones" in result.failures["vector"]
        assert "captain-memo reindex" in result.failures["vector"]
        assert result.hits[0].memory.title == "Webhooks"
    finally:
        engine.close()


def test_saved_while_the_real_server_was_down_then_filled_in(local_embedder, db_file):
    """The real serve-embeddings server stops and starts again on the same port."""
    server = start_server(local_embedder)
    port = server.server_address[1]
    engine = Engine(Store(db_file), OllamaEmbedder(server.url, MODEL, retries=0))
    try:
        engine.remember_many(SEED)
        stop_server(server)
        ids = [
            engine.remember(NewMemory(body=f"Note {n} written while the zanzibar server was down.")) for n in range(3)
        ]
        assert_consistent(engine.store, memories=6, pending=3)
        found = engine.recall("zanzibar server down", record=False)
        assert found.legs == ("keyword",) and {h.memory.id for h in found.hits} >= set(ids)

        server = start_server(local_embedder, port=port)
        assert fill_missing(engine.store, engine.embedder, batch_size=2) == 3
        assert_consistent(engine.store, memories=6, pending=0)
        found = engine.recall("zanzibar server down", record=False)
        assert found.legs == ("vector", "keyword")
        assert all(h.vector is not None for h in found.hits if h.memory.id in ids)
    finally:
        engine.close()
        stop_server(server)


def test_the_cli_shows_the_warning(fault_server, db_file, monkeypatch, capsys, caplog):
    for name, value in provider_env("ollama", fault_server.url).items():
        monkeypatch.setenv(name, value)
    engine = Engine(Store(db_file), make_provider("ollama", fault_server.url))
    engine.remember_many([*SEED, NEW])
    engine.close()
    fault_server.mode = "http500"

    assert main(["--db", str(db_file), "recall", "--all-projects", QUERY]) == 0
    out = capsys.readouterr().out
    assert "Zanzibar cache" in out.splitlines()[0]
    assert "legs: keyword ·" in out
    assert f"warning: only the keyword leg answered (vector leg failed: EmbeddingError: {fault_server.url}" in out
    assert "answered 500" in out

    assert main(["--db", str(db_file), "recall", "--all-projects", "--json", QUERY]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["legs"] == ["keyword"] and "answered 500" in data["failures"]["vector"]
    assert data["hits"][0]["title"] == "Zanzibar cache"


def test_the_cli_reindex_missing_fills_vectors(fault_server, db_file, monkeypatch, capsys):
    for name, value in provider_env("openai", fault_server.url).items():
        monkeypatch.setenv(name, value)
    engine = Engine(Store(db_file), make_provider("openai", fault_server.url))
    engine.remember_many(SEED)
    fault_server.mode = "http500"
    engine.remember(NEW)
    engine.close()
    fault_server.mode = "ok"
    assert main(["--db", str(db_file), "reindex", "--missing"]) == 0
    assert "embedded 1 chunk that had no vector" in capsys.readouterr().out
    store = Store(db_file)
    try:
        assert_consistent(store, memories=4, pending=0)
    finally:
        store.close()


def test_both_legs_failing_is_an_error_not_an_empty_result(fault_server, db_file):
    from captain_memo.errors import RecallError

    engine = Engine(Store(db_file), make_provider("ollama", fault_server.url))
    try:
        engine.remember_many(SEED)
        fault_server.mode = "http500"
        with pytest.raises(RecallError, match="answered 500"):
            engine.recall("rounding", record=False, legs=("vector",))
    finally:
        engine.close()
