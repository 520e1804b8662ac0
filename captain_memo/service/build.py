"""Which installation of Captain Memo a process runs: the service answers clients of its own only.

A service started before an upgrade (``pip install -U``, a new checkout) would otherwise go on
answering with the old code until it idled out, ten minutes later by default. The identity is the
package's folder plus the newest modification time and the number of its modules: an upgrade or
an edit in place changes it, another virtual environment has another folder. Reading it costs a
few hundred stat calls and imports nothing (the command line's thin path uses it).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent


def _modules(folder: str) -> tuple[int, int]:
    """(newest mtime in ns, count) over the .py files under ``folder``."""
    newest = count = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                inner_newest, inner_count = _modules(entry.path)
                newest, count = max(newest, inner_newest), count + inner_count
            elif entry.name.endswith(".py"):
                newest, count = max(newest, entry.stat().st_mtime_ns), count + 1
    return newest, count


@lru_cache(maxsize=1)
def build_id() -> str:
    newest, count = _modules(str(PACKAGE))
    return f"{PACKAGE}:{count}:{newest}"
