"""`serve-embeddings` against hostile clients: a lying Content-Length, idle sockets, a crowd.

Each test talks raw HTTP over real sockets to a real server on 127.0.0.1 (the real local model
behind it), because the faults live below what an HTTP client library lets one send.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
from embed_support import MODEL, stop_server

from captain_memo.embeddings.http_server import EmbeddingServer, serve_in_thread


@pytest.fixture
def make_server(local_embedder):
    local_embedder.embed(["load the model first"])
    servers = []

    def make(idle_timeout: float, max_connections: int) -> EmbeddingServer:
        server = EmbeddingServer(
            local_embedder, MODEL, "127.0.0.1", 0, idle_timeout=idle_timeout, max_connections=max_connections
        )
        serve_in_thread(server)
        servers.append(server)
        return server

    yield make
    for server in servers:
        stop_server(server)


@pytest.fixture
def small_server(make_server):
    """A server with a short idle timeout, so the limits show quickly."""
    return make_server(idle_timeout=1.0, max_connections=8)


def connect(server, timeout: float = 5.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=timeout)


def read_head(sock: socket.socket) -> str:
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(4096)
        if not part:
            break
        data += part
    return data.decode("latin-1")


@pytest.mark.parametrize("length", ["-1", "-99999", "+5", "5_0", "0x10"])
def test_a_content_length_that_is_not_a_byte_count_is_refused(small_server, length):
    with connect(small_server) as sock:
        # The connection stays open after the body: a server that reads to EOF would wait here.
        sock.sendall(
            f"POST /api/embed HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
            + b'{"model": "%s", "input": "x"}' % MODEL.encode()
        )
        head = read_head(sock)
    assert head.startswith("HTTP/1.1 400"), head
    assert "Connection: close" in head


def test_a_body_shorter_than_announced_is_refused_when_the_client_goes_quiet(small_server):
    with connect(small_server) as sock:
        sock.sendall(b'POST /api/embed HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"model"')
        started = time.monotonic()
        head = read_head(sock)
    assert head.startswith("HTTP/1.1 408"), head
    assert time.monotonic() - started < 4  # the idle timeout (1 s), not forever


def test_an_idle_connection_is_closed_by_the_server(small_server):
    with connect(small_server) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""  # the server hung up
        waited = time.monotonic() - started
    assert 0.5 < waited < 4, waited


def test_connections_over_the_cap_get_a_503_without_a_thread(make_server):
    small_server = make_server(idle_timeout=30.0, max_connections=8)  # the idle ones stay for the test

    def handler_threads() -> int:
        return sum(1 for t in threading.enumerate() if "process_request" in t.name)

    before = handler_threads()
    idle = [connect(small_server) for _ in range(8)]
    try:
        # The server's own count of the 8 taken: the process's handler threads include other servers'.
        deadline = time.monotonic() + 5
        while small_server.connections < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        crowd = [connect(small_server) for _ in range(40)]
        heads = [read_head(sock) for sock in crowd]
        for sock in crowd:
            sock.close()
        assert all(h.startswith("HTTP/1.1 503") and "Retry-After: 1" in h for h in heads), heads[:2]
        assert handler_threads() - before <= 8
        assert small_server.turned_away == 40
    finally:
        for sock in idle:
            sock.close()
    # Once the idle ones are gone (closed by the client here, or by the idle timeout), it serves again.
    deadline = time.monotonic() + 5
    while True:
        answer = httpx.post(small_server.url + "/api/embed", json={"model": MODEL, "input": "back"})
        if answer.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert answer.status_code == 200 and len(answer.json()["embeddings"][0]) == 384


def test_a_crowd_waits_in_the_listening_queue_until_the_server_turns_it_away(local_embedder):
    """Connections made faster than the server takes them (here: all made before it serves) wait in
    its listening socket's queue. With the queue of 5 it had, the rest were dropped and left to
    TCP's retries a second or more later: a crowd got its 503 seconds late, or not at all."""
    server = EmbeddingServer(local_embedder, MODEL, "127.0.0.1", 0, max_connections=8)
    crowd: list[socket.socket] = []
    try:
        try:
            crowd += [connect(server) for _ in range(40)]
        finally:
            serve_in_thread(server)  # so that stop_server can stop it
        deadline = time.monotonic() + 30
        while server.turned_away < 32 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (server.connections, server.turned_away) == (8, 32)
    finally:
        for sock in crowd:
            sock.close()
        stop_server(server)
