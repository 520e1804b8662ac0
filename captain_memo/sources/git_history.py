"""Commit messages as observations.

Each commit on the branch being indexed becomes an observation dated by its commit date, with the
branch, the commit id and the files it touched as its source. Merge commits (their message says
only what was merged) and empty messages are skipped; a long message is cut.

Incremental: the newest commit indexed is kept per project and branch in the meta table, and the
next run reads only ``last..HEAD``. When that commit is no longer an ancestor of HEAD (a rebase, a
reset) the whole history is read again, and commits already stored (by their id, for the whole
project, so a commit shared by two branches is stored once) are left alone without embedding.

``git log`` runs as one process: one pass over the history is ~20 ms for a few thousand commits,
where walking it commit object by commit object costs a round trip each. A first run reads
only the newest ``CAPTAIN_MEMO_GIT_MAX_COMMITS`` (5,000); how many older ones were left out is
counted (one ``git rev-list --count``) so the summary can say so.

Where the time goes on a long history: the embedder, and before it was shared, the automatic
supersession rule. Every commit whose title states a version (a release, a bot's dependency
update) compared itself with up to 20 older ones, embedding all of them again: on a generated
history of 5,000 commits with one dependency update in ten, that was over half the run (see
doc/benchmarks.md). The rule now sees the run's embeddings through ``_MemoEmbedder``: each text
is embedded once per run, and texts stored moments ago reuse the vectors just computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_memo.base import git_commands, secrets, validation
from captain_memo.base.fields import LATEST_TIME
from captain_memo.base.progress import Progress
from captain_memo.errors import InputError
from captain_memo.records import NewMemory, Source
from captain_memo.sources import following
from captain_memo.sources.change_plan import tag_key
from captain_memo.sources.index_report import IndexReport, Tally
from captain_memo.sources.settings import SourceSettings, source_settings

KEY_PREFIX = "commit:"
META_PREFIX = "git_last_commit"
BATCH_COMMITS = 64
MAX_TITLE_CHARS = 200
MAX_FILES_LISTED = 20
FIELD = "\x1f"  # between a tag's fields (a ref name holds no control character)
START = "%x00%H %ct %P%x00%B"  # each commit of ``git log -z``: an empty field, its header, its message
# Texts the supersession rule may reuse within one run (1.5 KB each at 384 dimensions: ~30 MB).
MAX_MEMO_TEXTS = 20_000


@dataclass(frozen=True)
class Commit:
    sha: str
    committed_at: float
    parents: int
    message: str
    files: tuple[str, ...]

    @property
    def subject(self) -> str:
        # git's lines end at "\n" only; str.splitlines also ends one at \x1c-\x1e, \x85 and others.
        return self.message.strip().split("\n")[0].strip() if self.message.strip() else ""


def read_commits(root: Path, since: str | None, limit: int) -> list[Commit]:
    """Commits reachable from HEAD (after ``since`` when given), oldest first, at most ``limit``;
    those that cannot be read are left out (``read_history`` names them)."""
    return read_history(root, since, limit)[0]


def read_history(root: Path, since: str | None, limit: int) -> tuple[list[Commit], list[tuple[str, str]]]:
    """The commits ``read_commits`` gives, and (commit id, why) for each that cannot be read."""
    revision = f"{since}..HEAD" if since else "HEAD"
    # NUL-separated (-z): a NUL is the one byte neither a message (git's %B stops at one) nor a path
    # holds. Each commit starts with an empty field (the leading %x00), so a path, never empty,
    # cannot be taken for the next commit. Separators a message can hold (\x1e, \x1f) made a
    # message forge touched paths or fail every run; -z also keeps paths unquoted.
    done = git_commands.run(
        root, "log", f"--max-count={limit}", "-z", "--name-only", "--no-renames", f"--format={START}", revision, "--"
    )
    if done.returncode != 0:
        raise InputError(f"git log failed in {root}: {done.stderr.decode('utf-8', 'replace').strip()}")
    commits, unreadable = [], []
    for header, message, paths in _records(done.stdout.split(b"\0")):
        made = _commit(header, message, paths)
        if isinstance(made, Commit):
            commits.append(made)
        else:
            unreadable.append(made)
    commits.reverse()
    return commits, unreadable


def _records(fields: list[bytes]):
    """(header, message, paths) of each commit in ``git log -z`` output split at its NULs."""
    at = 0
    while at + 1 < len(fields):
        if fields[at] or not fields[at + 1]:  # not a commit's start: only the output's trailing NUL
            at += 1
            continue
        header, message = fields[at + 1], fields[at + 2] if at + 2 < len(fields) else b""
        end = at + 3
        while end < len(fields) and fields[end]:
            end += 1
        paths = fields[at + 3 : end]
        if paths and paths[0].startswith(b"\n"):  # the line between the message and its paths
            paths[0] = paths[0][1:]
        yield header, message, [path for path in paths if path]
        at = end


def _commit(header: bytes, message: bytes, paths: list[bytes]) -> Commit | tuple[str, str]:
    """The commit, or (its short id, why it cannot be read)."""
    sha, stamp, *parents = header.decode("ascii", "replace").split(" ")
    if not stamp.isdigit():
        return sha[:10], "its commit date cannot be read"
    if int(stamp) > LATEST_TIME:
        return sha[:10], f"its commit date ({int(stamp):,} s) is past the year 9999"
    text = message.decode("utf-8", "replace").strip()
    return Commit(sha, float(stamp), len([p for p in parents if p]), text, tuple(_path_text(p) for p in paths))


def _path_text(raw: bytes) -> str:
    """A path as git has it. A name that is not UTF-8 keeps its bytes as ``\\xe9`` escapes: SQLite's
    text cannot hold the file system's own form (a lone surrogate), and U+FFFD made distinct
    names one and matched none of them."""
    return validation.escaped_bytes(raw.decode("utf-8", "surrogateescape"))


def count_commits(root: Path, since: str | None) -> int:
    revision = f"{since}..HEAD" if since else "HEAD"
    done = git_commands.run(root, "rev-list", "--count", revision, "--")
    try:
        return int(done.stdout.strip())
    except ValueError:
        return 0


def _is_ancestor(root: Path, commit: str) -> bool:
    return git_commands.run(root, "merge-base", "--is-ancestor", commit, "HEAD").returncode == 0


def meta_key(project: str | None, branch: str | None) -> str:
    return f"{META_PREFIX}\x1f{project or ''}\x1f{branch or ''}"


def observation(commit: Commit, project: str | None, branch: str | None, max_chars: int) -> NewMemory:
    message = commit.message
    if len(message) > max_chars:
        message = message[:max_chars].rstrip() + f"\n[… {len(commit.message) - max_chars:,} more characters]"
    body = message
    if commit.files:
        listed = ", ".join(commit.files[:MAX_FILES_LISTED])
        more = len(commit.files) - MAX_FILES_LISTED
        body += f"\n\nFiles: {listed}" + (f" and {more} more" if more > 0 else "")
    title = commit.subject[:MAX_TITLE_CHARS]
    # One touched file is the source to open; the body lists the first 20 for people, and every path
    # is stored as searchable data (``touched``, store/touched.py), where change questions find it.
    path = commit.files[0] if len(commit.files) == 1 else None
    return NewMemory(
        body=body,
        kind="observation",
        title=title,
        project=project,
        branch=branch,
        source=Source(path=path, commit=commit.sha, origin="git"),
        created_at=commit.committed_at,
        source_key=KEY_PREFIX + commit.sha,
        touched=commit.files,
    )


@dataclass
class _MemoEmbedder:
    """The engine as the supersession rule sees it during one run: each text embedded once.

    Without it, every commit stating a version re-embedded its (up to 20) older versions: the same
    texts again and again. Bounded by ``MAX_MEMO_TEXTS`` (1.5 KB each at 384 dimensions).
    """

    engine: Any  # captain_memo.engine.core.Engine (imported lazily: it loads numpy)
    vectors: dict = field(default_factory=dict)

    @property
    def store(self):
        return self.engine.store

    def keep(self, texts: list[str], vectors) -> None:
        if len(self.vectors) + len(texts) > MAX_MEMO_TEXTS:
            self.vectors.clear()
        self.vectors.update(zip(texts, vectors))

    def try_embed(self, texts: list[str]):
        import numpy as np

        todo = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if todo:
            vectors = self.engine.try_embed(todo)
            if vectors is None:
                return None
            self.keep(todo, vectors)
        return np.stack([self.vectors[text] for text in texts])


def index_history(
    engine,
    path: str | Path | None = None,
    settings: SourceSettings | None = None,
    show_progress: bool = False,
    max_commits: int | None = None,
) -> IndexReport:
    """Store new commits of the repository holding ``path`` (default: the working directory).

    At most ``max_commits`` (default: the setting ``git_max_commits``) of the newest commits are read.
    """
    from captain_memo.base.git_context import git_context

    settings = settings or source_settings()
    ctx = git_context(path)
    if ctx.root is None:
        raise InputError(f"{Path(path or '.').resolve()} is not inside a git repository")
    tally = Tally()
    if ctx.commit is None:
        return tally.report()  # no commit yet
    root = Path(ctx.root)
    key = meta_key(ctx.project, ctx.branch)
    last = engine.store.meta(key)
    since = last if last and _is_ancestor(root, last) else None
    limit = max_commits or settings.git_max_commits
    commits, unreadable = read_history(root, since, limit)
    for sha, why in unreadable:
        tally.skip(sha, why)
    if len(commits) + len(unreadable) == limit:
        tally.left_out = max(count_commits(root, since) - limit, 0)
    known = set(engine.store.stored_by_key(ctx.project, KEY_PREFIX)) if commits else set()
    todo = []
    for commit in commits:
        if commit.parents > 1:
            tally.skip(commit.sha[:10], "merge commit")
        elif not commit.message.strip():
            tally.skip(commit.sha[:10], "empty message")
        elif KEY_PREFIX + commit.sha in known:
            tally.unchanged += 1
        else:
            todo.append(commit)
    bar = Progress(len(todo), "commits") if show_progress else None
    memo = _MemoEmbedder(engine)
    for start in range(0, len(todo), BATCH_COMMITS):
        _store_batch(memo, todo[start : start + BATCH_COMMITS], ctx.project, ctx.branch, settings, tally)
        if bar is not None:
            bar.advance(min(BATCH_COMMITS, len(todo) - start), tally.note())
    if bar is not None:
        bar.close()
    tags = read_tags(root)
    if commits or last != ctx.commit or tags:
        # "since 8.0" reads a tag's date here (sources/change_plan.py)
        tag_dates = {tag_key(ctx.project, name): repr(stamp) for name, stamp in tags.items()}
        engine.store.set_metas({key: ctx.commit, **tag_dates})
    following.record(engine.store, root.resolve(), git=True)  # the serving engine watches it from now on
    return tally.report()


def read_tags(root: Path) -> dict[str, float]:
    """Tag name -> the date of the commit it names (an annotated tag's commit, not the tag's own)."""
    done = git_commands.run(
        root,
        "for-each-ref",
        "refs/tags",
        f"--format=%(refname:short){FIELD}%(*committerdate:unix){FIELD}%(committerdate:unix)",
    )
    tags = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        name, peeled, own = (line.split(FIELD) + ["", ""])[:3]
        if (stamp := peeled or own).strip().isdigit():
            tags[name] = float(stamp)
    return tags


def _store_batch(
    memo: _MemoEmbedder, commits: list[Commit], project, branch, settings: SourceSettings, tally: Tally
) -> None:
    from captain_memo.sources.supersession import supersede_older_versions

    engine = memo.engine
    prepared = [engine.prepare(observation(c, project, branch, settings.git_max_message_chars)) for c in commits]
    if not secrets.redaction_on():
        for commit, (clean, _) in zip(commits, prepared):
            if found := secrets.scan(clean.body):
                tally.warnings.append(
                    (commit.sha[:10], f"stored as is: {secrets.describe(found)}; set {secrets.REDACT_ENV}=1 to redact")
                )
    texts = [chunk for _, chunks in prepared for chunk in chunks]
    vectors = engine.try_embed(texts)
    if vectors is not None:
        tally.chunks_embedded += len(texts)
        memo.keep(texts, vectors)  # a commit without a version in its text is its own masked text
    elif not any(where == "embedder" for where, _ in tally.warnings):
        tally.warnings.append(
            (
                "embedder",
                "unavailable: commits stored and keyword-searchable, vectors are filled in later by a backfill",
            )
        )
    items, offset = [], 0
    for clean, chunks in prepared:
        items.append((clean, chunks, None if vectors is None else vectors[offset : offset + len(chunks)]))
        offset += len(chunks)
    ids = engine.store.add_many(items, now=engine.clock())  # one transaction for the batch
    tally.indexed += len(ids)
    if vectors is not None:
        for memory_id in ids:  # oldest first, so each commit sees the older versions already stored
            supersede_older_versions(memo.store, memo.try_embed, memory_id, settings)
