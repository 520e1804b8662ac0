"""What the Neovim plugin asks of Captain Memo, answered off the editor's main loop.

Requests arrive from the remote plugin (``rplugin/python3/captain_memo_nvim.py``) as plain dicts::

    {"id": 7, "op": "recall", "channel": "results", "settings": {...}, "args": {...}}

and every answer goes back through the ``deliver`` callable as a plain dict: ``{"id", "op", "ok",
"result"}`` or ``{"id", "op", "ok": False, "error"}`` (one readable line; an unexpected failure's
traceback goes to the log). All work runs on one worker thread, so the editor never waits for an
embedding, a search or a write, and an engine is only ever used by one thread at a time. A request
that a newer one on the same channel replaced before it started is skipped: the editor would throw
its answer away anyway.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from captain_memo import secrets
from captain_memo.errors import CaptainMemoError, DatabaseDamagedError, InputError, ReadOnlyStoreError, StoreError
from captain_memo.gitctx import NO_REPOSITORY, GitContext, git_context

log = logging.getLogger("captain_memo")
# Hints ask for more than a page of results: they count every memory naming the token.
HINT_LIMIT = 50
# What a save does with text that looks like it holds credentials: ask the user (the answer comes
# back as a second save request saying redact or allow), store it redacted, or store it as it is.
SECRET_POLICIES = ("ask", "redact", "allow")


@dataclass(frozen=True)
class EditorSettings:
    """The plugin's options that reach the library; None means the environment's or the default."""

    db: str | None = None
    provider: str | None = None
    url: str | None = None
    model: str | None = None
    profile: str | None = None
    limit: int | None = None
    share_worktrees: bool = True
    log_file: str | None = None
    secrets: str = "ask"

    @classmethod
    def from_dict(cls, raw: dict | None) -> "EditorSettings":
        raw = raw or {}
        limit = raw.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InputError(f"limit must be a positive whole number, not {limit!r}")
        return cls(db=_text(raw, "db"), provider=_text(raw, "provider"), url=_text(raw, "url"),
                   model=_text(raw, "model"), profile=_text(raw, "profile"), limit=limit,
                   share_worktrees=bool(raw.get("share_worktrees", True)), log_file=_text(raw, "log_file"),
                   secrets=_choice(raw, "secrets", SECRET_POLICIES) or "ask")

    @property
    def engine_key(self) -> tuple:
        return (str(self.database_path()), self.provider, self.url, self.model)

    def database_path(self) -> Path:
        from captain_memo.config import db_path

        return Path(self.db).expanduser() if self.db else db_path()

    def embed_config(self):
        from captain_memo.config import embed_config

        return embed_config(provider=self.provider, url=self.url, model=self.model)


def _text(raw: dict, name: str) -> str | None:
    value = raw.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(f"setting {name} must be text, not {type(value).__name__}")
    return value


def _choice(raw: dict, name: str, allowed: tuple[str, ...]) -> str | None:
    value = _text(raw, name)
    if value is not None and value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def one_line(message: str) -> str:
    """A message fit for a single notification line."""
    return " ".join(str(message).split()) or "unknown error"


def open_engine(settings: EditorSettings):
    from captain_memo.embeddings import make_embedder
    from captain_memo.engine import Engine

    # The host lives as long as the editor: the in-memory vector index pays off (built in the
    # background; sqlite-vec answers until it is ready).
    return Engine.open(settings.database_path(), make_embedder(settings.embed_config()), memory_index=True)


class ContextCache:
    """Git context per folder, reused while the repository's HEAD file is unchanged.

    gitpython costs 3-7 ms per lookup (measured on this machine), a tenth of the lookup budget;
    a checkout rewrites HEAD (new inode and mtime), so a cached branch never outlives it.
    """

    def __init__(self):
        self._items: dict[tuple[str, bool], tuple[GitContext, tuple | None]] = {}

    def get(self, path: str | None, share_worktrees: bool, fresh: bool = False) -> GitContext:
        if not path:
            return NO_REPOSITORY
        folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
        key = (folder, share_worktrees)
        cached = self._items.get(key)
        if cached and not fresh and cached[1] is not None and cached[1] == _head_stamp(cached[0]):
            return cached[0]
        ctx = git_context(path, share_worktrees=share_worktrees)
        self._items[key] = (ctx, _head_stamp(ctx))
        return ctx


def _head_stamp(ctx: GitContext) -> tuple | None:
    """Identity of the working tree's HEAD file, or None when it cannot be found (never cached)."""
    if not ctx.root:
        return ()
    dot_git = Path(ctx.root) / ".git"
    try:
        if dot_git.is_file():  # a linked worktree: ".git" names its own git dir
            text = dot_git.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = Path(text[len("gitdir:"):].strip())
            dot_git = git_dir if git_dir.is_absolute() else Path(ctx.root) / git_dir
        st = (dot_git / "HEAD").stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def locate(path: str | None, ctx: GitContext, project: str | None) -> str | None:
    """The file a stored source path names, looked for in the caller's working tree first (a
    worktree of the same repository), then in the memory's project folder."""
    if not path:
        return None
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return str(candidate) if candidate.exists() else None
    for base in (ctx.root, project):
        if base and (Path(base) / candidate).exists():
            return str(Path(base) / candidate)
    return None


def memory_json(memory, ctx: GitContext) -> dict:
    src = memory.source
    return {
        "id": memory.id, "kind": memory.kind, "title": memory.display_title, "body": memory.body,
        "created_at": memory.created_at, "project": memory.project, "branch": memory.branch,
        "superseded_by": memory.superseded_by,
        "source": {"path": src.path, "line_start": src.line_start, "line_end": src.line_end, "commit": src.commit,
                   "origin": src.origin, "filetype": src.filetype, "label": src.describe(),
                   "file": locate(src.path, ctx, memory.project)},
    }


def _context_json(ctx: GitContext) -> dict:
    return {"project": ctx.project, "branch": ctx.branch, "commit": ctx.commit, "root": ctx.root}


def _finding_json(finding) -> dict:
    return {"field": finding.field, "line": finding.line, "kind": finding.kind, "preview": finding.preview,
            "text": finding.describe()}


class _OnFirstUse:
    """An engine opened when first touched: ``index_file`` touches none for a file it ignores, so
    writing a README opens (or creates) no database."""

    def __init__(self, open_engine: Callable[[], object]):
        self._open = open_engine
        self._engine = None

    def __getattr__(self, name: str):
        if self._engine is None:
            self._engine = self._open()
        return getattr(self._engine, name)


def _int(args: dict, name: str, required: bool = True) -> int | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{name} must be a whole number, not {value!r}")
    return value


class EditorService:
    """Runs the plugin's requests on a worker thread and hands each answer to ``deliver``."""

    def __init__(self, deliver: Callable[[dict], None],
                 engine_factory: Callable[[EditorSettings], object] = open_engine):
        self.deliver = deliver
        self.engine_factory = engine_factory
        self.contexts = ContextCache()
        self._engines: dict[tuple, object] = {}
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-editor")
        self._log_files: set[str] = set()
        self.ops = {"recall": self.recall, "hint": self.hint, "check": self.check, "save": self.save, "open": self.open,
                    "forget": self.forget, "supersede": self.supersede, "index": self.index}

    # -- the queue ----------------------------------------------------------------------

    def submit(self, request: dict) -> None:
        """Queue a request; returns at once. Its answer arrives through ``deliver``."""
        channel = request.get("channel")
        if channel:
            with self._lock:
                self._latest[channel] = request.get("id", 0)
        self._worker.submit(self._run, request)

    def _superseded(self, request: dict) -> bool:
        channel = request.get("channel")
        with self._lock:
            return bool(channel) and self._latest.get(channel) != request.get("id", 0)

    def _run(self, request: dict) -> None:
        if self._superseded(request):
            return
        reply = self.handle(request)
        if self._superseded(request):
            return
        try:
            self.deliver(reply)
        except Exception:  # the editor went away; nobody is left to tell
            log.exception("could not deliver the answer to request %s", request.get("id"))

    def handle(self, request: dict) -> dict:
        """Answer one request now, on the calling thread."""
        base = {"id": request.get("id"), "op": request.get("op")}
        settings = None
        try:
            settings = EditorSettings.from_dict(request.get("settings"))
            self._attach_log(settings.log_file)
            op = self.ops.get(request.get("op"))
            if op is None:
                raise InputError(f"unknown request {request.get('op')!r}")
            return {**base, "ok": True, "result": op(settings, request.get("args") or {})}
        except CaptainMemoError as exc:
            log.info("%s failed: %s", base["op"], exc)
            return {**base, "ok": False, "error": one_line(str(exc))}
        except Exception as exc:
            error = self._database_failure(exc, settings)
            if error is not None:
                log.warning("%s failed: %s", base["op"], error)
                return {**base, "ok": False, "error": one_line(str(error))}
            log.exception("%s failed unexpectedly", base["op"])
            return {**base, "ok": False, "internal": True, "error": one_line(f"{type(exc).__name__}: {exc}")}

    def _database_failure(self, exc: Exception, settings: EditorSettings | None) -> StoreError | None:
        """A SQLite error met mid-request (a damaged page, a lock held too long) as a message naming
        the file and what to do; None for anything else. The engine of a damaged file is dropped, so
        the next request opens the file afresh (restored from a backup, or moved away)."""
        if settings is None:
            return None
        from captain_memo.store.db import store_error

        error = store_error(exc, settings.database_path())
        if isinstance(error, DatabaseDamagedError):
            engine = self._engines.pop(settings.engine_key, None)
            if engine is not None:
                engine.close()
        return error

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()

    # -- shared parts -------------------------------------------------------------------

    def engine(self, settings: EditorSettings):
        key = settings.engine_key
        if key not in self._engines:
            self.deliver({"event": "status", "text": "opening the database (the model loads on first search)…"})
            engine = self._engines[key] = self.engine_factory(settings)
            store = getattr(engine, "store", None)
            if getattr(store, "read_only", False):
                # Said once per database: every later recall would otherwise repeat it.
                self.deliver({"event": "notice", "level": "warn", "text": (
                    f"read-only {store.path}: lookups work, saves fail, recalls are not recorded "
                    f"({store.read_only_reason})")})
        return self._engines[key]

    def context(self, settings: EditorSettings, args: dict, fresh: bool = False) -> GitContext:
        """Git context of the buffer's file (``args['context']``), not of the editor's folder."""
        return self.contexts.get(args.get("context") or None, settings.share_worktrees, fresh)

    def _attach_log(self, path: str | None) -> None:
        """Send library log lines to the plugin's log file rather than to the host's stderr."""
        if not path or path in self._log_files:
            return
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
        self._log_files.add(path)

    # -- the requests -------------------------------------------------------------------

    def recall(self, settings: EditorSettings, args: dict) -> dict:
        from captain_memo.ranking.result import result_json

        ctx = self.context(settings, args)
        result = self.engine(settings).recall(
            args.get("query", ""), project=ctx.project, branch=ctx.branch,
            limit=_int(args, "limit", required=False) or settings.limit,
            profile=args.get("profile") or settings.profile, how=args.get("how") or "search")
        data = result_json(result, time.time())
        for hit in data["hits"]:
            hit["source"]["file"] = locate(hit["source"]["path"], ctx, hit["project"])
        data["context"] = _context_json(ctx)
        return data

    def hint(self, settings: EditorSettings, args: dict) -> dict:
        """How many memories name ``token`` exactly: keyword leg only, recorded nowhere (cheap)."""
        from captain_memo.ranking.query import is_code_shaped

        token = args.get("token") or ""
        if not is_code_shaped(token):
            return {"token": token, "count": 0, "ids": []}
        ctx = self.context(settings, args)
        result = self.engine(settings).recall(token, project=ctx.project, branch=ctx.branch, limit=HINT_LIMIT,
                                              legs=("keyword",), how="auto", record=False)
        ids = sorted({hit.memory.id for hit in result.hits if token in hit.text})
        return {"token": token, "count": len(ids), "ids": ids}

    def check(self, settings: EditorSettings, args: dict) -> dict:
        """Credentials in a selection about to be saved, found before the dialog shows any of it: the
        title prompt is prefilled from ``redacted``, so a token never appears in it. No database is
        opened. With redaction on everywhere (CAPTAIN_MEMO_REDACT_SECRETS) there is nothing to ask."""
        from captain_memo.validation import without_private

        text = args.get("text")
        if not isinstance(text, str):
            raise InputError(f"text must be text, not {type(text).__name__}")
        visible = without_private(text)
        findings = [] if secrets.redaction_on() else secrets.scan(visible)
        return {"findings": [_finding_json(f) for f in findings], "redacted": secrets.redact(visible)}

    def save(self, settings: EditorSettings, args: dict) -> dict:
        """Store a selection or a note; text that looks like it holds credentials is handled by the
        ``secrets`` policy: the request's (the user's answer) or the settings'."""
        from captain_memo.store.models import NewMemory, Source

        text, title = args.get("text", ""), args.get("title") or ""
        policy = _choice(args, "secrets", SECRET_POLICIES) or settings.secrets
        try:
            kept = secrets.check(text, title, allow=policy != "ask", how_to_allow='choose "save anyway"')
        except secrets.SecretsFoundError as exc:
            # Nothing is stored: the plugin shows the findings and sends the save again with the
            # user's choice (allow or redact).
            log.info("save held for the user's choice: %s", exc)
            return {"saved": False, "findings": [_finding_json(f) for f in exc.findings]}
        redacted = []
        if kept and policy == "redact":
            text, title, redacted, kept = secrets.redact(text), secrets.redact(title), kept, []
        # A fresh context: the commit matters here and may have moved since the last lookup.
        ctx = self.context(settings, args, fresh=True)
        path = args.get("path") or None
        start, end = _int(args, "line_start", required=False), _int(args, "line_end", required=False)
        source = Source(path=ctx.relative(path) if path else None, line_start=start, line_end=end,
                        commit=ctx.commit, origin="editor", filetype=args.get("filetype") or None)
        memory = NewMemory(body=text, kind=args.get("kind") or "memory", title=title, project=ctx.project,
                           branch=ctx.branch, source=source)
        memory_id = self.engine(settings).remember(memory)
        return {"saved": True, "id": memory_id, "title": memory.title, "kind": memory.kind, "path": source.path,
                "line_start": start, "line_end": end, "kept": [f.describe() for f in kept],
                "redacted": [f.describe() for f in redacted], **_context_json(ctx)}

    def index(self, settings: EditorSettings, args: dict) -> dict:
        """Re-index a file just written; nothing happens (no database opened) outside the note and
        skill folders."""
        from captain_memo.sources.indexer import index_file

        path = args.get("path")
        if not isinstance(path, str) or not path:
            raise InputError("path must name the file that was written")
        ctx = self.contexts.get(path, settings.share_worktrees)
        report = index_file(_OnFirstUse(lambda: self.engine(settings)), path, ctx.project, ctx.branch)
        return {"path": path, **report.to_json()}

    def open(self, settings: EditorSettings, args: dict) -> dict:
        """A memory in full; this counts as the strongest surfacing for Tide."""
        memory = self.engine(settings).show(_int(args, "id"))
        return memory_json(memory, self.context(settings, args))

    def forget(self, settings: EditorSettings, args: dict) -> dict:
        memory_id = _int(args, "id")
        self.engine(settings).forget(memory_id)
        return {"id": memory_id}

    def supersede(self, settings: EditorSettings, args: dict) -> dict:
        old, new = _int(args, "old"), _int(args, "new")
        self.engine(settings).supersede(old, new)
        return {"old": old, "new": new}


# -- :checkhealth ---------------------------------------------------------------------------

def health_report(settings: dict | None = None, context: str | None = None) -> list[dict]:
    """Each thing the plugin depends on: ``{"item", "status": ok|warn|error, "detail"}``."""
    try:
        cfg = EditorSettings.from_dict(settings)
    except CaptainMemoError as exc:
        return [{"item": "settings", "status": "error", "detail": str(exc)}]
    out = [_check("package", _package), _check("sqlite", _sqlite_version), _check("sqlite-vec", _sqlite_vec),
           _check("fts5", _fts5), _check("database", lambda: _database(cfg)),
           _check("embedding", lambda: _embedding(cfg), failure="warn"),
           _check("repository", lambda: _repository(cfg, context))]
    return out


def _check(item: str, probe: Callable[[], str], failure: str = "error") -> dict:
    try:
        return {"item": item, "status": "ok", "detail": probe()}
    except ReadOnlyStoreError as exc:  # readable, so lookups work: a warning, not a failure
        return {"item": item, "status": "warn", "detail": one_line(str(exc))}
    except Exception as exc:
        return {"item": item, "status": failure, "detail": one_line(str(exc) or type(exc).__name__)}


def _package() -> str:
    import captain_memo

    return f"captain_memo {captain_memo.__version__} ({Path(captain_memo.__file__).parent})"


def _memory_connection():
    import sqlean

    return sqlean.connect(":memory:")


def _sqlite_version() -> str:
    import sqlean

    return f"SQLite {sqlean.sqlite_version} (sqlean)"


def _sqlite_vec() -> str:
    from captain_memo.store.db import _load_vec

    conn = _memory_connection()
    try:
        failure = _load_vec(conn)
        if failure:
            raise RuntimeError(f"sqlite-vec does not load: {failure}; the vector leg is off")
        return "sqlite-vec " + conn.execute("SELECT vec_version()").fetchone()[0]
    finally:
        conn.close()


def _fts5() -> str:
    conn = _memory_connection()
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
        return "FTS5 available"
    except Exception as exc:
        raise RuntimeError(f"FTS5 is missing from this SQLite build ({exc})") from None
    finally:
        conn.close()


def _database(cfg: EditorSettings) -> str:
    from captain_memo.embeddings import make_embedder
    from captain_memo.store import Store

    path = cfg.database_path()
    if not path.exists():
        folder = next(p for p in path.parents if p.exists())
        if not os.access(folder, os.W_OK):
            raise StoreError(f"{path} does not exist and {folder} is not writable")
        return f"{path} does not exist yet; it is created on the first save"
    store = Store(path)  # migrates: a file that is not a database fails here
    try:
        with store.write() as conn:  # BEGIN IMMEDIATE takes the write lock: proof it is writable
            conn.execute("SELECT 1")
        store.check_model(make_embedder(cfg.embed_config(), backoff=False).model_id)  # nothing loads
        return (f"{path} is writable: {store.counts()['memories']} memories, model "
                f"{store.meta('embed_model') or 'none yet'}")
    finally:
        store.close()


def _embedding(cfg: EditorSettings) -> str:
    from captain_memo.embeddings import probe_provider

    return probe_provider(cfg.embed_config())


def _repository(cfg: EditorSettings, context: str | None) -> str:
    ctx = git_context(context or os.getcwd(), share_worktrees=cfg.share_worktrees)
    if not ctx.project:
        return "not inside a git repository: memories saved here are personal notes"
    return f"{ctx.project} on {ctx.branch or 'no branch'}"


def health_main(argv: list[str]) -> int:
    """Entry for ``:checkhealth``: settings JSON and a context path in, one JSON list out."""
    settings = json.loads(argv[0]) if argv and argv[0] else {}
    context = argv[1] if len(argv) > 1 and argv[1] else None
    print(json.dumps(health_report(settings, context)))
    return 0
