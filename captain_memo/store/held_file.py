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

A file rewritten in place (``cp backup.db memo.db`` keeps the inode) is the same file to every test
above, and to SQLite too: its connections keep their page cache and the WAL index, which say
nothing changed, so the next write mixes the old pages into the new content (a damaged store) and
a reader of the file sees the old WAL's frames laid over it. ``FileWatch`` notices it: the file's
size or modification time changed while its WAL was empty and untouched (a SQLite connection
changes the file only by copying the WAL into it; ``cp`` does not touch the WAL). With frames of
its own waiting in the WAL, the file changing is a copy only when no checkpoint ran: ``WalIndex``
reads SQLite's count of frames copied, and whether another process is copying them now, from the
-shm through the descriptor SQLite holds. The holder then must not copy
the old WAL into the new content, neither by a checkpoint nor when it closes: ``discard_wal``
empties the WAL file its connections hold before they close, and the -wal and -shm leave the
path with them.
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FileLook:
    """What the file at a path and its WAL look like at one moment, from ``stat`` alone: opening
    and closing the file (to read its header) would drop every POSIX lock this process's SQLite
    connections hold on it, and another process's last connection would then delete the -wal and
    -shm they still use (seen: an `import` beside the service)."""

    identity: tuple[int, int] | None
    content: tuple[int, int] | None  # size, mtime_ns
    wal: tuple[int, int, int] | None  # the -wal's inode, size and mtime_ns; None with none


def look(path: Path | str) -> FileLook:
    try:
        info = os.stat(path)
    except OSError:
        return FileLook(None, None, None)
    try:
        wal = os.stat(f"{path}-wal")
        wal_look: tuple[int, int, int] | None = (wal.st_ino, wal.st_size, wal.st_mtime_ns)
    except OSError:
        wal_look = None
    return FileLook((info.st_dev, info.st_ino), (info.st_size, info.st_mtime_ns), wal_look)


# The WAL index (-shm) as SQLite lays it out: its header holds the last frame written to the WAL
# (mxFrame) and, after two copies of that header, the checkpoint's count of frames copied into the
# file (nBackfill); the locks are bytes at 120 onwards, the checkpointer's at 121. Native order.
_MX_FRAME, _BACKFILLED, _CHECKPOINT_LOCK = 16, 96, 121
_ATTACHED = 128  # the byte every process with the WAL index open holds a shared lock on


class WalIndex:
    """SQLite's WAL index of one file, read through the descriptor SQLite itself holds on the -shm:
    opening the -shm again and closing it would drop the POSIX locks this process's connections
    hold on it (they are per process and file, not per descriptor)."""

    def __init__(self, path: Path | str):
        self.shm = os.path.realpath(f"{path}-shm")  # as /proc names the file SQLite opened
        self._fd: int | None = None

    def _descriptor(self) -> int | None:
        if self._fd is not None and _names(self._fd, self.shm):
            return self._fd
        self._fd = None
        try:
            numbers = os.listdir("/proc/self/fd")
        except OSError:  # no /proc: no WAL index to read, and the looks alone decide
            return None
        for number in numbers:
            if _names(int(number), self.shm):
                self._fd = int(number)
                return self._fd
        return None

    def progress(self) -> tuple[int, int] | None:
        """(frames written to the WAL, frames copied into the file); None when unreadable."""
        fd = self._descriptor()
        if fd is None:
            return None
        try:
            head = os.pread(fd, _BACKFILLED + 4, 0)
        except OSError:
            return None
        if len(head) < _BACKFILLED + 4:
            return None
        (written,) = struct.unpack_from("=I", head, _MX_FRAME)
        (copied,) = struct.unpack_from("=I", head, _BACKFILLED)
        return written, copied

    def checkpoint_running(self) -> bool:
        """Another process holds the checkpointer's lock (it may be copying frames into the file
        now); True when that cannot be told, which is the safe side."""
        held = self._held_by_another(_CHECKPOINT_LOCK)
        return True if held is None else held

    def others_attached(self) -> bool:
        """Another process has the WAL index open (SQLite holds a shared lock on one byte of it
        for as long as a connection does); False when that cannot be told."""
        return bool(self._held_by_another(_ATTACHED))

    def _held_by_another(self, byte: int) -> bool | None:
        """Whether another process holds a lock on ``byte`` of the -shm (F_GETLK: a process is
        never told of its own); None when that cannot be told."""
        fd = self._descriptor()
        if fd is None:
            return None
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0)
        try:
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        except OSError:
            return None
        (held,) = struct.unpack_from("h", answer)
        return held != fcntl.F_UNLCK


def _names(fd: int, path: str) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == path
    except OSError:
        return False


class FileWatch:
    """Whether the file at a path was rewritten in place by something other than SQLite since this
    process last changed it (``noted`` after each of its own commits and checkpoints).

    A SQLite connection changes the file only by copying WAL frames into it (a checkpoint), and
    writes them into the WAL first. So the file changing while its WAL is empty and untouched
    since the last look is a rewrite; with frames waiting in the WAL it is another process's
    checkpoint when SQLite's count of frames copied moved (or one is running), else a copy too. The
    doc says to restore with `backup --restore`, which replaces the file whole."""

    def __init__(self, path: Path | str, commits: Callable[[], int] | None = None):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._seen = look(self.path)
        self._rewritten = False
        # SQLite's own count of commits by any connection (``PRAGMA data_version`` read through a
        # connection of this process): file times move in steps of milliseconds, so another
        # process's commit, checkpoint and WAL truncation inside one step look like a copy to
        # ``look`` alone, and emptying the WAL then would lose what that process wrote. A copy
        # commits nothing, so the count holding still is what confirms one.
        self._commits = commits
        self._seen_commits: int | None = None  # read at the first ``noted``, once the store is open
        self._wal_index = WalIndex(self.path)
        self._seen_progress: tuple[int, int] | None = None
        # This process's own checkpoints and commits under way: another of its threads looking
        # meanwhile sees the file change with no checkpoint counted yet (SQLite counts the frames
        # copied once they all are) and no lock held by another process (a process does not see
        # its own): taken for a copy, the store was reopened and its WAL, in use, dropped.
        self._own_changes = 0
        self._own_started = 0  # how many began: one begun and ended while a look was taken counts too

    def _count(self) -> int | None:
        if self._commits is None:
            return None
        try:
            return self._commits()
        except Exception:  # a damaged or vanished file: the look alone decides
            return None

    def others_attached(self) -> bool:
        """Another process has the store's WAL index open (read before this one's connections close)."""
        return self._wal_index.others_attached()

    @contextmanager
    def changing(self):
        """This process is changing the file (a commit, which may checkpoint, or a checkpoint):
        no look until it is done counts, and what it looks like after is its own (``noted``)."""
        with self._lock:
            self._own_changes += 1
            self._own_started += 1
        try:
            yield
        finally:
            with self._lock:
                self._own_changes -= 1
            self.noted()

    def noted(self) -> None:
        """This process changed the file (a commit, a checkpoint): what it looks like now is its own."""
        commits = self._count()
        now, progress = self._steady_look() or (look(self.path), None)
        with self._lock:
            if not self._rewritten:
                self._seen, self._seen_commits, self._seen_progress = now, commits, progress

    def rewritten(self) -> bool:
        """The file at the path is the one opened, but its content was replaced past SQLite (once
        seen, it stays so: the connections' page caches and WAL index no longer describe it)."""
        with self._lock:
            started = self._own_started
        # Read before the look: a commit landing between them shows in the look (its WAL), and the
        # count kept then differs next time, which says "committed", never "copied".
        commits = self._count()
        steady = self._steady_look()
        with self._lock:
            if self._rewritten:
                return True
            if self._own_changes or self._own_started != started:
                return False  # this process is checkpointing or committing: look again next time
            if steady is None:
                return False  # other processes' checkpoints and commits as we looked: look again next time
            now, progress = steady
            seen = self._seen
            if now.identity is None or now.identity != seen.identity:
                return False  # moved, deleted or replaced by a rename: the identity says so
            # another process committed since (within one tick of the clock, its WAL may look the same)
            committed = commits is not None and self._seen_commits is not None and commits != self._seen_commits
            if now.content != seen.content and now.wal == seen.wal and not committed:
                change = self._change_without_commit(seen)
                if change == "copy":
                    log.warning("%s was rewritten in place (copied over?); reopening it as it is now", self.path)
                    self._rewritten = True
                    return True
                if change == "checkpointing":
                    return False  # frames may be being copied now: look again next time
            # unchanged, or changed through the WAL (another process's writes): what it is now
            self._seen, self._seen_progress, self._seen_commits = now, progress, commits
            return False

    def _steady_look(self) -> tuple[FileLook, tuple[int, int] | None] | None:
        """The file's look and SQLite's count of frames copied, with no checkpoint between them;
        None when the count kept moving. A look taken beside a count read after it held a
        checkpoint by another process (an `index` writing beside the engine) in the count but not
        in the look, and the file's change, seen next time with the count unmoved, was taken for a
        copy: the engine reopened the store, and a recall failed (tests/test_rewrite_watch.py)."""
        for _ in range(3):
            progress = self._wal_index.progress()
            now = look(self.path)
            if self._wal_index.progress() == progress:
                return now, progress
        return None

    def _change_without_commit(self, seen: FileLook) -> str:
        """What changed the file while its WAL stayed as it was and nothing committed: "copy" (not
        SQLite), "checkpoint" (frames the WAL holds copied into it: SQLite's count of frames copied
        moved) or "checkpointing" (another process is copying them as we look)."""
        if seen.wal is None or seen.wal[1] == 0:
            return "copy"  # no frames to copy: only something other than SQLite changed the file
        if self._seen_progress is None:
            return "checkpoint"  # the WAL index cannot be read here: taken for one, as it always was
        if self._wal_index.checkpoint_running():
            return "checkpointing"
        return "copy" if self._wal_index.progress() == self._seen_progress else "checkpoint"


def discard_wal(path: Path, held: dict[str, tuple[int, int] | None]) -> None:
    """Empty the -wal this process holds for a file rewritten in place, before its connections
    close: closing would copy the old content's frames into the new content. Its frames are of a
    content that is gone (they would damage the new one), so they are dropped, not kept."""
    wal = Path(f"{path}-wal")
    if held.get("-wal") is None or identity(wal) != held["-wal"]:
        return
    try:
        size = wal.stat().st_size
        os.truncate(wal, 0)
    except OSError as exc:
        log.warning("could not empty the WAL of %s, rewritten in place: %s", path, exc)
        return
    if size:
        log.warning("dropped the WAL of %s (%d bytes): the file was rewritten in place", path, size)
