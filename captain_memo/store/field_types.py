"""Memories whose fields hold a value of the wrong type, and their repair.

SQLite keeps what it is given: a date sent as text ("2024-05-01") into the REAL column
``created_at`` stays text, and every later recall that ranks that memory fails (``float - str``).
Every path in now checks its fields (base/fields.py, engine.prepare), but a store written before, or by
another program, may hold such rows: ``doctor`` finds them and ``doctor --repair`` mends them,
keeping what can be read (a date in ISO form, a number written as text) and clearing the rest.
"""

from __future__ import annotations

import time

from captain_memo.base.validation import parse_date
from captain_memo.errors import InputError

NUMBER = ("integer", "real")
# column -> (types it may hold, may it be NULL, what a value that cannot be read becomes)
TIMES = ("created_at", "updated_at")
COLUMNS: dict[str, tuple[tuple[str, ...], bool]] = {
    "created_at": (NUMBER, False),
    "updated_at": (NUMBER, False),
    "last_surfaced": (NUMBER, True),
    "stability": (NUMBER, False),
    "line_start": (("integer",), True),
    "line_end": (("integer",), True),
    "superseded_by": (("integer",), True),
    "kind": (("text",), False),
    "title": (("text",), False),
    "body": (("text",), False),
    "project": (("text",), True),
    "branch": (("text",), True),
    "source_path": (("text",), True),
}
DEFAULT_STABILITY = 7.0


def wrong_types(conn, limit: int = 1000) -> list[tuple[int, str, str]]:
    """(memory id, column, the type it holds) for each field of the wrong type."""
    parts = []
    for column, (types, nullable) in COLUMNS.items():
        allowed = ", ".join(f"'{t}'" for t in (*types, *(("null",) if nullable else ())))
        parts.append(f"SELECT id, '{column}', typeof({column}) FROM memories WHERE typeof({column}) NOT IN ({allowed})")
    sql = " UNION ALL ".join(parts) + f" ORDER BY 1 LIMIT {int(limit)}"
    return [(int(i), c, t) for i, c, t in conn.execute(sql)]


def described(found: list[tuple[int, str, str]], shown: int = 5) -> str:
    ids = sorted({memory_id for memory_id, _, _ in found})
    parts = [f"#{memory_id} {column} is {kind}" for memory_id, column, kind in found[:shown]]
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return f"{len(ids)} {'memory has' if len(ids) == 1 else 'memories have'} a field of the wrong type ({', '.join(parts)}{more})"


def repair(conn) -> list[str]:
    """Mend every field of the wrong type in one transaction (the caller's); returns what was done."""
    done = []
    for memory_id, column, _ in wrong_types(conn, limit=1_000_000):
        (value,) = conn.execute(f"SELECT {column} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        new = _mended(conn, memory_id, column, value)
        conn.execute(f"UPDATE memories SET {column} = ? WHERE id = ?", (new, memory_id))
        done.append(f"#{memory_id} {column}: {_shown(value)} -> {_shown(new)}")
    return done


def _mended(conn, memory_id: int, column: str, value):
    types, nullable = COLUMNS[column]
    if types == ("text",):
        return _as_text(value, nullable)
    number = _as_number(value, column)
    if number is not None and types == ("integer",):
        number = int(number) if float(number).is_integer() and number >= 1 else None
    if number is not None or nullable:
        return number
    if column in TIMES:
        other = "updated_at" if column == "created_at" else "created_at"
        (fallback,) = conn.execute(f"SELECT {other} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return fallback if isinstance(fallback, (int, float)) else time.time()
    return DEFAULT_STABILITY


def _as_number(value, column: str) -> float | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
        if column in TIMES or column == "last_surfaced":
            try:
                return parse_date(value)
            except InputError:
                return None
    return None


def _as_text(value, nullable: bool):
    if value is None:
        return None if nullable else ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"
