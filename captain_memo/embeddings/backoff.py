"""An embedding endpoint that is down costs one attempt, not one per lookup.

Asking a stopped server costs its connection retries every time (~0.9 s for Ollama down), and a
stalled one the whole timeout. After a failed call the endpoint is left alone for a back-off
period, 2 s at first (``CAPTAIN_MEMO_EMBED_BACKOFF``; 0 turns it off), doubling with each further
failure up to 5 minutes. Calls meanwhile fail at once with the last error and when the next
attempt is due, so recall answers from the keyword leg (named, as for any failure) and saves are
stored without vectors for backfill. When the period ends, a background thread asks the endpoint
again; the first success clears the outage for everyone.

The outage is written to a file in the user's private runtime folder (captain_memo/base/runtime_folder.py), so
one-shot commands, the warm service and the editor host share it: a CLI run after the editor
found the server down does not pay for finding it again. Its times are the monotonic clock's, which
every process of one boot shares and nobody steps: kept in wall-clock time, one failure and a
clock stepped back an hour refused a healthy endpoint for that hour ("down for -3597 s"). The boot
they were read in is kept with them; a file from another boot is no outage.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from captain_memo.config import EMBED_BACKOFF_FIRST as FIRST
from captain_memo.config import embed_backoff as first_backoff
from captain_memo.embeddings.base import query_vectors
from captain_memo.errors import EmbeddingError

log = logging.getLogger("captain_memo")
LONGEST = 300.0
PROBE_TEXT = "captain memo health check"


@dataclass(frozen=True)
class Outage:
    since: float  # when the endpoint first failed (time.monotonic() of the boot below)
    until: float  # not asked again before this
    delay: float  # the back-off that set ``until``
    error: str  # the last failure
    boot: str = ""  # the boot the times belong to (another boot's monotonic clock started again)


def boot_id() -> str:
    """This boot's id (Linux); '' where there is none, and then every outage counts as this boot's."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


class OutageFile:
    """The outage of one endpoint and model, shared by every process of this user."""

    def __init__(self, path: Path | None):
        self.path = path
        self._memory: Outage | None = None  # when there is no private folder to write to

    def read(self) -> Outage | None:
        if self.path is None:
            return self._memory
        try:
            outage = Outage(**json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):  # half-written or foreign: treat as no outage
            return None
        # Another boot's (or an older release's wall-clock) times say nothing about now.
        return outage if outage.boot == boot_id() else None

    def write(self, outage: Outage | None) -> None:
        self._memory = outage
        if self.path is None:
            return
        try:
            if outage is None:
                self.path.unlink(missing_ok=True)
                return
            fresh = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}")
            fd = os.open(fresh, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(asdict(outage), out)
            os.replace(fresh, self.path)
        except OSError as exc:
            log.info("could not record the embedding outage in %s: %s", self.path, exc)


def outage_of(embedder) -> OutageFile:
    """Where the outage of ``embedder``'s endpoint and model is kept."""
    import hashlib

    from captain_memo.base import runtime_folder

    key = f"{embedder.model_id} {getattr(embedder, 'url', '')}"
    try:
        folder = runtime_folder.private_dir()
    except runtime_folder.UnsafeRuntimeError as exc:
        log.info("embedding back-off kept in memory only: %s", exc)
        return OutageFile(None)
    return OutageFile(folder / f"embed-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}.json")


class BackoffEmbedder:
    """Wraps an HTTP embedder; everything but ``embed`` is the inner embedder's."""

    def __init__(self, inner, state: OutageFile, first: float = FIRST, longest: float = LONGEST, clock=time.monotonic):
        self.inner = inner
        self.state = state
        self.first = first
        self.longest = max(longest, first)
        self.clock = clock
        self._retry: threading.Timer | None = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"BackoffEmbedder({self.inner!r})"

    def embed(self, texts):
        return self._asked(self.inner.embed, texts)

    def embed_queries(self, texts):
        return self._asked(lambda batch: query_vectors(self.inner, batch), texts)

    def _asked(self, embed, texts):
        outage = self.state.read()
        now = self.clock()
        if outage is not None and now < outage.until:
            self._retry_later(outage.until - now)
            raise EmbeddingError(
                f"{outage.error} [not asked again until the back-off ends in "
                f"{outage.until - now:.0f} s; down for {now - outage.since:.0f} s]"
            )
        try:
            vectors = embed(texts)
        except EmbeddingError as exc:
            self.failed(str(exc), outage)
            raise
        if outage is not None:
            self.recovered()
        return vectors

    def failed(self, error: str, before: Outage | None, retry: bool = True) -> Outage:
        now = self.clock()
        delay = self.first if before is None else min(self.longest, before.delay * 2)
        since = before.since if before else now
        outage = Outage(since=since, until=now + delay, delay=delay, error=error, boot=boot_id())
        self.state.write(outage)
        log.info("embedding endpoint failed; not asking it for %g s: %s", delay, error)
        if retry:
            self._retry_later(delay)
        return outage

    def recovered(self) -> None:
        if self.state.read() is not None:
            log.info("embedding endpoint answers again")
        self.state.write(None)

    def close(self) -> None:
        with self._lock:
            if self._retry is not None:
                self._retry.cancel()
                self._retry = None
        if hasattr(self.inner, "close"):
            self.inner.close()

    # -- asking again in the background ---------------------------------------------------

    def _retry_later(self, delay: float) -> None:
        with self._lock:
            if self._retry is not None and self._retry.is_alive():
                return
            self._retry = threading.Timer(max(0.0, delay), self._probe)
            self._retry.daemon = True  # a one-shot command exits without waiting for it
            self._retry.name = "captain-memo-embed-retry"
            self._retry.start()

    def _probe(self) -> None:
        with self._lock:
            self._retry = None
        outage = self.state.read()
        if outage is None:
            return
        if self.clock() < outage.until:  # another process failed again meanwhile
            self._retry_later(outage.until - self.clock())
            return
        try:
            self.inner.embed([PROBE_TEXT])
        except EmbeddingError as exc:
            self.failed(str(exc), outage)
        except Exception:  # a bug must not kill the retries silently
            log.exception("embedding back-off: the background retry failed")
        else:
            self.recovered()


def record_probe(embedder, error: str | None) -> None:
    """A health check's real request counts like any call: a success ends the outage, a failure
    starts or extends it (so the checks after it do not pay for finding the endpoint down again)."""
    first = first_backoff()
    if first <= 0:
        return
    wrapper = BackoffEmbedder(embedder, outage_of(embedder), first=first)
    if error is None:
        wrapper.recovered()
    else:
        wrapper.failed(error, wrapper.state.read(), retry=False)  # a check asks once, it does not watch


def with_backoff(embedder, env=None):
    """``embedder`` behind a back-off shared through the runtime folder, unless turned off."""
    first = first_backoff(env)
    if first <= 0:
        return embedder
    return BackoffEmbedder(embedder, outage_of(embedder), first=first)
