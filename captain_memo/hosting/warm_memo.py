"""A store held open by a long-lived process (the warm service), kept honest and never blocking.

Other processes write to the same store meanwhile: a CLI run with the service off, an `index`, a
``reindex``. Writes are no problem (SQLite serialises them and the in-memory index reads every
change from the ``vector_changes`` log). What a held store must notice is the store changing
under it: a reindex that swapped the model or vector table, or the file moved away, deleted or
replaced (a backup put back). Before each call the holder compares the store's model, dimension,
vector table and file identity with what it was opened on, and reopens the store when any
differs; closing a file that left its path writes its WAL into it and takes the WAL away from the
path (store/held_file.py), so nothing lands in, or is read from, the wrong file. After every
write the WAL is checkpointed, so the file alone is complete whenever nothing is being written.

Concurrency: reads (recall) run at once on a small pool of threads; writes run one at a time on
their own thread, so a recall never waits behind a long remember. Tide's bookkeeping of a recall
is a write too: it is kept aside (the recall does not wait for the lock) and written with the next
write, or when recalls have been recorded for ``TIDE_WAIT`` seconds, in one transaction: a write
the user did not ask for, running just after each recall, was what met a backup being copied over
the store (`cp` writes the file in pieces; a write between them mixes two stores' pages).
Reopening takes the gate alone, waiting for the calls in flight. Each thread keeps its own SQLite
connection, so the connection count is fixed by the pool sizes, however many clients call.
Each read is marked in flight while it runs (``Memo.reading``): a long embedding waits for the
reads before each of its slices (embeddings/reads_first.py). Another process's texts (``embed``, an
`index` asking for vectors) are embedded on a thread of their own, one request at a time: not on
the writer, which may be waiting for the write lock that very process holds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from captain_memo.hosting.freed_memory import IdleTrim
from captain_memo.requests import operations

log = logging.getLogger("captain_memo")
READERS = 3  # recalls served at once; more would only share two cores more thinly
# How long recalls' Tide records wait for a write to join: Tide moves by days, so a few seconds
# change no ranking; one transaction for a burst of recalls, and no write right behind each.
TIDE_WAIT = 5.0


def open_memory_indexed(path: Path):
    from captain_memo.memo import Memo

    memo = Memo.open(path, warm=True)
    memo.prefer_queries()  # recalls and a long remember run side by side here
    return memo


class EngineClosed(RuntimeError):
    """The held store is closing (its process quits): the call was not started."""


class Gate:
    """Many calls share the store; a reopen has it alone."""

    def __init__(self):
        self._cond = threading.Condition()
        self._sharing = 0
        self._alone = False

    @contextmanager
    def shared(self):
        with self._cond:
            self._cond.wait_for(lambda: not self._alone)
            self._sharing += 1
        try:
            yield
        finally:
            with self._cond:
                self._sharing -= 1
                self._cond.notify_all()

    @contextmanager
    def alone(self):
        with self._cond:
            self._cond.wait_for(lambda: not self._alone)
            self._alone = True
            self._cond.wait_for(lambda: self._sharing == 0)
        try:
            yield
        finally:
            with self._cond:
                self._alone = False
                self._cond.notify_all()


class WarmMemo:
    """One store's ``Memo``, opened on first use and reopened when the store changed under it."""

    def __init__(self, path: Path | str, open_memo: Callable[[Path], object] = open_memory_indexed):
        from captain_memo.base.git_context_cache import ContextCache

        self.path = Path(path)
        self._open = open_memo
        self._memo: Any = None
        self._opened_on: tuple | None = None
        self.reopened = 0  # reopens after a change (the tests and `service status` read it)
        self.following = False  # a watcher follows the indexed repositories (hosting/watcher.py)
        self._contexts = ContextCache()
        self._contexts_lock = threading.Lock()
        self._gate = Gate()
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="captain-memo-read")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-write")
        self._embedding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-embed")
        # Following the repositories (hosting/watcher.py) writes here, not on the writer: a catch-up
        # of thousands of commits would hold a user's save behind it for minutes; here a save waits
        # for one batch's transaction at most (SQLite serialises the two).
        self._following = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-follow")
        self._closed = threading.Event()
        self._idle = IdleTrim(settled=self._settled)
        self._tide: list[tuple[Any, Callable[[], Any]]] = []  # (the Memo it is of, its record)
        self._tide_lock = threading.Lock()
        self._tide_timer: threading.Timer | None = None

    # -- the calls ------------------------------------------------------------------------

    def call(self, work: Callable[[Any], Any], write: bool = False, expires: float | None = None):
        """``work(memo)`` with a Memo that matches the store now: on the writer thread for a write,
        else on a reader. ``expires``: the time (this process's time.monotonic()) after which the
        caller no longer waits for it (it runs the request itself), so it is not started later."""
        return self.submit(work, write, expires).result()

    def submit(self, work: Callable[[Any], Any], write: bool = False, expires: float | None = None) -> Future:
        return _submit(
            self._writer if write else self._readers, self._closed, self._run, work, write, expires, not write
        )

    def recall(self, request: operations.RecallRequest, expires: float | None = None) -> dict:
        return self.call(
            lambda memo: operations.recall(memo, request, self._context, followed=self.following), expires=expires
        )

    def remember(self, request: operations.RememberRequest, expires: float | None = None) -> dict:
        return self.call(lambda memo: operations.remember(memo, request, self._context), write=True, expires=expires)

    def embed(self, work: Callable[[Any], Any], expires: float | None = None):
        """``work(memo)`` embedding another process's texts: on the embedding thread, not marked
        as a read (its slices wait for the reads)."""
        return _submit(self._embedding, self._closed, self._run, work, False, expires).result()

    def follow(self, work: Callable[[Any], Any]):
        """``work(memo)`` indexing what changed in a followed repository: on a thread of its own,
        checkpointed after as a write is, its embedding behind the reads."""
        return _submit(self._following, self._closed, self._run, work, True, None).result()

    def warm_up(self) -> None:
        """Open the store and load the model now, so the first search does not wait for them."""
        self.call(lambda memo: memo.warm_up())

    def model(self) -> str | None:
        """The model held now; None before the first call or after a failed open."""
        memo = self._memo
        return memo.embedder.model_id if memo is not None else None

    def close(self) -> None:
        self._closed.set()
        self._readers.shutdown(wait=True)
        with self._tide_lock:
            if self._tide_timer is not None:
                self._tide_timer.cancel()
        try:
            self._writer.submit(self._record_tide)  # what the recalls kept aside, behind the last writes
        except RuntimeError:  # closed before
            pass
        self._writer.shutdown(wait=True)
        self._embedding.shutdown(wait=True)
        self._following.shutdown(wait=True)
        self._idle.close()
        with self._gate.alone():
            self._drop()

    def _settled(self) -> bool:
        """No background work of the store's (the in-memory index's build) is still allocating."""
        memo = self._memo
        return memo is None or memo.settled()

    # -- freshness ------------------------------------------------------------------------

    def _run(self, work: Callable[[Any], Any], write: bool, expires: float | None = None, read: bool = False):
        if expires is not None and time.monotonic() > expires:
            from captain_memo.errors import CaptainMemoError

            raise CaptainMemoError("not run: its caller stopped waiting before its turn came (and runs it itself)")
        with self._idle.running():
            return self._run_fresh(work, write, read)

    def _run_fresh(self, work: Callable[[Any], Any], write: bool, read: bool):
        try:
            while True:
                memo = self._fresh()
                with self._gate.shared():
                    if memo is not self._memo:  # reopened between the check and here: check again
                        continue
                    if write:
                        self._write_tide(memo)  # one transaction's wait and one checkpoint for both
                    with memo.reading() if read else nullcontext():  # a read: long embeddings wait for it
                        result = work(memo)
                    if write:  # committed: a checkpoint that fails (a full disk) is a warning
                        result = _warned(result, memo.checkpoint())
                    return result
        except Exception as exc:
            from captain_memo.errors import DatabaseDamagedError
            from captain_memo.memo import readable_error

            if isinstance(exc, DatabaseDamagedError) or isinstance(
                readable_error(exc, self.path), DatabaseDamagedError
            ):
                with self._gate.alone():
                    self._drop()  # the next call opens the file afresh (restored, or moved away)
            raise

    def _fresh(self):
        """The Memo to use now: the one held while the store is unchanged (no waiting), else a
        new one, opened with the gate held alone."""
        memo = self._memo
        if memo is not None and not _changed(self._opened_on, _fingerprint(memo)):
            return memo
        return self._fresh_now()

    def _fresh_now(self):
        with self._gate.alone():
            if self._memo is not None:
                now = _fingerprint(self._memo)
                if not _changed(self._opened_on, now):
                    return self._memo
                log.info("%s changed (%s -> %s); reopening", self.path, self._opened_on, now)
                self._drop()
                self.reopened += 1
            memo = self._open(self.path)
            try:
                _ = memo.engine  # opened now: a store of another model is refused here, and none is held
            except BaseException:
                memo.close()
                raise
            memo.defer_writes(lambda job: self._defer(memo, job))
            self._opened_on = _fingerprint(memo)
            self._memo = memo
            return memo

    def _defer(self, memo, job: Callable[[], Any]) -> None:
        """Keep a recall's Tide record aside for the next write, or for ``TIDE_WAIT`` seconds."""
        with self._tide_lock:
            if self._closed.is_set():
                log.info("closing: a recall was not recorded for Tide")
                return
            self._tide.append((memo, job))
            if self._tide_timer is None:
                self._tide_timer = threading.Timer(TIDE_WAIT, self._tide_due)
                self._tide_timer.daemon = True
                self._tide_timer.start()

    def _tide_due(self) -> None:
        with self._tide_lock:
            self._tide_timer = None
        try:
            self._writer.submit(self._record_tide)
        except RuntimeError:  # closing: close() submitted the last one
            pass

    def _record_tide(self) -> None:
        with self._gate.shared():
            memo = self._memo
            if memo is not None and self._write_tide(memo):
                problem = memo.checkpoint()
                if problem:
                    log.warning("recalls recorded for Tide, but %s", problem)

    def _write_tide(self, memo) -> bool:
        """Write the Tide records kept aside for ``memo``, the store held now (under the gate);
        True when any was written. Logged, never raised; records of a store closed since are
        dropped (their ids would name other memories in the one opened since), and so are all of
        them when the file was copied over since (they would be written from the old page cache)."""
        with self._tide_lock:
            pending, self._tide = self._tide, []
        jobs = [job for owner, job in pending if owner is memo]
        if not jobs:
            return False
        try:
            if memo.file_moved():
                log.info("the store changed under its recalls: %d not recorded for Tide", len(jobs))
                return False
            for job in jobs:
                job()
        except Exception as exc:
            log.warning("recording recalls for Tide failed: %s", exc)
        return True

    def context(self, folder: str, fresh: bool, share_worktrees: bool = True):
        """The git context of ``folder`` (cached while its HEAD is unchanged unless ``fresh``)."""
        with self._contexts_lock:
            return self._contexts.get(folder, share_worktrees=share_worktrees, fresh=fresh)

    _context = context

    def _drop(self) -> None:
        memo, self._memo, self._opened_on = self._memo, None, None
        if memo is not None:
            try:
                memo.close()
            except Exception:  # closing a damaged store can fail; it is dropped either way
                log.exception("closing %s failed", self.path)


def _submit(pool: ThreadPoolExecutor, closed: threading.Event, *call) -> Future:
    """``call`` on ``pool``; EngineClosed once the store is closed or the interpreter is exiting
    (which shuts every pool before a daemon thread's last calls come in)."""
    if closed.is_set():
        raise EngineClosed("the warm store is closed")
    try:
        return pool.submit(*call)
    except RuntimeError as exc:  # "cannot schedule new futures after (interpreter) shutdown"
        raise EngineClosed(f"the warm store is closing ({exc})") from None


def _warned(result, problem: str | None):
    """A write's answer, with a warning when it was saved but its WAL not written into the file."""
    if problem is None or not isinstance(result, dict):
        return result
    return {**result, "warning": f"saved, but {problem}"}


def _fingerprint(memo) -> tuple:
    """Whether the store's file left its path, and the vectors' shape (not read from a file that
    left: a thread's first connection would open whatever is at the path now)."""
    if memo.file_moved():
        return (True,)
    return (False, *memo.vector_shape())


def _changed(before: tuple | None, now: tuple) -> bool:
    """The file left its path, or a model, dimension or vector table it was opened on changed.
    A first model recorded since (the first vectors written) is no change: opening checks it."""
    if before is None:
        return True
    return now[0] or any(old is not None and old != new for old, new in zip(before[1:], now[1:]))
