"""The repositories a store follows: each one indexed here, with what to watch and how to catch up.

`index --git` and `index` record the repository they read (its working tree's root) in the store's
meta table, under ``followed_repositories``, as a JSON object ``{root: {"git": bool, "notes": bool}}``
(no table of its own: no schema change, and a backup keeps it). The engine serving the store
(hosting/watcher.py) watches what each records: a repository's HEAD and refs (its git folder; a
worktree's own and the common one) for ``git``, its note folders (the built-in ones, those named
before, agents' own files) for ``notes``; and it catches up through the same functions `index`
uses, so a pass embeds only what changed. Only what was indexed is followed; a root that no longer
exists is left out (and watched again if it comes back).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from captain_memo.base import git_commands

META_KEY = "followed_repositories"
# Under a git folder only these say the history moved (a commit, merge, rebase, pull, checkout).
GIT_FILES = ("HEAD", "packed-refs")
GIT_FOLDERS = ("refs",)
# A rebase or merge under way moves HEAD commit by commit: the pass waits for its end.
UNDER_WAY = ("rebase-merge", "rebase-apply")


@dataclass(frozen=True)
class Followed:
    """One followed repository: its root, what is followed, and the paths to watch for it."""

    root: Path
    git: bool
    notes: bool
    git_dirs: tuple[Path, ...] = ()
    note_paths: tuple[Path, ...] = ()

    def targets(self) -> tuple[Path, ...]:
        return self.git_dirs + self.note_paths

    def kind_of(self, path: Path) -> str | None:
        """ "git" or "notes" when a change at ``path`` concerns this repository, else None."""
        from captain_memo.sources.folders import inside, is_note

        for git_dir in self.git_dirs:
            if inside(path, git_dir):
                parts = path.relative_to(git_dir).parts
                if path.name.endswith(".lock") or not parts:
                    return None
                if (len(parts) == 1 and parts[0] in GIT_FILES) or parts[0] in GIT_FOLDERS:
                    return "git"
                return None
        for note_path in self.note_paths:
            if path == note_path or (inside(path, note_path) and is_note(path)):
                return "notes"
        return None

    def git_state(self) -> tuple:
        """What HEAD and the branch it names are now, by a read and a few stats (no git process):
        compared every few seconds, it catches a commit whose events were missed (one made while
        the watch was being set up, a file system that dropped them)."""
        state = []
        for git_dir in self.git_dirs:
            for path in (git_dir / "HEAD", git_dir / "packed-refs"):
                state.append(_stamp(path))
            try:
                head = (git_dir / "HEAD").read_text(errors="replace").strip()
            except OSError:
                continue
            if head.startswith("ref: "):
                state.extend(_stamp(d / head[5:]) for d in self.git_dirs)
        return tuple(state)

    def under_way(self) -> bool:
        """A rebase is moving HEAD now: its end is the change to follow."""
        return any((git_dir / name).exists() for git_dir in self.git_dirs for name in UNDER_WAY)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        seen = path.stat()
    except OSError:
        return None
    return seen.st_mtime_ns, seen.st_ino


def record(store, root: Path, git: bool = False, notes: bool = False) -> None:
    """Follow ``root`` from now on for what was just indexed there (written only when new)."""
    known = _read(store)
    entry = known.get(str(root), {"git": False, "notes": False})
    wanted = {"git": entry.get("git", False) or git, "notes": entry.get("notes", False) or notes}
    if wanted != entry:
        known[str(root)] = wanted
        store.set_metas({META_KEY: json.dumps(known, ensure_ascii=False)})


def _read(store) -> dict[str, dict]:
    raw = store.meta(META_KEY)
    try:
        known = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return {k: v for k, v in known.items() if isinstance(v, dict)} if isinstance(known, dict) else {}


def followed(store) -> list[Followed]:
    """The followed repositories that exist now, each with the paths to watch."""
    repositories = []
    for root, what in sorted(_read(store).items()):
        path = Path(root)
        if not path.is_dir():
            continue  # gone (or unmounted): not watched until it is back
        git, notes = bool(what.get("git")), bool(what.get("notes"))
        git_dirs = _git_dirs(path) if git else ()
        note_paths = tuple(f.path for f in note_folders(store, path) if f.path.exists()) if notes else ()
        repositories.append(Followed(path, git and bool(git_dirs), notes, git_dirs, note_paths))
    return repositories


def _git_dirs(root: Path) -> tuple[Path, ...]:
    """The repository's git folder, and for a worktree the common one holding the branches."""
    done = git_commands.run(root, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    if done.returncode != 0:
        return ()
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    dirs = [Path(lines[0])] + [(root / line).resolve() for line in lines[1:2]]
    return tuple(dict.fromkeys(d.resolve() for d in dirs))


def note_folders(store, root: Path) -> list:
    """The repository's note folders `index` reads there: built in, agents' files, named before."""
    from captain_memo.base.git_context import git_context
    from captain_memo.sources.indexer import configured_folders
    from captain_memo.sources.remembered import remembered_folders
    from captain_memo.sources.settings import source_settings

    folders = [f for f in configured_folders(root, source_settings()) if not f.personal]
    ctx = git_context(root)
    return folders + remembered_folders(store, root, ctx.project, ctx.branch)


def catch_up(memo, repository: Followed, kinds: frozenset[str] = frozenset({"git", "notes"})) -> dict:
    """Index what changed in ``repository`` (its new commits, its changed notes) as `index` does;
    how many memories each part stored."""
    from captain_memo.sources.git_history import index_history
    from captain_memo.sources.settings import source_settings

    settings = source_settings()
    done = {}
    if "git" in kinds and repository.git:
        done["commits"] = index_history(memo.engine, repository.root, settings).indexed
    if "notes" in kinds and repository.notes:
        reports = [memo.index_folder(folder, settings) for folder in note_folders(memo.store, repository.root)]
        done["notes"] = sum(r.indexed + r.updated + r.removed for r in reports if r is not None)
    return done


def unindexed_commits(store, root: Path, project: str | None, branch: str | None) -> int:
    """Commits on ``branch`` newer than the newest `index --git` stored for it (0 when the branch's
    history was never indexed: nobody asked for it). One `git rev-list --count`."""
    from captain_memo.sources.git_history import count_commits, meta_key

    last = store.meta(meta_key(project, branch))
    return count_commits(root, last) if last else 0


def stale_notice(count: int) -> str:
    """What an answer about changes says when the stored history is behind the repository."""
    if count <= 0:
        return ""
    verb = "commit is" if count == 1 else "commits are"
    return f"{count:,} newer {verb} not indexed (run `captain-memo index --git`)"


def asks_about_changes(query: str) -> bool:
    """The query is a change question (ranking/changes.py), as a recall reads it."""
    from captain_memo.config import rank_config
    from captain_memo.ranking.changes import is_change_question
    from captain_memo.ranking.query import analyse
    from captain_memo.ranking.window import find_window

    cfg = rank_config()
    shape = analyse(query, cfg.rare_token_min_length, cfg.temporal_word_forms)
    return is_change_question(query, shape.temporal, find_window(query) is not None)
