"""The operations a front end asks of the library, as plain requests in and JSON-able answers out.

The command line runs them in its own process (cold) or sends the same request to the warm
service (captain_memo/hosting/), which runs them on a ``Memo`` it keeps open; either way the
answer is the same dict, so both paths print the same thing. A request names the caller's folder
(``cwd``): the git context is worked out where the store is open, because asking git (a process,
~2 ms) would cost the thin client a share of the whole warm answer.

Importing this module imports no numpy, SQLite or git: the thin client builds requests with it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from captain_memo.base import fields
from captain_memo.errors import InputError

if TYPE_CHECKING:
    from captain_memo.base.git_context import GitContext

REQUEST_KEY_PREFIX = "request:"  # a remembered request's key, kept as the memory's source key
# An agent saving the same text again this soon (a retry after a timeout, a model repeating itself)
# makes the same save: its first id comes back and nothing new is stored.
REPEAT_WINDOW_S = 600.0
# (folder, fresh) -> the git context there; ``fresh`` asks for the current commit, not a cached one.
ContextLookup = Callable[[str, bool], "GitContext"]


class _Request:
    """JSON in and out for the request records below. They are NamedTuples, immutable like the
    frozen dataclasses elsewhere: the dataclasses module imports inspect (ast, dis, tokenize),
    a fifth of what the thin client imports (`python -X importtime`)."""

    __slots__ = ()
    if TYPE_CHECKING:  # given by the NamedTuple each request record also derives from
        _fields: tuple[Any, ...]
        _field_defaults: dict[str, Any]

        def _asdict(self) -> dict[str, Any]: ...

    FIELDS: dict = {}  # each field's rules (base/fields.py): the same as the CLI's and the MCP tools'
    OP = ""

    def to_json(self) -> dict:
        return self._asdict()

    def checked(self):
        """This request when every field meets its rules, else InputError naming the first that does
        not: nothing malformed reaches the store, whichever front end sent it."""
        fields.checked_fields(self.OP, self.FIELDS, self._asdict())
        return self

    @classmethod
    def from_json(cls, data: dict):
        if not isinstance(data, dict):
            raise InputError(f"{cls.OP}: the request must be a JSON object, not {fields.json_type(data)}")
        unknown = sorted(set(data) - set(cls._fields))
        if unknown:
            raise InputError(f"{cls.OP}: unknown field {fields.short(unknown[0])!r}; it takes {', '.join(cls._fields)}")
        missing = [name for name in cls._fields if name not in data and name not in cls._field_defaults]
        if missing:
            raise InputError(f"{cls.OP}: {', '.join(missing)} is required")
        return cls(**data).checked()


class RecallRequest(
    _Request,
    namedtuple(
        "RecallRequest",
        "query cwd project branch limit profile all_projects how team",
        defaults=(None, None, None, None, False, "search", True),
    ),
):
    """A search from the folder ``cwd``; ``project`` overrides its repository ("none": personal notes);
    ``how`` the hits reach the user, for Tide ("search", or "auto": shown unasked, as an agent's hook
    shows them); ``team``: the team store too, when one is set (an agent's hook leaves it out unless
    the user turned it on, and then need not wait for it)."""

    __slots__ = ()
    FIELDS = fields.RECALL_FIELDS
    OP = "recall"

    def engine_request(self, ctx: GitContext):
        """The engine's record of this recall (records.RecallRequest), asked from ``ctx`` with this
        request's project and branch over it: the one place a front end's recall becomes the
        engine's, so every front end's limit, profile and ``how`` mean the same."""
        from captain_memo import records

        ctx = _with_overrides(ctx, self.project, self.branch)
        return records.RecallRequest(
            self.query,
            project=ctx.project,
            branch=ctx.branch,
            limit=self.limit,
            profile=self.profile,
            all_projects=self.all_projects,
            how=_surfacing(self.how),
        )


def recall_in(ctx: GitContext, data: dict):
    """The engine's record of a recall asked by a front end that knows its git context already
    (the editor's buffer, an agent's folder): ``data`` (RecallRequest's fields, ``cwd`` left out)
    checked as every recall request is (RecallRequest.from_json), or InputError naming the first
    wrong field."""
    return RecallRequest.from_json({"cwd": ctx.root or ".", **data}).engine_request(ctx)


class RememberRequest(
    _Request,
    namedtuple(
        "RememberRequest",
        "text cwd kind title file line_start line_end created_at project branch allow_secrets team request_key",
        defaults=("memory", "", None, None, None, None, None, None, False, False, None),
    ),
):
    """A memory written from ``cwd``; ``file`` as the user wrote it, relative to ``cwd`` or absolute;
    ``allow_secrets``: store text that looks like a credential as it is (else refused, or redacted
    with CAPTAIN_MEMO_REDACT_SECRETS=1); ``team``: into the team store (CAPTAIN_MEMO_TEAM_DB);
    ``request_key``: the client's name for this request (``new_request_key``): run twice, saved once."""

    __slots__ = ()
    FIELDS = fields.REMEMBER_FIELDS
    OP = "remember"


class EmbedRequest(_Request, namedtuple("EmbedRequest", "texts model")):
    """Texts another process (an `index`, an `import`) would embed with ``model`` itself, asked
    of the engine serving the store instead: no second model loaded, and the engine's recalls
    go first (embeddings/reads_first.py)."""

    __slots__ = ()
    FIELDS = fields.EMBED_FIELDS
    OP = "embed"


def git_lookup(folder: str, fresh: bool = True):
    from captain_memo.base.git_context import git_context

    return git_context(folder)


def _context(lookup: ContextLookup, cwd: str, project: str | None, branch: str | None, fresh: bool):
    return _with_overrides(lookup(cwd, fresh), project, branch)


def _with_overrides(ctx: GitContext, project: str | None, branch: str | None) -> GitContext:
    from captain_memo.base.git_context import with_overrides

    return with_overrides(ctx, project, branch)


def _surfacing(how: str):
    from captain_memo.records import Surfacing

    try:
        return Surfacing(how)
    except ValueError:
        raise InputError(f"how must be one of {', '.join(s.value for s in Surfacing)}") from None


def recall(memo, request: RecallRequest, lookup: ContextLookup = git_lookup, followed: bool = False) -> dict:
    """A search from ``request.cwd``: the hits as doc/json.md shows them, and the project searched.
    ``followed``: an engine follows the repositories (hosting/watcher.py), so a change question's
    answer is not checked against the repository's newer commits."""
    from captain_memo.presentation.views import recall_json

    request = request.checked()
    ctx = _context(lookup, request.cwd, request.project, request.branch, fresh=False)
    result = memo.recall(request.engine_request(ctx), team=request.team)
    answer = recall_json(result, time.time())
    stale = "" if followed else memo.stale_notice(ctx.root, ctx.project, ctx.branch, request.query)
    if stale:  # the answer about changes may miss the newest ones: it says so
        answer["notice"] = " ".join(n for n in (answer.get("notice"), stale) if n)
    return {**answer, "project": ctx.project}


def remember(memo, request: RememberRequest, lookup: ContextLookup = git_lookup) -> dict:
    """Store a memory written from ``request.cwd``: its id, how many chunks still wait for a vector,
    and the credentials it was allowed to keep as they are (for a warning)."""
    from captain_memo.base import secrets
    from captain_memo.records import NewMemory, Source

    request = request.checked()
    # Checked where the store is open: compiling the patterns would cost the thin client ~10 ms.
    kept = secrets.check(
        request.text, request.title, allow=request.allow_secrets, how_to_allow="rerun with --allow-secrets"
    )
    # The commit matters here: a cached context may predate the last commit.
    ctx = _context(lookup, request.cwd, request.project, request.branch, fresh=True)
    path = _source_path(ctx, request.cwd, request.file) if request.file else None
    source = Source(
        path=path,
        line_start=request.line_start,
        line_end=request.line_end,
        commit=ctx.commit if request.file else None,
        origin="cli",
    )
    key = f"{REQUEST_KEY_PREFIX}{request.request_key}" if request.request_key and not request.team else None
    memory = NewMemory(
        body=request.text,
        kind=request.kind,
        title=request.title,
        project=ctx.project,
        branch=ctx.branch,
        source=source,
        created_at=request.created_at,
        source_key=key,
    )
    if request.team:
        # The team store embeds what it stores at once or not at all: nothing waits here.
        memory_id: int | str = str(memo.remember_team(memory))
        pending = 0
    else:
        memory_id, pending = remember_once(memo, memory), memo.pending_vectors()
    return {"id": memory_id, "pending_vectors": pending, "kept_secrets": [finding.describe() for finding in kept]}


def embed(memo, request: EmbedRequest) -> dict:
    """The vectors of ``request.texts``: float32 little-endian rows, base64 (exact, and about a
    quarter of their size as JSON numbers). Refused (ModelMismatchError) unless this Memo embeds with the
    model the asking process would use: vectors of two models never mix in a store."""
    import base64

    import numpy as np

    from captain_memo.errors import ModelMismatchError

    request = request.checked()
    model = memo.embedder.model_id
    if model != request.model:
        raise ModelMismatchError(f"embed: this engine embeds with {model}, not with the model asked for")
    vectors = np.ascontiguousarray(memo.embed_long(list(request.texts)), dtype="<f4")
    return {"model": model, "dim": int(vectors.shape[1]), "vectors": base64.b64encode(vectors.tobytes()).decode()}


def new_request_key() -> str:
    import os

    return os.urandom(16).hex()


def remember_once(memo, memory) -> int:
    """Save ``memory`` unless the same request (its key) was saved already: by the service before
    it stopped answering, or by the client that then ran it itself."""
    if memory.source_key is None:
        return memo.remember(memory)
    return save_once(memo, memory)[0]


def agent_remember_once(
    memo, memory, idempotency_key: str | None = None, request_key: str | None = None, now: float | None = None
) -> tuple[int, bool]:
    """Save an agent's ``memory`` in the local store once: the id, and whether it was saved before.
    A save is known by its ``idempotency_key`` when the agent gave one (a retry with it returns
    the first id, however late), else by its content (text, title, kind, file and lines, in its
    project) for REPEAT_WINDOW_S: saved again within it, it is the same save. A call cancelled
    (``request_key``, CANCELLATIONS) before the write stores nothing."""
    from dataclasses import replace

    now = time.time() if now is None else now
    keys = _agent_save_keys(memory, idempotency_key, now)
    since = None if idempotency_key else now - REPEAT_WINDOW_S
    return save_once(memo, replace(memory, source_key=keys[0]), keys[1:], since, CANCELLATIONS.asker(request_key))


def _agent_save_keys(memory, idempotency_key: str | None, now: float) -> tuple[str, ...]:
    """The source keys a save is known by, the one to store it under first. The content's keys
    name this window and the one before, so a repeat just after a window's turn is found too."""
    import hashlib

    if idempotency_key:
        named = hashlib.sha256(f"idempotency-key\0{idempotency_key}".encode("utf-8", "surrogatepass"))
        return (f"{REQUEST_KEY_PREFIX}key:{named.hexdigest()[:32]}",)
    src = memory.source
    parts = (memory.kind, memory.title, memory.body, src.path or "", str(src.line_start), str(src.line_end))
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    window = int(now // REPEAT_WINDOW_S)
    return tuple(f"{REQUEST_KEY_PREFIX}repeat:{w}:{digest}" for w in (window, window - 1))


def save_once(
    memo, memory, earlier: tuple[str, ...] = (), since: float | None = None, cancelled: Callable[[], bool] | None = None
) -> tuple[int, bool]:
    """``memory`` saved under its source key unless a save is found under it or under an ``earlier``
    key (one saved at ``since`` or later): the id, and whether it was found. ``cancelled`` is asked
    just before the write: true, and nothing is stored (RequestCancelledError)."""
    for key in (memory.source_key, *earlier):
        saved = memo.saved_by_key(key, memory.project)
        if saved is not None and (key == memory.source_key or since is None or memo.get(saved).created_at >= since):
            return saved, True
    if cancelled is not None and cancelled():
        from captain_memo.errors import RequestCancelledError

        raise RequestCancelledError("remember: cancelled by the client before it was stored; nothing was saved")
    try:
        return memo.remember(memory), False
    except Exception:
        saved = memo.saved_by_key(memory.source_key, memory.project)  # saved meanwhile by the other
        if saved is None:
            raise
        return saved, True


class Cancellations:
    """Calls their client cancelled (MCP ``notifications/cancelled``), by request key: a save looks
    here just before it writes, on whichever thread it waited its turn. One per process: the MCP
    session that hears the cancellation and the writer that would store the memory share it."""

    KEPT = 256  # cancelled keys remembered; a call cancelled before it started never looks

    def __init__(self) -> None:
        self._cancelled: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def cancel(self, key: str) -> None:
        with self._lock:
            self._cancelled[key] = None
            while len(self._cancelled) > self.KEPT:
                self._cancelled.popitem(last=False)

    def is_cancelled(self, key: str | None) -> bool:
        with self._lock:
            return key is not None and key in self._cancelled

    def asker(self, key: str | None) -> Callable[[], bool] | None:
        """What a save asks before it writes; None for a call no client can cancel."""
        return None if key is None else lambda: self.is_cancelled(key)

    def refuse_if_cancelled(self, key: str | None, what: str) -> None:
        if self.is_cancelled(key):
            from captain_memo.errors import RequestCancelledError

            raise RequestCancelledError(f"{what}: cancelled by the client before it was stored; nothing was saved")

    @contextmanager
    def watching(self, key: str | None) -> Iterator[None]:
        """Around a call's wait for its answer: the wait cancelled (an error that is no Exception,
        as asyncio's CancelledError is not), ``key`` is marked cancelled."""
        try:
            yield
        except BaseException as exc:
            if key is not None and not isinstance(exc, Exception):
                self.cancel(key)
            raise


CANCELLATIONS = Cancellations()


def _source_path(ctx, cwd: str, file: str) -> str:
    """The file relative to the working tree when inside it, else as the user wrote it."""
    import os

    absolute = file if os.path.isabs(file) else os.path.join(cwd, file)
    relative = ctx.relative(absolute)
    return file if relative == absolute else relative
