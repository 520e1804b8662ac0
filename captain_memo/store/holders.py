"""Who keeps a write waiting: the process holding the store's write lock, and whether it is stopped.

SQLite says only "database is locked". In WAL mode the write lock is a POSIX lock on one byte
(offset 120) of the ``-shm`` file, and Linux lists every such lock with its owner's pid in
/proc/locks. A process suspended inside a write (Ctrl-Z on a long `captain-memo import`, a
SIGSTOP) holds it until it is resumed, so waiting longer cannot help; the user can resume or end
it once told which it is. Elsewhere (no /proc/locks, another kind of lock) nothing is found and
the write waits as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

WAL_WRITE_LOCK = 120  # the byte of the -shm file SQLite locks while a transaction writes


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str
    stopped: bool  # state T or t: suspended, or held by a debugger

    def describe(self) -> str:
        return f"process {self.pid} ({self.command})" if self.command else f"process {self.pid}"


def write_lock_holder(db_path: Path | str) -> Holder | None:
    """The process holding ``db_path``'s write lock, when the system says."""
    try:
        shm = os.stat(f"{os.path.realpath(db_path)}-shm")
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.readlines()
    except OSError:
        return None
    where = f"{os.major(shm.st_dev):02x}:{os.minor(shm.st_dev):02x}:{shm.st_ino}"
    for line in lines:
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 17378 fe:00:2147783 120 120"
        if len(fields) >= 8 and fields[1] == "POSIX" and fields[3] == "WRITE" and fields[5] == where:
            if _covers(fields[6], fields[7]) and fields[4].isdigit():
                return _holder(int(fields[4]))
    return None


def _covers(start: str, end: str) -> bool:
    """Whether a lock's range holds the write lock's byte. The kernel merges a process's adjacent
    locks: a checkpoint holding the write and checkpoint locks shows as 120-121."""
    if not start.isdigit() or not (end.isdigit() or end == "EOF"):
        return False
    return int(start) <= WAL_WRITE_LOCK and (end == "EOF" or WAL_WRITE_LOCK <= int(end))


def _holder(pid: int) -> Holder | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().split(b"\0")
    except OSError:  # gone meanwhile
        return None
    command = " ".join(word.decode("utf-8", "replace") for word in words if word)[:200]
    return Holder(pid, command, state in (b"T", b"t"))
