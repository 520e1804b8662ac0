"""`captain-memo backup PATH`: a consistent copy of the database (store/backup.py says how)."""

from __future__ import annotations

import os
from pathlib import Path

from captain_memo.cli.commands._common import add_command
from captain_memo.config import db_path


def register(sub) -> None:
    p = add_command(sub, "backup", run, "copy the database consistently to PATH (a file, or a folder for a dated name)")
    p.add_argument(
        "path",
        help="the backup file to write; an existing folder, or a path ending in / (created "
        "if missing), gets memo-YYYYMMDD-HHMMSS.db inside it",
    )
    p.add_argument("--force", action="store_true", help="replace PATH if it exists")
    p.add_argument(
        "--restore",
        action="store_true",
        help="the other way: put the backup PATH in place of the database (the store it replaces is "
        "kept beside it, dated); a running service or editor serves the restored store at once",
    )


def run(args) -> int:
    from captain_memo.memo import Memo

    source = Path(args.db or db_path())
    if args.restore:
        return restore(Path(args.path).expanduser(), source)
    # Path() drops a trailing slash, which is how a folder that does not exist yet is named.
    folder = args.path.endswith(("/", os.sep))
    target = Memo(source).backup(Path(args.path).expanduser(), replace=args.force, folder=folder)
    print(f"backed up {source} to {target} ({target.stat().st_size / 1e6:.1f} MB, integrity ok)")
    return 0


def restore(backup_file: Path, db: Path) -> int:
    from captain_memo.memo import Memo

    kept = Memo(db).restore(backup_file)
    print(f"restored {db} from {backup_file} (integrity ok)")
    if kept is not None:
        print(f"the store it replaced is kept as {kept}")
    return 0
