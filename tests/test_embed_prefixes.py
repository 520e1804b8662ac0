"""Query and document prefixes: what a real HTTP server on 127.0.0.1 receives from the CLI, for
models chosen by name and for prefixes set by hand, and what the store says when they change."""

from __future__ import annotations

import threading

import pytest
from embed_support import cli, stop_server

from captain_memo.config import EmbedConfig
from captain_memo.embeddings.http_server import EmbeddingServer, serve_in_thread
from captain_memo.embeddings.prefixes import SEARCH_INSTRUCTION, Prefixes, chosen_prefixes, known_prefixes

NOTE = "Invoice totals are rounded once, at the end, to two decimal places."
QUERY = "when do we round invoice totals"


class Recording:
    """The real local model behind the server, noting every text the server was asked to embed."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.seen: list[str] = []
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):
        with self._lock:
            self.seen.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def served(local_embedder):
    """Start a server answering as ``model``; returns (server, recording)."""
    running = []

    def start(model: str):
        recording = Recording(local_embedder)
        server = EmbeddingServer(recording, model, "127.0.0.1", 0)  # answers to ``model`` only
        serve_in_thread(server)
        running.append(server)
        return server, recording

    yield start
    for server in running:
        stop_server(server)


def run(tmp_path, provider: str, url: str, model: str, *args: str, **prefixes: str):
    env = {
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
        "CAPTAIN_MEMO_SERVICE": "0",
        "CAPTAIN_MEMO_EMBED_PROVIDER": provider,
        "CAPTAIN_MEMO_EMBED_URL": url,
        "CAPTAIN_MEMO_EMBED_MODEL": model,
        **{f"CAPTAIN_MEMO_EMBED_{side.upper()}_PREFIX": text for side, text in prefixes.items()},
    }
    done = cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize(
    ("provider", "model", "query", "document"),
    [
        ("ollama", "nomic-embed-text", "search_query: ", "search_document: "),
        ("openai", "intfloat/e5-small-v2", "query: ", "passage: "),
        ("openai", "BAAI/bge-small-en-v1.5", SEARCH_INSTRUCTION, ""),
    ],
)
def test_the_server_receives_the_models_own_prefixes(tmp_path, served, provider, model, query, document):
    server, recording = served(model)
    run(tmp_path, provider, server.url, model, "remember", "--title", "Rounding", NOTE)
    saved = list(recording.seen)
    recording.seen.clear()
    run(tmp_path, provider, server.url, model, "recall", QUERY)
    assert saved and all(text.startswith(document) for text in saved), saved
    assert any(text.endswith(NOTE) for text in saved), saved
    assert recording.seen == [query + QUERY]


def test_prefixes_set_by_hand_replace_the_models(tmp_path, served):
    server, recording = served("nomic-embed-text")
    run(tmp_path, "ollama", server.url, "nomic-embed-text", "remember", NOTE, query="", document="doc> ")
    assert recording.seen and all(text.startswith("doc> ") for text in recording.seen), recording.seen
    recording.seen.clear()
    run(tmp_path, "ollama", server.url, "nomic-embed-text", "recall", QUERY, query="", document="doc> ")
    assert recording.seen == [QUERY], "an empty prefix setting means none"


def test_a_change_of_prefix_is_noticed_and_reindex_says_so(tmp_path, served):
    server, recording = served("nomic-embed-text")
    plain = {"query": "", "document": ""}  # the store's vectors, made before prefixes were known
    run(tmp_path, "ollama", server.url, "nomic-embed-text", "remember", NOTE, **plain)
    recording.seen.clear()

    mismatch = cli(
        "--no-service",
        "recall",
        QUERY,
        env={
            "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
            "CAPTAIN_MEMO_EMBED_PROVIDER": "ollama",
            "CAPTAIN_MEMO_EMBED_URL": server.url,
            "CAPTAIN_MEMO_EMBED_MODEL": "nomic-embed-text",
        },
    )
    said = mismatch.stdout + mismatch.stderr
    assert "holds vectors of ollama:nomic-embed-text but the configured embedder is" in said, said
    assert '[query "search_query: ", document "search_document: "]' in said, said
    assert "captain-memo reindex" in said, said

    done = run(tmp_path, "ollama", server.url, "nomic-embed-text", "reindex", "--quiet")
    assert "the vectors of ollama:nomic-embed-text were replaced" in done.stdout, done.stdout
    assert "prefixes changed" in done.stdout, done.stdout
    assert recording.seen and all(text.startswith("search_document: ") for text in recording.seen), recording.seen


@pytest.mark.parametrize(
    ("model", "query", "document"),
    [
        ("nomic-embed-text:latest", "search_query: ", "search_document: "),
        ("text-embedding-nomic-embed-text-v1.5", "search_query: ", "search_document: "),
        ("intfloat/multilingual-e5-large", "query: ", "passage: "),
        ("e5-small-v2", "query: ", "passage: "),
        ("intfloat/e5-mistral-7b-instruct", "Instruct: ", ""),
        ("bge-large", SEARCH_INSTRUCTION, ""),
        ("bge-m3", "", ""),
        ("mxbai-embed-large:335m", SEARCH_INSTRUCTION, ""),
        ("snowflake-arctic-embed:s", SEARCH_INSTRUCTION, ""),
        ("snowflake-arctic-embed2", "query: ", ""),
        ("embeddinggemma", "task: search result | query: ", "title: none | text: "),
        ("all-minilm", "", ""),
        ("text-embedding-3-small", "", ""),
        ("gte-base", "", ""),  # "e5" inside another word is not the e5 family
    ],
)
def test_known_models_get_their_prefixes_by_name(model, query, document):
    known = known_prefixes(model)
    assert known.query.startswith(query) and (known.query == query or query == "Instruct: ")
    assert known.document == document


def test_either_side_can_be_set_alone():
    chosen = chosen_prefixes("nomic-embed-text", EmbedConfig(provider="ollama", query_prefix="find: "))
    assert chosen == Prefixes("find: ", "search_document: ")


def test_the_editors_settings_carry_the_prefixes_and_an_empty_one_means_none():
    from captain_memo.hosting.editor_settings import EditorSettings

    settings = EditorSettings.from_dict({"model": "e5-small-v2", "query_prefix": "", "document_prefix": "doc: "})
    cfg = settings.embed_config()
    assert (cfg.query_prefix, cfg.document_prefix) == ("", "doc: ")
    assert chosen_prefixes("e5-small-v2", cfg) == Prefixes("", "doc: ")
    assert EditorSettings.from_dict({}).embed_config().query_prefix is None
    assert settings.engine_key != EditorSettings.from_dict({"model": "e5-small-v2"}).engine_key
