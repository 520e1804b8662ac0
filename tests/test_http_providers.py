"""The Ollama and OpenAI-compatible providers against real servers on 127.0.0.1 (real httpx)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from embed_support import MODEL, free_port, start_server, stop_server

from captain_memo.cli.commands.demo import SAMPLE
from captain_memo.cli.commands.importer import read_records
from captain_memo.config import EmbedConfig, embed_config
from captain_memo.embeddings import make_embedder
from captain_memo.embeddings.http import OllamaEmbedder, OpenAIEmbedder, make_http_embedder
from captain_memo.engine.core import Engine
from captain_memo.errors import ConfigError, EmbeddingError
from captain_memo.store import Store

TEXTS = ["parse_config reads the YAML file once", "rounding happens only at the end", "a third, longer note " * 20]
QUERIES = [
    "get_effective_contract_price rounding",
    "why did the invoice total change",
    "retry webhook delivery",
    "decimal places",
    "who owns the pricing tables",
]


def provider(kind: str, url: str, **kwargs):
    return OllamaEmbedder(url, MODEL, **kwargs) if kind == "ollama" else OpenAIEmbedder(url, MODEL, **kwargs)


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_provider_vectors_equal_the_local_model(kind, embed_server, local_embedder):
    embedder = provider(kind, embed_server.url)
    got = embedder.embed(TEXTS)
    assert embedder.model_id == f"{kind}:{MODEL}"
    assert got.dtype == np.float32 and got.shape == (3, 384)
    # The server writes float32 exactly; the client's unit-normalisation may move the last bit.
    np.testing.assert_allclose(got, local_embedder.embed(TEXTS), rtol=0, atol=1e-7)
    assert embedder.dim == 384


def test_base64_encoding_gives_the_same_vectors(embed_server):
    floats = OpenAIEmbedder(embed_server.url, MODEL, encoding="float").embed(TEXTS)
    packed = OpenAIEmbedder(embed_server.url + "/v1/", MODEL, encoding="base64").embed(TEXTS)
    np.testing.assert_array_equal(floats, packed)  # both carry the same float32 bits


def test_remember_and_recall_rank_as_the_local_model_does(tmp_path, embed_server, local_embedder):
    notes = read_records(str(SAMPLE), None)[:18]  # long notes: 18 keep this test to seconds
    rankings = {}
    for kind in ("local", "ollama", "openai"):
        embedder = local_embedder if kind == "local" else provider(kind, embed_server.url, batch_size=16)
        engine = Engine(Store(tmp_path / f"{kind}.db"), embedder)
        try:
            assert all(engine.remember_many(notes))
            assert engine.store.counts()["pending_vectors"] == 0
            rankings[kind] = []
            for query in QUERIES:
                result = engine.recall(query, all_projects=True, record=False)
                assert result.legs == ("vector", "keyword")
                rankings[kind].append([(h.memory.title, round(h.score, 5)) for h in result.hits])
        finally:
            engine.close()
    assert rankings["local"][0], "the sample corpus answers the demo query"
    # The same order; scores equal to 1e-4 (v3 min-max scales similarities over the pool, so the
    # last digits of vectors sent as JSON text can move the fifth decimal).
    for kind in ("ollama", "openai"):
        assert [[title for title, _ in hits] for hits in rankings[kind]] == [
            [title for title, _ in hits] for hits in rankings["local"]
        ]
        assert [[score for _, score in hits] for hits in rankings[kind]] == [
            pytest.approx([score for _, score in hits], abs=1e-4) for hits in rankings["local"]
        ]


def test_batches_of_the_configured_size(embed_server):
    embedder = OllamaEmbedder(embed_server.url, MODEL, batch_size=4)
    before = embed_server.requests
    vectors = embedder.embed([f"note number {i}" for i in range(10)])
    assert vectors.shape == (10, 384)
    assert embed_server.requests - before == 3  # 4 + 4 + 2


def test_one_kept_alive_connection_for_many_calls(embed_server):
    embedder = OpenAIEmbedder(embed_server.url, MODEL)
    before = embed_server.connections
    for i in range(8):
        embedder.embed([f"query {i}"])
    assert embed_server.connections - before == 1
    embedder.close()


def test_a_repeated_recall_makes_no_http_call(tmp_path, embed_server):
    engine = Engine(Store(tmp_path / "memo.db"), OllamaEmbedder(embed_server.url, MODEL))
    try:
        engine.remember_many(read_records(str(SAMPLE), None)[:4])
        before = embed_server.requests
        first = engine.recall("how are contract prices looked up", all_projects=True, record=False)
        assert embed_server.requests - before == 1
        again = engine.recall("how are contract prices looked up", all_projects=True, record=False)
        assert embed_server.requests - before == 1  # served from the query cache
        assert [h.chunk_id for h in again.hits] == [h.chunk_id for h in first.hits]
        assert again.legs == ("vector", "keyword")
        assert engine.queries.hits == 1
    finally:
        engine.close()


def test_model_not_found_names_model_endpoint_and_fix(embed_server):
    embedder = OllamaEmbedder(embed_server.url, "nomic-embed-text", retries=3)
    before = embed_server.requests
    with pytest.raises(EmbeddingError) as err:
        embedder.embed(["x"])
    message = str(err.value)
    assert message.startswith(
        f"model 'nomic-embed-text' not found on {embed_server.url}: run `ollama pull nomic-embed-text`"
    )
    assert embed_server.requests == before  # refused before the model ran


def test_openai_model_not_found(embed_server):
    with pytest.raises(EmbeddingError, match=r"model 'text-embedding-3-small' not found on http://127\.0\.0\.1"):
        OpenAIEmbedder(embed_server.url, "text-embedding-3-small").embed(["x"])


def test_older_ollama_without_api_embed(fault_server, local_embedder):
    fault_server.mode = "legacy"
    embedder = OllamaEmbedder(fault_server.url, MODEL)
    first = embedder.embed(TEXTS)
    np.testing.assert_allclose(first, local_embedder.embed(TEXTS), atol=1e-6)
    embedder.embed(["another"])
    assert fault_server.hits["/api/embed"] == 1  # tried once, then remembered
    assert fault_server.hits["/api/embeddings"] == 4  # one text per call


def test_missing_model_is_not_mistaken_for_an_old_server(fault_server):
    fault_server.mode = "model_missing"
    with pytest.raises(EmbeddingError, match="run `ollama pull all-MiniLM"):
        OllamaEmbedder(fault_server.url, MODEL).embed(["x"])
    assert fault_server.hits["/api/embeddings"] == 0


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_unnormalised_vectors_are_made_unit_length(kind, fault_server, local_embedder):
    fault_server.mode = "scaled"
    got = provider(kind, fault_server.url).embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(got, local_embedder.embed(TEXTS), atol=1e-6)


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_too_few_vectors_is_an_error(kind, fault_server):
    fault_server.mode = "short"
    with pytest.raises(EmbeddingError, match="returned 2 vectors for 3 texts"):
        provider(kind, fault_server.url).embed(TEXTS)


def test_openai_answers_out_of_order_are_put_back_in_order(fault_server, local_embedder):
    fault_server.mode = "shuffled"
    np.testing.assert_allclose(
        OpenAIEmbedder(fault_server.url, MODEL).embed(TEXTS), local_embedder.embed(TEXTS), atol=1e-6
    )


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_server_errors_are_retried_with_backoff(kind, fault_server):
    fault_server.mode = "http500"
    embedder = provider(kind, fault_server.url, retries=2, backoff=0.01)
    with pytest.raises(EmbeddingError) as err:
        embedder.embed(["x"])
    assert fault_server.requests == 3
    assert "answered 500" in str(err.value) and "(model 'all-MiniLM-L6-v2-int8')" in str(err.value)
    assert str(err.value).startswith(fault_server.url)


def test_a_429_is_retried_after_the_wait_the_server_asks_for(fault_server, local_embedder):
    fault_server.mode = "rate_limited_once"
    embedder = OpenAIEmbedder(fault_server.url, MODEL, backoff=0.0)
    started = time.monotonic()
    np.testing.assert_allclose(embedder.embed(["x"]), local_embedder.embed(["x"]), atol=1e-6)
    assert fault_server.requests == 2
    assert time.monotonic() - started >= 0.3  # Retry-After: 0.3 was honoured, not the zero backoff


def test_client_errors_are_not_retried(fault_server):
    fault_server.mode = "echo_auth"
    with pytest.raises(EmbeddingError, match="refused the request"):
        OpenAIEmbedder(fault_server.url, MODEL, retries=3, backoff=0.01).embed(["x"])
    assert fault_server.requests == 1


def test_a_refused_connection_is_retried_then_reported():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EmbeddingError) as err:
        OllamaEmbedder(url, "nomic-embed-text", retries=1, backoff=0.01).embed(["x"])
    message = str(err.value)
    assert url in message and "nomic-embed-text" in message
    assert "cannot connect" in message and "after 2 attempts" in message


def test_a_server_that_recovers_between_retries_is_used(fault_server, local_embedder):
    """The server is down for the first attempt and up again before the retry."""
    fault_server.down()
    embedder = OllamaEmbedder(fault_server.url, MODEL, retries=3, backoff=0.3)
    threading.Timer(0.1, fault_server.up).start()
    np.testing.assert_allclose(embedder.embed(["back again"]), local_embedder.embed(["back again"]), atol=1e-6)


@pytest.mark.parametrize("mode", ["echo_auth", "echo_auth_500"])
def test_the_api_key_never_appears_in_errors(mode, fault_server):
    fault_server.mode = mode
    key = "sk-test-very-secret-0123456789"
    embedder = OpenAIEmbedder(fault_server.url, MODEL, api_key=key, retries=0)
    with pytest.raises(EmbeddingError) as err:
        embedder.embed(["x"])
    assert key not in str(err.value) and "***" in str(err.value)  # the server did echo it
    assert key not in repr(embedder)


def test_bearer_key_is_sent(local_embedder):
    server = start_server(local_embedder, api_key="team-key")
    try:
        assert OpenAIEmbedder(server.url, MODEL, api_key="team-key").embed(["x"]).shape == (1, 384)
        with pytest.raises(EmbeddingError, match="check CAPTAIN_MEMO_EMBED_API_KEY"):
            OpenAIEmbedder(server.url, MODEL, api_key="wrong-key").embed(["x"])
        with pytest.raises(EmbeddingError, match="set CAPTAIN_MEMO_EMBED_API_KEY"):
            OllamaEmbedder(server.url, MODEL).embed(["x"])
    finally:
        stop_server(server)


def test_dimension_is_learned_from_the_first_answer(embed_server):
    embedder = OllamaEmbedder(embed_server.url, MODEL)
    before = embed_server.requests
    assert embedder.dim == 384
    assert embedder.dim == 384
    assert embed_server.requests - before == 1


def test_configuration_from_the_environment(monkeypatch, embed_server):
    monkeypatch.setenv("CAPTAIN_MEMO_EMBED_PROVIDER", "openai")
    monkeypatch.setenv("CAPTAIN_MEMO_EMBED_URL", embed_server.url + "/v1")
    monkeypatch.setenv("CAPTAIN_MEMO_EMBED_MODEL", MODEL)
    monkeypatch.setenv("CAPTAIN_MEMO_EMBED_ENCODING", "base64")
    monkeypatch.setenv("CAPTAIN_MEMO_EMBED_BATCH_SIZE", "7")
    embedder = make_embedder(embed_config()).inner  # behind the back-off (embeddings/backoff.py)
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.url, embedder.encoding, embedder.batch_size) == (embed_server.url, "base64", 7)
    assert embedder.embed(["x"]).shape == (1, 384)


def test_ollama_defaults():
    embedder = make_http_embedder(EmbedConfig(provider="ollama"))
    assert (embedder.url, embedder.model_id) == ("http://127.0.0.1:11434", "ollama:nomic-embed-text")


@pytest.mark.parametrize(
    "cfg, message",
    [
        (EmbedConfig(provider="openai", model="m"), "needs CAPTAIN_MEMO_EMBED_URL"),
        (EmbedConfig(provider="openai", url="http://127.0.0.1:8080"), "needs CAPTAIN_MEMO_EMBED_MODEL"),
        (EmbedConfig(provider="ollama", url="127.0.0.1:11434"), "must start with http"),
        (EmbedConfig(provider="openai", url="http://x", model="m", encoding="hex"), "unknown embedding encoding"),
    ],
)
def test_unusable_configuration_is_reported(cfg, message):
    with pytest.raises(ConfigError, match=message):
        make_http_embedder(cfg)
