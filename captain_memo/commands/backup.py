"""`captain-memo backup PATH`: a consistent copy of the database, made with SQLite's backup API.

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

from captain_memo.config import db_path
from captain_memo.errors import InputError, StoreError


def register(sub) -> None:
    p = sub.add_parser("backup", help="copy the database consistently to PATH (a file, or a folder for a dated name)")
    p.add_argument("path", help="the backup file to write; an existing folder, or a path ending in / (created "
                                "if missing), gets memo-YYYYMMDD-HHMMSS.db inside it")
    p.add_argument("--force", action="store_true", help="replace PATH if it exists")
    p.set_defaults(run=run)


def run(args) -> int:
    source = Path(args.db or db_path())
    # Path() drops a trailing slash, which is how a folder that does not exist yet is named.
    folder = args.path.endswith(("/", os.sep))
    target = backup(source, Path(args.path).expanduser(), replace=args.force, folder=folder)
    print(f"backed up {source} to {target} ({target.stat().st_size / 1e6:.1f} MB, integrity ok)")
    return 0


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
    from captain_memo.store.db import _load_vec, _sqlite, connect_read_only, write_denied

    sqlite = _sqlite()
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
            _load_vec(dst)  # the check reads the vector table too when sqlite-vec is there
            verdict = integrity(dst)
        finally:
            dst.close()
            src.close()
        if verdict != "ok":
            raise StoreError(f"the copy of {source} fails its integrity check ({verdict}), so the database itself "
                             "is damaged: run `captain-memo doctor`; to keep the damaged file as it is, copy it "
                             "with cp while nothing else uses it")
        os.replace(partial, target)
    except sqlite.DatabaseError as exc:
        raise StoreError(f"cannot back up {source}: {exc}; run `captain-memo doctor` to check it") from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def integrity(conn, problems: int = 3) -> str:
    """``PRAGMA integrity_check``: "ok", or its first few problems on one line."""
    rows = [r[0] for r in conn.execute(f"PRAGMA integrity_check({int(problems)})")]
    if rows == ["ok"]:
        return "ok"
    return "; ".join(line for row in rows for line in row.splitlines() if not line.startswith("***"))[:500]
