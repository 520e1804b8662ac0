"""A total deadline for one HTTP request, however slowly the server sends its bytes.

httpx's timeouts bound each socket operation: a server that sends one byte every 3 s never
trips a 30 s read timeout, and ``remember`` waited forever (measured before this module). Here
every connect, read and write of a request gets at most the time left until the request's
deadline, so the whole request ends by then. The streams are httpcore's own, wrapped: nothing of
TLS, proxies or keep-alive changes.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import httpcore

_local = threading.local()


@contextmanager
def deadline(seconds: float):
    """Requests made by this thread inside the block end within ``seconds`` in all."""
    _local.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.at = None


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    at = getattr(_local, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend):
        self._inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _Stream(self._inner.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _Stream(self._inner.connect_unix_socket(path, _bounded(timeout, httpcore.ConnectTimeout),
                                                       socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def install(client) -> bool:
    """Put the deadline under every connection pool of an ``httpx.Client`` (proxies included).

    httpx has no public hook for its network backend, so the pools' backend attribute is wrapped;
    False when a future httpx lays them out otherwise (each read then keeps only httpx's own
    per-read timeout, and tests/test_http_client_safety.py fails).
    """
    transports = [client._transport, *client._mounts.values()]  # noqa: SLF001 - see the docstring
    pools = [getattr(t, "_pool", None) for t in transports if t is not None]
    if not pools or not all(hasattr(p, "_network_backend") for p in pools):
        return False
    for pool in pools:
        if not isinstance(pool._network_backend, _Backend):
            pool._network_backend = _Backend(pool._network_backend)
    return True
