"""The service's messages as the thin path writes and reads them (hosting/wire_json.py over CPython's
_json, hosting/wire.LineReader over a real socket) are what the json package and makefile give."""

from __future__ import annotations

import json
import math
import random
import socket
import threading

import pytest

from captain_memo.hosting import wire, wire_json

PIECES = ["a", "é", '"', "\\", "\n", "\x00", "\x1f", "\u2028", "😀", "/", "\udce9"]


def some_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([True, False, None])
    if kind == 1:
        return rng.randint(-(10**20), 10**20)
    if kind == 2:
        return rng.choice([0.1, -2.5e-300, 1e300, 3.0, float("inf"), float("-inf"), rng.random()])
    if kind in (3, 4):
        return "".join(rng.choice(PIECES) for _ in range(rng.randrange(12)))
    if kind == 5:
        return [some_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{n}{rng.choice(PIECES)}": some_value(rng, depth + 1) for n in range(rng.randrange(4))}


def test_messages_are_written_and_read_as_the_json_package_does():
    rng = random.Random(7)
    for _ in range(2000):
        message = {"m": some_value(rng)}
        for ascii in (False, True):
            assert wire_json.dumps(message, ascii=ascii) == json.dumps(message, ensure_ascii=ascii)
        line = json.dumps(message).encode()
        assert json.dumps(wire_json.loads(line)) == json.dumps(json.loads(line))
        assert json.dumps(wire_json.loads(b" " + line + b"\r\n")) == json.dumps(message)
    assert math.isnan(wire_json.loads("NaN"))
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        wire_json.dumps({"a": {1}})


@pytest.mark.parametrize("line", [b"", b"{", b"{} x", b"nul", b"\xff{}", b'{"a": 1,}', b"[1 2]"])
def test_what_json_refuses_is_refused(line):
    with pytest.raises(ValueError):
        json.loads(line)
    with pytest.raises(ValueError):
        wire_json.loads(line)


def test_a_name_that_is_not_utf8_crosses_as_a_json_escape():
    assert wire.encoded({"query": "caf\udce9"}) == b'{"query": "caf\\udce9"}\n'
    assert wire.encoded({"query": "café"}) == '{"query": "café"}\n'.encode()


def test_lines_are_read_from_a_socket_as_makefile_reads_them():
    """Lines cut across sends, one longer than the limit, and what is left when the peer closes."""
    ours, theirs = socket.socketpair()
    sent = [b'{"accepted": true}\n{"ok"', b": true, ", b'"result": 1}\n', b"x" * 200_000 + b"\n", b"tail"]

    def write():
        for piece in sent:
            theirs.sendall(piece)
        theirs.close()

    writer = threading.Thread(target=write)
    writer.start()
    reader = wire.LineReader(ours)
    assert wire.receive(reader) == {"accepted": True}
    assert wire.receive(reader) == {"ok": True, "result": 1}
    assert reader.readline(1000) == b"x" * 1000
    assert reader.readline(300_000) == b"x" * 199_000 + b"\n"
    assert reader.readline(300_000) == b"tail"
    assert reader.readline(300_000) == b""
    writer.join()
    ours.close()


def test_a_reader_waits_no_longer_than_its_sockets_timeout():
    ours, theirs = socket.socketpair()
    ours.settimeout(0.05)
    theirs.sendall(b'{"accepted": true}')  # no line end: the answer never completes
    with pytest.raises(TimeoutError):
        wire.LineReader(ours).readline(100)
    ours.close()
    theirs.close()


def test_where_cpythons_json_module_is_missing_the_json_package_writes_and_reads_alike():
    fast_dumps, fast_loads = wire_json._fast()
    package_dumps, package_loads = wire_json._json_package()
    rng = random.Random(11)
    for _ in range(200):
        message = {"m": some_value(rng)}
        for ascii in (False, True):
            assert package_dumps(message, ascii=ascii) == fast_dumps(message, ascii=ascii)
        line = fast_dumps(message, ascii=True).encode()
        assert json.dumps(package_loads(line)) == json.dumps(fast_loads(line))


def test_a_line_nested_too_deeply_is_refused_as_not_json():
    """A client's line of 200,000 "[" reached the service's connection thread as a RecursionError,
    which no handler caught (a traceback in its log); it is a message that is not JSON."""
    ours, theirs = socket.socketpair()
    theirs.sendall(b"[" * 200_000 + b"\n")
    with pytest.raises(wire.WireError, match="nested too deeply"):
        wire.receive(wire.LineReader(ours))
    ours.close()
    theirs.close()
