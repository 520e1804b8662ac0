"""The warm service: one store's engine, answering the command line and agents over a socket.

Two kinds of process serve a store this way. The editor's host (editor/editor_requests.py) serves the
engine it holds for Neovim while Neovim runs. With no editor open, the first command that finds no
service starts one of its own (``python -m captain_memo.hosting.socket_server``), which exits after
``CAPTAIN_MEMO_SERVICE_IDLE`` seconds without a request (600 by default), on ``captain-memo service
stop``, or on SIGTERM; when an editor opens the store it hands its socket over (hosting/handover.py)
and exits once the requests it took are answered. Only one process serves a socket: the one that
holds the lock file next to it. One killed outright leaves its socket behind; the next one to start
takes the lock and replaces it.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from captain_memo.base import runtime_folder
from captain_memo.errors import CaptainMemoError
from captain_memo.hosting import wire
from captain_memo.hosting.build import build_id, installation, same_code
from captain_memo.hosting.socket_file import (
    EDITOR,
    SERVICE,
    listen,
    release_lock,
    remove_socket,
    still_bound,
    take_lock,
    write_pid,
)
from captain_memo.hosting.warm_memo import EngineClosed
from captain_memo.hosting.watcher import Watcher, start_watching
from captain_memo.requests import operations

log = logging.getLogger("captain_memo")
CANCELLED_LOOK_S = 0.2  # how often a waiting agent's call looks whether its agent cancelled it
ACCEPT_POLL = 0.5  # seconds between idle checks while nobody connects
# A client sends its request at once; one that connects and stays silent must not keep the
# service from ever being idle.
READ_TIMEOUT = 30.0
SESSION_GRACE = 0.2  # seconds for answers just made to leave before agents' sessions are closed


class Service:
    """Serves ``memo`` (a WarmMemo) on the socket at ``path``. ``host``: SERVICE steps down for a
    client of newer code and hands its socket to an editor; EDITOR does neither (it lives as long as
    Neovim) and answers the extra ``ops`` the editor gives it. ``lock``: the lock file's descriptor,
    handed on with the socket."""

    def __init__(
        self,
        path: Path,
        db: Path,
        idle: float,
        memo=None,
        host: str = SERVICE,
        lock: int | None = None,
        ops: dict | None = None,
    ):
        from captain_memo.hosting.warm_memo import WarmMemo

        self.path = path
        self.db = db
        self.idle = idle
        self.memo = memo if memo is not None else WarmMemo(db)
        self.host = host
        self.lock = lock
        self.started = time.time()
        self.build = build_id()
        self.bound: int | None = None
        self.listener: socket.socket | None = None
        self.handed_over = False
        self.socket_lost = False  # serve() returned because the socket left its path
        self.watcher: Watcher | None = None  # follows the indexed repositories while serving (hosting/watcher.py)
        self._sessions: set[socket.socket] = set()  # agents' MCP sessions held here (hosting/agent_sessions.py)
        self.requests = 0
        self._active = 0
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._waker: tuple[socket.socket, socket.socket] | None = None  # serve()'s: stop() ends its wait
        self.clients: dict[str, int] = {}  # requests per kind of client ("cli", "mcp:<name>")
        self.embedded = {"requests": 0, "texts": 0}  # other processes' texts embedded here (`embed`)
        self.sessions_opened = 0  # agents' MCP sessions held here, a relay carrying one over counted again
        self.ops = {
            "recall": self._recall,
            "remember": self._remember,
            "embed": self._embed,
            "agent": self._agent,
            "agent_read": lambda request, expires: self._agent(request, expires, reads_only=True),
            "status": self._status,
            "stop": self._stop,
            **{name: self._counted(name, op) for name, op in (ops or {}).items()},
        }

    # -- the loop ---------------------------------------------------------------------------

    def serve(self, listener: socket.socket) -> None:
        self.listener = listener
        self.bound = bound = os.lstat(self.path).st_ino
        listener.settimeout(ACCEPT_POLL)
        self._waker = waker = socket.socketpair()
        poller = select.poll()
        for readable in (listener, waker[0]):
            poller.register(readable, select.POLLIN)
        threading.Thread(target=self._warm_up, name="captain-memo-warm-up", daemon=True).start()
        self.watcher = start_watching(self.memo)  # catches up, then follows the repositories indexed here
        while not self._stopping.is_set() and not self._idle_too_long():
            if not still_bound(self.path, bound):
                # Its folder was removed (logind at the last logout, a tmp cleaner): nobody can
                # reach this socket any more, and the next client starts a service. Stop, so that
                # only one engine holds the store (the editor's host claims the store again).
                log.info("the socket %s was removed; no longer serving on it", self.path)
                self.socket_lost = True
                break
            if not poller.poll(ACCEPT_POLL * 1000) or self._stopping.is_set():
                continue  # idle, or woken by stop()
            try:
                conn, _ = listener.accept()
            except TimeoutError:  # another process took it (an editor's host, after a hand-over)
                continue
            except OSError:  # closed by stop(): the editor is exiting
                break
            with self._lock:
                self._active += 1
                self._last = time.monotonic()
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()
        for end in waker:
            end.close()
        # New clients find no socket and start a new service, which waits for this one's lock;
        # connections not yet accepted are reset unanswered (their clients may safely retry);
        # those accepted finish before the exit. A socket handed over stays: it is the editor's now.
        if not self.handed_over:
            remove_socket(self.path, bound)
        listener.close()
        self.watcher.stop()
        while self._active_count():
            time.sleep(0.01)
        self._end_sessions()

    def _end_sessions(self) -> None:
        """Agents' sessions end with this process; their relays carry them over to the next engine
        (hosting/relay.py). The calls taken have been answered: a moment more lets the answers out."""
        with self._lock:
            sessions = list(self._sessions)
        if sessions:
            time.sleep(SESSION_GRACE)
        for conn in sessions:
            _end_session(conn)

    def end_sessions_now(self) -> None:
        """End the agents' sessions held here without waiting for their calls (a process that
        cannot wait longer): their relays replay the calls left unanswered."""
        with self._lock:
            sessions = list(self._sessions)
        for conn in sessions:
            _end_session(conn)

    def _idle_too_long(self) -> bool:
        with self._lock:
            return self._active == 0 and time.monotonic() - self._last > self.idle

    def _active_count(self) -> int:
        with self._lock:
            return self._active

    def _warm_up(self) -> None:
        try:
            self.memo.warm_up()
        except Exception as exc:  # the first request meets the same failure and reports it
            log.warning("warming up failed: %s", exc)

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(READ_TIMEOUT)
            with conn, conn.makefile("rb") as reader:
                if not same_user(conn):
                    wire.send(conn, {"ok": False, "error": "refused: the service answers its own user only"})
                    return
                message = wire.receive(reader)
                if message is None:
                    return
                if message.get("op") == "handover":
                    self._hand_over(conn, reader, message)
                    return
                refusal = self._refusal_for(message)
                if refusal is not None:
                    wire.send(conn, refusal)
                    return
                if message.get("op") == "mcp":
                    self._host_session(conn, reader, message.get("request"))
                    return
                wire.send(conn, {"accepted": True, "host": self.host})
                wire.send(conn, self.answer(message))
        except (OSError, wire.WireError) as exc:
            log.info("a client connection failed: %s", exc)
        finally:
            with self._lock:
                self._active -= 1
                self._last = time.monotonic()

    def _host_session(self, conn: socket.socket, reader, request) -> None:
        """An agent's MCP session, held until its relay or this process ends it. An idle session
        keeps no service alive: only its calls count as activity."""
        from captain_memo.errors import CaptainMemoError
        from captain_memo.hosting.agent_sessions import checked_request, serve_session

        try:
            folder, share = checked_request(request)
        except CaptainMemoError as exc:
            wire.send(conn, {"accepted": False, "error": str(exc)})
            return
        if self._stopping.is_set():  # closed unanswered: the relay opens it in the next engine
            return
        conn.settimeout(None)
        wire.send(conn, {"accepted": True, "host": self.host})
        with self._lock:
            self._active -= 1
            self._sessions.add(conn)
            self.sessions_opened += 1
        try:
            with conn.makefile("wb") as writer:
                serve_session(
                    reader, writer, folder, share, lambda op, call: self._engine_call(op, call, conn), self.db
                )
        finally:
            with self._lock:
                self._sessions.discard(conn)
                self._active += 1

    def _engine_call(self, op: str, request: dict, conn: socket.socket):
        """A call of a session held here (on ``conn``): run on this process's engine, counted as
        activity. Once this process stops serving, or its engine is closing (Neovim quit, the
        interpreter exiting), a new call ends the session unanswered instead of failing: its relay
        carries the call, and the session, over to the next engine."""
        with self._lock:
            self._active += 1
            self._last = time.monotonic()
        try:
            if self._stopping.is_set():
                raise EngineClosed("this engine stopped serving")
            self.requests += 1
            return self.ops[op](request, None)
        except EngineClosed:
            log.info("an agent's call came as this engine stopped: its session ends, its relay carries it over")
            _end_session(conn)
            raise
        finally:
            with self._lock:
                self._active -= 1
                self._last = time.monotonic()

    def _refusal_for(self, message: dict) -> dict | None:
        """A client of other code (an upgrade since this service started, another release): a
        service steps down. The socket goes first, so the client's retry starts a service of its
        own code, which takes over once this one has finished the requests it accepted. The
        editor's host serves on; the client runs the request in its own process."""
        build = message.get("build")
        if same_code(build, message.get("code")):
            return None
        if self.host == EDITOR:
            return {
                "accepted": False,
                "stale": True,
                "stays": True,
                "error": f"the editor's engine (pid {os.getpid()}) runs captain-memo from "
                f"{installation(self.build)}, other code than {installation(str(build))}",
            }
        log.info("a client of other code (%s; this is %s): stepping down", build, self.build)
        if self.bound is not None:
            remove_socket(self.path, self.bound)
        self.stop()
        return {"accepted": False, "stale": True, "error": "the service runs another installation"}

    def _hand_over(self, conn: socket.socket, reader, message: dict) -> None:
        """An editor opened the store: give it the listening socket and the lock with it, so no
        client ever finds the store unserved, then finish the requests taken and exit. Another
        editor's host keeps serving; the asking editor becomes its client. An editor that says it
        will (``ack``) confirms it took them: one whose claim gave up before they came (its wait
        ran out) closes the connection, the socket and lock it was sent go with it, and this
        service serves on rather than leave the store unserved."""
        from captain_memo.hosting import handover

        if self.host == EDITOR or self.listener is None or self.lock is None or self._stopping.is_set():
            wire.send(conn, {"handover": False, "host": self.host, "pid": os.getpid()})
            return
        handover.send(conn, self.listener, self.lock)
        if message.get("ack") is True and not handover.taken(conn, reader):
            log.info("the editor did not take the socket (its claim gave up); serving on")
            return
        self.handed_over = True
        self.stop()  # at once: the listening socket is the editor's now
        log.info("handed the socket to the editor; exiting once the requests taken are answered")

    def answer(self, message: dict) -> dict:
        op = self.ops.get(str(message.get("op")))
        self.requests += 1
        try:
            if op is None:
                from captain_memo.errors import UnknownRequestError

                raise UnknownRequestError(f"the service does not know the request {message.get('op')!r}")
            return {"ok": True, "result": op(message.get("request"), _expires(message.get("within")))}
        except CaptainMemoError as exc:  # its kind too: a client tells "no such memory" from a refusal
            return {"ok": False, "error": str(exc), "kind": type(exc).__name__}
        except Exception as exc:
            from captain_memo.memo import readable_error

            error = readable_error(exc, self.db)
            if error is not None:
                return {"ok": False, "error": str(error)}
            log.exception("%s failed", message.get("op"))
            return {
                "ok": False,
                "internal": True,
                "error": f"the service failed: {type(exc).__name__}: {exc} (details in its log)",
            }

    # -- the requests -----------------------------------------------------------------------

    def _recall(self, request, expires: float | None) -> dict:
        self._count("cli")
        return self.memo.recall(operations.RecallRequest.from_json(request), expires)

    def _remember(self, request, expires: float | None) -> dict:
        self._count("cli")
        return self.memo.remember(operations.RememberRequest.from_json(request), expires)

    def _embed(self, request, expires: float | None) -> dict:
        """Vectors for a command embedding many texts in its own process (`index`, `import`):
        no second model on the machine, and this engine's recalls go first (embeddings/reads_first.py)."""
        self._count("cli")
        embed = operations.EmbedRequest.from_json(request)
        result = self.memo.embed(lambda memo: operations.embed(memo, embed), expires)
        with self._lock:
            self.embedded["requests"] += 1
            self.embedded["texts"] += len(embed.texts)
        return result

    def _agent(self, request, expires: float | None, reads_only: bool = False):
        """A call of an MCP server's tool (agent_calls.py), in the folder its agent works in."""
        from captain_memo.errors import InputError
        from captain_memo.requests import agent_calls, operations

        call = agent_calls.checked_envelope(request)
        tool = call["tool"]
        write = tool in agent_calls.WRITES
        if reads_only and write:
            raise InputError(f"agent_read: {tool} writes; send it as agent")
        self._count(agent_calls.origin_of(call["client"]))

        def work(memo):
            ctx = self.memo.context(call["folder"], tool == "remember", call["share_worktrees"])
            return agent_calls.run(memo, tool, call["args"], ctx, call["client"], call["request_key"])

        future = self.memo.submit(work, write=write, expires=expires)
        return _awaited(future, operations.CANCELLATIONS.asker(call["request_key"]))

    def _counted(self, client: str, op):
        def run(request, expires: float | None):
            self._count(client)
            return op(request, expires)

        return run

    def _count(self, client: str) -> None:
        with self._lock:
            self.clients[client] = self.clients.get(client, 0) + 1

    def _status(self, request, expires: float | None) -> dict:
        return {
            "pid": os.getpid(),
            "db": str(self.db),
            "socket": str(self.path),
            "model": self.memo.model(),
            "started": self.started,
            "requests": self.requests,
            "clients": dict(self.clients),
            "sessions": self.sessions_opened,
            "embedded": dict(self.embedded),
            "idle_exit_seconds": self.idle if self.idle != float("inf") else None,
            "reopened": self.memo.reopened,
            "package": installation(self.build),
            "host": self.host,
            "watching": self.watcher.status() if self.watcher is not None else None,
        }

    def _stop(self, request, expires: float | None) -> dict:
        self.stop()
        return {"pid": os.getpid(), "host": self.host}

    def stop(self) -> None:
        """Stop taking connections; the ones taken are answered (serve() waits for them)."""
        self._stopping.set()
        try:  # at once, rather than at the accept loop's next idle check
            self._waker[1].send(b"\0")  # type: ignore[index]
        except (TypeError, OSError):  # not serving yet, or no longer
            pass


def _end_session(conn: socket.socket) -> None:
    """No further line goes either way: the relay reads the end of the session at once."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _expires(within) -> float | None:
    """When a request sent with ``within`` seconds left stops being worth starting, on this
    process's monotonic clock. A client sends how long it waits, never a time of its own clock:
    with an absolute time, a client a minute behind the service had every request refused unrun."""
    if within is None:
        return None
    if isinstance(within, bool) or not isinstance(within, (int, float)) or not 0 <= within < float("inf"):
        raise CaptainMemoError("within must be the seconds the client waits (a number from 0)")
    return time.monotonic() + within


def same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (the socket's 0600 mode says so too; this holds if it is changed)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="captain-memo-service")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--db", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s captain-memo service %(process)d: %(message)s"
    )
    path = Path(args.socket)
    runtime_folder.private_dir()  # refuses a folder that is not private before anything is bound in it
    lock = take_lock(path)
    if lock is None:
        log.info("another service holds %s; leaving it to answer", path)
        return 0
    write_pid(lock)
    os.chdir("/")  # hold no folder of the caller's
    listener = listen(path)
    service = Service(path, Path(args.db), runtime_folder.idle_seconds(), lock=lock)
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    log.info("serving %s on %s", args.db, path)
    try:
        service.serve(listener)
    finally:
        service.memo.close()
        if not service.handed_over:  # a lock handed over is the editor's now
            release_lock(path, lock)
        log.info("stopped after %d requests", service.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _awaited(future, cancelled):
    """A call's answer. A call its agent cancelled is no longer waited for: the agent's session runs
    its calls one at a time, so its next call waited behind it until the writer reached it or its
    deadline passed (20 s), and a save asks just before it writes, so it stores nothing."""
    if cancelled is None:
        return future.result()
    while True:
        try:
            return future.result(timeout=CANCELLED_LOOK_S)
        except TimeoutError:
            if cancelled():
                from captain_memo.errors import RequestCancelledError

                raise RequestCancelledError("cancelled by the client while it waited; nothing was saved") from None
