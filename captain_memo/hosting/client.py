"""The command line's side of the warm service: send a request, starting the service if needed.

This is the thin path: it imports nothing heavy (no numpy, SQLite, onnxruntime or git;
tests/test_service.py checks), nor pathlib (~3 ms; it names the socket with
runtime_folder.socket_file), nor the socket and json packages, whose imports (re, enum, selectors)
cost a warm recall about as much CPU as the interpreter's own start: it talks through ``_socket``,
the C module the socket package wraps, and hosting/wire_json.py. ``call`` returns None whenever
the work should run in the caller's own process instead: the service is switched off, its folder
or socket is not private, or it cannot be started; the command then runs cold, as before.
"""

from __future__ import annotations

import os
import sys
import time

from captain_memo.base import runtime_folder
from captain_memo.errors import CaptainMemoError
from captain_memo.hosting import wire
from captain_memo.hosting.build import build_id, code_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    import socket
    from collections.abc import Callable
    from pathlib import Path
    from typing import TypeVar

    Connection = socket.socket | _socket.socket
    S = TypeVar("S", socket.socket, _socket.socket)

# A first start imports the engine (~1 s on an idle machine, several on a busy one) before the
# socket exists; past this, the command runs in its own process rather than wait longer.
START_TIMEOUT = 20.0
CONNECT_POLL = 0.01
# The service imports the package from the folder this command imported it from: a command run
# from a checkout would otherwise start a service of another installation, which steps down.
SERVE = (
    "import sys; root = sys.argv.pop(1); root in sys.path or sys.path.insert(0, root); "
    "from captain_memo.hosting.socket_server import main; sys.exit(main())"
)
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
# The service takes a request at once (its reading threads never wait for the engine): one
# that has not within this is stopped (SIGSTOP), stuck or swapping, and the command runs here.
ACCEPT_TIMEOUT = runtime_folder.accept_seconds()  # CAPTAIN_MEMO_SERVICE_ACCEPT, 5 s
# How long an answer may take once taken (CAPTAIN_MEMO_SERVICE_TIMEOUT): a recall answers in
# milliseconds warm; a remember embeds its text, which for a long one takes longer still.
DEFAULT_DEADLINE = 20.0
SECONDS_PER_MB = 300.0  # embedding a megabyte on a busy 2-core machine, with room to spare
CONTROL_TIMEOUT = 2 * ACCEPT_TIMEOUT  # status and stop: a service that is there answers them at once


# Requests that may run twice: a recall changes nothing, and a remember carries a key that makes
# its second run find the first one's memory (requests/operations.py). One whose answer does not come in time,
# or is lost after the service took it, is run again here.
READ_ONLY = {"recall", "status", "agent_read"}


class _NotAccepted(Exception):
    """The service closed the connection before taking the request: it never ran."""


class _Stale(_NotAccepted):
    """The service runs another installation of captain-memo and has stepped down."""


class _Declined(Exception):
    """The editor's host serves the store with other code than this command's, and serves on."""


class _Unanswered(Exception):
    """The service did not take the request, or did not answer it, in time (stopped, stuck)."""

    def __init__(self, message: str, taken: bool):
        super().__init__(message)
        self.taken = taken


class _Lost(Exception):
    """The service took the request and then went away: it may or may not have run."""


def call(op: str, request: dict, db: str | os.PathLike, env=None, say=None):
    """The service's answer to ``request``, or None to run it here. A failure the service reports
    (a bad input, a damaged store) is raised as CaptainMemoError, exactly as running it here would.
    ``say``: where to tell why it runs here (default: stderr)."""
    env = os.environ if env is None else env
    _say = say or _print
    if not runtime_folder.enabled(env):
        return None
    try:
        path = runtime_folder.socket_file(db, env)
        started = False
        for _ in range(2):  # once more when a service exiting for idleness dropped the request unread
            sock = connect_raw(path)
            if sock is None:
                sock, started = _start(path, db, env, _say, connect_raw), True
            if sock is None:
                return None
            try:
                # A service this command just started loads the engine first: allow for it.
                wait = deadline(op, request, env) + (START_TIMEOUT if started else 0.0)
                return _exchange(sock, op, request, deadline=wait)
            except _Declined as exc:
                _say(f"{exc}; running here")
                return None
            except _Stale:
                if started:  # it runs other code than this command even though this command started it
                    _say("the service it started runs another installation of captain-memo; running without it")
                    return None
            except _NotAccepted:
                continue
            except (_Unanswered, _Lost) as exc:
                # Not taken: the service will not start it late (it checks ``within``).
                if op in READ_ONLY or request.get("request_key") or not getattr(exc, "taken", True):
                    _say(f"{exc}; running it here")
                    return None
                raise CaptainMemoError(
                    f"{exc}: it may or may not have been done (run `captain-memo recall` "
                    "to check; --no-service runs without the service)"
                ) from None
            finally:
                sock.close()
    except runtime_folder.UnsafeRuntimeError as exc:
        _say(f"{exc}; running without the service")
    except OSError as exc:
        _say(f"the service is unreachable ({exc}); running without it")
    return None


class NotServed(Exception):
    """Nobody serves the socket now (``gone``: its server exited), or its server does not take or
    answer a request in time. ``taken``: the server had taken the request."""

    def __init__(self, message: str, gone: bool, taken: bool = False):
        super().__init__(message)
        self.gone = gone
        self.taken = taken


def ask(path: Path, op: str, request: dict, wait: float) -> dict:
    """The answer of whoever serves ``path`` to a request that must run there (the editor's host
    forwarding to the host serving the store). NotServed when nobody serves it or the server does
    not take or answer it in time; the server's own refusals are raised as CaptainMemoError."""
    sock = connect(path)
    if sock is None:
        raise NotServed("nobody serves the store now", gone=True)
    try:
        return _exchange(sock, op, request, deadline=wait)
    except (_NotAccepted, _Lost) as exc:
        raise NotServed(str(exc) or "the store's server went away", gone=True, taken=isinstance(exc, _Lost)) from None
    except (_Unanswered, _Declined) as exc:
        raise NotServed(str(exc), gone=False, taken=getattr(exc, "taken", False)) from None
    finally:
        sock.close()


def deadline(op: str, request: dict, env) -> float:
    """Seconds the service has to answer ``request`` once it took it."""
    base = runtime_folder.answer_seconds(env, DEFAULT_DEADLINE)
    # An agent's remember carries its text among the tool's arguments; `embed`, a command's texts.
    text = (
        request.get("text") if op == "remember" else (request.get("args") or {}).get("text") if op == "agent" else None
    )
    chars = len(text) if isinstance(text, str) else 0
    if op == "embed" and isinstance(request.get("texts"), list):
        chars = sum(len(t) for t in request["texts"] if isinstance(t, str))
    return round(base + chars / 1e6 * SECONDS_PER_MB, 1)


def control(op: str, db: str | os.PathLike, env=None) -> dict | None:
    """``status`` or ``stop`` for the service of ``db``; None when none is running (nothing starts).
    A service that does not answer in time is named with its pid (``{"unanswered": ...}``); ``stop``
    then ends it with signals."""
    path = runtime_folder.socket_path(db, env)
    sock = connect(path)
    if sock is None:
        return None
    try:
        # Asked for by name, with nothing to fall back on: a loaded machine gets longer.
        return _exchange(sock, op, {}, installation=False, deadline=CONTROL_TIMEOUT, accept=CONTROL_TIMEOUT)
    except (_NotAccepted, _Lost):
        return None
    except _Unanswered as exc:
        pid = service_pid(path)
        answer = {"unanswered": str(exc), "pid": pid}
        if op == "stop" and pid is not None:
            answer["signalled"] = _end(pid)
        return answer
    finally:
        sock.close()


def lock_pid(path: Path) -> int | None:
    """The pid the serving process wrote in the socket's lock file (a service or an editor's host)."""
    from pathlib import Path

    try:
        return int(Path(f"{path}.lock").read_text().strip())
    except (OSError, ValueError):
        return None


def service_pid(path: Path) -> int | None:
    """The pid in the lock file, when that process is a captain-memo service (never an editor)."""
    from pathlib import Path

    pid = lock_pid(path)
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes() if pid is not None else b""
    except OSError:
        return None
    return pid if b"captain_memo.hosting.socket_server" in command else None


def _end(pid: int) -> str:
    """End a service that does not answer: SIGTERM (with SIGCONT, for a stopped one), then SIGKILL."""
    import signal
    from pathlib import Path

    for sig in (signal.SIGTERM, signal.SIGCONT):
        os.kill(pid, sig)
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists() or _zombie(pid):
            return "SIGTERM"
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return "SIGKILL"


def _zombie(pid: int) -> bool:
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def connect(path: str | Path) -> socket.socket | None:
    """A socket connected to whoever serves ``path``; None when nobody does."""
    import socket

    if not runtime_folder.check_socket(path):
        return None
    return _connected(path, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))


def connect_raw(path: str | Path) -> _socket.socket | None:
    """``connect`` with the C module's socket (sendall, recv, settimeout and close only): the thin
    path's, which imports no socket package."""
    import _socket

    if not runtime_folder.check_socket(path):
        return None
    return _connected(path, _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM))


def _connected(path: str | Path, sock):
    sock.settimeout(ACCEPT_TIMEOUT)  # a stopped service's full backlog must not hold the command
    try:
        sock.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):  # a killed service's leftover, or just gone
        sock.close()
        return None
    except TimeoutError:
        sock.close()
        raise OSError(f"its socket {path} takes no connection within {ACCEPT_TIMEOUT:g} s") from None
    return sock


def _start(path: str | Path, db, env, _say, opening: Callable[[str | Path], S | None]) -> S | None:
    """Start a service for ``db`` and connect to it with ``opening`` (``connect`` or
    ``connect_raw``); None when it does not come up in time."""
    import subprocess

    log = open(os.path.splitext(path)[0] + ".log", "ab")  # noqa: SIM115 - handed to the child
    os.chmod(log.name, 0o600)
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", SERVE, PACKAGE_ROOT, "--socket", str(path), "--db", str(db)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=dict(env),
            # The working folder comes first on sys.path: the private folder holds no modules.
            cwd=os.path.dirname(path),
            start_new_session=True,
        )
    finally:
        log.close()
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        sock = opening(path)
        if sock is not None:
            _reap_when_it_exits(child)
            return sock
        code = child.poll()
        if code:  # it failed to start; its log says why
            _say(f"the service did not start (exit {code}; see {log.name}); running without it")
            return None
        time.sleep(CONNECT_POLL)
    _reap_when_it_exits(child)
    _say(f"the service did not answer within {START_TIMEOUT:g} s (see {log.name}); running without it")
    return None


def _reap_when_it_exits(child) -> None:
    """Wait for the service on a thread of its own: it is this process's child, and an agent's relay
    outlives it (an idle exit, a hand-over to an editor), which left it a zombie for the session."""
    import threading  # subprocess imported it already

    threading.Thread(target=child.wait, name="captain-memo-service-reaper", daemon=True).start()


def _exchange(
    sock: Connection,
    op: str,
    request: dict,
    installation: bool = True,
    deadline: float = 0.0,
    accept: float = ACCEPT_TIMEOUT,
) -> dict:
    """``installation``: name this command's installation, so that a service of another steps down
    (a command's request); ``service status`` and ``stop`` look at whatever service runs.
    The service must take the request within ACCEPT_TIMEOUT and answer within ``deadline``
    seconds after; it is told how long that is, and drops a request it reaches too late."""
    sock.settimeout(accept)
    reader = wire.LineReader(sock)
    try:
        # How long it waits, not until when: the service's clock and this one's may disagree.
        message = {"op": op, "request": request, "within": accept + deadline}
        if installation:
            message["build"], message["code"] = build_id(), code_id()
        wire.send(sock, message)
        first = wire.receive(reader)
    except TimeoutError:
        raise _Unanswered(f"the service did not take `{op}` within {accept:g} s", taken=False) from None
    except (ConnectionResetError, BrokenPipeError, wire.WireError):
        raise _NotAccepted() from None
    if first is None:
        raise _NotAccepted()
    if first.get("stays"):
        raise _Declined(first.get("error") or "the editor's engine runs other code")
    if first.get("stale"):  # it has stepped down: start one of this installation
        raise _Stale()
    if not first.get("accepted"):
        raise CaptainMemoError(first.get("error") or "the service refused the request")
    who = server_name(first.get("host"))
    sock.settimeout(deadline)
    try:
        reply = wire.receive(reader)
    except TimeoutError:
        raise _Unanswered(f"{who} took `{op}` but did not answer within {deadline:g} s", taken=True) from None
    except (OSError, wire.WireError) as exc:
        raise _Lost(f"{who} failed while running `{op}` ({exc})") from None
    if reply is None:
        raise _Lost(f"{who} stopped while running `{op}`")
    if reply.get("internal"):
        raise _Lost(_named(reply.get("error"), who) or f"{who} failed without saying why")
    if not reply.get("ok"):
        raise _failure(reply)
    return reply["result"]


def server_name(host) -> str:
    """Who serves, as its accepted line says: Neovim's host (its engine serves the store while the
    editor runs) or a service of its own; the shell said "the service" for both."""
    return "Neovim's host" if host == "editor" else "the service"


def _named(error: str | None, who: str) -> str | None:
    """A serving process's own report of its failure, naming who it was."""
    prefix = "the service failed"
    return who + error[len("the service") :] if error and error.startswith(prefix) else error


def _failure(reply: dict) -> CaptainMemoError:
    """The error the service reported, as the kind it was (errors.py), so that a caller handles it
    as it would the same failure in its own process (a missing memory is not a refusal)."""
    from captain_memo import errors

    kind = getattr(errors, str(reply.get("kind")), None)
    if not (isinstance(kind, type) and issubclass(kind, CaptainMemoError)):
        kind = CaptainMemoError
    return kind(reply.get("error") or "the service failed without saying why")


def _print(message: str) -> None:
    print(f"captain-memo: {message}", file=sys.stderr)
