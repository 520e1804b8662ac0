"""A consistent copy of the database, made with SQLite's backup API.

The backup API copies the pages of one read transaction, so the copy is a snapshot even while an
editor or an index run writes (copying the file with `cp` can catch a half-applied WAL). The copy
is written next to PATH under a temporary name, checked, and renamed into place: PATH is either a
complete, checked backup or absent. It is a single file (journal mode DELETE), readable by its
owner only.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from captain_memo.errors import InputError, StoreError
from captain_memo.store import held_file
from captain_memo.store.db import connect_read_only, load_vec, sqlite_module, write_denied
from captain_memo.store.health import integrity


def backup_target(path: Path, folder: bool = False) -> Path:
    """The file to write: ``path`` itself, or a dated name inside it when it is a folder (one that
    exists, or one named with a trailing slash, which is created)."""
    if folder and not path.is_dir():
        try:
            path.mkdir(parents=True, mode=0o700)
        except OSError as exc:
            raise StoreError(f"cannot create the backup folder {path}: {exc.strerror}") from None
    if path.is_dir():
        return path / time.strftime("memo-%Y%m%d-%H%M%S.db")
    return path


def backup(source: Path, path: Path, replace: bool = False, folder: bool = False) -> Path:
    """Copy ``source`` to ``path`` with the backup API; returns the file written. ``folder``: ``path``
    names a folder (given with a trailing slash) even if it does not exist yet."""
    sqlite = sqlite_module()
    if not source.is_file():
        raise InputError(f"there is no database at {source} to back up")
    target = backup_target(path, folder)
    if target.exists() and not replace:
        raise InputError(f"{target} exists; pass --force to replace it")
    if target.resolve() == source.resolve():
        raise InputError(f"{target} is the database itself; choose another path")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise StoreError(f"cannot write the backup {target}: {exc.strerror}") from None
    try:
        # A store this user may only read is copied all the same (the read-write path would fail).
        src = connect_read_only(source) if write_denied(source) else sqlite.connect(str(source), timeout=10)
        dst = sqlite.connect(str(partial))
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
            load_vec(dst)  # the check reads the vector table too when sqlite-vec is there
            verdict = integrity(dst)
        finally:
            dst.close()
            src.close()
        if verdict != "ok":
            raise StoreError(
                f"the copy of {source} fails its integrity check ({verdict}), so the database itself "
                "is damaged: run `captain-memo doctor`; to keep the damaged file as it is, copy it "
                "with cp while nothing else uses it"
            )
        os.replace(partial, target)
    except sqlite.DatabaseError as exc:
        raise StoreError(f"cannot back up {source}: {exc}; run `captain-memo doctor` to check it") from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def restore(backup_file: Path, target: Path) -> Path | None:
    """Replace the store at ``target`` with a checked copy of ``backup_file``; returns where the
    store it replaced is kept (beside it, dated), None when there was none.

    The copy is made and checked beside ``target`` first. The current store is then checkpointed
    (its WAL emptied into it) and held against writers while the copy is renamed into place, so
    no write of the old store is left in a WAL the restored file would read; the old file stays
    whole under its new name. A process holding the old store notices the new file before its
    next request (store/held_file.py)."""
    sqlite = sqlite_module()
    if not backup_file.is_file():
        raise InputError(f"there is no backup at {backup_file} to restore")
    if target.exists() and backup_file.resolve() == target.resolve():
        raise InputError(f"{backup_file} is the database itself; name a backup")
    partial = target.with_name(f".{target.name}.restoring-{os.getpid()}")
    try:
        _checked_copy(backup_file, partial)
        if target.exists():
            return _swap_in(partial, target)
        os.replace(partial, target)
        return None
    except sqlite.DatabaseError as exc:
        raise StoreError(f"cannot restore {backup_file}: {exc}") from None
    finally:
        partial.unlink(missing_ok=True)


def _checked_copy(backup_file: Path, partial: Path) -> None:
    from captain_memo.store.db import recognise

    target = partial.parent
    if not target.is_dir():
        target.mkdir(parents=True, mode=0o700)
    os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    src = connect_read_only(backup_file)
    dst = sqlite_module().connect(str(partial))
    try:
        recognise(src, backup_file)  # another program's database is refused, the store untouched
        src.backup(dst)
        load_vec(dst)
        verdict = integrity(dst)
    finally:
        dst.close()
        src.close()
    if verdict != "ok":
        raise StoreError(f"the backup {backup_file} fails its integrity check ({verdict}); the store was left as it is")


def _swap_in(partial: Path, target: Path) -> Path:
    kept = target.with_name(f"{target.name}.before-restore-{time.strftime('%Y%m%d-%H%M%S')}")
    conn = sqlite_module().connect(str(target), isolation_level=None, timeout=10)
    try:
        _empty_wal(conn, target)
        conn.execute("BEGIN IMMEDIATE")  # no writer may add to the WAL until the new file is there
        try:
            os.link(target, kept)
            os.replace(partial, target)
            # The old file's emptied -wal and -shm leave the path with it: a process opening the
            # restored file makes its own, never sharing the index a holder of the old file still
            # has mapped (it keeps them open until it notices the new file; store/held_file.py).
            for suffix in held_file.SIDE_FILES:
                Path(f"{target}{suffix}").unlink(missing_ok=True)
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()
    return kept


def _empty_wal(conn, target: Path, tries: int = 50) -> None:
    """Write the WAL into the store and empty it; a reader in the middle of a long read makes it wait."""
    for _ in range(tries):
        if conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
            return
        time.sleep(0.1)
    raise StoreError(f"{target} is being read or written without pause; nothing was restored: try again")
