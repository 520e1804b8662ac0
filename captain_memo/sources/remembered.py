"""Folders (and files) a user indexed by name inside a repository, remembered per repository.

`captain-memo index doc/` in a repository whose docs live outside the built-in folders would
otherwise be a one-off: the next plain `captain-memo index`, and the editor's re-index on write,
would not know about doc/ and its memories would go stale. The names are kept in the store's meta
table (no table of their own, so no schema change; a backup keeps them) as a JSON list of
repository-relative paths under ``indexed_folders<US><project>``, so every clone and worktree that
shares the project shares them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from captain_memo.sources.folders import Folder, folder_of

META_PREFIX = "indexed_folders"


def meta_key(project: str | None) -> str:
    return f"{META_PREFIX}\x1f{project or ''}"


def remembered_paths(store, project: str | None) -> list[str]:
    """The repository-relative paths remembered for ``project``, in the order they were named."""
    raw = store.meta(meta_key(project))
    try:
        paths = json.loads(raw) if raw else []
    except ValueError:
        return []  # written by no version of this code; a list nobody can read is no list
    return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []


def _save(store, project: str | None, paths: list[str]) -> None:
    store.set_metas({meta_key(project): json.dumps(paths, ensure_ascii=False)})


def remember(store, folders: list[Folder]) -> list[Folder]:
    """Remember the repository folders named on the command line; the ones that were new."""
    added = []
    for project in dict.fromkeys(f.project for f in folders):
        known = remembered_paths(store, project)
        new = [f for f in folders if f.project == project and relative(f) not in known]
        if new:
            _save(store, project, known + [relative(f) for f in new])
            added += new
    return added


def forget(store, folder: Folder) -> bool:
    """Stop refreshing a remembered folder; False when it was not remembered."""
    known = remembered_paths(store, folder.project)
    if relative(folder) not in known:
        return False
    _save(store, folder.project, [p for p in known if p != relative(folder)])
    return True


def relative(folder: Folder) -> str:
    """The folder's path inside its repository (``doc``, ``.`` for the whole working tree)."""
    return folder.stored_path(folder.path) if folder.root is not None else folder.path.as_posix()


def remembered_folders(store, root: Path, project: str | None, branch: str | None) -> list[Folder]:
    """The remembered folders of the repository at ``root``, as folders to index. One that no
    longer exists is kept: indexing it removes its memories, as for any deleted folder."""
    return [
        Folder(root / path, "memory", project, branch, root, named=True) for path in remembered_paths(store, project)
    ]


def remembered_folder_of(store, path: Path, root: Path, project: str | None, branch: str | None) -> Folder | None:
    """The one-file folder for a file just written under a remembered folder, else None."""
    folder = folder_of(path, remembered_folders(store, root, project, branch))
    return None if folder is None else replace(folder, path=path)
