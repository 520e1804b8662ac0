"""Real HTTP servers on 127.0.0.1 for the embedding tests.

- ``embed_server``: the real ``serve-embeddings`` server (captain_memo.embeddings.http_server) serving the
  real local model, on a free port, in a thread of the test process.
- ``FaultServer``: a tiny misbehaving server speaking the same two APIs, for the faults a healthy
  server never shows (500s, garbage JSON, wrong dimensions, NaN, stalls, dropped connections).
  In mode "ok" it answers correctly with the real local model, so it can also "come back".
- ``GatedEmbedder``: wraps the real model so a server blocks on the Nth request, which lets a test
  kill a client at a chosen point of its work.

Import the fixtures into a test module with ``from embed_support import ...``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np

from captain_memo.embeddings.http_server import ClosingHTTPServer, EmbeddingServer, serve_in_thread

MODEL = "all-MiniLM-L6-v2-int8"  # the name serve-embeddings gives the local model
REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A port nothing listens on (bound and released at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(embedder, port: int = 0, api_key: str | None = None) -> EmbeddingServer:
    server = EmbeddingServer(embedder, MODEL, "127.0.0.1", port, api_key)
    serve_in_thread(server)
    return server


def stop_server(server) -> None:
    server.shutdown()
    server.server_close()


def cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``captain-memo`` in a child process with the test's environment plus ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "captain_memo.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=REPO,
    )


def provider_env(provider: str, url: str, model: str = MODEL, **extra: str) -> dict:
    env = {"CAPTAIN_MEMO_EMBED_PROVIDER": provider, "CAPTAIN_MEMO_EMBED_URL": url, "CAPTAIN_MEMO_EMBED_MODEL": model}
    return {**env, **{f"CAPTAIN_MEMO_EMBED_{k.upper()}": v for k, v in extra.items()}}


class GatedEmbedder:
    """The real model behind a gate: after ``arm(n)`` the (n+1)th call blocks until ``release()``."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.calls = 0
        self._limit: int | None = None
        self.reached = threading.Event()
        self._open = threading.Event()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def arm(self, calls: int) -> None:
        self._limit = self.calls + calls
        self.reached.clear()
        self._open.clear()

    def release(self) -> None:
        self._limit = None
        self._open.set()

    def embed(self, texts):
        self.calls += 1
        if self._limit is not None and self.calls > self._limit:
            self.reached.set()
            self._open.wait(60)
        return self.inner.embed(texts)


class FaultServer:
    """A real HTTP server on 127.0.0.1 whose answers the test chooses with ``mode``:

    ok, rate_limited_once (a 429 with Retry-After, then ok), legacy (no /api/embed), scaled
    (unnormalised vectors), shuffled (OpenAI data out of order),
    http500, garbage (not JSON), wrong_dim, nan, short (too few vectors), stall (never answers in
    time), drop (closes the connection), model_missing, echo_auth (a 401 quoting the auth header),
    echo_auth_500 (the same as a 500).
    ``down()`` closes the port (connection refused); ``up()`` listens on the same port again.
    """

    def __init__(self, embedder, mode: str = "ok"):
        self.embedder = embedder
        self.mode = mode
        self.hits: Counter = Counter()  # path -> requests received
        self.stopping = threading.Event()
        self.port = 0
        self._server = None
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> int:
        return sum(self.hits.values())

    def up(self) -> None:
        server = _ClosingServer(("127.0.0.1", self.port), _FaultHandler)
        server.fault = self
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def stop(self) -> None:
        self.stopping.set()
        self.down()

    def vectors(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed(texts)


class _ClosingServer(ClosingHTTPServer):
    """Closing it also ends kept-alive connections, as a server process that dies does."""

    block_on_close = False

    def handle_error(self, request, client_address):
        pass  # the faults make broken connections on purpose


class _FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_GET(self):  # noqa: N802
        self._reply(200, {"status": "ok"})

    def do_POST(self):  # noqa: N802
        fault: FaultServer = self.server.fault
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        path = self.path
        fault.hits[path] += 1
        mode = fault.mode
        if mode == "stall":
            fault.stopping.wait(10)
            return self._reply(200, {"embeddings": []})
        if mode == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if mode == "rate_limited_once":
            fault.mode = "ok"
            return self._raw(429, b'{"error": "slow down"}', "application/json", {"Retry-After": "0.3"})
        if mode == "http500":
            return self._reply(500, {"error": "the model crashed"})
        if mode == "echo_auth":
            return self._reply(401, {"error": {"message": f"bad key: {self.headers.get('Authorization')}"}})
        if mode == "echo_auth_500":
            return self._reply(500, {"error": f"cannot use {self.headers.get('Authorization')}"})
        if mode == "model_missing":
            return self._reply(404, {"error": f'model "{body.get("model")}" not found, try pulling it first'})
        if mode == "garbage":
            return self._raw(200, b'{"embeddings": [[0.1, 0.2', "application/json")
        if mode == "legacy" and path == "/api/embed":
            return self._raw(404, b"404 page not found", "text/plain")
        texts = body.get("input", body.get("prompt", ""))
        texts = [texts] if isinstance(texts, str) else list(texts)
        vectors = fault.vectors(texts).astype(np.float64)
        if mode == "scaled":
            vectors = vectors * 7.5
        elif mode == "wrong_dim":
            vectors = vectors[:, :5]
        elif mode == "nan":
            vectors[:, 3] = float("nan")
        elif mode == "short":
            vectors = vectors[:-1]
        rows = vectors.tolist()
        if path == "/api/embeddings":
            return self._reply(200, {"embedding": rows[0]})
        if path == "/api/embed":
            return self._reply(200, {"model": body.get("model"), "embeddings": rows})
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        if mode == "shuffled":
            data.reverse()
        return self._reply(200, {"object": "list", "model": body.get("model"), "data": data})

    def _reply(self, status: int, payload) -> None:
        # json.dumps writes NaN as a bare NaN token, as some servers really do.
        self._raw(status, json.dumps(payload).encode(), "application/json")

    def _raw(self, status: int, data: bytes, kind: str, headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
