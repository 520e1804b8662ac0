"""Secret scanning speed: seconds per megabyte on texts of growing size.

    python scripts/bench_secrets.py [--max-mb 4]

Each shape is scanned at 1/8, 1/4, 1/2 and 1 of ``--max-mb``. Linear scanning shows the same
seconds per MB on every row; a per-finding pass over the whole text shows it doubling with size.
The shapes: a `.env` file (a finding on every line), ordinary prose (no finding), text built to
make the patterns backtrack, and a paste over the 1,000,000-character limit (`secrets.check`
refuses it before scanning, so its time is the length check alone).
"""

from __future__ import annotations

import argparse
import os
import time

from captain_memo.base import secrets
from captain_memo.errors import InputError

MB = 1_000_000
PROSE = (
    "The cache is warmed at start-up, so the first query after a deploy does not pay for the "
    "index; see the note on rollback and the review of the worker queue. "
)


def dotenv(size: int) -> str:
    lines, total, n = [], 0, 0
    while total < size:
        line = f"SERVICE_{n}_PASSWORD=h{n:07d}Xq9\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:size]


def hostile(size: int) -> str:
    unit = "mysql -p password= " + "a-" * 40 + " https://u:" + "x" * 30 + " Authorization: Bearer sk-"
    return (unit * (size // len(unit) + 1))[:size]


SHAPES = {
    ".env lines": dotenv,
    "prose": lambda size: (PROSE * (size // len(PROSE) + 1))[:size],
    "backtracking bait": hostile,
}


def seconds(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mb", type=float, default=4.0)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
    print(f"{'shape':<20} {'MB':>6} {'findings':>9} {'seconds':>8} {'s/MB':>6}")
    for name, make in SHAPES.items():
        for fraction in (0.125, 0.25, 0.5, 1.0):
            text = make(int(args.max_mb * MB * fraction))
            started = time.perf_counter()
            found = secrets.scan(text)
            took = time.perf_counter() - started
            print(f"{name:<20} {len(text) / MB:>6.2f} {len(found):>9} {took:>8.2f} {took / (len(text) / MB):>6.2f}")
    paste = dotenv(8 * MB)
    secrets.check("warm-up", env={})  # the first call imports the field checks
    started = time.perf_counter()
    try:
        secrets.check(paste, env={})
        outcome = "accepted"
    except InputError as exc:
        outcome = str(exc)[:60]
    print(f"check() of an 8 MB paste: {time.perf_counter() - started:.3f} s ({outcome})")


if __name__ == "__main__":
    main()
