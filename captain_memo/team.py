"""The team store beside the local one: searched with every recall, written only when asked.

``CAPTAIN_MEMO_TEAM_DB`` names it (config.py's TeamConfig). It lives on another machine, so it is
one more thing that can fail: every call to it runs on one worker thread of its own, and the
caller waits at most ``CAPTAIN_MEMO_TEAM_TIMEOUT`` seconds for a recall (``WRITE_TIMEOUT`` for a
write someone asked for). A recall that gets no answer in time comes back with the local hits and
the failure named (``failures["team"]``), as a failed leg does. A request that hangs keeps the
worker busy: the next recall does not queue behind it but says so at once, until it returns.

The worker is a daemon thread, so a server that never answers cannot keep a command from exiting.
The connection string reaches messages and logs only with its password masked (``TeamConfig.shown``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace

from captain_memo.config import RankConfig, TeamConfig
from captain_memo.errors import CaptainMemoError, StoreError
from captain_memo.records import TEAM, RecallRequest
from captain_memo.store.search import Scope

log = logging.getLogger("captain_memo")
# A write to the team store (remember --team, publish, supersede, forget) waits this long, in
# seconds: longer than a recall, since someone asked for it and waits for the answer.
WRITE_TIMEOUT = 30.0
# Indexing a repository's notes into it embeds and writes them all; a first run can take minutes.
INDEX_TIMEOUT = 1800.0


class TeamError(StoreError):
    """The team store cannot be used now (unreachable, too slow, misconfigured); says which and why."""


class _Worker:
    """One daemon thread running calls in order; each call's result comes back through a Future."""

    def __init__(self, name: str):
        self._name = name
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable, *args) -> Future:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        future: Future = Future()
        self._calls.put((future, fn, args))
        return future

    def stop(self) -> None:
        if self._thread is not None:
            self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args = call
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # handed to the caller, who names it
                    future.set_exception(exc)


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
        self._open_engine = open_engine or open_team_engine
        self._engine = None
        self._worker = _Worker("captain-memo-team")
        self._pending: Future | None = None

    # -- on the worker thread -----------------------------------------------------------

    def _opened(self):
        if self._engine is None:
            if self.cfg.problem:
                raise TeamError(self.cfg.problem)
            self._engine = self._open_engine(str(self.cfg.url), self._embedder_factory())
        return self._engine

    def _search(self, query: str, scope: Scope, cfg: RankConfig, legs, temporal: bool):
        return self._opened().search(query, scope, cfg, legs, temporal)

    # -- on the caller's thread -----------------------------------------------------------

    def search(self, query: str, request: RecallRequest, cfg: RankConfig, temporal: bool) -> Future:
        """Start searching the team store for a recall; ``collect`` waits for the answer."""
        if self._pending is not None and not self._pending.done():
            busy: Future = Future()
            busy.set_exception(TeamError("still no answer to an earlier request; answering from the local store"))
            return busy
        scope = Scope(self._project_id(request.project), request.all_projects)
        self._pending = self._worker.submit(self._search, query, scope, cfg, request.legs, temporal)
        return self._pending

    def collect(self, job: Future, started: float):
        """(the team store's hits or None, failures by name) once it answered or its time is up;
        ``started`` is the recall's own start (time.perf_counter), so the wait overlaps the local search."""
        left = max(0.0, self.timeout - (time.perf_counter() - started))
        try:
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

    def call(self, what: str, fn: Callable, *args, timeout: float = WRITE_TIMEOUT):
        """``fn(engine, *args)`` on the team store, waiting up to ``timeout`` seconds; TeamError
        naming ``what`` when the store cannot answer. The project's own errors (no such memory,
        bad input) pass through as they are."""
        job = self._worker.submit(lambda: fn(self._opened(), *args))
        try:
            return job.result(timeout=max(timeout, self.timeout))
        except FutureTimeout:
            raise TeamError(f"team store {self.cfg.shown}: no answer within {timeout:g} s while {what}") from None
        except TeamError as exc:
            raise TeamError(f"team store {self.cfg.shown}: {self.describe(exc)}") from None
        except CaptainMemoError as exc:
            raise type(exc)(self._masked(str(exc))) from None
        except Exception as exc:
            raise TeamError(f"team store {self.cfg.shown}: {what} failed: {self.describe(exc)}") from None

    def project_id(self, project: str | None) -> str | None:
        return self._project_id(project)

    def describe(self, exc: BaseException) -> str:
        """One line for a failure of the team store, without the connection string's password."""
        # The project's errors say what they are; any other is named by its type.
        text = str(exc) if isinstance(exc, CaptainMemoError) else f"{type(exc).__name__}: {exc}"
        line = self._masked(text.strip().splitlines()[0] if text.strip() else type(exc).__name__)
        return line.removeprefix(f"team store {self.cfg.shown}: ")  # the caller names the store

    def _masked(self, text: str) -> str:
        url = self.cfg.url or ""
        return text.replace(url, self.cfg.shown) if url else text

    def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None and (self._pending is None or self._pending.done()):
            self._worker.submit(engine.close)
        self._worker.stop()


def open_team_engine(url: str, embedder):
    """An engine over the team store ``url`` names: PostgreSQL (postgresql://, postgres://) or, to
    try it on one machine, a SQLite file shared by its users (sqlite:///path)."""
    from captain_memo.engine import Engine
    from captain_memo.store import Store

    if url.startswith("sqlite:///"):
        return Engine(Store(url[len("sqlite://") :]), embedder)
    from captain_memo.store.postgres import TeamStore
    from captain_memo.store.postgres.vectors import PgVectorIndex

    store = TeamStore(url)
    try:
        return Engine(store, embedder, vector_index=PgVectorIndex(store))
    except BaseException:
        store.close()
        raise
