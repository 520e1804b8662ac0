"""The SQLite store: memories, chunks, the FTS5 keyword index and the sqlite-vec vectors.

``Store`` is loaded on first use: importing the records must not import numpy
and SQLite, so the command line's thin path (captain_memo/hosting/client.py) stays fast.
"""

from captain_memo.records import KINDS, Chunk, Memory, NewMemory, Source

__all__ = ["KINDS", "Chunk", "Memory", "NewMemory", "Source", "Store"]


def __getattr__(name: str):
    if name == "Store":
        from captain_memo.store.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
