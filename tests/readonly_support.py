"""A store this user may read but not write, made real by file modes: the store's owner, with its
write bits removed. As root, file modes do not bind, so the child runs without the capabilities
that override them (util-linux setpriv); it stays the same user, so it reaches the checkout and
the virtual environment wherever they are (a private temporary folder too)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

AS_ROOT = os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
requires_reader = pytest.mark.skipif(AS_ROOT and not SETPRIV, reason="as root, file modes bind only through setpriv")
# What lets root past a file's modes: writing (dac_override), reading and listing (dac_read_search),
# changing them back (fowner).
WITHOUT_OVERRIDES = "-dac_override,-dac_read_search,-fowner"


def as_reader() -> list[str]:
    """The command prefix that runs a child for whom file modes bind."""
    if not AS_ROOT:
        return []
    return [SETPRIV, "--bounding-set", WITHOUT_OVERRIDES]


def make_store(folder: Path, embedder=None) -> Path:
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    folder.mkdir()
    path = folder / "memo.db"
    engine = Engine(Store(path), embedder or HashEmbedder())
    engine.remember_many(
        [
            NewMemory(
                body=f"the deploy of service {i} listens on port {8000 + i}", title=f"service {i}", kind="observation"
            )
            for i in range(20)
        ]
    )
    engine.close()  # the last connection checkpoints: no -wal or -shm stays beside the file
    return path


def lock(path: Path, file_mode: int = 0o400, folder_mode: int = 0o500) -> None:
    """Take the write permission away from the store's owner, who is the reading user."""
    path.chmod(file_mode)
    path.parent.chmod(folder_mode)


def reader_home(folder: Path) -> Path:
    """A home folder the reading user can write (logs, caches)."""
    folder.mkdir()
    return folder


def reader_python() -> Path:
    """The Python the reading user starts: this one (the same user, so its environment is reachable)."""
    return Path(sys.executable)


def remove_shared(folder: Path) -> None:
    """Remove a shared folder whose children may still be tidying it: a Neovim host or a service that
    was told to stop removes its socket's lock file as it exits, which raced the removal (a file
    listed, then gone before its turn). What is already gone is what was wanted; anything else fails."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o700)

    def gone_already(function, path, exc_info) -> None:
        if not issubclass(exc_info[0], FileNotFoundError):
            raise exc_info[1]

    shutil.rmtree(folder, onerror=gone_already)
