"""`captain-memo backup PATH`: a consistent copy of the database (store/backup.py says how)."""

from __future__ import annotations

import os
from pathlib import Path

from captain_memo.config import db_path


def register(sub) -> None:
    p = sub.add_parser("backup", help="copy the database consistently to PATH (a file, or a folder for a dated name)")
    p.add_argument(
        "path",
        help="the backup file to write; an existing folder, or a path ending in / (created "
        "if missing), gets memo-YYYYMMDD-HHMMSS.db inside it",
    )
    p.add_argument("--force", action="store_true", help="replace PATH if it exists")
    p.set_defaults(run=run)


def run(args) -> int:
    from captain_memo.memo import backup

    source = Path(args.db or db_path())
    # Path() drops a trailing slash, which is how a folder that does not exist yet is named.
    folder = args.path.endswith(("/", os.sep))
    target = backup(source, Path(args.path).expanduser(), replace=args.force, folder=folder)
    print(f"backed up {source} to {target} ({target.stat().st_size / 1e6:.1f} MB, integrity ok)")
    return 0
