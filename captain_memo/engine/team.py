"""The team store beside the local one: searched with every recall, written only when asked.

``CAPTAIN_MEMO_TEAM_DB`` names it (config.py's TeamConfig). It lives on another machine, so it is
one more thing that can fail: every call to it runs on one worker thread of its own, and the
caller waits at most ``CAPTAIN_MEMO_TEAM_TIMEOUT`` seconds for a recall (``WRITE_TIMEOUT`` for a
write someone asked for). A recall that gets no answer in time comes back with the local hits and
the failure named (``failures["team"]``), as a failed leg does. A request that hangs keeps the
worker busy: the next recall does not queue behind it but says so at once, until it returns.

The same limits bind the server: every statement runs under a ``statement_timeout`` and a
``lock_timeout`` of the operation's time, so a write its caller gave up on is cancelled by the
server, never committed later. A recall's time runs from when its query is sent: connecting starts
with the client, and loading the model (a cold process) does not count. A connection the server
dropped (a restart) is opened again; a write meeting one is tried again within its time (saving is
idempotent: an exact copy is never stored twice).

The worker and the search legs are daemon threads, so a server that never answers cannot keep a
command from exiting. The connection string reaches messages and logs only masked (``TeamConfig.shown``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from captain_memo.config import RankConfig, TeamConfig
from captain_memo.errors import CaptainMemoError, NotFoundError, RecallError, StoreError
from captain_memo.records import TEAM, RecallRequest
from captain_memo.store.search import Scope

if TYPE_CHECKING:
    from captain_memo.engine.core import Engine

log = logging.getLogger("captain_memo")
# A write to the team store (remember --team, publish, supersede, forget) waits this long, in
# seconds: longer than a recall, since someone asked for it and waits for the answer.
WRITE_TIMEOUT = 30.0
# Indexing a repository's notes into it embeds and writes them all; a first run can take minutes.
INDEX_TIMEOUT = 1800.0
# How much longer than the server's own limit a caller waits, for the server's cancellation to
# arrive before the caller gives up on its own.
GRACE_S = 2.0
# The pause before a search or a write is tried again on a lost connection (a server restarting).
RETRY_PAUSE_S = 0.2
# How long closing waits for the team engine to close on its worker.
CLOSE_WAIT_S = 0.5
# The longest a recall waits for the model to load before its team query is sent (a cold process).
MODEL_WAIT_S = 60.0


class TeamError(StoreError):
    """The team store cannot be used now (unreachable, too slow, misconfigured); says which and why."""


def _settle(future: Future, fn: Callable, args) -> None:
    if future.set_running_or_notify_cancel():
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to the caller, who names it
            future.set_exception(exc)


class _Worker(Executor):
    """Daemon threads running calls from one queue; each call's result comes back through a Future."""

    def __init__(self, name: str, threads: int = 1):
        self._name = name
        self._count = threads
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        with self._lock:
            while len(self._threads) < self._count:
                self._threads.append(threading.Thread(target=self._run, name=self._name, daemon=True))
                self._threads[-1].start()
        future: Future = Future()
        self._calls.put((future, partial(fn, **kwargs) if kwargs else fn, args))
        return future

    def stop(self) -> None:
        for _ in self._threads:
            self._calls.put(None)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.stop()  # never joined: a thread waiting on the server must not hold up an exit

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            _settle(*call)


class _Sending:
    """When a recall's team query was ready to go: connected (``connected``), the query embedded
    (``sent``, with ``at`` the time)."""

    def __init__(self):
        self.connected = threading.Event()
        self.sent = threading.Event()
        self.at = 0.0

    def send(self) -> None:
        self.at = time.perf_counter()
        self.release()

    def release(self, _job: Future | None = None) -> None:
        self.connected.set()
        self.sent.set()


def _lost_connection(why: str) -> bool:
    """Whether a leg's failure (as the engine names it: its type, then its text) is a lost connection."""
    return why.startswith("ConnectionLost") or "ConnectionLost:" in why


def _limited(engine: Engine, seconds: float) -> AbstractContextManager[None]:
    """The store's statements bounded by ``seconds`` (a SQLite team store has no server to bound)."""
    return engine.store.time_limit(max(seconds, 0.001))


class TeamClient:
    """The team store seen from this client, opened on first use on its worker thread.

    ``open_engine(url, embedder)`` makes an engine over the store the URL names (``open_engine``
    below by default); ``project_id`` turns a local project path into its portable identity."""

    def __init__(
        self,
        cfg: TeamConfig,
        embedder_factory: Callable[[], object],
        project_id: Callable[[str | None], str | None],
        open_engine: Callable[[str, object], object] | None = None,
    ):
        self.cfg = cfg
        self.timeout = cfg.timeout
        self._embedder_factory = embedder_factory
        self._project_id = project_id
        self._open_engine = open_engine or partial(open_team_engine, timeout_s=cfg.timeout)
        self._engine = None
        self._worker = _Worker("captain-memo-team")
        self._pending: Future | None = None
        self._sending: dict[int, _Sending] = {}
        self._connecting: Future | None = None

    def connect_soon(self) -> None:
        """Start connecting now, while the caller does other work (loads its model)."""
        if self._engine is None and self._connecting is None:
            self._connecting = self._worker.submit(self._connect_quietly)

    def _connect_quietly(self) -> None:
        try:
            self._opened()
        except Exception:  # the recall that needs it meets the same failure and names it
            pass

    # -- on the worker thread -----------------------------------------------------------

    def _opened(self):
        if self._engine is None:
            if self.cfg.problem:
                raise TeamError(self.cfg.problem)
            self._engine = self._open_engine(str(self.cfg.url), self._embedder_factory())
        return self._engine

    def _search(self, sending: _Sending, query: str, scope: Scope, cfg: RankConfig, legs, temporal: bool):
        engine = self._opened()
        sending.connected.set()
        try:
            engine.queries.embed_query(query)  # the model loaded before the clock starts
        except Exception:
            pass  # the vector leg meets the same failure and reports it
        sending.send()
        with _limited(engine, self.timeout):
            hits, answered, failures = self._searched(engine, sending.at, (query, scope, cfg, legs, temporal))
            if not hits.rows:  # nothing, perhaps for want of a grant
                if (problem := engine.store.grant_problem(scope.project, scope.all_projects)) is not None:
                    failures = {**failures, "grant": problem}
        return hits, answered, failures

    def _searched(self, engine, sent: float, search: tuple):
        """``engine.search(*search)``, tried again after a pause while a leg lost its connection (a
        restart) and the recall's time (from ``sent``) allows."""
        while True:
            try:
                hits, answered, failures = engine.search(*search)
            except RecallError as exc:
                if not _lost_connection(str(exc)) or time.perf_counter() + RETRY_PAUSE_S > sent + self.timeout:
                    raise
            else:
                if not any(_lost_connection(why) for why in failures.values()):
                    return hits, answered, failures
                if time.perf_counter() + RETRY_PAUSE_S > sent + self.timeout:
                    return hits, answered, failures
            time.sleep(RETRY_PAUSE_S)

    def _attempts(self, fn: Callable, args: tuple, seconds: float, missing_is_done: bool):
        """``fn(engine, *args)`` within ``seconds``, tried again while the connection is lost (a
        restart) and time is left. After a lost connection, ``missing_is_done`` takes a memory
        not found as the earlier attempt's work (a forget that committed before the answer was lost)."""
        from captain_memo.store.postgres.connection import ConnectionLost

        deadline, pause, lost = time.monotonic() + seconds, RETRY_PAUSE_S, False
        while True:
            try:
                engine = self._opened()
                with _limited(engine, deadline - time.monotonic()):
                    return fn(engine, *args)
            except NotFoundError:
                if lost and missing_is_done:
                    return None
                raise
            except ConnectionLost:
                if time.monotonic() + pause >= deadline:
                    raise
                lost = True
                time.sleep(pause)
                pause = min(pause * 2, 2.0)

    # -- on the caller's thread -----------------------------------------------------------

    def search(self, query: str, request: RecallRequest, cfg: RankConfig, temporal: bool) -> Future:
        """Start searching the team store for a recall; ``collect`` waits for the answer."""
        if self._pending is not None and not self._pending.done():
            busy: Future = Future()
            busy.set_exception(TeamError("still no answer to an earlier request; answering from the local store"))
            return busy
        scope = Scope(self._project_id(request.project), request.all_projects)
        sending = _Sending()
        self._pending = self._worker.submit(self._search, sending, query, scope, cfg, request.legs, temporal)
        self._sending[id(self._pending)] = sending
        self._pending.add_done_callback(sending.release)  # a failure to connect ends the wait at once
        return self._pending

    def _deadline(self, job: Future, started: float) -> float:
        """When to stop waiting: ``timeout`` after the query was sent. Connecting must be done
        within ``timeout`` of the recall's start (``started``); the model's loading is not counted."""
        sending = self._sending.pop(id(job), None)
        if sending is None:
            return started + self.timeout
        if not sending.connected.wait(max(0.0, started + self.timeout - time.perf_counter())):
            return started + self.timeout
        sending.sent.wait(MODEL_WAIT_S)
        return (sending.at or time.perf_counter()) + self.timeout

    def collect(self, job: Future, started: float):
        """(the team store's hits or None, failures by name) once it answered or its time is up;
        ``started`` is the recall's own start (time.perf_counter), so the wait overlaps the local search."""
        try:
            left = max(0.0, self._deadline(job, started) - time.perf_counter())
            hits, _, failures = job.result(timeout=left)
        except FutureTimeout:
            why = f"no answer within {self.timeout:g} s (CAPTAIN_MEMO_TEAM_TIMEOUT); answering from the local store"
            log.warning("team store %s: %s", self.cfg.shown, why)
            return None, {"team": why}
        except Exception as exc:
            why = self.describe(exc)
            log.warning("team store %s: %s", self.cfg.shown, why)
            return None, {"team": why}
        return replace(hits, store=TEAM), {f"team {leg}": why for leg, why in failures.items()}

    def call(self, what: str, fn: Callable, *args, timeout: float | None = None, missing_is_done: bool = False):
        """``fn(engine, *args)`` on the team store within ``timeout`` seconds (``WRITE_TIMEOUT`` by
        default; the server cancels what is still running then); TeamError naming ``what`` when the
        store cannot answer. The project's own errors (no such memory, bad input) pass through."""
        from captain_memo.store.postgres.connection import TimedOut

        timeout = WRITE_TIMEOUT if timeout is None else timeout
        seconds = max(timeout, self.timeout)
        job = self._worker.submit(self._attempts, fn, args, seconds, missing_is_done)
        try:
            return job.result(timeout=seconds + GRACE_S)
        except FutureTimeout:
            self._cancel()
            raise TeamError(
                f"team store {self.cfg.shown}: no answer within {timeout:g} s while {what}: it may or may not "
                "have been done (the server was told to cancel it); doing it again is safe, an exact copy is "
                "never saved twice"
            ) from None
        except TimedOut as exc:
            raise TeamError(
                f"team store {self.cfg.shown}: not done within {timeout:g} s while {what} ({self.describe(exc)});"
                " nothing was changed: try again when the store is less busy"
            ) from None
        except TeamError as exc:
            raise TeamError(f"team store {self.cfg.shown}: {self.describe(exc)}") from None
        except NotFoundError as exc:  # a SQLite team store names its ids as a local one would
            raise NotFoundError(self._masked(_team_ids(str(exc)))) from None
        except CaptainMemoError as exc:
            raise type(exc)(self._masked(str(exc))) from None
        except Exception as exc:
            raise TeamError(f"team store {self.cfg.shown}: {what} failed: {self.describe(exc)}") from None

    def _cancel(self) -> None:
        if (engine := self._engine) is not None:
            engine.store.cancel()

    def project_id(self, project: str | None) -> str | None:
        return self._project_id(project)

    def grant_check(self, project: str | None) -> str | None:
        """Why this role may not use the team store for ``project`` (a local project path): no
        grant names it; None when one does (or the store keeps no grants)."""
        shared = self._project_id(project)
        return self.call(
            "checking this role's grant",
            lambda engine: engine.store.grant_problem(shared),
            timeout=self.timeout,
        )

    def describe(self, exc: BaseException) -> str:
        """One line for a failure of the team store, without the connection string's password."""
        # The project's errors say what they are; any other is named by its type.
        text = str(exc) if isinstance(exc, CaptainMemoError) else f"{type(exc).__name__}: {exc}"
        line = self._masked(text.strip().splitlines()[0] if text.strip() else type(exc).__name__)
        return line.removeprefix(f"team store {self.cfg.shown}: ")  # the caller names the store

    def _masked(self, text: str) -> str:
        from captain_memo.store.postgres.connection import scrubbed

        url = self.cfg.url or ""
        return scrubbed(text.replace(url, self.cfg.shown), url) if url else text

    def close(self) -> None:
        """Close the engine on its worker (briefly waited for: a process about to exit must not
        finalise under it); a worker still waiting on the server is left to its daemon thread."""
        engine, self._engine = self._engine, None
        if engine is not None and (self._pending is None or self._pending.done()):
            closing = self._worker.submit(engine.close)
            try:
                closing.result(timeout=CLOSE_WAIT_S)
            except Exception:
                pass  # busy or failing: nothing more to do for a store being let go
        self._worker.stop()


def open_team_engine(url: str, embedder, timeout_s: float | None = None):
    """An engine over the team store ``url`` names: PostgreSQL (postgresql://, postgres://, or
    libpq's key=value form) or, to try it on one machine, a SQLite file shared by its users
    (sqlite:///path). ``timeout_s`` bounds connecting and, until an operation sets its own, statements."""
    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    if url.startswith("sqlite:///"):
        return Engine(Store(url[len("sqlite://") :]), embedder, leg_pool=_Worker("captain-memo-team-leg", 2))
    from captain_memo.store.postgres import TeamStore
    from captain_memo.store.postgres.vectors import PgVectorIndex

    store = TeamStore(url, timeout_s=timeout_s)
    try:
        return Engine(store, embedder, vector_index=PgVectorIndex(store), leg_pool=_Worker("captain-memo-team-leg", 2))
    except BaseException:
        store.close()
        raise


def _team_ids(message: str) -> str:
    """``no memory with id 99`` as a person must read it of the team store: ``... id t99``."""
    import re

    return re.sub(r"\b(id|memory) (\d+)\b", r"\1 t\2", message)
