"""Which installation and which code of Captain Memo a process runs.

A service started before an upgrade (``pip install -U``, an edit in a checkout) would otherwise go
on answering with the old code until it idled out, ten minutes later by default. Two identities:

- the build: the package's folder plus the newest modification time and the number of its modules;
  an upgrade or an edit in place changes it.
- the code: every module's path inside the package and its size. Two installations of one release
  (the editor plugin's own environment and the shell's) share it, so either answers the other's
  clients; an edit almost always changes a size, and an edit in place changes the build anyway.

Reading them costs a few hundred stat calls and imports nothing (the command line's thin path uses it).
"""

from __future__ import annotations

import os
import zlib

PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # a string: pathlib costs the thin path ~3 ms


def _modules(folder: str, inside: str = "") -> list[tuple[str, int, int]]:
    """(path inside the package, size, mtime in ns) of every .py file under ``folder``."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                found += _modules(entry.path, f"{inside}{entry.name}/")
            elif entry.name.endswith(".py"):
                info = entry.stat()
                found.append((inside + entry.name, info.st_size, info.st_mtime_ns))
    return found


# Read once per process (functools.lru_cache would import functools and collections, ~1 ms).
_read: tuple[str, str] | None = None


def _identities() -> tuple[str, str]:
    global _read
    if _read is None:
        modules = sorted(_modules(PACKAGE))
        newest = max((mtime for _, _, mtime in modules), default=0)
        sizes = repr([(name, size) for name, size, _ in modules]).encode("utf-8")
        _read = f"{PACKAGE}:{len(modules)}:{newest}", f"{zlib.crc32(sizes):08x}{zlib.adler32(sizes):08x}"
    return _read


def build_id() -> str:
    return _identities()[0]


def code_id() -> str:
    return _identities()[1]


def installation(build: str) -> str:
    """The package folder a build id names."""
    return build.rsplit(":", 2)[0]


def same_code(build: str | None, code: str | None) -> bool:
    """Whether a client of ``build`` and ``code`` runs what this process runs: the same build, or
    another installation of the same code. An installation changed in place never does."""
    if build is None or build == build_id():
        return True
    return installation(build) != installation(build_id()) and code == code_id()
