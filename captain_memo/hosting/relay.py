"""`captain-memo mcp`'s thin path: the agent's MCP session, held by the store's engine.

An agent starts one MCP server per session. Where the store's engine runs (the editor's host, or
the service), this process only relays: it opens an MCP session in the engine's process over the
store's socket and copies the agent's stdin to it and its answers to stdout, a line at a time. It
imports neither the MCP SDK nor anything of the engine (about 15 MB instead of 55; tools/list in
milliseconds). What it keeps in order to carry the session over when the engine goes away:

- the agent's ``initialize`` and ``notifications/initialized``, replayed to the next engine (its
  answer to the replayed ``initialize`` is not passed on: the agent had one);
- the requests sent and not yet answered, replayed too. Each ``tools/call`` carries a request key
  (``_meta``), so a remember the first engine stored is found, not stored again, by the second.
  A request the agent cancelled (``notifications/cancelled``) is no longer waited for, so it is
  not replayed.

A request whose id is neither a string nor an integer (``null``, ``1.5``: MCP allows no other) is
answered here with -32600 and never sent: the engine's server drops it unanswered, and waiting for
its answer made the relay take the engine for lost and reconnect, replaying it, every 20 s.

The engine went away (stopped when idle, handed over to an editor, killed) or does not answer a
request in time: the next engine is asked (started when none runs), at once when requests wait
for answers, else when the agent next sends one. Where none can be reached, at the start or
mid-session (the editor's host stopped with Ctrl-Z holds the socket and answers nothing, a runtime
folder that cannot be used), the session is carried to
an engine in this process (hosting/agent_sessions.py ``serve_here``, on a thread, the agent told once),
and the store's engine is asked again with each request the agent sends after: one connection
attempt, waited for at most ``PROBE_WAIT`` and then left pending, so a host still stopped costs
that once and a host resumed takes its pending session. Once it answers and no call is running
here, the engine here is closed and the session carried back, as to any next engine. Where
engines are lost ``MAX_RECONNECTS`` times in a row (or the relay was given no engine of its own to
run), ``relay`` returns a ``Resume`` and the MCP server runs in this process from where the
session stood.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from captain_memo.base import runtime_folder
from captain_memo.hosting import client
from captain_memo.hosting.build import build_id, code_id

KEY = "captain-memo/request-key"  # in a tools/call's _meta: the remember it asks for is stored once
CHUNK = 65536
MAX_RECONNECTS = 3  # engines lost in a row without an answer between: run the server here instead
INVALID_REQUEST = -32600
PROBE_WAIT = 0.5  # seconds a request waits for the store's engine to take the session back
SECONDS_TO_READ_MB = 10.0  # a session reading a megabyte's line on a busy machine, with room to spare


class Resume:
    """Where the session stood when no engine could take it: lines to feed the server first (with
    the partial line read last), the id of the replayed initialize whose answer is not passed on,
    and why it runs here. (Plain classes here: dataclasses imports inspect, 2 MB of this process.)"""

    def __init__(self, replay: bytes, swallow: str | None, why: str):
        self.replay, self.swallow, self.why = replay, swallow, why


class Session:
    """What the relay knows of the agent's session."""

    def __init__(self) -> None:
        self.initialize: bytes | None = None
        self.initialize_id: str | None = None
        self.initialized: bytes | None = None
        self.answered_initialize = False
        self.waiting: dict[str, tuple[bytes, float]] = {}  # id -> (line, answer due by)
        self.swallow: str | None = None

    def outgoing(self, line: bytes, due: float) -> tuple[bytes, bytes]:
        """The agent's line as sent on (a tools/call gets its request key; requests are noted), and
        the relay's own answer to the agent instead when the engine would never answer it."""
        try:
            message = json.loads(line)
        except ValueError:
            return line, b""  # the engine's server answers it (wire.py)
        if not isinstance(message, dict):
            return line, b""
        method = message.get("method")
        if isinstance(method, str) and "id" in message and not _answerable(message["id"]):
            return b"", _invalid_id()
        params = message.get("params")
        if method == "tools/call" and isinstance(params, dict):
            meta = params.setdefault("_meta", {})
            if isinstance(meta, dict):
                meta.setdefault(KEY, os.urandom(16).hex())
                line = json.dumps(message).encode("utf-8") + b"\n"
        if method == "notifications/cancelled" and isinstance(params, dict) and "requestId" in params:
            # Sent on, and never replayed: a cancelled remember carried over to the next engine
            # would be stored after all, since that engine never heard of the cancellation.
            self.waiting.pop(_id({"id": params["requestId"]}), None)
        if method == "initialize":
            self.initialize, self.initialize_id, self.answered_initialize = line, _id(message), False
        elif method == "notifications/initialized":
            self.initialized = line
        if isinstance(method, str) and "id" in message:
            self.waiting[_id(message)] = (line, due)
        return line, b""

    def incoming(self, line: bytes) -> bool:
        """Whether to pass the engine's line on to the agent (not the answer to a replayed initialize)."""
        try:
            message = json.loads(line)
        except ValueError:
            return True
        if not isinstance(message, dict) or "method" in message or "id" not in message:
            return True
        key = _id(message)
        self.waiting.pop(key, None)
        if key == self.initialize_id:
            self.answered_initialize = True
        if self.swallow is not None and key == self.swallow:
            self.swallow = None
            return False
        return True

    def replay(self) -> tuple[bytes, str | None]:
        """What a new engine is sent before anything else, and the answer it must not pass on."""
        lines, swallow = [], None
        if self.initialize is not None and self.answered_initialize:
            lines.append(self.initialize)
            swallow = self.initialize_id
        lines += [self.initialized] if self.initialized is not None else []
        lines += [line for key, (line, _) in self.waiting.items() if key != swallow]
        return b"".join(lines), swallow


def _id(message: dict) -> str:
    return json.dumps(message.get("id"))


def _answerable(request_id) -> bool:
    """An id the engine's server answers: a string or an integer (MCP allows no other)."""
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


def _invalid_id() -> bytes:
    # id null: JSON-RPC's id for a request whose id could not be taken (the one sent may not be JSON's).
    error = {"code": INVALID_REQUEST, "message": "a request's id must be a string or an integer"}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode("utf-8") + b"\n"


class Relay:
    """``here``: runs a session on an engine in this process (hosting/agent_sessions.py ``serve_here``):
    ``here(conn, folder, share_worktrees, db, why)`` serves ``conn`` on a thread it returns."""

    def __init__(self, db: str, folder: str, share_worktrees: bool, env=None, here: Callable | None = None):
        self.db = db
        self.folder, self.share_worktrees, self.here = folder, share_worktrees, here
        self.request = {"folder": folder, "share_worktrees": share_worktrees}
        self.env = os.environ if env is None else env
        self.session = Session()
        self.sock: socket.socket | None = None
        self.said: list[str] = []
        self.inbox = b""  # the agent's partial line
        self.outbox = b""  # the engine's partial line
        self.stdin_open = True
        self.slack = 0.0  # a service just started loads the model before its first answer
        self.lost_in_a_row = 0
        self.held_here: threading.Thread | None = None  # the engine in this process, while it serves
        self.probe: socket.socket | None = None  # a session asked of the store's engine, not yet taken
        self.probe_line = b""  # its answer so far
        self.back: socket.socket | None = None  # a session the store's engine took: carried there next

    def run(self) -> int | Resume | None:
        """0 when the agent ended the session; None when serving is off (the server then runs here
        from the start); a Resume when no engine could be had, not even one here."""
        if not os.path.exists(self.db):
            # No store: an engine started for it would make one, empty, and answer from it. The
            # server here says the store is missing, naming it, and its first remember makes it.
            return None
        self.sock = self._open()
        if self.sock is None and self.said:  # none answers now (stopped): here until one does
            self.sock = self._open_here("; ".join(self.said))
        if self.sock is None:  # said why: that is where the server here starts from
            return Resume(b"", None, "; ".join(self.said)) if self.said else None
        with selectors.DefaultSelector() as selector:
            self.selector = selector
            selector.register(0, selectors.EVENT_READ, "agent")
            selector.register(self.sock, selectors.EVENT_READ, "engine")
            try:
                while True:
                    lost = self._step()
                    if lost is None:
                        continue
                    if not self.stdin_open:  # the agent hung up; what it still waits for, the engine had
                        return 0
                    resumed = self._reconnect(lost)
                    if isinstance(resumed, (int, Resume)):
                        return resumed
            finally:
                self._drop()
                self._forget_probe()

    # -- one turn of the loop ---------------------------------------------------------------

    def _step(self) -> str | None:
        """Copy what is ready; why the engine was lost, or None while it is there."""
        due = min((at for _, at in self.session.waiting.values()), default=None)
        timeout = None if due is None or due == float("inf") else max(0.0, due - time.monotonic())
        for key, _ in self.selector.select(timeout):
            if key.data == "probe":
                self._probe_answered()
                continue
            lost = self._from_agent() if key.data == "agent" else self._from_engine()
            if lost is not None:
                return lost
        if self.back is not None and not self.session.waiting:
            return self._carry_back()
        if due is not None and time.monotonic() > due:
            return "the store's engine did not answer in time"
        return None

    def _from_agent(self) -> str | None:
        data = os.read(0, CHUNK)
        if not data:
            self.stdin_open = False
            self.selector.unregister(0)
            if self.inbox.strip():
                self.inbox += b"\n"
            sent = self._send(self._complete_lines())
            if sent is None and self.sock is not None:
                try:
                    self.sock.shutdown(socket.SHUT_WR)  # the engine's session ends once it answered
                except OSError:
                    pass
            return sent
        self.inbox += data
        if self.held_here is not None and b"\n" in data:
            self._ask_back()
        if self.back is not None:
            return None  # held until the calls running here are answered, then sent there
        return self._send(self._complete_lines())

    def _outgoing(self, line: bytes) -> bytes:
        sent, answered = self.session.outgoing(line, time.monotonic() + self._allowed(line))
        if answered:
            _write_all(1, answered)  # whole lines only: the engine's are written whole too
        return sent

    def _allowed(self, line: bytes) -> float:
        """Seconds the engine has to answer: a remember's text takes longer to embed. The engine in
        this process is not waited for with a deadline: nothing can stop it but this process."""
        if self.held_here is not None:
            return float("inf")
        return client.deadline("remember", {"text": line.decode("utf-8", "replace")}, self.env) + self.slack

    def _send(self, data: bytes) -> str | None:
        if not data or self.sock is None:
            return None
        # An engine that stopped reading (its process stopped with Ctrl-Z) would hold a long line
        # in sendall for as long as it stays stopped, and this loop with it, deadlines and all.
        self.sock.settimeout(None if self.held_here is not None else self._taking(data))
        try:
            self.sock.sendall(data)
        except TimeoutError:
            return "the store's engine did not take the request in time"
        except OSError as exc:
            return f"the store's engine went away ({exc.strerror or exc})"
        return None

    @staticmethod
    def _taking(data: bytes) -> float:
        """Seconds an engine that is there takes to read ``data`` (its session reads all the time)."""
        return client.ACCEPT_TIMEOUT + len(data) / 1e6 * SECONDS_TO_READ_MB

    def _from_engine(self) -> str | None:
        try:
            data = self.sock.recv(CHUNK) if self.sock is not None else b""
        except OSError as exc:
            return f"the store's engine went away ({exc.strerror or exc})"
        if not data:
            return "the store's engine closed the session"
        self.slack, self.lost_in_a_row = 0.0, 0
        *lines, self.outbox = (self.outbox + data).split(b"\n")
        passed = b"".join(line + b"\n" for line in lines if self.session.incoming(line + b"\n"))
        _write_all(1, passed)
        return None

    # -- another engine ---------------------------------------------------------------------

    def _reconnect(self, why: str) -> int | Resume | None:
        self._drop()
        self._forget_probe()  # the session is opened afresh below
        if not self.session.waiting and not self._agent_speaks():
            return 0  # the agent ended the session while no engine held it
        self.lost_in_a_row += 1
        self.sock = self._open() if self.lost_in_a_row <= MAX_RECONNECTS else None
        if self.sock is None and self.lost_in_a_row <= MAX_RECONNECTS:
            self.sock = self._open_here("; ".join([why, *self.said]))
        if self.sock is None:
            replay, swallow = self.session.replay()
            reasons = "; ".join([why, *self.said])
            return Resume(replay + self.inbox, swallow, reasons)
        lost = self._carry_over()
        return None if lost is None else self._reconnect(lost)

    def _carry_over(self) -> str | None:
        """The session as it stands, sent to the engine on ``sock``, then the agent's lines held."""
        assert self.sock is not None
        replay, self.session.swallow = self.session.replay()
        self.selector.register(self.sock, selectors.EVENT_READ, "engine")
        now = time.monotonic()
        self.session.waiting = {k: (line, now + self._allowed(line)) for k, (line, _) in self.session.waiting.items()}
        return self._send(replay) or self._send(self._complete_lines())

    # -- an engine in this process, while the store's cannot be reached ---------------------

    def _open_here(self, why: str) -> socket.socket | None:
        """A session on an engine in this process; None when this relay has none to run."""
        if self.here is None or not runtime_folder.enabled(self.env):
            return None
        ours, theirs = socket.socketpair()
        self.held_here = self.here(theirs, self.folder, self.share_worktrees, self.db, why)
        return ours

    def _ask_back(self) -> None:
        """The agent sent a request while its session runs here: ask the store's engine for the
        session again (no service is started for it). One that takes it within PROBE_WAIT gets
        this very request; one that does not (still stopped) keeps the question pending."""
        if self.probe is not None or self.back is not None:
            return
        try:
            path = runtime_folder.socket_path(self.db, self.env)
            if not runtime_folder.check_socket(path):
                return  # nothing serves: the engine here goes on
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.setblocking(False)
            try:
                probe.connect(str(path))
                probe.send(_session_request(self.request))  # a short line into an empty buffer
            except OSError:
                probe.close()
                return
        except (OSError, runtime_folder.UnsafeRuntimeError):
            return
        self.probe, self.probe_line = probe, b""
        self.selector.register(probe, selectors.EVENT_READ, "probe")
        if _readable(probe, PROBE_WAIT):
            self._probe_answered()

    def _probe_answered(self) -> None:
        """The store's engine answered the pending question: the session goes back there once
        nothing runs here; anything else (a refusal, the socket closed) leaves it here."""
        probe = self.probe
        if probe is None:
            return
        try:
            data = probe.recv(CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self.probe_line += data
        if data and b"\n" not in self.probe_line:
            return
        line, _, rest = self.probe_line.partition(b"\n")
        try:
            answer = json.loads(line) if data else {}
        except ValueError:
            answer = {}
        self.selector.unregister(probe)
        self.probe = None
        if not (isinstance(answer, dict) and answer.get("accepted")) or rest:
            probe.close()
            return
        probe.setblocking(True)
        self.back = probe

    def _carry_back(self) -> str | None:
        """Nothing runs here any more: close the engine here and carry the session back."""
        self._drop()
        _write_all(2, b"captain-memo: mcp: the store's engine answers again; the session is carried back to it\n")
        self.sock, self.back = self.back, None
        self.lost_in_a_row = 0
        return self._carry_over()

    def _forget_probe(self) -> None:
        for sock in (self.probe, self.back):
            if sock is not None:
                try:
                    self.selector.unregister(sock)
                except (KeyError, ValueError):
                    pass
                sock.close()
        self.probe = self.back = None

    def _agent_speaks(self) -> bool:
        """Wait for the agent's next bytes (an idle session needs no engine); False at its end."""
        while self.stdin_open and b"\n" not in self.inbox:
            self.selector.select(None)
            data = os.read(0, CHUNK)
            if not data:
                self.stdin_open = False
                self.selector.unregister(0)
                if self.inbox.strip():
                    self.inbox += b"\n"
            self.inbox += data
        return b"\n" in self.inbox

    def _complete_lines(self) -> bytes:
        """The agent's whole lines read so far, as sent on; the partial one stays."""
        *lines, self.inbox = self.inbox.split(b"\n")
        return b"".join(self._outgoing(line + b"\n") for line in lines if line.strip())

    def _drop(self) -> None:
        if self.sock is not None:
            try:
                self.selector.unregister(self.sock)
            except (KeyError, ValueError):
                pass
            self.sock.close()
            self.sock = None
        self.outbox = b""
        if self.held_here is not None:
            # The session there ends with its connection; its store is closed (and its WAL folded
            # into the file) before another engine is asked to run anything.
            self.held_here.join()
            self.held_here = None

    def _open(self) -> socket.socket | None:
        """A session in the store's engine (starting the service when none runs); None when none
        can be had, with why in ``said``."""
        self.said = []
        if not runtime_folder.enabled(self.env):
            return None
        try:
            path = runtime_folder.socket_path(self.db, self.env)
            for _ in range(2):  # once more when a service exiting for idleness dropped it unread
                started = False
                sock = client.connect(path)
                if sock is None:
                    sock, started = client._start(path, self.db, self.env, self.said.append, client.connect), True
                if sock is None:
                    return None
                answer = _opened(sock, self.request, client.START_TIMEOUT if started else client.ACCEPT_TIMEOUT)
                if answer.get("accepted"):
                    self.slack = client.START_TIMEOUT if started else 0.0
                    return sock
                sock.close()
                if answer.get("stays") or answer.get("timeout") or (answer.get("stale") and started):
                    self.said.append(answer.get("error") or "the store's engine refused the session")
                    return None
        except runtime_folder.UnsafeRuntimeError as exc:
            self.said.append(str(exc))
        except OSError as exc:
            self.said.append(f"the service is unreachable ({exc})")
        return None


def _session_request(request: dict) -> bytes:
    return json.dumps({"op": "mcp", "request": request, "build": build_id(), "code": code_id()}).encode() + b"\n"


def _readable(sock: socket.socket, wait: float) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        return bool(selector.select(wait))


def _opened(sock: socket.socket, request: dict, wait: float) -> dict:
    """The engine's first line for an ``mcp`` request, read unbuffered (what follows is the session)."""
    sock.settimeout(wait)
    line = b""
    try:
        sock.sendall(_session_request(request))
        while not line.endswith(b"\n"):
            byte = sock.recv(1)
            if not byte:
                return {}
            line += byte
    except TimeoutError:
        return {"timeout": True, "error": f"the store's engine did not take the session within {wait:g} s"}
    except OSError:
        return {}
    sock.settimeout(None)
    try:
        answer = json.loads(line)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def relay(
    db: str | os.PathLike, folder: str, share_worktrees: bool, here: Callable | None = None
) -> int | Resume | None:
    """``here``: runs the session on an engine in this process while the store's cannot be reached
    (hosting/agent_sessions.py ``serve_here``); without it, a Resume is returned instead."""
    return Relay(str(Path(db).expanduser().absolute()), folder, share_worktrees, here=here).run()
