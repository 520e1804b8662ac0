"""The editor's host takes a store's socket: from nobody, from the service, or not at all.

One engine per store: while Neovim runs, its host serves the engine it holds on the store's
socket. When the host first needs the store it claims the socket:

- nobody holds its lock: the host takes the lock and binds the socket;
- a service started from the shell holds it: the service passes the listening socket and the
  lock over the connection itself (SCM_RIGHTS), so no client ever finds the store unserved, and,
  once this host says it took them (``TAKEN``), exits when the requests it took are answered;
- another editor's host holds it: this host becomes its client (editor/editor_requests.py forwards);
- the holder does not answer (stopped, stuck): the host runs its own engine unserved.

Both sides live here; the service's side is ``send``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from captain_memo.hosting import socket_file
from captain_memo.hosting.build import build_id, code_id
from captain_memo.hosting.client import ACCEPT_TIMEOUT, connect, lock_pid

CLAIM_WAIT = 30.0  # a service starting up or exiting holds the lock a moment; past this, run unserved
POLL = 0.02
MAX_REPLY = 4096
TAKEN = b'{"taken": true}\n'  # the editor's word that it holds the socket and lock it was passed


@dataclass
class Claim:
    """What claiming a store's socket gave: a socket to serve (with its lock), the pid of another
    editor's host serving it, or why neither (the host then runs an engine of its own, unserved)."""

    listener: socket.socket | None = None
    lock: int | None = None
    served_by: int | None = None
    reason: str | None = None


def send(conn: socket.socket, listener: socket.socket, lock: int) -> None:
    """The service's side: the listening socket and the lock file, with one line saying so."""
    line = json.dumps({"handover": True, "host": socket_file.SERVICE, "pid": os.getpid()}).encode() + b"\n"
    socket.send_fds(conn, [line], [listener.fileno(), lock])


def taken(conn: socket.socket, reader) -> bool:
    """The service's side: whether the editor took what was sent. False when it closed the
    connection unread (its claim gave up: what was sent is closed with it); True when it said so,
    and when it says nothing in time (it holds them, stopped or slow, and serves once it runs)."""
    conn.settimeout(ACCEPT_TIMEOUT)
    try:
        return reader.readline() == TAKEN
    except TimeoutError:
        return True
    except OSError:
        return False


def claim(path: Path, wait: float = CLAIM_WAIT) -> Claim:
    deadline = time.monotonic() + wait
    while True:
        try:
            lock = socket_file.take_lock(path, wait=0.0)
        except OSError as exc:  # a full file system, a folder removed: no lock file to be had
            return Claim(reason=f"cannot make its lock file {path}.lock ({exc.strerror or exc})")
        if lock is not None:
            return _listen(path, lock)
        try:
            answer, fds = _ask(path)
        except TimeoutError:
            pid = lock_pid(path)
            return Claim(reason=f"the process serving it{f' (pid {pid})' if pid else ''} does not answer")
        if len(fds) == 2 and answer.get("handover"):
            listener = socket.socket(fileno=fds[0])
            socket_file.write_pid(fds[1])
            return Claim(listener=listener, lock=fds[1])
        for fd in fds:  # anything else passed is not ours to keep
            os.close(fd)
        if answer.get("host") == socket_file.EDITOR:
            return Claim(served_by=answer.get("pid"))
        if time.monotonic() > deadline:
            return Claim(reason=f"its service did not hand it over within {wait:g} s")
        time.sleep(POLL)  # a service starting (not serving yet) or exiting (lock not yet free)


def _listen(path: Path, lock: int) -> Claim:
    """Nobody held the lock: bind the socket. When it cannot be bound (a full file system, a path
    longer than a socket's 108 bytes), the lock goes at once, or every client would wait for it."""
    try:
        socket_file.write_pid(lock)
        return Claim(listener=socket_file.listen(path), lock=lock)
    except OSError as exc:
        socket_file.release_lock(path, lock)
        return Claim(reason=f"cannot listen on {path} ({exc.strerror or exc})")


def release(path: Path, claim: Claim) -> None:
    """A claim not served after all (its engine failed to open): the socket and the lock go."""
    if claim.listener is not None:
        path.unlink(missing_ok=True)  # ours: bound under the lock still held
        claim.listener.close()
    if claim.lock is not None:
        socket_file.release_lock(path, claim.lock)


def _ask(path: Path) -> tuple[dict, list[int]]:
    """The holder's answer to a handover request, and what it passed; ({}, []) when nothing answers
    on the socket (not bound yet, or gone). TimeoutError: something holds it and does not answer."""
    sock = connect(path)
    if sock is None:
        return {}, []
    with sock:
        sock.settimeout(ACCEPT_TIMEOUT)
        try:
            request = {"op": "handover", "ack": True, "build": build_id(), "code": code_id()}
            sock.sendall(json.dumps(request).encode() + b"\n")
            data, fds, _, _ = socket.recv_fds(sock, MAX_REPLY, 2)
        except (ConnectionResetError, BrokenPipeError):
            return {}, []
        if len(fds) == 2:
            try:
                sock.sendall(TAKEN)  # the service stops serving only on this word
            except OSError:
                pass  # it went meanwhile: what it passed is ours either way
    try:
        answer = json.loads(data.split(b"\n", 1)[0] or b"{}")
    except ValueError:
        answer = {}
    return (answer if isinstance(answer, dict) else {}), list(fds)
