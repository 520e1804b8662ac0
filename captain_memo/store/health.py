"""Probes of what the store depends on, shared by `captain-memo doctor` and the editor's health check."""

from __future__ import annotations

from captain_memo.store.db import load_vec, sqlite_module


def sqlite_version() -> str:
    return sqlite_module().sqlite_version


def sqlite_vec_version(conn=None) -> str:
    """sqlite-vec's version; raises RuntimeError naming why it does not load."""
    own = conn is None
    conn = conn or sqlite_module().connect(":memory:")
    try:
        if own:
            failure = load_vec(conn)
            if failure:
                raise RuntimeError(f"sqlite-vec does not load: {failure}; the vector leg is off")
        return conn.execute("SELECT vec_version()").fetchone()[0]
    finally:
        if own:
            conn.close()


def fts5_compiled(conn) -> bool:
    return bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])


def fts5_probe() -> None:
    """Raises RuntimeError when this SQLite build cannot make an FTS5 table."""
    conn = sqlite_module().connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
    except Exception as exc:
        raise RuntimeError(f"FTS5 is missing from this SQLite build ({exc})") from None
    finally:
        conn.close()


def integrity(conn, problems: int = 3) -> str:
    """``PRAGMA integrity_check``: "ok", or its first few problems on one line."""
    rows = [r[0] for r in conn.execute(f"PRAGMA integrity_check({int(problems)})")]
    if rows == ["ok"]:
        return "ok"
    return "; ".join(line for row in rows for line in row.splitlines() if not line.startswith("***"))[:500]
