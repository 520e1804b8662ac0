"""A team store for tests: a second SQLite store, named by a sqlite:/// URL, beside the local one;
and real sockets on 127.0.0.1 for a team server that is down or never answers."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from captain_memo.config import TeamConfig
from captain_memo.memo import Memo


def team_memo(tmp_path: Path, embedder, timeout: float = 5.0, url: str | None = None) -> Memo:
    """A Memo over ``local.db`` with ``team.db`` as its team store (or the ``url`` given)."""
    cfg = TeamConfig(url=url or f"sqlite:///{tmp_path / 'team.db'}", timeout=timeout)
    return Memo(tmp_path / "local.db", embedder, team_config=cfg)


class SilentServer:
    """Accepts connections on 127.0.0.1 and never sends a byte: a database server that hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        for conn in self.accepted:
            conn.close()
        self.sock.close()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port
