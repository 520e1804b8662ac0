"""Tokens exactly as the local store's FTS5 table makes them, for the team store's keyword leg.

The team store computes FTS5's bm25 itself (keyword.py), so its tokens must be FTS5's: rather than
re-implement unicode61 (case folding, diacritics, Unicode categories) and the Porter stemmer, a
private in-memory FTS5 table with the local store's tokenizer reads each text, and its
``fts5vocab`` instance table lists the tokens in order. Postgres's own parser differs on purpose
(``foo.bar`` is one "host" token there, two tokens in FTS5).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

# The local store's keyword table (store/db.py, migration 1) uses this tokenizer.
TOKENIZER = "porter unicode61"
# A phrase the keyword leg searches: the quoted strings of ``ranking.query.fts_match`` and
# ``topic_match``, joined by OR (any phrase) or AND (every phrase).
PHRASE = re.compile(r'"((?:[^"]|"")*)"')


@dataclass(frozen=True)
class Match:
    """A parsed keyword expression: each phrase as its tokens, and whether all must hold."""

    phrases: tuple[tuple[str, ...], ...]
    every: bool = False


class Tokenizer:
    """FTS5's tokens of texts; one in-memory SQLite table behind a lock (thread-safe)."""

    def __init__(self) -> None:
        from captain_memo.store.db import sqlite_module

        self._conn = sqlite_module().connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE scratch USING fts5(text, tokenize = '{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE scratch_tokens USING fts5vocab(scratch, 'instance')")
        self._lock = threading.Lock()

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens in order (a text's token count is FTS5's column size)."""
        if not texts:
            return []
        out: list[list[str]] = [[] for _ in texts]
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN")
            try:
                conn.executemany("INSERT INTO scratch (rowid, text) VALUES (?, ?)", enumerate(texts, 1))
                for doc, term in conn.execute("SELECT doc, term FROM scratch_tokens ORDER BY doc, offset"):
                    out[doc - 1].append(term)
            finally:
                conn.execute("ROLLBACK")  # the scratch table stays empty
        return out

    def parse(self, match: str) -> Match:
        """``"a" OR "b c"`` (or AND) as the tokens of each phrase; an empty phrase matches nothing."""
        every = '" AND "' in match
        texts = [quoted.replace('""', '"') for quoted in PHRASE.findall(match)]
        return Match(tuple(tuple(tokens) for tokens in self.tokens(texts)), every)

    def close(self) -> None:
        self._conn.close()
