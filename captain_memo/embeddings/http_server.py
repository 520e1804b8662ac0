"""A small HTTP server for one embedding model, speaking Ollama's and OpenAI's embedding APIs.

``captain-memo serve-embeddings`` runs it with the local model, so a team can share one model and
any Ollama or OpenAI client (Captain Memo's own providers included) can use it:

    POST /api/embed        Ollama, a batch: {"model", "input": str | [str]} -> {"embeddings": [[...]]}
    POST /api/embeddings   Ollama, older:   {"model", "prompt": str} -> {"embedding": [...]}
    POST /v1/embeddings    OpenAI:          {"model", "input", "encoding_format": float | base64}
    GET  /api/tags, /v1/models   the one model served
    GET  /health           {"status": "ok", "model", "dim", "requests", "connections"}

The standard library's ThreadingHTTPServer is enough: the model, not HTTP, is the bottleneck.
Model runs are serialised by a lock, because onnxruntime already uses every core for one batch
and two concurrent runs on two cores only thrash. It listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import socket
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from captain_memo import __version__
from captain_memo.config import SERVE_HOST, SERVE_PORT
from captain_memo.errors import CaptainMemoError

log = logging.getLogger("captain_memo")

DEFAULT_HOST, DEFAULT_PORT = SERVE_HOST, SERVE_PORT
MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_INPUTS = 2048
# A client that sends nothing for this long is gone (or hostile); its connection and thread are freed.
IDLE_TIMEOUT = 30.0
# Each open connection holds a thread; the model answers one request at a time anyway, so more than
# a few dozen open connections only queue.
MAX_CONNECTIONS = 64
OPEN_ROUTES = ("/", "/health")  # answered without an API key


class RequestError(Exception):
    """A request this server cannot answer; becomes a JSON error with the given status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ClosingHTTPServer(ThreadingHTTPServer):
    """A threading server whose close also ends kept-alive connections, as a stopped process would.

    With ``max_connections`` set, a connection beyond that many open ones gets a 503 at once and is
    closed, without a thread: 300 idle connections held open once made 306 threads.
    """

    daemon_threads = True
    max_connections: int | None = None
    # Connections not yet accepted wait here to be served or turned away: socketserver's queue of 5
    # dropped a crowd's connects, which TCP retried a second or more later.
    request_queue_size = socket.SOMAXCONN

    def __init__(self, *args, **kwargs):
        self.connections = 0  # TCP connections accepted: with keep-alive, far fewer than requests
        self.turned_away = 0  # connections refused for being over max_connections
        self._count = threading.Lock()
        self._open: set = set()  # sockets of live connections, closed with the server
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        with self._count:
            full = self.max_connections is not None and len(self._open) >= self.max_connections
            if full:
                self.turned_away += 1
            else:
                self.connections += 1
                self._open.add(request)
        if full:
            _turn_away(request)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._count:
            self._open.discard(request)
        super().shutdown_request(request)

    def server_close(self):
        super().server_close()
        with self._count:
            live, self._open = list(self._open), set()
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


BUSY = json.dumps({"error": "too many open connections; try again"}).encode()


def _turn_away(request) -> None:
    """A 503 written straight to the socket: the request is never read, so no thread waits on it."""
    head = (
        f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(BUSY)}"
        "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        request.settimeout(1.0)
        request.sendall(head + BUSY)
    except OSError:
        pass


class EmbeddingServer(ClosingHTTPServer):
    """Serves one embedder under one model name. ``url`` is where it listens.

    A connection idle for ``idle_timeout`` seconds (no byte of a request arriving) is closed, and at
    most ``max_connections`` are open at once; each open one costs a thread.
    """

    allow_reuse_address = True

    def __init__(
        self,
        embedder,
        model_name: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        api_key: str | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ):
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.embedder = embedder
        self.model_name = model_name
        self.api_key = api_key or None
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.started = time.time()
        self.requests = 0  # embedding requests answered
        self._compute = threading.Lock()
        super().__init__((host, port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def dim(self) -> int:
        return int(self.embedder.dim)

    def serves(self, name) -> bool:
        """Whether a requested model name means the model served (empty means "the default")."""
        if name in (None, ""):
            return True
        wanted = str(name).strip().lower()
        served = self.model_name.lower()
        return wanted in (served, served + ":latest", self.embedder.model_id.lower())

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._compute:
            vectors = self.embedder.embed(texts)
        with self._count:
            self.requests += 1
        return vectors

    def handle_error(self, request, client_address):
        # A client that hangs up mid-answer is routine; never print a traceback for it.
        log.debug("embedding server: connection from %s ended with an error", client_address, exc_info=True)


class Handler(BaseHTTPRequestHandler):
    server: EmbeddingServer
    protocol_version = "HTTP/1.1"  # keep-alive; every answer carries Content-Length
    # Without TCP_NODELAY a small answer after a large request waits for the client's delayed
    # ACK: ~40 ms per call on Linux instead of ~1 ms.
    disable_nagle_algorithm = True
    server_version = f"captain-memo/{__version__}"

    def setup(self):
        self.timeout = self.server.idle_timeout  # the stdlib sets it on the socket: every read waits this long
        super().setup()

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        log.debug("embedding server: %s " + format, self.address_string(), *args)

    # -- routing ----------------------------------------------------------------------------

    def do_GET(self):  # noqa: N802 - the stdlib's naming
        self._route(
            {
                "/": self._root,
                "/health": self._health,
                "/api/tags": self._tags,
                "/api/version": self._version,
                "/v1/models": self._models,
            },
            with_body=False,
        )

    def do_POST(self):  # noqa: N802
        self._route(
            {
                "/api/embed": self._ollama_embed,
                "/api/embeddings": self._ollama_embeddings,
                "/v1/embeddings": self._openai_embeddings,
            },
            with_body=True,
        )

    def _route(self, routes: dict, with_body: bool) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        try:
            if path not in OPEN_ROUTES:
                self._check_key()  # before reading a body a stranger may have sent
            body = self._read_body() if with_body else None
            handler = routes.get(path)
            if handler is None:
                raise RequestError(404, f"no route {self.command} {path}")
            status, payload = handler(body) if with_body else handler()
        except RequestError as exc:
            status, payload = exc.status, self._error(path, exc.status, str(exc))
        except CaptainMemoError as exc:
            status, payload = 500, self._error(path, 500, f"the model failed: {exc}")
        except Exception as exc:  # a bug here must still answer, or the client waits for nothing
            log.warning("embedding server: %s %s failed", self.command, path, exc_info=True)
            status, payload = 500, self._error(path, 500, f"internal error: {type(exc).__name__}")
        self._send(status, payload)

    def _read_body(self):
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise RequestError(411, "send the body with a Content-Length")
        # Digits only: int() takes "-1" (and rfile.read(-1) reads until the client closes, past any
        # limit), "+5", " 5" and "5_0".
        if not (length.isascii() and length.isdigit()):
            self.close_connection = True
            raise RequestError(400, f"bad Content-Length {length[:20]!r}: a number of bytes is expected")
        size = int(length)
        if size > MAX_BODY_BYTES:
            # The body is not read, so the connection cannot carry another request.
            self.close_connection = True
            raise RequestError(413, f"request body over {MAX_BODY_BYTES // (1024 * 1024)} MiB")
        try:
            raw = self.rfile.read(size)
        except TimeoutError:
            self.close_connection = True
            raise RequestError(408, f"the body stopped arriving for {self.server.idle_timeout:g} s") from None
        if len(raw) < size:
            self.close_connection = True
            raise RequestError(400, f"the body ended after {len(raw)} of {size} bytes")
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise RequestError(400, "the body is not valid JSON") from None

    def _check_key(self) -> None:
        key = self.server.api_key
        if key is None:
            return
        given = self.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {key}".encode()):
            self.close_connection = True  # the body, if any, stays unread
            raise RequestError(401, "missing or wrong API key (send Authorization: Bearer KEY)")

    def _send(self, status: int, payload) -> None:
        if isinstance(payload, bytes):
            data, kind = payload, "application/json"
        elif isinstance(payload, str):
            data, kind = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(payload).encode(), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _error(path: str, status: int, message: str):
        # Each API family has its own error shape, and its clients read only that one.
        if path.startswith("/v1/"):
            kind = "authentication_error" if status == 401 else "invalid_request_error"
            code = "model_not_found" if status == 404 and "model" in message else None
            return {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return {"error": message}

    # -- the model ----------------------------------------------------------------------------

    def _model(self, body: dict) -> str:
        name = body.get("model")
        if not self.server.serves(name):
            raise RequestError(404, f"model '{name}' not found; this server serves '{self.server.model_name}'")
        return self.server.model_name

    def _texts(self, value, field: str) -> list[str]:
        texts = [value] if isinstance(value, str) else value
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            if isinstance(texts, list) and texts and all(isinstance(t, (int, list)) for t in texts):
                raise RequestError(400, f"'{field}' holds token ids; this server takes text only")
            raise RequestError(400, f"'{field}' must be a string or a list of strings")
        if len(texts) > MAX_INPUTS:
            raise RequestError(400, f"at most {MAX_INPUTS} texts per request, got {len(texts)}")
        return texts

    def _vectors(self, texts: list[str], dimensions=None) -> np.ndarray:
        if dimensions not in (None, self.server.dim):
            raise RequestError(400, f"this model has {self.server.dim} dimensions; cannot give {dimensions}")
        if not texts:
            return np.zeros((0, self.server.dim), dtype=np.float32)
        return self.server.embed(texts)

    def _body(self, body) -> dict:
        if not isinstance(body, dict):
            raise RequestError(400, "the body must be a JSON object")
        return body

    # -- Ollama ---------------------------------------------------------------------------------

    def _ollama_embed(self, body):
        body = self._body(body)
        model = self._model(body)
        started = time.perf_counter_ns()
        # As Ollama does, no input (or an empty string) asks for nothing: clients use it to preload.
        texts = [] if body.get("input") in (None, "") else self._texts(body["input"], "input")
        vectors = self._vectors(texts, body.get("dimensions"))
        rows = ",".join(_json_row(v) for v in vectors)
        meta = {"model": model, "total_duration": time.perf_counter_ns() - started, "load_duration": 0}
        # The vectors are written by hand: shortest float32 text, half the bytes of json.dumps.
        return 200, (json.dumps(meta)[:-1] + f', "embeddings": [{rows}]}}').encode()

    def _ollama_embeddings(self, body):
        body = self._body(body)
        self._model(body)
        prompt = body.get("prompt", "")
        if not isinstance(prompt, str):
            raise RequestError(400, "'prompt' must be a string")
        (vector,) = self._vectors([prompt])
        return 200, f'{{"embedding": {_json_row(vector)}}}'.encode()

    def _tags(self):
        name = self.server.model_name
        modified = datetime.fromtimestamp(self.server.started, timezone.utc).isoformat()
        details = {
            "format": "onnx",
            "family": "bert",
            "families": ["bert"],
            "parameter_size": "",
            "quantization_level": "",
        }
        return 200, {
            "models": [
                {"name": name, "model": name, "modified_at": modified, "size": 0, "digest": "", "details": details}
            ]
        }

    def _version(self):
        return 200, {"version": __version__}

    # -- OpenAI ---------------------------------------------------------------------------------

    def _openai_embeddings(self, body):
        body = self._body(body)
        model = self._model(body)
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise RequestError(400, f"encoding_format must be float or base64, not {encoding!r}")
        if "input" not in body:
            raise RequestError(400, "'input' is required")
        vectors = self._vectors(self._texts(body["input"], "input"), body.get("dimensions"))
        items = []
        for index, vector in enumerate(vectors):
            if encoding == "base64":
                value = json.dumps(base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii"))
            else:
                value = _json_row(vector)
            items.append(f'{{"object": "embedding", "index": {index}, "embedding": {value}}}')
        # Token counts are not tracked by this server; usage reports zero rather than a guess.
        head = {"object": "list", "model": model, "usage": {"prompt_tokens": 0, "total_tokens": 0}}
        return 200, (json.dumps(head)[:-1] + f', "data": [{",".join(items)}]}}').encode()

    def _models(self):
        return 200, {
            "object": "list",
            "data": [
                {
                    "id": self.server.model_name,
                    "object": "model",
                    "created": int(self.server.started),
                    "owned_by": "captain-memo",
                }
            ],
        }

    # -- health -----------------------------------------------------------------------------------

    def _root(self):
        return 200, "Captain Memo embeddings server is running\n"

    def _health(self):
        server = self.server
        return 200, {
            "status": "ok",
            "model": server.model_name,
            "dim": server.dim,
            "requests": server.requests,
            "connections": server.connections,
            "version": __version__,
        }


def _json_row(vector: np.ndarray) -> str:
    # Nine significant digits give back every float32 exactly, so a client sees the vectors the
    # model made: rankings through the server equal in-process ones.
    return "[" + ",".join(map("{:.9g}".format, vector.tolist())) + "]"


def make_server(
    embedder=None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    model_name: str | None = None,
    api_key: str | None = None,
) -> EmbeddingServer:
    """A bound server (port 0 picks a free one), not yet serving; the model is loaded first so a
    broken install fails here, not on the first request."""
    if embedder is None:
        from captain_memo.embeddings.local import LocalEmbedder

        embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    name = model_name or embedder.model_id.split(":", 1)[-1]
    return EmbeddingServer(embedder, name, host, port, api_key)


def serve_in_thread(server: EmbeddingServer) -> threading.Thread:
    """Serve on a daemon thread until ``server.shutdown()``; for tests and benchmarks."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="captain-memo-embed-server", daemon=True
    )
    thread.start()
    return thread
