"""Hostile HTTP servers on 127.0.0.1: each POST is answered by a function the test gives.

``hostile(behave)`` (a fixture) starts one; ``behave(handler)`` writes whatever the test needs,
well-formed or not, through the handler's socket. ``answer`` writes one ordinary response.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

from captain_memo.embeddings.http_server import ClosingHTTPServer


class Hostile(ClosingHTTPServer):
    """A server whose POST answer is ``behave(handler)``; counts the requests it got."""

    block_on_close = False

    def __init__(self, behave):
        self.behave = behave
        self.posts = 0
        self.sent = 0  # body bytes written before the client went away
        self.stop = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request, client_address):
        pass  # the client hanging up on a dripping or endless answer is the point

    def close(self) -> None:
        self.stop.set()
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.posts += 1
        self.server.behave(self)


def answer(handler, status: int, body: bytes, **headers) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)
