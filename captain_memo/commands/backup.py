"""`captain-memo backup PATH`: a consistent copy of the database (store/backup.py says how)."""

from __future__ import annotations

from pathlib import Path

from captain_memo.config import db_path


def register(sub) -> None:
    p = sub.add_parser("backup", help="copy the database consistently to PATH (a file, or a folder for a dated name)")
    p.add_argument("path", help="the backup file to write, or an existing folder to write memo-YYYYMMDD-HHMMSS.db in")
    p.add_argument("--force", action="store_true", help="replace PATH if it exists")
    p.set_defaults(run=run)


def run(args) -> int:
    from captain_memo.memo import backup

    source = Path(args.db or db_path())
    target = backup(source, Path(args.path).expanduser(), replace=args.force)
    print(f"backed up {source} to {target} ({target.stat().st_size / 1e6:.1f} MB, integrity ok)")
    return 0


