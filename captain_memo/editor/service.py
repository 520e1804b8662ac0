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

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from captain_memo import secrets
from captain_memo.contexts import ContextCache
from captain_memo.editor.settings import SECRET_POLICIES, EditorSettings, _choice
from captain_memo.errors import CaptainMemoError, DatabaseDamagedError, InputError, StoreError
from captain_memo.gitctx import GitContext
from captain_memo.memo import Memo
from captain_memo.presentation.views import locate_hits, opened_json
from captain_memo.presentation.words import message_line as one_line
from captain_memo.records import (
    LOCAL,
    TEAM,
    MemoryRef,
    NewMemory,
    RecallRequest,
    Source,
    Surfacing,
)

log = logging.getLogger("captain_memo")
# Requests that write: the WAL is written into the file after each (a copy or move of an idle
# store takes everything).
WRITES = {"save", "forget", "supersede", "index"}
# Hints ask for more than a page of results: they count every memory naming the token.
HINT_LIMIT = 50


def open_memo(settings: EditorSettings) -> Memo:
    # The host lives as long as the editor: the in-memory vector index pays off (built in the
    # background; sqlite-vec answers until it is ready).
    return Memo.open(settings.database_path(), warm=True, embed_config=settings.embed_config())


def _context_json(ctx: GitContext) -> dict:
    return {"project": ctx.project, "branch": ctx.branch, "commit": ctx.commit, "root": ctx.root}


def _finding_json(finding) -> dict:
    return {
        "field": finding.field,
        "line": finding.line,
        "kind": finding.kind,
        "preview": finding.preview,
        "text": finding.describe(),
    }


def _surfacing(value) -> Surfacing:
    """The request's ``how`` (default: a search the user asked for)."""
    try:
        return Surfacing(value or Surfacing.SEARCH)
    except ValueError:
        raise InputError(f"how must be one of {', '.join(s.value for s in Surfacing)}, not {value!r}") from None


def _int(args: dict, name: str, required: bool = True) -> int | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{name} must be a whole number, not {value!r}")
    return value


def _ref(args: dict, name: str) -> MemoryRef:
    """A memory id from the plugin: a number (local) or "t12" (a team memory)."""
    value = args.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"{name} must be a memory id (12, or t12 for a team memory), not {value!r}")
    return Memo.ref(value)


def _ref_json(ref: MemoryRef) -> int | str:
    """As recall hits name it: a number for a local memory, "t12" for a team one."""
    return str(ref) if ref.team else ref.id


class EditorService:
    """Runs the plugin's requests on a worker thread and hands each answer to ``deliver``."""

    def __init__(self, deliver: Callable[[dict], None], memo_factory: Callable[[EditorSettings], Memo] = open_memo):
        self.deliver = deliver
        self.memo_factory = memo_factory
        self.contexts = ContextCache()
        self._memos: dict[tuple, Memo] = {}
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-editor")
        self._log_files: set[str] = set()
        self.ops = {
            "recall": self.recall,
            "changes": self.changes,
            "hint": self.hint,
            "check": self.check,
            "save": self.save,
            "open": self.open,
            "forget": self.forget,
            "supersede": self.supersede,
            "index": self.index,
        }

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
            return bool(channel) and self._latest.get(str(channel)) != request.get("id", 0)

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
            op = self.ops.get(str(request.get("op")))
            if op is None:
                raise InputError(f"unknown request {request.get('op')!r}")
            result = op(settings, request.get("args") or {})
            if base["op"] in WRITES and settings.engine_key in self._memos:
                self._memos[settings.engine_key].checkpoint()  # the file alone is complete again
            return {**base, "ok": True, "result": result}
        except CaptainMemoError as exc:
            log.info("%s failed: %s", base["op"], exc)
            if isinstance(exc, DatabaseDamagedError) and settings is not None:
                self._drop(settings)
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
        from captain_memo.memo import readable_error

        error = readable_error(exc, settings.database_path())
        if isinstance(error, DatabaseDamagedError):
            self._drop(settings)
        return error

    def _drop(self, settings: EditorSettings) -> None:
        memo = self._memos.pop(settings.engine_key, None)
        if memo is not None:
            memo.close()

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)
        for memo in self._memos.values():
            memo.close()
        self._memos.clear()

    # -- shared parts -------------------------------------------------------------------

    def memo(self, settings: EditorSettings):
        key = settings.engine_key
        if key in self._memos and self._memos[key].file_moved():
            # Moved away, deleted or replaced (a backup put back): closing writes the last writes
            # into the file that left, and the file now at the path is opened (store/held_file.py).
            log.info("%s is no longer the file this editor opened; opening it afresh", settings.database_path())
            self._drop(settings)
        if key not in self._memos:
            self.deliver({"event": "status", "text": "opening the database (the model loads on first search)…"})
            memo = self.memo_factory(settings)
            reason = memo.read_only_reason  # opens the store
            self._memos[key] = memo
            if reason is not None:
                # Said once per database: every later recall would otherwise repeat it.
                self.deliver(
                    {
                        "event": "notice",
                        "level": "warn",
                        "text": (
                            f"read-only {memo.path}: lookups work, saves fail, recalls are not recorded ({reason})"
                        ),
                    }
                )
        return self._memos[key]

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
        from captain_memo.presentation.views import recall_json

        ctx = self.context(settings, args)
        result = self.memo(settings).recall(
            RecallRequest(
                args.get("query", ""),
                project=ctx.project,
                branch=ctx.branch,
                limit=_int(args, "limit", required=False) or settings.limit,
                profile=args.get("profile") or settings.profile,
                how=_surfacing(args.get("how")),
            )
        )
        data = locate_hits(recall_json(result, time.time()), ctx)
        data["context"] = _context_json(ctx)
        return data

    def changes(self, settings: EditorSettings, args: dict) -> dict:
        """ "What changed in this file lately": the buffer's file (``args['context']``) asked about by
        its path inside the repository, answered as any change question (newest touching first)."""
        from captain_memo.touches import file_question

        file, ctx = args.get("context") or "", self.context(settings, args)
        if not file or ctx.root is None:
            raise InputError(f"{file or 'this buffer'} is not a file inside a git repository: no changes to list")
        inside = Path(file).resolve().relative_to(Path(ctx.root).resolve()).as_posix()
        return self.recall(settings, {**args, "query": file_question(inside)})

    def hint(self, settings: EditorSettings, args: dict) -> dict:
        """How many memories name ``token`` exactly: keyword leg only, recorded nowhere (cheap)."""
        from captain_memo.memo import is_identifier

        token = args.get("token") or ""
        if not is_identifier(token):  # before any database is opened: most words under a cursor are not
            return {"token": token, "count": 0, "ids": []}
        ctx = self.context(settings, args)
        ids = self.memo(settings).naming(token, ctx.project, ctx.branch, HINT_LIMIT)
        return {"token": token, "count": len(ids), "ids": ids}

    def check(self, settings: EditorSettings, args: dict) -> dict:
        """Credentials in a selection about to be saved, found before the dialog shows any of it: the
        title prompt is prefilled from ``redacted``, so a token never appears in it. No database is
        opened. With redaction on everywhere (CAPTAIN_MEMO_REDACT_SECRETS) there is nothing to ask."""
        from captain_memo.config import team_config
        from captain_memo.validation import without_private

        text = args.get("text")
        if not isinstance(text, str):
            raise InputError(f"text must be text, not {type(text).__name__}")
        visible = without_private(text)
        findings = [] if secrets.redaction_on() else secrets.scan(visible)
        return {
            "findings": [_finding_json(f) for f in findings],
            "redacted": secrets.redact(visible),
            "team": team_config().url is not None,  # the dialog then asks where to save
        }

    def save(self, settings: EditorSettings, args: dict) -> dict:
        """Store a selection or a note; text that looks like it holds credentials is handled by the
        ``secrets`` policy: the request's (the user's answer) or the settings'."""
        text, title = args.get("text", ""), args.get("title") or ""
        policy = _choice(args, "secrets", SECRET_POLICIES) or settings.secrets
        try:
            kept = secrets.check(text, title, allow=policy != "ask", how_to_allow='choose "save anyway"')
        except secrets.SecretsFoundError as exc:
            # Nothing is stored: the plugin shows the findings and sends the save again with the
            # user's choice (allow or redact).
            log.info("save held for the user's choice: %s", exc)
            return {"saved": False, "findings": [_finding_json(f) for f in exc.findings]}
        redacted: list[secrets.Finding] = []
        if kept and policy == "redact":
            text, title, redacted = secrets.redacted_memory(text, title)
            kept = []
        # A fresh context: the commit matters here and may have moved since the last lookup.
        ctx = self.context(settings, args, fresh=True)
        path = args.get("path") or None
        start, end = _int(args, "line_start", required=False), _int(args, "line_end", required=False)
        source = Source(
            path=ctx.relative(path) if path else None,
            line_start=start,
            line_end=end,
            commit=ctx.commit,
            origin="editor",
            filetype=args.get("filetype") or None,
        )
        memory = NewMemory(
            body=text,
            kind=args.get("kind") or "memory",
            title=title,
            project=ctx.project,
            branch=ctx.branch,
            source=source,
        )
        memo = self.memo(settings)
        where = _choice(args, "store", (LOCAL, TEAM)) or LOCAL
        memory_id = memo.remember(memory) if where == LOCAL else _ref_json(memo.remember_team(memory))
        return {
            "saved": True,
            "id": memory_id,
            "store": where,
            "title": memory.title,
            "kind": memory.kind,
            "path": source.path,
            "line_start": start,
            "line_end": end,
            "kept": [f.describe() for f in kept],
            "redacted": [f.describe() for f in redacted],
            **_context_json(ctx),
        }

    def index(self, settings: EditorSettings, args: dict) -> dict:
        """Re-index a file just written; nothing happens (no database opened) outside the note and
        skill folders."""
        from captain_memo.memo import index_written_file

        path = args.get("path")
        if not isinstance(path, str) or not path:
            raise InputError("path must name the file that was written")
        ctx = self.contexts.get(path, settings.share_worktrees)
        report = index_written_file(
            lambda: self.memo(settings), path, ctx.project, ctx.branch, store=settings.database_path()
        )
        return {"path": path, **report.to_json()}

    def open(self, settings: EditorSettings, args: dict) -> dict:
        """A memory in full; this counts as the strongest surfacing for Tide."""
        memory = self.memo(settings).show(_ref(args, "id"))
        return opened_json(memory, self.context(settings, args))

    def forget(self, settings: EditorSettings, args: dict) -> dict:
        memory_id = _ref(args, "id")
        self.memo(settings).forget(memory_id)
        return {"id": _ref_json(memory_id)}

    def supersede(self, settings: EditorSettings, args: dict) -> dict:
        old, new = _ref(args, "old"), _ref(args, "new")
        self.memo(settings).supersede(old, new)
        return {"old": _ref_json(old), "new": _ref_json(new)}
