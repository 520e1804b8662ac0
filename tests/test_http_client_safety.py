"""The embedding HTTP client against hostile servers on 127.0.0.1: redirects elsewhere, a server that
drips its answer, an endless answer, and credentials in the endpoint URL.

Every server here is real (a socket on 127.0.0.1) and misbehaves on purpose; the client is the real
OllamaEmbedder / OpenAIEmbedder, and the CLI runs in a child process where the user would see it.
"""

from __future__ import annotations

import json
import time

import pytest
from embed_support import cli
from hostile_support import answer

from captain_memo.base.urls import masked_url
from captain_memo.embeddings.http import MAX_ANSWER_BYTES, OllamaEmbedder, OpenAIEmbedder
from captain_memo.errors import EmbeddingError


def vectors_body(count: int = 1) -> bytes:
    return json.dumps({"embeddings": [[0.1] * 384 for _ in range(count)]}).encode()


# -- redirects ----------------------------------------------------------------------------------


def test_a_redirect_to_another_server_is_refused_and_the_text_never_reaches_it(hostile):
    elsewhere = hostile(lambda h: answer(h, 200, vectors_body()))
    named = hostile(lambda h: answer(h, 307, b"", Location=elsewhere.url + "/api/embed"))
    embedder = OllamaEmbedder(named.url, "m", retries=0)
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["the memory text"])
    assert "redirected to another server" in str(caught.value) and elsewhere.url in str(caught.value)
    assert named.posts == 1 and elsewhere.posts == 0


def test_a_redirect_to_https_of_the_same_host_is_another_origin(hostile):
    named = hostile(lambda h: answer(h, 308, b"", Location="https://127.0.0.1:1/api/embed"))
    with pytest.raises(EmbeddingError, match="another server"):
        OllamaEmbedder(named.url, "m", retries=0).embed(["text"])


def test_a_redirect_within_the_named_server_is_followed(hostile):
    def behave(handler):
        if handler.path == "/api/embed":
            return answer(handler, 307, b"", Location="/moved/api/embed")
        return answer(handler, 200, vectors_body())

    named = hostile(behave)
    assert OllamaEmbedder(named.url, "m", retries=0).embed(["text"]).shape == (1, 384)
    assert named.posts == 2


# -- a total deadline ---------------------------------------------------------------------------


def drip(where: str):
    """An answer sent one byte every 0.4 s (for up to 12 s), in its headers or in its body."""

    def behave(handler):
        body = vectors_body()
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        slow, fast = (head, b"") if where == "headers" else (b"", head)
        handler.wfile.write(fast)
        handler.wfile.flush()
        for i in range(30):
            if handler.server.stop.is_set():
                return
            handler.wfile.write((slow or body)[i : i + 1])
            handler.wfile.flush()
            time.sleep(0.4)

    return behave


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_dripping_server_cannot_hold_a_request_past_its_deadline(hostile, where):
    server = hostile(drip(where))
    embedder = OllamaEmbedder(server.url, "m", timeout=1.5, retries=0)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="within 1.5 s"):
        embedder.embed(["text"])
    assert time.monotonic() - started < 4  # 1.5 s plus slack; each read alone never waited 1.5 s


def test_remember_stores_for_keyword_search_when_the_server_drips(hostile, tmp_path):
    server = hostile(drip("body"))
    env = {
        "CAPTAIN_MEMO_EMBED_PROVIDER": "ollama",
        "CAPTAIN_MEMO_EMBED_URL": server.url,
        "CAPTAIN_MEMO_EMBED_MODEL": "m",
        "CAPTAIN_MEMO_EMBED_TIMEOUT": "1.5",
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    started = time.monotonic()
    done = cli("remember", "the nightly job rebuilds the search index", env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "no vector yet" in done.stdout and time.monotonic() - started < 8  # the drip lasts 12 s
    found = cli("recall", "nightly search index", env=env, timeout=60)
    assert "nightly job" in found.stdout, found.stdout + found.stderr


# -- a size cap ---------------------------------------------------------------------------------


def endless(handler):
    """A 200 without a length whose body never ends (until the client hangs up)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(b'{"embeddings": [[')
    block = b"0.125," * 100_000
    try:
        while handler.server.sent < 1024**3 and not handler.server.stop.is_set():
            handler.wfile.write(block)
            handler.server.sent += len(block)
    except OSError:
        pass


def test_an_endless_answer_is_cut_at_the_cap(hostile):
    server = hostile(endless)
    with pytest.raises(EmbeddingError, match="more than 33,554,432 bytes"):
        OllamaEmbedder(server.url, "m", retries=0).embed(["text"])
    time.sleep(0.2)
    assert server.sent < 3 * MAX_ANSWER_BYTES  # the rest of the gibibyte was never read


def test_a_declared_oversized_answer_is_refused_before_reading(hostile):
    def behave(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(1024**3))
        handler.end_headers()
        handler.wfile.write(b"{")

    server = hostile(behave)
    with pytest.raises(EmbeddingError, match="1,073,741,824 bytes"):
        OpenAIEmbedder(server.url, "m", retries=0).embed(["text"])


# -- credentials in the URL ---------------------------------------------------------------------


def test_masked_url_hides_user_password_and_query_values():
    assert (
        masked_url("https://bob:hunter2@embed.example:8443/v1?key=abc&x=1")
        == "https://***@embed.example:8443/v1?key=***&x=***"
    )
    assert masked_url("http://127.0.0.1:11434") == "http://127.0.0.1:11434"
    assert masked_url("http://:only-pass@[::1]:80") == "http://***@[::1]:80"


@pytest.mark.parametrize("status", [500, 401, 404])
def test_a_password_in_the_url_is_never_printed(hostile, tmp_path, status):
    def behave(handler):
        said = f"refused {handler.headers.get('Authorization')} for {handler.path}"
        answer(handler, status, json.dumps({"error": said}).encode())

    server = hostile(behave)
    url = server.url.replace("http://", "http://alice:pa55-w0rd-XYZ@")
    env = {
        "CAPTAIN_MEMO_EMBED_PROVIDER": "ollama",
        "CAPTAIN_MEMO_EMBED_URL": url,
        "CAPTAIN_MEMO_EMBED_MODEL": "m",
        "CAPTAIN_MEMO_EMBED_TIMEOUT": "2",
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    outputs = [cli("-v", "remember", "a note", env=env), cli("-v", "recall", "note", env=env), cli("doctor", env=env)]
    for done in outputs:
        text = done.stdout + done.stderr
        assert "pa55-w0rd-XYZ" not in text and "alice" not in text, text
        assert "Traceback" not in text, text
    assert "***@127.0.0.1" in outputs[0].stdout + outputs[0].stderr
    with pytest.raises(EmbeddingError) as caught:
        OllamaEmbedder(url, "m", retries=0).embed(["x"])
    assert "pa55-w0rd-XYZ" not in str(caught.value) and "pa55-w0rd-XYZ" not in repr(OllamaEmbedder(url, "m"))
