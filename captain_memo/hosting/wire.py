"""The service's messages: one JSON object per line over a Unix socket.

A request is ``{"op", "request"}``, and ``"within"``: the seconds its client waits for the answer,
counted by the service from when it reads the request (never a time of the client's clock, which
may disagree with the service's); a request the service reaches later than that is not started.
The service first answers ``{"accepted": true}`` once it has read the request and will run it,
then ``{"ok": true, "result"}`` or ``{"ok": false, "error"}``.
The first line tells a client whether a request it got no answer to was run at all: one that was
never accepted is safe to send again, a write that was accepted and then lost is not.
"""

from __future__ import annotations

from captain_memo.hosting import wire_json

# A remembered text may be a megabyte (validation.MAX_BODY_CHARS) of characters up to 4 bytes
# each, escaped in JSON; recall answers are far smaller.
MAX_LINE = 16 * 1024 * 1024


class WireError(Exception):
    """A message that is not one JSON object on one line of acceptable size."""


def send(sock, message: dict) -> None:
    sock.sendall(encoded(message))


def encoded(message: dict) -> bytes:
    """One line of UTF-8 JSON. Text read from a file name or an argument that is not UTF-8 holds
    lone surrogates (Python's ``surrogateescape``), which UTF-8 cannot carry: JSON's ``\\udce9``
    escapes can, and the receiver decides what such text means (validation.escaped_bytes)."""
    try:
        return wire_json.dumps(message).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return wire_json.dumps(message, ascii=True).encode("ascii") + b"\n"


def receive(reader) -> dict | None:
    """The next message from a socket's binary reader, or None when the peer closed the connection."""
    line = reader.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise WireError("message too long or cut short")
    try:
        message = wire_json.loads(line)
    except ValueError as exc:
        raise WireError(f"not JSON ({exc})") from None
    except RecursionError:  # "[[[[..." a line long: the scanner's stack, not a value
        raise WireError("not JSON (nested too deeply)") from None
    if not isinstance(message, dict):
        raise WireError("not a JSON object")
    return message


class LineReader:
    """A socket's lines, read with its own ``recv`` (so its timeout holds): what ``makefile("rb")``
    gives, for the C module's socket the thin path uses, which has no ``makefile``."""

    CHUNK = 64 * 1024

    def __init__(self, sock):
        self.sock = sock
        self.pending = bytearray()

    def readline(self, limit: int) -> bytes:
        """The next line with its ``\\n``, at most ``limit`` bytes of it; what is left when the peer
        closed the connection (b"" once nothing is)."""
        searched = 0
        while True:
            end = self.pending.find(b"\n", searched, limit)
            if end >= 0:
                return self._taken(end + 1)
            if len(self.pending) >= limit:
                return self._taken(limit)
            searched = len(self.pending)
            chunk = self.sock.recv(self.CHUNK)
            if not chunk:
                return self._taken(len(self.pending))
            self.pending += chunk

    def _taken(self, size: int) -> bytes:
        line = bytes(self.pending[:size])
        del self.pending[:size]
        return line
