"""A plain progress line on stderr: count, rate and time left; silent when stderr is not a terminal.

Long runs (a first `index --git`, an `import`, a `reindex`) take minutes; a line that moves says the
run is alive and when it will end. It is drawn as soon as the run knows how much there is to do
(``0/260`` before the first file is read), fitted to the terminal's width at every redraw (a pane
resized mid-run is followed), and not drawn at all for a run with nothing to do. Scripts and pipes
get nothing (stderr is not a terminal), and ``quiet`` silences it on a terminal too.
"""

from __future__ import annotations

import os
import sys
import time

# Used when the terminal does not say its width.
DEFAULT_WIDTH = 80
REDRAW_SECONDS = 0.1
BAR_CELLS = 20
# Below this the bar's cells give way to the numbers, which say more per column.
NARROW = 60


# The streams with a progress line drawn and not yet ended: an interrupted run ends it before its
# message ("captain-memo: interrupted" was printed on the end of the bar).
_open_lines: set = set()


def end_lines() -> None:
    """End every progress line left open (a run stopped by Ctrl-C or an error), keeping what it showed."""
    for stream in list(_open_lines):
        stream.write("\n")
        stream.flush()
    _open_lines.clear()


class Progress:
    def __init__(self, total: int, label: str, stream=None, force: bool = False, quiet: bool = False):
        self.total = max(total, 0)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        on_terminal = force or getattr(self.stream, "isatty", lambda: False)()
        self.enabled = not quiet and on_terminal and self.total > 0
        self.started = time.monotonic()
        self._last = 0.0
        self._note = ""
        if self.enabled:
            self._draw("")  # at once: a blank terminal looks hung

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        self._note = note or self._note
        now = time.monotonic()
        if self.enabled and (now - self._last > REDRAW_SECONDS or self.done >= self.total):
            self._last = now
            self._draw(self._note)

    def line(self, note: str = "", width: int = DEFAULT_WIDTH) -> str:
        """What the bar shows now, at most ``width - 1`` columns (the last column would wrap):
        ``label [###---] 120/5,000 61/s 1:20 left note``."""
        share = min(self.done / self.total, 1.0) if self.total else 1.0
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        if self.done >= self.total:
            timing = f"{clock(elapsed)} taken"
        elif self.done and rate > 0:
            timing = f"{clock((self.total - self.done) / rate)} left"
        else:
            timing = "-:-- left"
        count = f"{self.done:,}/{self.total:,} {rate:,.1f}/s {timing}"
        cells = BAR_CELLS if width >= NARROW else 0
        bar = f"[{'#' * int(cells * share)}{'-' * (cells - int(cells * share))}] " if cells else ""
        return fitted(self.label, bar, count, note, max(width - 1, 1))

    def _draw(self, note: str) -> None:
        width = terminal_width(self.stream)
        # \r, the line, then erase to the end: a shorter line never leaves the old one's tail.
        self.stream.write("\r" + self.line(note, width) + "\x1b[K")
        self.stream.flush()
        _open_lines.add(self.stream)

    def close(self) -> None:
        if self.enabled:
            self._draw(self._note)
            self.stream.write("\n")
            self.stream.flush()
            _open_lines.discard(self.stream)


def fitted(label: str, bar: str, count: str, note: str, width: int) -> str:
    """The line in ``width`` columns, giving up first the note, then the bar, then the label's end:
    the count and the time left are what a narrow pane must still show."""
    for text in (f"{label} {bar}{count} {note}" if note else "", f"{label} {bar}{count}", f"{label} {count}"):
        if text and len(text) <= width:
            return text
    room = width - len(count) - 1
    return f"{label[: room - 1]}… {count}" if room >= 4 else count[:width]


def terminal_width(stream) -> int:
    """The columns of the terminal ``stream`` writes to, asked at each call (panes are resized)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
    except (AttributeError, OSError, ValueError):
        return DEFAULT_WIDTH


def clock(seconds: float) -> str:
    """``1:05`` or ``1:02:05``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def progress_factory(quiet: bool):
    """A ``(total, label) -> Progress`` for library code that makes its own bars."""
    return lambda total, label: Progress(total, label, quiet=quiet)
