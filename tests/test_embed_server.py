"""`serve-embeddings`: the official Ollama and OpenAI clients, every route, and its refusals."""

from __future__ import annotations

import base64
import json
import re
import socket
import subprocess
import sys
import threading

import httpx
import numpy as np
import pytest
from embed_support import MODEL, REPO, start_server, stop_server

TEXTS = ["the webhook retries three times", "prices are rounded once, on the invoice total"]


def close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=np.float32), b, rtol=0, atol=1e-7)


def test_official_ollama_client(embed_server, local_embedder):
    import ollama

    client = ollama.Client(host=embed_server.url)
    expected = local_embedder.embed(TEXTS)
    close(client.embed(model=MODEL, input=TEXTS).embeddings, expected)
    close([client.embed(model=MODEL + ":latest", input=TEXTS[0]).embeddings[0]], expected[:1])
    close([client.embeddings(model=MODEL, prompt=TEXTS[1]).embedding], expected[1:])
    assert [m.model for m in client.list().models] == [MODEL]
    with pytest.raises(ollama.ResponseError) as err:
        client.embed(model="nomic-embed-text", input="x")
    assert err.value.status_code == 404 and "nomic-embed-text" in err.value.error


@pytest.mark.parametrize("encoding", [None, "float", "base64"])
def test_official_openai_client(encoding, embed_server, local_embedder):
    import openai

    client = openai.OpenAI(base_url=embed_server.url + "/v1", api_key="unused", max_retries=0)
    extra = {"encoding_format": encoding} if encoding else {}  # the client asks for base64 by default
    answer = client.embeddings.create(model=MODEL, input=TEXTS, **extra)
    assert [d.index for d in answer.data] == [0, 1] and answer.model == MODEL
    # Asked for base64 by name, the client hands back the strings as they came.
    rows = [
        np.frombuffer(base64.b64decode(d.embedding), "<f4") if encoding == "base64" else d.embedding
        for d in answer.data
    ]
    close(rows, local_embedder.embed(TEXTS))
    assert [m.id for m in client.models.list()] == [MODEL]
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="text-embedding-3-small", input="x")


def test_official_openai_client_with_a_required_key(local_embedder):
    import openai

    server = start_server(local_embedder, api_key="team-secret")
    try:
        good = openai.OpenAI(base_url=server.url + "/v1", api_key="team-secret", max_retries=0)
        assert len(good.embeddings.create(model=MODEL, input="x").data[0].embedding) == 384
        bad = openai.OpenAI(base_url=server.url + "/v1", api_key="guess", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.embeddings.create(model=MODEL, input="x")
        assert httpx.get(server.url + "/health").json()["status"] == "ok"  # health needs no key
        assert httpx.get(server.url + "/v1/models").status_code == 401
    finally:
        stop_server(server)


def test_health_and_listing_routes(embed_server):
    with httpx.Client(base_url=embed_server.url) as client:
        health = client.get("/health").json()
        assert (health["status"], health["model"], health["dim"]) == ("ok", MODEL, 384)
        assert "running" in client.get("/").text
        tags = client.get("/api/tags").json()["models"]
        assert tags[0]["name"] == MODEL and tags[0]["modified_at"]
        assert client.get("/api/version").json()["version"]


@pytest.mark.parametrize(
    "path, body, status, words",
    [
        ("/api/embed", b"{not json", 400, "not valid JSON"),
        ("/api/embed", b'["a list"]', 400, "JSON object"),
        ("/api/embed", json.dumps({"model": MODEL, "input": [1, 2, 3]}).encode(), 400, "token ids"),
        ("/api/embed", json.dumps({"model": MODEL, "input": [{"a": 1}]}).encode(), 400, "list of strings"),
        ("/api/embed", json.dumps({"model": MODEL, "input": "x", "dimensions": 768}).encode(), 400, "384 dimensions"),
        ("/api/embed", json.dumps({"model": "other", "input": "x"}).encode(), 404, "'other' not found"),
        ("/api/embeddings", json.dumps({"model": MODEL, "prompt": 5}).encode(), 400, "'prompt' must be a string"),
        ("/v1/embeddings", json.dumps({"model": MODEL}).encode(), 400, "'input' is required"),
        ("/v1/embeddings", json.dumps({"model": MODEL, "input": ["x"] * 2049}).encode(), 400, "at most 2048"),
        (
            "/v1/embeddings",
            json.dumps({"model": MODEL, "input": "x", "encoding_format": "hex"}).encode(),
            400,
            "encoding_format",
        ),
        ("/v1/nothing", b"{}", 404, "no route"),
    ],
)
def test_bad_requests_get_a_clear_error_and_the_connection_stays_usable(path, body, status, words, embed_server):
    before = embed_server.connections
    with httpx.Client(base_url=embed_server.url) as client:
        answer = client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == status
        error = answer.json()["error"]
        message = error["message"] if path.startswith("/v1/") else error  # each API's own error shape
        assert words in message
        ok = client.post("/api/embed", json={"model": MODEL, "input": ["still fine"]})
        assert ok.status_code == 200 and len(ok.json()["embeddings"][0]) == 384
    assert embed_server.connections - before == 1  # the error left the connection in a usable state


def test_an_oversized_body_is_refused_without_reading_it(embed_server):
    with socket.create_connection(("127.0.0.1", embed_server.server_address[1]), timeout=5) as sock:
        sock.sendall(b"POST /api/embed HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n")
        head = sock.recv(4096).decode()
    assert head.startswith("HTTP/1.1 413") and "Connection: close" in head


def test_empty_input_gives_no_vectors(embed_server):
    answer = httpx.post(embed_server.url + "/api/embed", json={"model": MODEL, "input": []})
    assert answer.json()["embeddings"] == []


def test_concurrent_clients_all_get_their_own_vectors(embed_server, local_embedder):
    texts = [f"concurrent request number {i}" for i in range(8)]
    expected = local_embedder.embed(texts)
    got: dict[int, list] = {}

    def ask(i: int) -> None:
        answer = httpx.post(embed_server.url + "/v1/embeddings", json={"model": MODEL, "input": texts[i]})
        got[i] = answer.json()["data"][0]["embedding"]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    close([got[i] for i in range(len(texts))], expected)


def test_the_cli_serves_on_a_free_port_and_stops_cleanly():
    proc = subprocess.Popen(
        [sys.executable, "-m", "captain_memo.cli.main", "serve-embeddings", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = proc.stderr.readline()
        match = re.search(r"serving (\S+) \((\d+)-d\) on (http://127\.0\.0\.1:\d+)", line)
        assert match, line
        assert match.group(1, 2) == (MODEL, "384")
        url = match.group(3)
        assert httpx.get(url + "/health").json()["model"] == MODEL
        vector = httpx.post(url + "/api/embed", json={"model": MODEL, "input": "x"}).json()["embeddings"][0]
        assert len(vector) == 384
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_cli_reports_a_port_in_use(embed_server):
    taken = str(embed_server.server_address[1])
    done = subprocess.run(
        [sys.executable, "-m", "captain_memo.cli.main", "serve-embeddings", "--port", taken],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{taken}" in done.stderr
