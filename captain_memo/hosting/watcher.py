"""The serving engine follows every repository indexed into its store, so nobody runs `index`.

On a thread of its own: first a catch-up (what changed while nothing watched), then a watch with
`watchfiles` (Rust's notify: inotify, FSEvents, ReadDirectoryChangesW) over each followed
repository's git folder (HEAD, refs, packed-refs: a commit, merge, rebase, pull or checkout moves
one of them) and its note folders (sources/following.py says which). A burst is one pass:
watchfiles hands over its changes once none came for ``QUIET_MS`` (a rebase of 200 commits writes
for a second or two, then one pass stores them), and a rebase still under way is left for its end.
Each pass runs on a thread of the held store's own (WarmMemo.follow, not its writer: a save never
waits behind a catch-up) and embeds behind the recalls (embeddings/reads_first.py): the editor
never waits on it. Where a file system gives no events (a network mount) every path is polled,
once a second; ``CAPTAIN_MEMO_WATCH=poll`` asks for that everywhere, ``=0`` turns watching off.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("captain_memo")
QUIET_MS = 600  # a burst ends when nothing changed for this long
LONGEST_BURST_MS = 60_000  # watchfiles' cap on one burst (a long rebase stays one pass)
REFRESH_MS = 5_000  # how often the list of followed repositories is read again while idle
POLL_MS = 1_000  # polling's period: a directory listing per watched folder per second
# File systems whose changes made on another machine raise no local event.
NETWORK_FILE_SYSTEMS = {"nfs", "nfs4", "cifs", "smbfs", "smb3", "sshfs", "fuse.sshfs", "9p", "afs", "ceph", "davfs"}


class Watcher:
    """Follows the repositories of one held store (a hosting/warm_memo.py WarmMemo)."""

    def __init__(self, warm, mode: str):
        self.warm = warm
        self.mode = mode  # "events", "polling" or "off" (config.watch_mode)
        self.polling = mode == "polling"
        self.passes = 0  # passes run (catch-up included); tests and `service status` read it
        self.caught_up = threading.Event()
        self._repositories: list[Any] = []
        self._states: dict[Path, tuple] = {}  # each repository's HEAD and branch as its last pass saw them
        self._files: dict[Path, tuple | None] = {}  # each followed file as its last pass saw it (_file_look)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Watcher:
        if self.mode != "off":
            self._thread = threading.Thread(target=self._run, name="captain-memo-watch", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.warm.following = False
        if self._thread is not None:
            self._thread.join(timeout=10)

    def status(self) -> dict:
        """What is watched and how, for `service status` and :checkhealth."""
        how = "off" if self.mode == "off" else "polling" if self.polling else "events"
        watched = [
            {"repository": str(r.root), "git": r.git, "notes": [str(p) for p in r.note_paths]}
            for r in self._repositories
        ]
        return {"how": how, "caught_up": self.caught_up.is_set(), "passes": self.passes, "watched": watched}

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._repositories = self._read()
            for repository in self._repositories:
                self._pass(repository, frozenset({"git", "notes"}))
            self.caught_up.set()
            self.warm.following = True  # answers about changes need not check for newer commits
        except Exception:  # the engine serves on without it; the log says why
            log.exception("catching up on the indexed repositories failed")
            self.caught_up.set()
        while not self._stop.is_set():
            try:
                self._watch()
                if not self._stop.is_set():
                    self._refresh()
            except Exception as exc:  # a watched folder removed under notify, say: watch afresh
                log.info("watching again after: %s", exc)
                self._stop.wait(QUIET_MS / 1000)

    def _read(self) -> list:
        return self.warm.call(lambda memo: memo.followed())

    def _watch(self) -> None:
        """Watch the followed repositories until a pass ran or the list of them changed."""
        import watchfiles

        repositories = self._repositories
        targets = [p for r in repositories for p in r.targets()]
        if not targets:
            self._stop.wait(REFRESH_MS / 1000)  # then read again: a repository may be indexed since
            return
        self.polling = self.mode == "polling" or any(_on_network(p) for p in targets)
        pending: dict[Path, set[str]] = {}
        signature = self._signature(targets)
        for changes in watchfiles.watch(
            *targets,
            watch_filter=lambda _change, path: _concern(repositories, Path(path)) is not None,
            debounce=LONGEST_BURST_MS,
            step=QUIET_MS,
            stop_event=self._stop,
            rust_timeout=REFRESH_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            force_polling=self.polling,
            poll_delay_ms=POLL_MS,
            ignore_permission_denied=True,
        ):
            # A watched path itself replaced (an editor saving AGENTS.md by a rename): its watch went
            # with the old file, so the paths are watched afresh once the pass ran.
            replaced = any(Path(path) in targets for _change, path in changes)
            for _change, path in changes:
                if (concern := _concern(repositories, Path(path))) is not None:
                    pending.setdefault(concern[0].root, set()).add(concern[1])
            if not changes:  # quiet for REFRESH_MS: a moved HEAD or a file whose events never came
                for repository in repositories:
                    if repository.git and repository.git_state() != self._states.get(repository.root):
                        pending.setdefault(repository.root, set()).add("git")
                    if any(_file_look(f) != self._files.get(f, _file_look(f)) for f in _files_of(repository)):
                        pending.setdefault(repository.root, set()).add("notes")
            ready = {root: kinds for root, kinds in pending.items() if not _find(repositories, root).under_way()}
            for root, kinds in ready.items():
                self._pass(_find(repositories, root), frozenset(kinds))
                del pending[root]
            if not ready and (changes or self._signature(targets) == signature):
                continue
            if (self._refresh() != repositories or replaced) and not pending:
                return  # a folder came or went, a repository was indexed: watch the new list
            signature = self._signature(targets)

    def _refresh(self) -> list:
        """Read the followed repositories again; a note folder gone since is indexed once more (its
        notes are removed, as `index` removes a deleted folder's), then no longer watched."""
        before, now = self._repositories, self._read()
        for repository in now:
            old = next((r for r in before if r.root == repository.root), None)
            if old is not None and set(old.note_paths) - set(repository.note_paths):
                self._pass(repository, frozenset({"notes"}))
        self._repositories = now
        return now

    def _signature(self, targets: list[Path]) -> tuple:
        """Cheap to read while idle (one meta row, a stat per path): when it changes the
        followed repositories are read again (which runs git and lists folders)."""
        return self.warm.call(lambda memo: memo.followed_record()), tuple(p.exists() for p in targets)

    def _pass(self, repository, kinds: frozenset[str]) -> None:
        if "git" in kinds:  # taken before the pass: a commit made during it is seen next time
            self._states[repository.root] = repository.git_state()
        if "notes" in kinds:  # a file replaced again before its new watch began is seen so
            self._files.update({f: _file_look(f) for f in _files_of(repository)})
        try:
            done = self.warm.follow(lambda memo: memo.catch_up(repository, kinds))
            log.info("followed %s (%s): %s", repository.root, ", ".join(sorted(kinds)), done)
        except Exception as exc:  # a failed pass is retried by the next change
            log.warning("following %s failed: %s", repository.root, exc)
        self.passes += 1


def watching_lines(watching: dict | None) -> list[str]:
    """What the engine follows and how (hosting/watcher.py), one line each (`service status`)."""
    if not watching:
        return []
    how = watching.get("how")
    if how == "off":
        return ["not following repositories (CAPTAIN_MEMO_WATCH=0)"]
    how_said = "by polling (no change events on its file system)" if how == "polling" else "by change events"
    from captain_memo.presentation.words import counted

    watched = watching.get("watched") or []
    if not watched:
        return [f"following no repository yet ({how_said}): `index` or `index --git` in one to follow it"]
    lines = [f"following {counted(len(watched), 'repository')} {how_said}:"]
    for repository in watched:
        parts = (["commits"] if repository.get("git") else []) + [
            f"notes in {path}" for path in repository.get("notes") or []
        ]
        lines.append(f"  {repository['repository']}: {', '.join(parts) or 'nothing left to watch'}")
    return lines


def start_watching(warm) -> Watcher:
    from captain_memo.config import watch_mode

    return Watcher(warm, watch_mode()).start()


def _files_of(repository) -> list[Path]:
    """The followed paths that are files (an agent's AGENTS.md), not folders."""
    return [p for p in repository.note_paths if not p.is_dir()]


def _file_look(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _concern(repositories: list, path: Path):
    """(the repository, "git" or "notes") a change at ``path`` concerns, else None."""
    for repository in repositories:
        kind = repository.kind_of(path)
        if kind is not None:
            return repository, kind
    return None


def _find(repositories: list, root: Path):
    return next(r for r in repositories if r.root == root)


def _on_network(path: Path) -> bool:
    """The path lies on a network file system (by /proc/mounts: the longest mount point holding it)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return False
    best, kind = "", ""
    text = str(path)
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and (text == fields[1] or text.startswith(fields[1].rstrip("/") + "/")):
            if len(fields[1]) > len(best):
                best, kind = fields[1], fields[2]
    return kind in NETWORK_FILE_SYSTEMS
