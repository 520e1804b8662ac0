"""A store this user may read but not write, made real: as root the reader is the unprivileged user
`nobody` (setpriv), who owns the store with its write bits removed; as any other user the file
modes alone do it (file modes do not stop root)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534
AS_ROOT = os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
requires_reader = pytest.mark.skipif(AS_ROOT and not SETPRIV, reason="as root, dropping to another user needs setpriv")


def as_reader() -> list[str]:
    """The command prefix that runs a child as the user the store is read-only for."""
    if not AS_ROOT:
        return []
    return [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture
def shared_tmp():
    """A folder the unprivileged user can reach (pytest's own tmp folders are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-ro-"))
    folder.chmod(0o711)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o700)
    shutil.rmtree(folder)


def make_store(folder: Path, embedder=None) -> Path:
    from fakes import HashEmbedder

    from captain_memo.engine import Engine
    from captain_memo.store import NewMemory, Store

    folder.mkdir()
    path = folder / "memo.db"
    engine = Engine(Store(path), embedder or HashEmbedder())
    engine.remember_many([NewMemory(body=f"the deploy of service {i} listens on port {8000 + i}", title=f"service {i}",
                                    kind="observation") for i in range(20)])
    engine.close()  # the last connection checkpoints: no -wal or -shm stays beside the file
    return path


def lock(path: Path, file_mode: int = 0o400, folder_mode: int = 0o500) -> None:
    """Take the write permission away from the store's owner, who is the reading user."""
    if AS_ROOT:
        os.chown(path.parent, NOBODY, NOBODY)
        os.chown(path, NOBODY, NOBODY)
    path.chmod(file_mode)
    path.parent.chmod(folder_mode)


def reader_home(folder: Path) -> Path:
    """A home folder the reading user can write (logs, caches)."""
    folder.mkdir()
    if AS_ROOT:
        os.chown(folder, NOBODY, NOBODY)
    return folder


def reader_python(home: Path) -> Path | None:
    """A Python the reading user can start, with this checkout and its packages importable. As root,
    the virtual environment's interpreter may be a link into root's private folders, which the
    reading user cannot follow: a system interpreter of the same version stands in (None: none is
    installed)."""
    import sys
    import sysconfig

    if not AS_ROOT:
        return Path(sys.executable)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return None
    repo = Path(__file__).resolve().parent.parent
    host = home / "python3-host"
    host.write_text(f'#!/bin/sh\nPYTHONPATH="{repo}:{sysconfig.get_paths()["purelib"]}" exec "{system}" "$@"\n',
                    encoding="utf-8")
    host.chmod(0o755)
    os.chown(host, NOBODY, NOBODY)
    return host
