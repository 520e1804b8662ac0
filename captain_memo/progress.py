"""A plain progress line on stderr: count, rate and time left; silent when stderr is not a terminal.

Long runs (a first `index --git`, an `import`, a `reindex`) take minutes; a line that moves says the
run is alive and when it will end. Scripts and pipes get nothing (stderr is not a terminal), and
``quiet`` silences it on a terminal too.
"""

from __future__ import annotations

import sys
import time

WIDTH = 79
REDRAW_SECONDS = 0.1


class Progress:
    def __init__(self, total: int, label: str, stream=None, force: bool = False, quiet: bool = False):
        self.total = max(total, 0)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = not quiet and (force or getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > REDRAW_SECONDS or self.done >= self.total):
            self._last = now
            self._draw(note)

    def line(self, note: str = "") -> str:
        """What the bar shows now: ``label [###---] 120/5,000 61/s 1:20 left note``."""
        width = 20
        share = min(self.done / self.total, 1.0) if self.total else 1.0
        bar = "#" * int(width * share) + "-" * (width - int(width * share))
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        if self.done >= self.total:
            timing = f"{clock(elapsed)} taken"
        elif rate > 0:
            timing = f"{clock((self.total - self.done) / rate)} left"
        else:
            timing = "-:-- left"
        text = f"{self.label} [{bar}] {self.done:,}/{self.total:,} {rate:,.1f}/s {timing}"
        return f"{text} {note}" if note else text

    def _draw(self, note: str) -> None:
        self.stream.write("\r" + self.line(note)[:WIDTH].ljust(WIDTH))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw("")
            self.stream.write("\n")
            self.stream.flush()


def clock(seconds: float) -> str:
    """``1:05`` or ``1:02:05``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def progress_factory(quiet: bool):
    """A ``(total, label) -> Progress`` for library code that makes its own bars."""
    return lambda total, label: Progress(total, label, quiet=quiet)
