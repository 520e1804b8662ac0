"""A store file held open for a long time, and what to do when it leaves its path.

SQLite names a database's -wal and -shm files after the path, not after the file. When the file is
moved away, deleted or replaced (a backup put back with `mv`) while connections are open, the
WAL at the path still holds the old file's latest writes, and the next connection to whatever
file is now at the path reads them as its own: a store moved away kept 0 memories, a restored
backup came back with the memories written after it. SQLite also stops checkpointing a file it
sees moved (closing does not copy the WAL into it), so the holder must:

1. notice, before it reads or writes, that the file at the path is not the one it opened
   (``identity``);
2. copy the WAL into the file it opened, through its own connection, while nothing else of its
   own reads (``checkpoint_into_held``): the moved file is complete, the WAL empty;
3. take the emptied -wal and -shm away from the path (``release_leftovers``), so the file now
   there starts clean; a WAL that could not be emptied is kept aside, never deleted.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

log = logging.getLogger("captain_memo")
SIDE_FILES = ("-wal", "-shm")


def identity(path: Path | str) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path`` now; None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def side_identities(path: Path | str) -> dict[str, tuple[int, int] | None]:
    return {suffix: identity(f"{path}{suffix}") for suffix in SIDE_FILES}


def checkpoint_into_held(conn) -> bool:
    """Copy every WAL frame into the file ``conn`` has open (wherever it is now) and empty the WAL;
    True when the WAL is empty afterwards. The caller has closed its other connections."""
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except Exception as exc:  # a damaged file: nothing more can be saved from it here
        log.warning("could not write the WAL into the file that left its path: %s", exc)
        return False
    return busy == 0


def release_leftovers(path: Path, held: dict[str, tuple[int, int] | None], emptied: bool) -> None:
    """Remove the -wal and -shm at ``path`` that belonged to the file this process held (the
    identities recorded when it opened them), so the file now at ``path`` does not read them. A
    WAL not emptied is renamed aside: it may hold the last writes of the file that left."""
    for suffix, opened in held.items():
        side = Path(f"{path}{suffix}")
        if opened is None or identity(side) != opened:
            continue  # not ours: the file now at the path may own it
        try:
            if suffix == "-wal" and not emptied and side.stat().st_size > 0:
                aside = side.with_name(f"{side.name}.left-{time.strftime('%Y%m%d-%H%M%S')}")
                side.rename(aside)
                log.warning("the WAL of the file that left %s could not be emptied; kept as %s", path, aside)
            else:
                side.unlink()
        except FileNotFoundError:
            pass
