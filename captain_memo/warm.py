"""A store held open by a long-lived process (the warm service), kept honest.

Other processes write to the same store meanwhile: a CLI run with the service off, the editor
host, a ``reindex``. Writes are no problem (SQLite serialises them and the in-memory index reads
every change from the ``vector_changes`` log). What a held store must notice is the store
changing under it: a reindex that swapped the model or vector table, or the file replaced by a
restored backup. Before each call the holder compares the store's model, dimension, vector table
and file identity with what it was opened on, and reopens the store when any differs;
opening refuses a store whose model is not the configured one, as a cold command would.

Every call runs on one worker thread: a store's SQLite connections are used by one
thread at a time, and the connection count stays fixed however many clients call.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from captain_memo import app

log = logging.getLogger("captain_memo")


def open_memory_indexed(path: Path):
    from captain_memo.memo import Memo

    return Memo.open(path, warm=True)


class WarmMemo:
    """One store's ``Memo``, opened on first use and reopened when the store changed under it."""

    def __init__(self, path: Path | str, open_memo: Callable[[Path], object] = open_memory_indexed):
        from captain_memo.contexts import ContextCache

        self.path = Path(path)
        self._open = open_memo
        self._memo = None
        self._opened_on: tuple | None = None
        self.reopened = 0  # reopens after a change (the tests and `service status` read it)
        self._contexts = ContextCache()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-warm")
        self._closed = threading.Event()

    # -- the calls ------------------------------------------------------------------------

    def call(self, work: Callable[[Any], Any]):
        """``work(memo)`` on the worker thread, with a Memo that matches the store now."""
        if self._closed.is_set():
            raise RuntimeError("the warm store is closed")
        return self._worker.submit(self._run, work).result()

    def recall(self, request: app.RecallRequest) -> dict:
        return self.call(lambda memo: app.recall(memo, request, self._context))

    def remember(self, request: app.RememberRequest) -> dict:
        return self.call(lambda memo: app.remember(memo, request, self._context))

    def warm_up(self) -> None:
        """Open the store and load the model now, so the first search does not wait for them."""
        self.call(lambda memo: memo.warm_up())

    def model(self) -> str | None:
        """The model held now; None before the first call or after a failed open."""
        memo = self._memo
        return memo.embedder.model_id if memo is not None else None

    def close(self) -> None:
        self._closed.set()
        self._worker.submit(self._drop).result()
        self._worker.shutdown(wait=True)

    # -- freshness ------------------------------------------------------------------------

    def _run(self, work: Callable[[Any], Any]):
        try:
            return work(self._current())
        except Exception as exc:
            from captain_memo.errors import DatabaseDamagedError
            from captain_memo.memo import readable_error

            if isinstance(exc, DatabaseDamagedError) or isinstance(
                readable_error(exc, self.path), DatabaseDamagedError
            ):
                self._drop()  # the next call opens the file afresh (restored, or moved away)
            raise

    def _context(self, folder: str, fresh: bool):
        return self._contexts.get(folder, share_worktrees=True, fresh=fresh)

    def _current(self):
        if self._memo is not None:
            now = self._fingerprint(self._memo)
            if _changed(self._opened_on, now):
                log.info("%s changed (%s -> %s); reopening", self.path, self._opened_on, now)
                self._drop()
                self.reopened += 1
        if self._memo is None:
            memo = self._open(self.path)
            try:
                _ = memo.engine  # opened now: a store of another model is refused here, and none is held
            except BaseException:
                memo.close()
                raise
            self._opened_on = self._fingerprint(memo)
            self._memo = memo
        return self._memo

    def _fingerprint(self, memo) -> tuple:
        try:
            info = os.stat(self.path)
            identity = (info.st_dev, info.st_ino)
        except OSError:
            identity = None  # moved away: the next open creates a new store there
        return (identity, *memo.vector_shape())

    def _drop(self) -> None:
        memo, self._memo, self._opened_on = self._memo, None, None
        if memo is not None:
            try:
                memo.close()
            except Exception:  # closing a damaged store can fail; it is dropped either way
                log.exception("closing %s failed", self.path)


def _changed(before: tuple | None, now: tuple) -> bool:
    """The file was replaced, or a model, dimension or vector table it was opened on changed.
    A first model recorded since (the first vectors written) is no change: opening checks it."""
    if before is None:
        return True
    return before[0] != now[0] or any(old is not None and old != new for old, new in zip(before[1:], now[1:]))
