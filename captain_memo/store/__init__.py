"""The SQLite store: memories, chunks, the FTS5 keyword index and the sqlite-vec vectors."""

from captain_memo.records import KINDS, Chunk, Memory, NewMemory, Source
from captain_memo.store.store import Store

__all__ = ["KINDS", "Chunk", "Memory", "NewMemory", "Source", "Store"]
