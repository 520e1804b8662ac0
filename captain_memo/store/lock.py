"""One reindex per store at a time: an advisory lock on a file beside the database.

Two reindex runs on one store would each build a target table under the same name and the later
one's swap could make a table of mixed models live. The lock is ``flock`` on ``<db>.reindex-lock``
(``msvcrt.locking`` on Windows): the kernel releases it when its process ends, however it ends, so
a run killed with SIGKILL never leaves a stale lock behind and no pid has to be checked for being
alive. The file holds the owner's pid, for the message the loser prints. It is never removed:
removing a lock file while another process opens it lets two processes lock two different files.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from captain_memo.errors import StoreError


class ReindexRunningError(StoreError):
    """Another process is re-embedding this store."""


def lock_path(db_path) -> Path:
    return Path(f"{db_path}.reindex-lock")


@contextmanager
def reindex_lock(db_path):
    """Hold the store's reindex lock for the block; ReindexRunningError when another process has it."""
    fd = os.open(lock_path(db_path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not _try_lock(fd):
            raise running_error(db_path, _owner(fd))
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing releases the lock


def running_error(db_path, owner: str) -> ReindexRunningError:
    return ReindexRunningError(f"another reindex of {db_path} is running{owner}; wait for it to finish (or stop "
                               "it), then run `captain-memo reindex` again if you still need to")


def running_reindex(db_path) -> str | None:
    """' (process N)' or '' when a reindex holds the store's lock now; None when none does."""
    path = lock_path(db_path)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDWR)
    try:
        return _owner(fd) if not _try_lock(fd) else None
    finally:
        os.close(fd)


def _owner(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        pid = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:  # Windows: the locked byte cannot be read by others
        return ""
    return f" (process {pid})" if pid.isdigit() else ""


try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
except ImportError:  # Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
