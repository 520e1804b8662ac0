"""Installing the plugin as a user would, offline, on a Python marked externally managed (PEP 668).

- ``marked_python``: a copy of this interpreter in a folder of its own whose standard library holds
  an ``EXTERNALLY-MANAGED`` file, as Debian's and Homebrew's do. The binary is copied (a symlink
  would take Python back to its real prefix); the standard library's entries are symlinked.
- ``wheelhouse``: wheels of captain-memo's dependencies, repacked from this test environment's
  installed copies (each file listed in its RECORD), plus the build backend. With ``PIP_NO_INDEX``
  and ``PIP_FIND_LINKS`` pointing at it, the build step's own ``pip install`` resolves and installs
  exactly as it would from the package index, without a network.
- ``plugin_copy``: the plugin's folder as a plugin manager leaves it (the repository's files,
  without its virtual environment).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
BACKEND = "setuptools"  # pyproject.toml's build-system.requires


def marked_python(root: Path) -> Path:
    """A Python 3 under ``root`` that pip treats as externally managed; returns its ``bin`` folder."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    real = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    bin_dir, lib = root / "bin", root / "lib" / version
    bin_dir.mkdir(parents=True)
    lib.mkdir(parents=True)
    shutil.copy2(real, bin_dir / version)
    (bin_dir / "python3").symlink_to(version)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    (lib / "site-packages").mkdir()
    for shared in Path(sys.base_prefix, "lib").glob("libpython*"):  # for a binary that finds it beside itself
        (root / "lib" / shared.name).symlink_to(shared)
    (lib / "EXTERNALLY-MANAGED").write_text(
        "[externally-managed]\nError=This Python is managed by the system: use a virtual environment.\n"
    )
    return bin_dir


def refuses_pip(bin_dir: Path) -> str:
    """What pip says when asked to install into the marked Python (it must refuse)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(bin_dir / "python3"), "install", "--dry-run", "--no-index", "x"],
        capture_output=True,
        text=True,
    )
    return done.stdout + done.stderr


def _closure(root: str) -> list[metadata.Distribution]:
    """``root``'s installed dependencies, transitively, extras included, as this environment resolved them."""
    seen: dict[str, metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()
    todo = [(Requirement(r), "") for r in metadata.requires(root) or []]
    while todo:
        req, wanted_by = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": wanted_by}):
            continue
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        dist = seen.setdefault(key, metadata.distribution(req.name))
        for extra in ("", *sorted(req.extras)):
            if (key, extra) not in done:
                done.add((key, extra))
                todo.extend((Requirement(r), extra) for r in dist.requires or [])
    return list(seen.values())


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _tag(dist: metadata.Distribution) -> str:
    """The wheel's tags in the file name's compressed form (``py2.py3-none-any``)."""
    lines = (dist.read_text("WHEEL") or "").splitlines()
    tags = [line.split(":", 1)[1].strip().split("-") for line in lines if line.startswith("Tag:")]
    if not tags:
        return "py3-none-any"
    parts = [list(dict.fromkeys(dotted for tag in tags for dotted in tag[i].split("."))) for i in range(3)]
    return "-".join(".".join(part) for part in parts)


def repack(dist: metadata.Distribution, folder: Path) -> Path:
    """A wheel of an installed distribution: the files its RECORD lists, with a fresh RECORD."""
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    version = dist.version
    info = f"{name}-{version}.dist-info"
    target = folder / f"{name}-{version}-{_tag(dist)}.whl"
    if target.exists():
        return target
    site = Path(str(dist.locate_file("")))
    partial = target.with_suffix(".part")
    rows = []
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as whl:
        for file in dist.files or []:
            path = str(file)
            if path.startswith("..") or "__pycache__" in path or ".dist-info/" in path:
                continue
            data = (site / path).read_bytes()
            whl.writestr(path, data)
            rows.append((path, _record_hash(data), str(len(data))))
        for meta in ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt", "LICENSE"):
            text = dist.read_text(meta)
            if text is not None:
                data = text.encode()
                whl.writestr(f"{info}/{meta}", data)
                rows.append((f"{info}/{meta}", _record_hash(data), str(len(data))))
        record = io.StringIO()
        csv.writer(record, lineterminator="\n").writerows([*rows, (f"{info}/RECORD", "", "")])
        whl.writestr(f"{info}/RECORD", record.getvalue())
    partial.rename(target)
    return target


def wheelhouse(folder: Path) -> Path:
    """Wheels of everything ``pip install -e`` of the plugin needs; kept between runs in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in [*_closure("captain-memo"), metadata.distribution(BACKEND)]:
        repack(dist, folder)
    return folder


def plugin_copy(target: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored) copied to ``target``."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def offline_pip_env(houses: Path) -> dict[str, str]:
    """pip's own settings that make it install from the wheelhouse alone (no network)."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(houses), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
