#!/usr/bin/env python3
"""What hostile peers cost: the embedding client against a dripping and an endless server, and
`serve-embeddings` against a crowd of idle connections.

    python scripts/bench_hostile.py            # about 15 s

Every peer is a real socket on 127.0.0.1. Prints one line per measurement; nothing is asserted
(tests/test_http_client_safety.py and tests/test_embed_server_limits.py assert the limits).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from captain_memo.embeddings.http import OllamaEmbedder  # noqa: E402
from captain_memo.embeddings.http_server import EmbeddingServer, serve_in_thread  # noqa: E402
from captain_memo.errors import EmbeddingError  # noqa: E402


class ConstantEmbedder:
    """The server's model is beside the point here: connections and threads are measured."""

    model_id = "bench:constant"
    dim = 8

    def embed(self, texts):
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def raw_server(send) -> tuple[socket.socket, str]:
    """A listening socket whose every connection is handed, request unread, to ``send(conn)``."""
    listener = socket.create_server(("127.0.0.1", 0))

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve, args=(conn, send), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


def _serve(conn: socket.socket, send) -> None:
    with conn:
        try:
            conn.recv(65536)
            send(conn)
        except OSError:
            pass


def drip(where: str):
    body = b'{"embeddings": [[' + b"0.5," * 7 + b"0.5]]}"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)

    def send(conn):
        slow = head + body if where == "headers" else body
        if where == "body":
            conn.sendall(head)
        for i in range(len(slow)):
            conn.sendall(slow[i : i + 1])
            time.sleep(0.4)

    return send


def endless(sent: list):
    def send(conn):
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"embeddings": [[')
        block = b"0.125," * 100_000
        while sent[0] < 1024**3:
            conn.sendall(block)
            sent[0] += len(block)

    return send


def timed_failure(url: str, timeout: float = 30.0) -> tuple[float, str]:
    started = time.monotonic()
    try:
        OllamaEmbedder(url, "m", timeout=timeout, retries=0).embed(["text"])
        return time.monotonic() - started, "answered"
    except EmbeddingError as exc:
        return time.monotonic() - started, str(exc).split(": ", 1)[-1]


def main() -> int:
    import httpx  # noqa: F401 - imported before the clock starts, as in a process that embedded once

    for where in ("headers", "body"):
        listener, url = raw_server(drip(where))
        seconds, said = timed_failure(url, timeout=1.5)
        listener.close()
        print(
            f"client, server dripping its {where} a byte per 0.4 s, timeout 1.5 s: ended after {seconds:.2f} s ({said})"
        )

    sent = [0]
    listener, url = raw_server(endless(sent))
    seconds, said = timed_failure(url)
    time.sleep(0.2)
    listener.close()
    print(
        f"client, endless answer: ended after {seconds:.2f} s, the server had sent {sent[0] / 2**20:.0f} MiB ({said})"
    )

    server = EmbeddingServer(ConstantEmbedder(), "constant", "127.0.0.1", 0)
    serve_in_thread(server)
    before = threading.active_count()
    crowd = [socket.create_connection(("127.0.0.1", server.server_address[1])) for _ in range(300)]
    time.sleep(3)
    print(
        f"serve-embeddings, 300 idle connections after 3 s: {threading.active_count() - before} handler threads "
        f"(cap {server.max_connections}), {server.turned_away} answered 503"
    )
    for sock in crowd:
        sock.close()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
