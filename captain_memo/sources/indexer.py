"""Incremental indexing of note and skill folders.

One memory per section of a file (see doc/sources.md), found again by its source key
``file:<stored path>#<anchor>``. A run, per project:

1. Read and parse every note file; a file that cannot be read as text is skipped with one line
   saying why, and its memories are left as they were.
2. Compare each section with what is stored under its key: the same text is unchanged (only its
   line range or tags are refreshed, nothing is embedded); other text is an update; no key is new.
3. Stored sections that were not seen and lie under a folder being indexed are orphans. A new
   section whose text equals an orphan's is that memory moved (a renamed file or heading): it is
   re-keyed in place and keeps its id, Tide fields and vectors. The other orphans are removed.
4. Writes go in batches: only chunk texts not already stored are embedded, in one call per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from captain_memo.base import secrets
from captain_memo.base.chunking import MAX_CHUNK_CHARS, content_hash
from captain_memo.base.progress import Progress
from captain_memo.base.validation import without_private
from captain_memo.errors import DuplicateKeyError, EmbeddingError, InputError
from captain_memo.records import NewMemory, Source
from captain_memo.sources import asciidoc, following, markdown, rst
from captain_memo.sources.agent_rules import rule_scope
from captain_memo.sources.folders import (
    Folder,
    folder_of,
    is_note,
    note_files,
    personal_folders,
    read_note,
    repository_folders,
    repository_root,
    walk_leaves_out,
)
from captain_memo.sources.index_report import IndexReport, Tally
from captain_memo.sources.settings import AGENT_FILE_NAMES, SourceSettings, source_settings
from captain_memo.store.sync import Stored

log = logging.getLogger("captain_memo")
KEY_PREFIX = "file:"
# Chunk texts per embedding call: large enough for the model's batches of 32, small enough that
# an interrupted run loses little and the progress bar moves.
BATCH_CHUNKS = 256
# Chunk texts per embedding call within a batch: a multiple of the local model's batch (8), so
# slices of the length-sorted texts are padded exactly as the whole batch was; an HTTP embedder
# gets four requests per batch instead of one.
EMBED_SLICE = 64
# Bump when parsing or chunking changes what a file's memories are: every file is then re-read.
# 2: front matter read as YAML, and agents' rules keep their scope.
# 3: Markdown read as CommonMark (setext headings; no heading inside an HTML comment or block).
FILE_STATE_VERSION = "3"
FELL_BACK = "read with the simple reader (key: value, quoted strings, lists); the rest is ignored"


class OwnedElsewhere(Exception):
    """A note's stored memory is another team member's: this role may not change it."""


def owned_elsewhere(author: str) -> str:
    """Why a note was left as it is in the team store (one line of the run's report)."""
    return (
        f"another member's note: its team memory was written by {author}, and only its author or a "
        "curator of the project may change it; left as it is"
    )


@dataclass
class Planned:
    """One section on its way to the store: new (``stored`` None) or replacing a stored memory."""

    memory: NewMemory
    chunks: list[str]
    stored: Stored | None = None
    dated_by_file: bool = False  # created_at is the file's time, not a date the note states


# -- entry points -------------------------------------------------------------------------------


def configured_folders(cwd: str | Path | None = None, settings: SourceSettings | None = None) -> list[Folder]:
    """Personal folders plus the repository folders of the repository holding ``cwd``."""
    from captain_memo.base.git_context import git_context

    settings = settings or source_settings()
    folders = personal_folders(settings)
    ctx = git_context(cwd)
    if ctx.root:
        root = Path(ctx.root).resolve()
        folders += repository_folders(root, ctx.project, ctx.branch, settings)
        folders += [Folder(path, "memory", ctx.project, ctx.branch, root) for path in nested_agent_files(root)]
    return folders


def nested_agent_files(root: Path) -> list[Path]:
    """AGENTS.md, CLAUDE.md and GEMINI.md below the repository's top folder, as git lists them:
    tracked (a deleted one too, so its memories are removed) or new and not ignored, so
    node_modules and build output are never walked. One `git ls-files`: 12-20 ms on 2 busy cores."""
    from captain_memo.base.git_commands import listed_files

    listed = listed_files(root, *(f":(glob)**/{name}" for name in AGENT_FILE_NAMES)) or []
    return sorted({root / path for path in listed if "/" in path})


def index_configured(
    engine, cwd: str | Path | None = None, settings: SourceSettings | None = None, show_progress: bool = False
) -> IndexReport:
    settings = settings or source_settings()
    return index_folders(engine, configured_folders(cwd, settings), settings, show_progress)


def index_paths(
    engine,
    paths: Iterable[str | Path],
    settings: SourceSettings | None = None,
    show_progress: bool = False,
    branch: str | None = None,
) -> IndexReport:
    """Index the given files or folders; each keeps the kind and scope of the folder holding it."""
    settings = settings or source_settings()
    return index_folders(engine, named_folders(paths, settings, branch), settings, show_progress)


def named_folders(paths: Iterable[str | Path], settings: SourceSettings, branch: str | None = None) -> list[Folder]:
    """The folders to index for paths named on the command line, with the configured folders
    inside them (which keep their own kind)."""
    folders = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.exists():
            raise InputError(f"no such file or folder: {raw}")
        folder = folder_for(path, settings, branch=branch)
        folders.append(folder)
        # Configured folders inside the path keep their own kind (`index .` still finds skills as skills).
        inner = personal_folders(settings)
        if folder.root is not None:
            inner += repository_folders(folder.root, folder.project, folder.branch, settings)
        folders += [f for f in inner if path in f.path.parents and f.project == folder.project]
    return folders


def index_file(
    engine, path: str | Path, project: str | None, branch: str | None, settings: SourceSettings | None = None
) -> IndexReport:
    """Re-index one file after it was written (the editor calls this on save).

    A fast no-op, without any git process, when the file is not a note under a configured folder.
    Personal folders give project None whatever ``project`` says; a repository folder uses
    ``project`` and ``branch`` (looked up when ``project`` is None). A file that no longer exists
    has its memories removed.
    """
    settings = settings or source_settings()
    folder = written_folder(path, project, branch, settings)
    return IndexReport() if folder is None else index_folders(engine, [folder], settings)


def written_folder(
    path: str | Path, project: str | None, branch: str | None, settings: SourceSettings
) -> Folder | None:
    """The one-file folder to index for a file just written (``index_file``); None when the file is
    not a note under a configured folder (found without any git process then), or one a walk of the
    folder leaves out (one `git ls-files` asks)."""
    path = Path(path).expanduser()
    if not is_note(path):
        return None
    path = path.resolve()
    folder = folder_of(path, personal_folders(settings))
    if folder is None:
        root = repository_root(path.parent)
        inside = repository_folders(root, project, branch, settings) if root else []
        if root and path.name in AGENT_FILE_NAMES:  # wherever it is in the tree
            inside.append(Folder(path, "memory", project, branch, root))
        folder = folder_of(path, inside)
        if folder is None:
            return None
        if project is None:
            from captain_memo.base.git_context import git_context

            ctx = git_context(root)
            folder = replace(folder, project=ctx.project, branch=branch or ctx.branch)
    if folder.path != path and walk_leaves_out(folder.path, path):
        return None  # what a walk of its folder leaves out (_build/, node_modules/) a save does too
    return replace(folder, path=path)


def forget_indexed(engine, folders: list[Folder]) -> int:
    """Remove what was indexed from ``folders`` into this engine's store (their memories and file
    states); how many memories went. For folders whose notes now live in another store."""
    removed = 0
    for project in dict.fromkeys(f.project for f in folders):
        prefixes = [f.prefix for f in folders if f.project == project]
        for row in engine.store.stored_by_key(project, KEY_PREFIX).values():
            if _under(row.source_path, prefixes):
                engine.store.delete(row.id)
                removed += 1
        gone = [path for path in engine.store.file_states(project) if _under(path, prefixes)]
        engine.store.save_file_states(project, {}, gone)
    return removed


def folder_for(path: Path, settings: SourceSettings, branch: str | None = None) -> Folder:
    """A folder to index at ``path``, with the kind and scope of the configured folder holding it
    (else curated memory of the repository holding it, else a personal note)."""
    configured = folder_of(path, personal_folders(settings))
    if configured is None:
        root = repository_root(path if path.is_dir() else path.parent)
        if root is not None:
            from captain_memo.base.git_context import git_context

            ctx = git_context(root)
            root = Path(ctx.root).resolve() if ctx.root else root
            configured = folder_of(
                path, repository_folders(root, ctx.project, branch or ctx.branch, settings)
            ) or Folder(path, "memory", ctx.project, branch or ctx.branch, root, named=True)
    if configured is None:
        return Folder(path, "memory", None, None, None)
    return replace(configured, path=path)


def index_folders(
    engine,
    folders: list[Folder],
    settings: SourceSettings | None = None,
    show_progress: bool = False,
    follow: bool = True,
) -> IndexReport:
    """Index ``folders`` into ``engine``'s store; ``follow``: record their repositories for the serving
    engine to follow (what this machine's store follows: not a team store's folders)."""
    settings = settings or source_settings()
    tally = Tally()
    owner: dict[Path, Folder] = {}
    usable = []
    kept: dict[str | None, list[str]] = {}  # per project: stored paths (and folder prefixes) left as they are
    reported: set[Path] = set()
    for folder in folders:
        if not folder.path.exists() and folder.personal and not is_note(folder.path):
            # An unmounted disk must not erase a folder's memories; a deleted note file may.
            tally.skip(folder.path.as_posix(), "folder not found (CAPTAIN_MEMO_NOTE_DIRS / _SKILL_DIRS)")
            continue
        usable.append(folder)
        if not folder.path.exists() and not folder.path.is_symlink():
            continue  # a deleted note file, or a repository folder the project does not have
        listing = note_files(folder)
        for path, reason in listing.skipped:
            if path not in reported:
                reported.add(path)
                tally.skip(folder.stored_path(path), reason)
        for path in listing.unreadable:
            where = folder.stored_path(path)
            kept.setdefault(folder.project, []).extend([where, where + "/"])
        tally.not_notes.update(listing.not_notes)
        for file in listing.files:
            if file not in owner or len(folder.path.parts) > len(owner[file].path.parts):
                owner[file] = folder
    bar = Progress(len(owner), "indexing") if show_progress else None
    for project in dict.fromkeys(f.project for f in usable):
        group = [f for f in usable if f.project == project]
        files = [(owner[file], file) for file in owner if owner[file].project == project]
        _Run(engine, settings, tally, bar).index(project, group, files, kept.get(project, []))
    if bar is not None:
        bar.close()
    _backfill(engine, tally)
    for root in dict.fromkeys(f.root for f in usable if f.root is not None and not f.personal and follow):
        following.record(engine.store, root, notes=True)  # the serving engine watches its notes from now on
    return tally.report()


def markup(file: Path):
    """(file type, parser) by the file's suffix: reStructuredText, AsciiDoc, else Markdown."""
    suffix = file.suffix.lower()
    if suffix == ".rst":
        return "rst", rst.parse
    if suffix in (".adoc", ".asciidoc"):
        return "asciidoc", asciidoc.parse
    return "markdown", markdown.parse


def _under(path: str | None, prefixes: list[str]) -> bool:
    """Whether a stored path is one of the folders' files (a prefix ending in / is a folder)."""
    return path is not None and any(path == p or (p.endswith("/") and path.startswith(p)) for p in prefixes)


def _backfill(engine, tally: Tally) -> None:
    """Give a vector to chunks stored while the embedder was down (by this run or an earlier one)."""
    if any(where == "embedder" for where, _ in tally.warnings) or not engine.store.pending_chunks(1):
        return  # failed moments ago in this run: do not wait on it twice
    try:
        while done := engine.backfill():
            tally.chunks_embedded += done
    except EmbeddingError as exc:
        log.warning("vector leg: backfill failed, chunks stay keyword-only for now: %s", exc)


# -- one project's run --------------------------------------------------------------------------


class _Run:
    """One project's run over its folders: plan every file, then write in batches, then remove."""

    def __init__(self, engine, settings: SourceSettings, tally: Tally, bar: Progress | None):
        self.engine = engine
        self.store = engine.store
        self.settings = settings
        self.tally = tally
        self.bar = bar
        self.batch: list[Planned] = []
        self.batch_texts = 0
        self.batch_files = 0
        self.files_shown = 0  # of the batch's files, how many the progress line counts already
        self.embed_failed = False
        self.redacting = secrets.redaction_on()
        self.stored: dict[str, Stored] = {}
        self.keys_of_path: dict[str | None, list[str]] = {}
        self.seen: set[str] = set()  # source keys found in the files read
        self.kept_paths: set[str] = set()  # files skipped: their memories stay as they were
        self.present: set[str] = set()  # stored paths of the files read
        self.states: dict[str, tuple[str, int]] = {}
        self.new_states: dict[str, tuple[str, int]] = {}

    def index(
        self, project: str | None, folders: list[Folder], files: list[tuple[Folder, Path]], kept: list[str]
    ) -> None:
        self.stored = self.store.stored_by_key(project, KEY_PREFIX)
        for key, row in self.stored.items():
            self.keys_of_path.setdefault(row.source_path, []).append(key)
        self.states = self.store.file_states(project)
        plans = []
        for n, (folder, file) in enumerate(files, 1):
            plans.append(self._plan_file(folder, file))
            if self.bar is not None:  # reading and parsing come before the first embedding
                self.bar.advance(0, f"reading {n:,}/{len(files):,}")
        prefixes = [f.prefix for f in folders]
        orphans = {
            key: row
            for key, row in self.stored.items()
            if key not in self.seen
            and row.source_path not in self.kept_paths
            and _under(row.source_path, prefixes)
            and not _under(row.source_path, kept)
        }
        self._keep_others_orphans(orphans)
        self._match_moves([p for plan in plans for p in plan if p.stored is None], orphans)
        for plan in plans:
            for planned in plan:
                self._queue(planned)
            self.batch_files += 1
            if not self.batch:
                self._advance()
        self._flush()
        for row in orphans.values():
            self.store.delete(row.id)
            self.tally.removed += 1
        gone = [
            path
            for path in self.states
            if path not in self.present and _under(path, prefixes) and not _under(path, kept)
        ]
        self.store.save_file_states(project, self.new_states, gone)

    # -- planning --

    def _plan_file(self, folder: Folder, file: Path) -> list[Planned]:
        where = folder.stored_path(file)
        self.tally.files += 1
        note = read_note(file, self.settings.max_file_bytes)
        if note.text is None:
            self.tally.skip(where, note.problem or "unreadable")
            self.kept_paths.add(where)
            return []
        self.present.add(where)
        if note.problem:
            self.tally.warnings.append((where, note.problem))
        kind = folder.kind_of(file)
        # Everything that decides what a file's memories are: its text, its kind, the chunk cap and
        # whether secrets are redacted. Equal to the last run's, with all its sections still
        # stored, the file is unchanged without being parsed (a rerun over 2,000 notes: ~0.2 s).
        digest = content_hash(FILE_STATE_VERSION, kind, str(MAX_CHUNK_CHARS), str(self.redacting), note.text)
        known = self.keys_of_path.get(where, [])
        if self.states.get(where) == (digest, len(known)):
            self.seen.update(known)
            self.tally.unchanged += len(known)
            return []
        try:
            planned, sections = self._plan_sections(folder, file, where, kind, note.text)
        except OwnedElsewhere as exc:
            self.seen.update(known)  # its memories stay, and its state too: the author's run updates both
            self.tally.skip(where, owned_elsewhere(str(exc)))
            self.kept_paths.add(where)
            return []
        except InputError as exc:
            self.tally.skip(where, str(exc))
            self.kept_paths.add(where)
            return []
        self.new_states[where] = (digest, sections)
        return planned

    def _plan_sections(self, folder: Folder, file: Path, where: str, kind: str, text: str) -> tuple[list[Planned], int]:
        # Private spans are blanked line for line so every line number stays true.
        text = without_private(text, keep_lines=True)
        filetype, parse = markup(file)
        note = parse(text, file.stem)
        if note.front.date_error:
            self.tally.warnings.append(
                (where, f"front matter date {note.front.date_error!r} is not an ISO date; using the file's time")
            )
        if note.front.fallback:
            self.tally.warnings.append((where, f"front matter is not YAML ({note.front.fallback}); {FELL_BACK}"))
        scope = rule_scope(where, note.front.data)
        planned = []
        for section in note.sections:
            key = f"{KEY_PREFIX}{where}#{section.anchor}"
            self.seen.add(key)
            row = self.stored.get(key)
            dated_by_file = note.front.date is None and row is None
            memory = NewMemory(
                body=section.text,
                kind=kind,
                title=section.title,
                project=folder.project,
                branch=folder.branch,
                source=Source(where, section.line_start, section.line_end, None, "file", filetype, scope),
                created_at=file.stat().st_mtime if dated_by_file else note.front.date,
                source_key=key,
                tags=note.front.tags,
            )
            # The stored hash is of text that passed the checks, so an equal hash needs no checks and
            # no chunking; unless secrets are redacted, when the stored text may predate redaction.
            if not self.redacting and self._unchanged(row, memory):
                continue
            clean, chunks = self.engine.prepare(replace(memory, chunks=section.chunks))
            if self._unchanged(row, clean):  # the same once cleaned (a redacted secret, a private span)
                continue
            if row is not None and row.kept_by is not None:
                raise OwnedElsewhere(row.kept_by)
            self._warn_secrets(where, section.line_start, clean.body)
            planned.append(Planned(clean, chunks, row, dated_by_file))
        return planned, len(note.sections)

    def _unchanged(self, row: Stored | None, memory: NewMemory) -> bool:
        """Whether the stored memory has this text; if so, refresh where it sits (lines, tags, date)."""
        if (
            row is None
            or row.kind != memory.kind
            or row.content_hash != content_hash(memory.kind, memory.title, memory.body)
        ):
            return False
        if not row.same_place(memory) or (memory.created_at and memory.created_at != row.created_at):
            if row.kept_by is not None:
                raise OwnedElsewhere(row.kept_by)
            self.store.update_place(row.id, memory)
        self.tally.unchanged += 1
        return True

    def _keep_others_orphans(self, orphans: dict[str, Stored]) -> None:
        """Another member's memories of sections gone are neither removed nor moved: one line per file."""
        for key, row in list(orphans.items()):
            if row.kept_by is None:
                continue
            del orphans[key]
            where = row.source_path or key
            if where not in self.kept_paths:
                self.kept_paths.add(where)
                self.tally.skip(where, owned_elsewhere(row.kept_by))
                self.new_states.pop(where, None)

    def _warn_secrets(self, where: str, first_line: int, body: str) -> None:
        """A note's credentials are indexed as they are on disk, unless redaction is on: say so."""
        if self.redacting:
            return
        findings = secrets.scan(body)
        if findings:
            spots = "; ".join(f"line {first_line + f.line - 1}: {f.kind} ({f.preview})" for f in findings)
            self.tally.warnings.append(
                (
                    where,
                    f"stored as is: {spots}; wrap it in <private>...</private> or set {secrets.REDACT_ENV}=1 to redact",
                )
            )

    def _match_moves(self, new: list[Planned], orphans: dict[str, Stored]) -> None:
        """A new section with the same text as an orphan is that memory, moved: re-key it in place."""
        if not new or not orphans:
            return
        texts = self.store.bodies([row.id for row in orphans.values()])
        by_text: dict[str, list[str]] = {}
        for key, row in orphans.items():
            by_text.setdefault(content_hash(texts.get(row.id, "")), []).append(key)
        for planned in new:  # the kind may change too: a note moved into a skill folder
            keys = by_text.get(content_hash(planned.memory.body))
            if keys:
                planned.stored = orphans.pop(keys.pop(0))
                if planned.dated_by_file:  # a moved file's new time is not when the note was written
                    planned.memory = replace(planned.memory, created_at=None)

    # -- writing --

    def _queue(self, planned: Planned) -> None:
        have = self.store.chunk_hashes(planned.stored.id) if planned.stored else set()
        self.batch.append(planned)
        self.batch_texts += sum(1 for chunk in planned.chunks if content_hash(chunk) not in have)
        if self.batch_texts >= BATCH_CHUNKS:
            self._flush()

    def _flush(self) -> None:
        batch, self.batch, self.batch_texts = self.batch, [], 0
        if batch:
            vectors = self._embed(batch)
            for planned in batch:
                self._write(planned, vectors)
        self._advance()

    def _embed(self, batch: list[Planned]):
        """Vectors of the chunk texts not stored yet, by text hash; None when the embedder is down."""
        todo: dict[str, str] = {}
        for planned in batch:
            have = self.store.chunk_hashes(planned.stored.id) if planned.stored else set()
            for chunk in planned.chunks:
                digest = content_hash(chunk)
                if digest not in have:
                    todo.setdefault(digest, chunk)
        if not todo:
            return {}
        # Similar lengths side by side: the model pads each batch to its longest text.
        ordered = sorted(todo.items(), key=lambda item: len(item[1]))
        vectors = self._embed_in_slices([text for _, text in ordered])
        if vectors is None:
            if not self.embed_failed:
                self.tally.warnings.append(
                    (
                        "embedder",
                        "unavailable: text stored and keyword-searchable, vectors are filled in later by a backfill",
                    )
                )
            self.embed_failed = True
            return None
        self.tally.chunks_embedded += len(ordered)
        return {digest: vectors[i] for i, (digest, _) in enumerate(ordered)}

    def _write(self, planned: Planned, vectors) -> None:
        if planned.stored is None:
            import numpy as np

            rows = None if vectors is None else np.stack([vectors[content_hash(c)] for c in planned.chunks])
            try:
                self.store.add(planned.memory, planned.chunks, rows)
                self.tally.indexed += 1
                return
            except DuplicateKeyError:
                # Stored meanwhile under the same key by another writer (the editor saving the file
                # while `captain-memo index` runs): replace that memory's text instead.
                found = self.store.find_by_source_key(planned.memory.source_key, planned.memory.project)
                if found is None:
                    raise
                self.store.rewrite(found.id, planned.memory, planned.chunks, vectors)
                self.tally.updated += 1
        else:
            self.store.rewrite(planned.stored.id, planned.memory, planned.chunks, vectors)
            self.tally.updated += 1

    def _embed_in_slices(self, texts: list[str]):
        """The texts' vectors, embedded a slice at a time so the progress line moves while a batch
        is embedded (a batch of 256 chunks took 5-16 s on 2 cores: the line stood still, then
        jumped). None when the embedder is down."""
        import numpy as np

        parts = []
        for start in range(0, len(texts), EMBED_SLICE):
            part = self.engine.try_embed(texts[start : start + EMBED_SLICE])
            if part is None:
                return None
            parts.append(part)
            self._advance(share=min(1.0, (start + EMBED_SLICE) / len(texts)))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _advance(self, share: float = 1.0) -> None:
        """Move the line by the batch's files, or by ``share`` of them while it is embedded."""
        due = int(self.batch_files * share) - self.files_shown
        if self.bar is not None and due > 0:
            self.bar.advance(due, self.tally.note())
        self.files_shown += max(due, 0)
        if share >= 1.0:
            self.batch_files = self.files_shown = 0
