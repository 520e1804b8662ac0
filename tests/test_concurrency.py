"""Several processes writing and searching one database at once lose nothing and never fail.

Two editors and a CLI import are separate processes with separate SQLite connections on one file.
Four writers save 500 memories each (two one at a time as the editor does, two in batches of 25 as
an import does) while two readers recall in a loop; readers write too (a recall records Tide
surfacings), so all six contend for the write lock. The children use tests/fakes.py HashEmbedder:
the model is not under test here, and it keeps the run to a few seconds (reason in
reliability_support.py).
"""

from __future__ import annotations

import re

import pytest
from reliability_support import agreement, assert_consistent, spawn

WRITERS = 4
PER_WRITER = 500
READERS = 2


@pytest.mark.slow
def test_four_writers_and_two_readers_lose_nothing(tmp_path):
    db = tmp_path / "memo.db"
    stop = tmp_path / "stop"
    writers = [spawn("write", str(db), str(w), str(PER_WRITER), "1" if w < 2 else "25") for w in range(WRITERS)]
    readers = [spawn("recall", str(db), str(stop)) for _ in range(READERS)]
    try:
        written = [p.communicate(timeout=300) for p in writers]
    finally:
        stop.touch()
        read = [p.communicate(timeout=120) for p in readers]

    for proc, (_, err) in zip(writers + readers, written + read):
        assert proc.returncode == 0, err
        assert "locked" not in err.lower() and "busy" not in err.lower(), err
        assert "Traceback" not in err, err
    assert [out.strip() for out, _ in written] == [f"saved {PER_WRITER}"] * WRITERS
    answered = [int(re.search(r"answered (\d+)", out).group(1)) for out, _ in read]
    assert all(n > 0 for n in answered), answered  # each reader answered while the writers ran

    report = agreement(db)
    assert_consistent(report)
    total = WRITERS * PER_WRITER
    assert report["memories"] == report["distinct_hashes"] == total
    assert report["chunks"] == report["fts_rows"] == report["vectors"] == total
    assert report["pending"] == 0
