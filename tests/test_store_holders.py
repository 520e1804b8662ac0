"""Reading the holder of a store's write lock from /proc/locks (store/holders.py)."""

from __future__ import annotations

from captain_memo.store.holders import _covers


def test_a_lock_range_holding_the_write_byte_counts_merged_or_not():
    """The kernel merges a process's adjacent locks: a checkpoint holding the write lock (120) and
    the checkpoint lock (121) shows as 120-121, and was missed."""
    assert _covers("120", "120") and _covers("120", "121") and _covers("0", "EOF")
    assert not _covers("121", "121") and not _covers("123", "127") and not _covers("x", "120")
