"""Memory a long-lived process freed, given back to the system once the process is idle.

glibc keeps what a thread freed in that thread's arena, for its next allocations: a holder that
loaded the model, built its in-memory index, opened an agent's MCP session or embedded a long
remember stays that much larger for its life (at 10,000 memories the warm service held 264 MB
where 201 MB were in use; a 720 KB remember left it ~160 MB larger). ``malloc_trim`` gives it
back. It takes a few milliseconds (27 ms for 300 MB) and holds the arenas meanwhile, so it runs on
a thread of its own once no call has been in flight for a moment: never inside a call; a call that
starts during one may wait those milliseconds for its first allocation.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("captain_memo")
QUIET_SECONDS = 1.0  # calls often come in bursts (an agent's turn, a session's first requests)


class IdleTrim:
    """Counts the calls in flight; once none has run for ``quiet`` seconds after the last one, and
    ``settled()`` says no background work (an index build) is still allocating, trims once."""

    def __init__(self, quiet: float = QUIET_SECONDS, settled: Callable[[], bool] = lambda: True):
        self.quiet = quiet
        self._settled = settled
        self._cond = threading.Condition()
        self._running = 0
        self._owed = False
        self._last_end = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.trims = 0  # the tests read it

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around a call: what it freed is given back once the holder is idle."""
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._owed, self._last_end = True, time.monotonic()
                self._start()
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _start(self) -> None:
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._loop, name="captain-memo-trim", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while self._wait_until_idle():
            try:
                settled = self._settled()
                if settled:
                    return_freed_memory()
                    self.trims += 1
            except Exception:  # never the end of trimming: the next idle spell tries again
                log.exception("giving freed memory back failed")
                settled = True
            if not settled:  # a build still running frees more later: look again after another quiet spell
                with self._cond:
                    self._owed, self._last_end = True, time.monotonic()

    def _wait_until_idle(self) -> bool:
        """Block until a trim is owed and nothing ran for ``quiet`` seconds; False once closed."""
        with self._cond:
            while not self._closed:
                if self._owed and self._running == 0:
                    left = self._last_end + self.quiet - time.monotonic()
                    if left <= 0:
                        self._owed = False
                        return True
                    self._cond.wait(left)
                else:
                    self._cond.wait()
            return False


def return_freed_memory() -> None:
    """``malloc_trim(0)``: every arena's free pages go back to the system (nothing where the C
    library is not glibc)."""
    global _trim
    if _trim is None:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name) if name else None
        _trim = getattr(libc, "malloc_trim", None) or (lambda pad: 0)
    _trim(0)


_trim: Any = None
