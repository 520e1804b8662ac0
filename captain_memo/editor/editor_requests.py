"""What the Neovim plugin asks of Captain Memo, answered off the editor's main loop.

Requests arrive from the remote plugin (``rplugin/python3/captain_memo_nvim.py``) as plain dicts::

    {"id": 7, "op": "recall", "channel": "results", "settings": {...}, "args": {...}}

and every answer goes back through the ``deliver`` callable as a plain dict: ``{"id", "op", "ok",
"result"}`` or ``{"id", "op", "ok": False, "error"}`` (one readable line; an unexpected failure's
traceback goes to the log). Requests run on the host's own threads, so the editor never waits for
an embedding, a search or a write, and as the store's engine runs them (hosting/warm_memo.py): lookups (recall,
changes, hint, check) on a small pool of readers, everything that writes (save, index, open, forget,
supersede) on one writer thread, in the order sent. A lookup therefore answers while a long save or
an index-on-write is still embedding. Each store's engine (hosting/editor_engines.py) runs them on its own
threads, beside the requests of the command line and agents it serves on the store's socket.

Order where it matters: writes never overtake each other; a lookup answers from what is stored when
it runs. A save is answered only once stored, and the plugin asks nothing about a saved memory
before that answer: opening, forgetting or superseding it needs the id the answer carries, and the
plugin drops its cached hint counts when a save, a forget or an index-on-write is answered, so the
next hint asks again. A request that a newer one on the same channel replaced before it started is
skipped: the editor would throw its answer away anyway. When another editor's host serves the
store, the whole request is sent there and its answer delivered here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from captain_memo.base import fields, secrets
from captain_memo.base.git_context import GitContext
from captain_memo.base.git_context_cache import ContextCache
from captain_memo.errors import CaptainMemoError, InputError, StoreError, UnknownRequestError
from captain_memo.hosting.editor_engines import Engines, Forward
from captain_memo.hosting.editor_settings import SECRET_POLICIES, EditorSettings, _choice
from captain_memo.memo import Memo
from captain_memo.presentation.views import locate_hits, opened_json
from captain_memo.presentation.words import message_line as one_line
from captain_memo.records import (
    LOCAL,
    TEAM,
    MemoryRef,
    NewMemory,
    Source,
)
from captain_memo.requests.operations import REQUEST_KEY_PREFIX, new_request_key, recall_in, remember_once

log = logging.getLogger("captain_memo")
# Hints ask for more than a page of results: they count every memory naming the token.
HINT_LIMIT = 50
LOOKUPS = {"recall", "changes", "hint", "check"}  # read only: beside the writes; nothing to keep when Neovim is gone
# Where a save says its text comes from, by the rules a command's remember meets (line_end not
# before line_start, nor without it; a path or a filetype no longer than any stored field).
SAVE_SOURCE = {
    "path": fields.REMEMBER_FIELDS["file"],
    "line_start": fields.REMEMBER_FIELDS["line_start"],
    "line_end": fields.REMEMBER_FIELDS["line_end"],
    "filetype": fields.text(fields.MAX_FIELD_CHARS, nullable=True),
}


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


def _ref(args: dict, name: str) -> MemoryRef:
    """A memory id from the plugin: a number (local) or "t12" (a team memory)."""
    value = args.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"{name} must be a memory id (12, or t12 for a team memory), not {value!r}")
    return Memo.ref(value)


def _keyed(request: dict) -> dict:
    """A save with its request key, chosen where the editor asked for it: sent to another editor's
    host, run here when that host stopped answering, and run there too when it resumes, it is
    stored once (app.remember_once), as the command line's and agents' saves are."""
    args = request.get("args")
    if request.get("op") != "save" or not isinstance(args, dict) or "request_key" in args:
        return request
    return {**request, "args": {**args, "request_key": new_request_key()}}


def _request_key(args: dict) -> str | None:
    """The save's request key (32 hex digits), or None: the rule a command's remember meets."""
    return fields.checked_value("request_key", fields.REMEMBER_FIELDS["request_key"], args.get("request_key"))


def _ref_json(ref: MemoryRef) -> int | str:
    """As recall hits name it: a number for a local memory, "t12" for a team one."""
    return str(ref) if ref.team else ref.id


class EditorService:
    """Runs the plugin's requests on the host's threads and hands each answer to ``deliver``."""

    def __init__(
        self,
        deliver: Callable[[dict], None],
        memo_factory: Callable[[EditorSettings], Memo] = open_memo,
        *,
        serve: bool,
    ):
        """``serve``: offer each store's engine on its socket to the command line and agents (the
        editor's host does; a test holding an engine of its own says whether it wants that)."""
        from captain_memo.hosting.warm_memo import READERS

        self.deliver = deliver
        self.contexts = ContextCache()
        self._contexts_lock = threading.Lock()
        self.engines = Engines(
            memo_factory,
            serve=serve,
            say=lambda text: self.deliver({"event": "notice", "level": "warn", "text": text}),
            status=lambda text: self.deliver({"event": "status", "text": text}),
            ops={"editor": self._forwarded},
        )
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()
        # As the engine runs them: lookups beside each other, writes one at a time in the order sent.
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="captain-memo-editor-read")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-editor-write")
        self._log_files: set[str] = set()
        self._log_lock = threading.Lock()
        self._leaving = False
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
        worker = self._readers if request.get("op") in LOOKUPS else self._writer
        worker.submit(self._run, request)

    def _superseded(self, request: dict) -> bool:
        channel = request.get("channel")
        with self._lock:
            return bool(channel) and self._latest.get(str(channel)) != request.get("id", 0)

    def _run(self, request: dict) -> None:
        if self._superseded(request) or (self._leaving and request.get("op") in LOOKUPS):
            return
        reply = self.handle(request)
        if self._superseded(request):
            return
        try:
            self.deliver(reply)
        except Exception:  # the editor went away; nobody is left to tell
            log.exception("could not deliver the answer to request %s", request.get("id"))

    def handle(self, request: dict, forwarded: bool = False, tries: int = 2) -> dict:
        """Answer one request now, on the calling thread (``forwarded``: sent by another editor,
        so answered here; ``tries``: how often it may still be sent to another editor)."""
        base = {"id": request.get("id"), "op": request.get("op")}
        settings = None
        try:
            settings = EditorSettings.from_dict(request.get("settings"))
            if not forwarded:
                self._attach_log(settings.log_file)
            op = self.ops.get(str(request.get("op")))
            if op is None:
                raise InputError(f"unknown request {request.get('op')!r}")
            if not forwarded:
                request = _keyed(request)
            elsewhere = None if forwarded else self.engines.served_elsewhere(settings)
            if elsewhere is None:
                try:
                    return {**base, "ok": True, "result": op(settings, request.get("args") or {})}
                except Forward as forward:
                    if forwarded or tries <= 0:
                        raise CaptainMemoError("the store is served by another editor; try again") from None
                    elsewhere = forward.path
            return self._forward(elsewhere, request, settings, tries)
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

    def _forward(self, path, request: dict, settings: EditorSettings, tries: int) -> dict:
        """The answer of the editor serving the store; when it went away, the store is claimed
        again and the request runs here (or there, once more, if yet another editor serves it)."""
        from captain_memo.hosting.client import NotServed, ask, deadline

        args = request.get("args") or {}
        wait = deadline("remember", {"text": args.get("text")}, os.environ)
        try:
            return ask(path, "editor", request, wait)
        except NotServed as exc:
            if exc.gone:
                self.engines.forget(settings, str(exc))
            else:
                self.engines.run_here(settings, str(exc))
        except UnknownRequestError:  # a service from the shell took the socket since: take it over
            self.engines.forget(settings, "a service took the store's socket")
        return self.handle(request, tries=tries - 1)

    def _forwarded(self, request, expires: float | None) -> dict:
        """A request another editor's host sent to the engine this host serves."""
        if not isinstance(request, dict):
            raise InputError("an editor request must be a JSON object")
        return self.handle(request, forwarded=True)

    def _database_failure(self, exc: Exception, settings: EditorSettings | None) -> StoreError | None:
        """A SQLite error met mid-request (a damaged page, a lock held too long) as a message naming
        the file and what to do; None for anything else (the engine drops a damaged file's
        connections itself, so the next request opens the file afresh)."""
        if settings is None:
            return None
        from captain_memo.memo import readable_error

        return readable_error(exc, settings.database_path())

    def close(self) -> None:
        """Neovim quit (or asked the host to shut down): the saves it sent are still made, its
        lookups skipped (nobody would see them); each store stops being served (engines.py)."""
        self._leaving = True
        self._readers.shutdown(wait=True)
        self._writer.shutdown(wait=True)
        self.engines.close()

    # -- shared parts -------------------------------------------------------------------

    def read(self, settings: EditorSettings, work: Callable[[Memo], object]):
        """``work(memo)`` on the store's engine, beside other reads."""
        return self.engines.held(settings).call(work)

    def write(self, settings: EditorSettings, work: Callable[[Memo], object]):
        """``work(memo)`` on the store's engine, one write at a time; the file alone is complete after."""
        return self.engines.held(settings).call(work, write=True)

    def context(self, settings: EditorSettings, args: dict, fresh: bool = False) -> GitContext:
        """Git context of the buffer's file (``args['context']``), not of the editor's folder."""
        with self._contexts_lock:  # other editors' requests come in on the serving threads
            return self.contexts.get(args.get("context") or None, settings.share_worktrees, fresh)

    def _attach_log(self, path: str | None) -> None:
        """Send library log lines to the plugin's log file rather than to the host's stderr."""
        if not path:
            return
        with self._log_lock:  # a lookup and a save may bring the same log file at once
            if path in self._log_files:
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
        from captain_memo.presentation.window import shown_recall

        ctx = self.context(settings, args)
        # Checked as every front end's recall is (operations.RecallRequest): the same bounds and words.
        asked = {
            "query": args.get("query", ""),
            "limit": args.get("limit") or settings.limit,
            "profile": args.get("profile") or settings.profile,
            "how": args.get("how") or "search",
        }
        request = recall_in(ctx, asked)
        result = self.read(settings, lambda memo: memo.recall(request))
        now = time.time()
        data = shown_recall(locate_hits(recall_json(result, now), ctx), now)  # the plugin lays it out
        data["context"] = _context_json(ctx)
        return data

    def changes(self, settings: EditorSettings, args: dict) -> dict:
        """ "What changed in this file lately": the buffer's file (``args['context']``) asked about by
        its path inside the repository, answered as any change question (newest touching first)."""
        from captain_memo.base.touches import file_question

        file, ctx = args.get("context") or "", self.context(settings, args)
        if not file or ctx.root is None:
            raise InputError(f"{file or 'this buffer'} is not a file inside a git repository: no changes to list")
        inside = Path(file).resolve().relative_to(Path(ctx.root).resolve()).as_posix()
        return self.recall(settings, {**args, "query": file_question(inside)})

    def hint(self, settings: EditorSettings, args: dict) -> dict:
        """How many memories name ``token`` exactly: keyword leg only, recorded nowhere (cheap)."""
        token = args.get("token") or ""
        if not Memo.nameable(token):  # before any database is opened: most words under a cursor are not
            return {"token": token, "count": 0, "ids": []}
        ctx = self.context(settings, args)
        ids = self.read(settings, lambda memo: memo.naming(token, ctx.project, ctx.branch, HINT_LIMIT))
        return {"token": token, "count": len(ids), "ids": ids}

    def check(self, settings: EditorSettings, args: dict) -> dict:
        """Credentials in a selection about to be saved, found before the dialog shows any of it: the
        title prompt is prefilled from ``redacted``, so a token never appears in it. No database is
        opened. With redaction on everywhere (CAPTAIN_MEMO_REDACT_SECRETS) there is nothing to ask."""
        from captain_memo.base.validation import without_private
        from captain_memo.config import team_config

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
        fields.checked_fields("save", SAVE_SOURCE, {name: args.get(name) for name in SAVE_SOURCE})
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
        start, end = args.get("line_start"), args.get("line_end")
        source = Source(
            path=ctx.relative(path) if path else None,
            line_start=start,
            line_end=end,
            commit=ctx.commit,
            origin="editor",
            filetype=args.get("filetype") or None,
        )
        where = _choice(args, "store", (LOCAL, TEAM)) or LOCAL
        key = _request_key(args)
        memory = NewMemory(
            body=text,
            kind=args.get("kind") or "memory",
            title=title,
            project=ctx.project,
            branch=ctx.branch,
            source=source,
            source_key=f"{REQUEST_KEY_PREFIX}{key}" if key is not None and where == LOCAL else None,
        )
        memory_id = self.write(
            settings,
            lambda memo: remember_once(memo, memory) if where == LOCAL else _ref_json(memo.remember_team(memory)),
        )
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
        from captain_memo.memo import nothing_indexed, written_file_needs_store

        path = args.get("path")
        if not isinstance(path, str) or not path:
            raise InputError("path must name the file that was written")
        ctx = self.context(settings, {"context": path})
        store = settings.database_path()
        if not written_file_needs_store(path, ctx.project, ctx.branch, store):
            return {"path": path, **nothing_indexed().to_json()}
        report = self.write(settings, lambda memo: memo.index_written(path, ctx.project, ctx.branch))
        return {"path": path, **report.to_json()}

    def open(self, settings: EditorSettings, args: dict) -> dict:
        """A memory in full; this counts as the strongest surfacing for Tide."""
        ref = _ref(args, "id")
        memory = self.write(settings, lambda memo: memo.show(ref))  # Tide's record of it is a write
        from captain_memo.presentation.window import shown_memory

        return shown_memory(opened_json(memory, self.context(settings, args)))

    def forget(self, settings: EditorSettings, args: dict) -> dict:
        memory_id = _ref(args, "id")
        self.write(settings, lambda memo: memo.forget(memory_id))
        return {"id": _ref_json(memory_id)}

    def supersede(self, settings: EditorSettings, args: dict) -> dict:
        old, new = _ref(args, "old"), _ref(args, "new")
        self.write(settings, lambda memo: memo.supersede(old, new))
        return {"old": _ref_json(old), "new": _ref_json(new)}
