"""A plain progress bar on stderr, silent when stderr is not a terminal unless forced."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str, stream=None, force: bool = False):
        self.total = max(total, 0)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = force or getattr(self.stream, "isatty", lambda: False)()
        self.started = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            self._draw(note)

    def _draw(self, note: str) -> None:
        width = 30
        share = self.done / self.total if self.total else 1.0
        bar = "#" * int(width * share) + "-" * (width - int(width * share))
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {rate:.0f}/s {note}".ljust(79))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw("")
            self.stream.write("\n")
            self.stream.flush()
