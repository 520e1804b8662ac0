"""The stores the editor's host reaches, one engine each, and who serves it.

While Neovim runs, its host holds the engine of each store it uses and serves it on the store's
socket (handover.py claims the socket, socket_server.py serves it), so the command line
and every agent's MCP server use the editor's engine instead of loading their own. A second
Neovim on the same store finds the first one's host serving it and sends its requests there
(``Forward``). The host runs an engine of its own, unserved, where serving is off
(``CAPTAIN_MEMO_SERVICE=0``), the runtime folder is unsafe, the plugin's options choose another
model than the store's service would use, or the process holding the socket does not answer.

All of this runs on the host's worker threads, never on Neovim's loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from captain_memo.hosting.editor_settings import EditorSettings

if TYPE_CHECKING:  # both load the engine's modules: imported where a store is first held
    from captain_memo.hosting.socket_server import Service
    from captain_memo.hosting.warm_memo import WarmMemo

log = logging.getLogger("captain_memo")
RETRY_UNSERVED_S = 60.0  # a store that could not be served (holder stopped) is claimed again after this
# Neovim quit: the calls the host's engine took may finish for this long (a long remember embeds
# for a while) before the agents' sessions are ended anyway (their relays replay what is left).
LEAVE_WAIT = 60.0


class Forward(Exception):
    """Another editor's host serves this store: send the request there (to ``path``)."""

    def __init__(self, path: Path):
        super().__init__(str(path))
        self.path = path


@dataclass
class HeldEngine:
    """A store as this host reaches it: held here (``warm``), and served on ``path`` while ``service``
    runs; or served by another editor's host on ``remote``."""

    warm: WarmMemo | None = None
    service: Service | None = None
    thread: threading.Thread | None = None
    remote: Path | None = None
    path: Path | None = None  # the store's socket, when it may be served
    since: float = field(default_factory=time.monotonic)

    def serving(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stale(self, serve: bool) -> bool:
        """Claim again: served elsewhere by nobody now, or unserved here for a while (another
        process may have freed the socket, or a `service stop` ended this host's serving)."""
        if self.remote is not None or self.path is None or not serve:
            return False
        if self.thread is not None:
            return not self.thread.is_alive()
        return time.monotonic() - self.since > RETRY_UNSERVED_S


class Engines:
    """One engine per store key (EditorSettings.engine_key); ``serve``: offer each on its socket.
    ``say``: a notice for the user (said once per store and reason). ``ops``: the requests other
    editors may forward to an engine this host serves."""

    def __init__(
        self,
        open_memo: Callable[[EditorSettings], object],
        serve: bool,
        say: Callable[[str], None],
        status: Callable[[str], None],
        ops: dict | None = None,
    ):
        self.open_memo = open_memo
        self.serve = serve
        self.say = say
        self.status = status
        self.ops = ops or {}
        self._engines: dict[tuple, HeldEngine] = {}
        self._lock = threading.Lock()
        self._said: set[str] = set()
        self._closing = False

    def held(self, settings: EditorSettings):
        """The WarmMemo holding the store of ``settings``; Forward when another editor serves it."""
        key = settings.engine_key
        with self._lock:
            engine = self._engines.get(key)
            if engine is None or engine.stale(self.serve):
                engine = self._engines[key] = self._claim(settings, engine)
        if engine.remote is not None:
            raise Forward(engine.remote)
        return engine.warm

    def served_elsewhere(self, settings: EditorSettings) -> Path | None:
        engine = self._engines.get(settings.engine_key)
        return engine.remote if engine is not None else None

    def forget(self, settings: EditorSettings, why: str) -> None:
        """The editor serving this store went away (or a service took its socket): claim it afresh."""
        log.info("%s: claiming %s again", why, settings.database_path())
        with self._lock:
            engine = self._engines.get(settings.engine_key)
            if engine is not None and engine.remote is not None:
                del self._engines[settings.engine_key]

    def run_here(self, settings: EditorSettings, why: str) -> None:
        """The editor serving this store does not answer: hold an engine here, unserved, for a while."""
        self._say_once(f"the store's engine could not be reached: {why}; running it in this editor")
        with self._lock:
            engine = HeldEngine(warm=self._warm(settings))
            engine.path = self._engines[settings.engine_key].remote  # claimed again after a while
            self._engines[settings.engine_key] = engine

    def close(self) -> None:
        with self._lock:
            self._closing = True
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            _stop(engine)
        for engine in engines:
            if engine.warm is not None:
                engine.warm.close()

    # -- claiming ---------------------------------------------------------------------

    def _claim(self, settings: EditorSettings, before: HeldEngine | None) -> HeldEngine:
        from captain_memo.hosting.handover import claim as claim_socket

        path = self._socket(settings)
        warm = before.warm if before is not None else None
        claim = claim_socket(path) if path is not None else None
        if claim is not None and claim.served_by is not None:
            if warm is not None:
                warm.close()
            log.info(
                "%s is served by the editor host pid %s; sending requests there",
                settings.database_path(),
                claim.served_by,
            )
            return HeldEngine(remote=path)
        if claim is not None and claim.reason is not None:
            self._say_once(f"the store's engine could not be shared: {claim.reason}; running it in this editor")
        try:
            engine = HeldEngine(warm=warm or self._warm(settings), path=path)
            if claim is not None and claim.listener is not None:
                self._serve(engine, settings, claim)
        except BaseException:
            if claim is not None and path is not None and claim.listener is not None:
                from captain_memo.hosting.handover import release

                release(path, claim)  # unserved: no client may wait for a lock nobody serves
            raise
        return engine

    def _socket(self, settings: EditorSettings) -> Path | None:
        """The store's socket when this host may serve it."""
        from captain_memo.base import runtime_folder

        if not self.serve or not runtime_folder.enabled():
            return None
        if any((settings.provider, settings.url, settings.model)) or (
            settings.query_prefix is not None or settings.document_prefix is not None
        ):
            # The socket is named by the environment's settings; this engine answers with others.
            self._say_once("the plugin's model options differ from the environment's: its engine is not shared")
            return None
        try:
            return runtime_folder.socket_path(settings.database_path())
        except runtime_folder.UnsafeRuntimeError as exc:
            self._say_once(f"{exc}; the editor's engine is not shared")
            return None

    def _warm(self, settings: EditorSettings):
        from captain_memo.hosting.warm_memo import WarmMemo

        self.status("opening the database (the model loads on first search)…")
        warm = WarmMemo(settings.database_path(), open_memo=lambda _path: self._open(settings))
        reason = warm.call(lambda memo: memo.read_only_reason)
        if reason is not None:
            self.say(
                f"read-only {settings.database_path()}: lookups work, saves fail, recalls are not recorded ({reason})"
            )
        return warm

    def _open(self, settings: EditorSettings):
        memo = self.open_memo(settings)
        prefer = getattr(memo, "prefer_queries", None)
        if prefer is not None:
            prefer()  # recalls and a long save or index run side by side
        return memo

    def _serve(self, engine: HeldEngine, settings: EditorSettings, claim) -> None:
        from captain_memo.hosting.socket_server import EDITOR, Service

        path = engine.path
        assert path is not None  # claimed on it
        service = Service(
            path,
            settings.database_path(),
            float("inf"),
            memo=engine.warm,
            host=EDITOR,
            lock=claim.lock,
            ops=self.ops,
        )

        def serve() -> None:
            from captain_memo.hosting.socket_file import release_lock

            try:
                service.serve(claim.listener)
            except Exception:
                log.exception("serving %s failed", path)
            finally:
                release_lock(path, claim.lock)
            if service.socket_lost and not self._closing:
                threading.Thread(
                    target=self._claim_again, args=(settings, threading.current_thread()), daemon=True
                ).start()

        engine.service = service
        engine.thread = threading.Thread(target=serve, name="captain-memo-serve", daemon=True)
        engine.thread.start()
        log.info("serving %s on %s", settings.database_path(), engine.path)

    def _claim_again(self, settings: EditorSettings, served: threading.Thread) -> None:
        """The socket was removed under this host (its folder cleaned): claim the store again at
        once, the folder made afresh, rather than leave it to a second engine."""
        served.join()
        try:
            self.held(settings)
        except Forward:
            pass  # another editor claimed it first: this host sends its requests there
        except Exception:
            log.exception("claiming %s again failed", settings.database_path())

    def _say_once(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self.say(text)


def _stop(engine: HeldEngine) -> None:
    """Stop serving at once: the socket goes first, so clients start a service of their own. The
    calls taken are answered (for LEAVE_WAIT at most), then the agents' sessions end, their relays
    carrying them to the next engine, and the socket's lock file goes."""
    service = engine.service
    if service is None or not engine.serving():
        return
    from captain_memo.hosting.socket_server import remove_socket

    service.stop()
    if service.bound is not None:
        remove_socket(service.path, service.bound)
    if engine.thread is not None:
        engine.thread.join(timeout=LEAVE_WAIT)
        if engine.thread.is_alive():
            log.warning("calls still running after %g s; ending the agents' sessions", LEAVE_WAIT)
            service.end_sessions_now()
