"""What an `index` run reads and where it stores it: the index's plan, for ``Memo``'s door methods.

A plain run reads the configured note and skill folders, the folders named before in the same
repository (sources/remembered.py) and the agent files git no longer lists (so their memories go);
a run naming paths reads those and remembers the folders among them. With a team store set, a
repository's own note folders go to the team store (under the project's portable identity) and
everything personal or named stays in the local store. A file just written (the editor's
index-on-write) is re-indexed alone, and opens no database unless it is a note the store may hold.

The functions take the door (``Memo``) as the ``Indexing`` it is: its store and engine, opened on
first use, and whether a team store is set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from captain_memo.sources.index_report import IndexReport

if TYPE_CHECKING:
    from captain_memo.sources.discovery import Found
    from captain_memo.sources.folders import Folder


class Indexing(Protocol):
    """What the plan needs of the door: its store's path, the store and engine (opened on first
    use), the team client (None when no team store is set) and indexing into the team store."""

    path: Path

    @property
    def store(self) -> Any: ...

    @property
    def engine(self) -> Any: ...

    @property
    def team(self) -> Any: ...

    def index_into_team(self, folders: list[Folder], settings, show_progress: bool) -> IndexReport: ...

    def index_folder(self, folder: Folder, settings) -> IndexReport: ...


@dataclass(frozen=True)
class IndexOutcome:
    """What ``Memo.index`` did: the notes report and, when asked, the git history report."""

    notes: IndexReport
    git: IndexReport | None  # None without --git
    max_commits: int  # the cap on new commits read that was in force
    team: IndexReport | None = None  # the repository's note folders, indexed into the team store
    # Plain runs in a repository: what was read, and what looks like notes but was not.
    looked_in: tuple[str, ...] = ()  # the configured and remembered folders, as the user names them
    found: tuple[Found, ...] = ()  # documentation-like folders nothing reads
    remembered: tuple[str, ...] = ()  # folders named in this run, remembered for plain runs from now on

    @property
    def files(self) -> int:
        return self.notes.files + (self.team.files if self.team else 0)


def index(
    memo: Indexing, paths: Sequence[str], git: bool, branch: str | None, show_progress: bool, max_commits: int | None
) -> IndexOutcome:
    """Named files or folders, else the configured note and skill folders; with ``git``, the
    repository's new commits too. InputError when there is nothing to index."""
    from captain_memo.errors import InputError
    from captain_memo.sources.git_history import index_history
    from captain_memo.sources.indexer import configured_folders, index_folders, named_folders
    from captain_memo.sources.settings import source_settings

    settings = source_settings()
    folders = named_folders(paths, settings, branch) if paths else configured_folders(settings=settings)
    named_before = [] if paths else _remembered(memo, folders)
    folders += [] if paths else _gone_agent_files(memo, folders)
    if branch:
        folders = [f if f.personal else replace(f, branch=branch) for f in folders]
        named_before = [replace(f, branch=branch) for f in named_before]
    if not paths and not folders and not git:
        raise InputError("nothing to index: not inside a git repository and CAPTAIN_MEMO_NOTE_DIRS is not set")
    memo.store.require_writable()  # before any text is embedded for nothing
    # With a team store, the repository's own note folders (decisions, skills) are shared:
    # indexed there under the project's portable identity; personal folders and folders named on
    # the command line stay here.
    shared = [f for f in folders if f.shared] if memo.team is not None and not paths else []
    local = [f for f in folders if f not in shared] + named_before
    notes = index_folders(memo.engine, local, settings, show_progress=show_progress) if local else IndexReport()
    team = memo.index_into_team(shared, settings, show_progress) if shared else None
    history = (
        index_history(memo.engine, settings=settings, show_progress=show_progress, max_commits=max_commits)
        if git
        else None
    )
    outcome = IndexOutcome(notes, history, max_commits or settings.git_max_commits, team)
    if paths:
        return replace(outcome, remembered=_remember_named(memo, folders))
    return replace(outcome, looked_in=_looked_in(folders + named_before), found=_unindexed(folders + named_before))


def index_folder(memo: Indexing, folder: Folder, settings) -> IndexReport:
    """Index one folder (or file) found by the sources: into the team store when it is a
    repository's and one is set, else here."""
    from captain_memo.sources.indexer import index_folders

    if folder.personal or folder.named or memo.team is None:
        return index_folders(memo.engine, [folder], settings)
    return memo.index_into_team([folder], settings, show_progress=False)


def _remembered(memo: Indexing, folders: list[Folder]) -> list[Folder]:
    """The folders named before in the repository these configured folders belong to."""
    from captain_memo.sources.remembered import remembered_folders

    repository = next((f for f in folders if not f.personal and f.root is not None), None)
    if repository is None or repository.root is None or not memo.path.exists():  # no store yet: nothing was named
        return []
    return remembered_folders(memo.store, repository.root, repository.project, repository.branch)


def _gone_agent_files(memo: Indexing, folders: list[Folder]) -> list[Folder]:
    """Agent files deeper in the tree that were indexed and that git no longer lists (a new
    file deleted before it was committed): as folders to index, so their memories go."""
    from captain_memo.sources.folders import Folder
    from captain_memo.sources.settings import AGENT_FILE_NAMES

    repository = next((f for f in folders if not f.personal and f.root is not None), None)
    if repository is None or repository.root is None or not memo.path.exists():
        return []
    listed = {f.path for f in folders}
    root = repository.root
    return [
        Folder(root / path, "memory", repository.project, repository.branch, root)
        for path in memo.store.file_states(repository.project)
        if "/" in path and Path(path).name in AGENT_FILE_NAMES and root / path not in listed
    ]


def _remember_named(memo: Indexing, folders: list[Folder]) -> tuple[str, ...]:
    """Remember the repository folders just named (not the working tree's root: `index .` is a
    sweep, not a folder of notes); the paths newly remembered."""
    from captain_memo.sources.remembered import relative, remember

    named = [f for f in folders if f.named and f.path.is_dir() and f.path != f.root]
    return tuple(relative(f) for f in remember(memo.store, named)) if named else ()


def forget_folder(memo: Indexing, path: str) -> tuple[str, int]:
    """Stop refreshing a folder named before, and remove the memories indexed from it:
    (its path in the repository, how many memories went). InputError when it was not named."""
    from captain_memo.errors import InputError
    from captain_memo.sources.indexer import folder_for, forget_indexed
    from captain_memo.sources.remembered import forget, relative
    from captain_memo.sources.settings import source_settings

    folder = folder_for(Path(path).expanduser().resolve(), source_settings())
    if folder.root is None or not memo.path.exists() or not forget(memo.store, folder):
        raise InputError(f"{path} is not a folder indexed by name in a repository (see `captain-memo index --list`)")
    return relative(folder), forget_indexed(memo.engine, [folder])


def index_sources(memo: Indexing) -> dict:
    """What a plain `index` here reads: each folder with its kind, where it comes from and its
    notes; and the documentation-like folders it does not read."""
    from captain_memo.sources.folders import note_files
    from captain_memo.sources.indexer import configured_folders
    from captain_memo.sources.settings import source_settings

    folders = configured_folders(settings=source_settings())
    named = _remembered(memo, folders)
    rows = []
    for folder in folders + named:
        exists = folder.path.exists()
        rows.append(
            {
                "path": shown_folder(folder),
                "kind": folder.kind,
                "from": "personal" if folder.personal else "named before" if folder.named else "built in",
                "exists": exists,
                "files": len(note_files(folder).files) if exists else 0,
            }
        )
    root = next((f.root for f in folders if f.root is not None), None)
    return {
        "repository": str(root) if root else None,
        "folders": rows,
        "found": [f.to_json() for f in _unindexed(folders + named)],
    }


def index_written_file(
    open_memo: Callable[[], Indexing], path: str, project: str | None, branch: str | None, store: Path | None = None
) -> IndexReport:
    """Re-index one file just written. Outside the configured folders the store (at ``store``, when
    the caller knows it before opening it) is read only for a note, and only when it exists already
    (to look for folders named before): writing any other file opens (or creates) no database."""
    from captain_memo.sources.indexer import written_folder
    from captain_memo.sources.settings import source_settings

    settings = source_settings()
    folder = written_folder(path, project, branch, settings)
    if folder is not None:
        return open_memo().index_folder(folder, settings)
    if store is not None and not Path(store).exists():
        return IndexReport()
    memo, named = _named_folder_of(open_memo, path, project, branch)
    return IndexReport() if memo is None or named is None else memo.index_folder(named, settings)


def written_file_needs_store(path: str, project: str | None, branch: str | None, store: Path) -> bool:
    """Whether ``index_written_file`` would open the store at ``store`` for ``path``: only for a
    note, under a configured folder or beside a store that exists. A cheap look first (most files
    written are not notes), so a holder can skip the store's threads for them."""
    from captain_memo.sources.folders import is_note
    from captain_memo.sources.indexer import written_folder
    from captain_memo.sources.settings import source_settings

    if not is_note(Path(path).expanduser()):
        return False
    return Path(store).exists() or written_folder(path, project, branch, source_settings()) is not None


def _named_folder_of(
    open_memo: Callable[[], Indexing], path: str, project: str | None, branch: str | None
) -> tuple[Indexing | None, Folder | None]:
    """(the door, the one-file folder) for a note written under a folder named before, else (None, None)."""
    from captain_memo.sources.folders import is_note, repository_root
    from captain_memo.sources.remembered import remembered_folder_of

    file = Path(path).expanduser()
    root = repository_root(file.parent) if is_note(file) else None
    if root is None:
        return None, None
    memo = open_memo()
    if not memo.path.exists():
        return None, None
    if project is None:
        from captain_memo.base.git_context import git_context

        ctx = git_context(root)
        project, branch = ctx.project, branch or ctx.branch
    return memo, remembered_folder_of(memo.store, file.resolve(), root.resolve(), project, branch)


def shown_folder(folder: Folder) -> str:
    """A folder as the user names it: ``doc/`` in a repository, ``~/notes/`` at home, a file as is."""
    from captain_memo.sources.folders import is_note

    if folder.root is not None and not folder.personal:
        where = folder.stored_path(folder.path)
    else:
        home = Path.home()
        where = "~/" + folder.path.relative_to(home).as_posix() if home in folder.path.parents else str(folder.path)
    return where if is_note(folder.path) or where.endswith("/") else where + "/"


def _looked_in(folders: list[Folder]) -> tuple[str, ...]:
    from captain_memo.sources.discovery import looked_in

    return looked_in([(f, shown_folder(f)) for f in sorted(folders, key=lambda f: f.kind != "memory")])


def _unindexed(folders: list[Folder]) -> tuple[Found, ...]:
    """Documentation-like folders of the repository that none of ``folders`` reads."""
    from captain_memo.sources.discovery import unindexed_folders

    root = next((f.root for f in folders if f.root is not None and not f.personal), None)
    return tuple(unindexed_folders(root, folders)) if root is not None else ()
