"""Helpers for the recall tests: memories and candidates built by hand for the pure ranking
stages, vectors with a chosen similarity, the trace check, and the sample corpus in a store."""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path

import numpy as np

from captain_memo.ranking.candidates import Candidate
from captain_memo.records import Memory, Source

DAY = 86400.0
SAMPLE = Path(__file__).resolve().parent.parent / "captain_memo" / "data" / "sample_notes.jsonl"
NOW = 1_795_000_000.0  # a fixed "now" for the pure stages (late 2026)
FILLER = "Paragraph {n}: an interface was removed here, with the story of why, told at some length to fill a chunk."


def long_markdown() -> str:
    """One section long enough to be stored in several parts, the one about TempPathFactory mid-way."""
    parts = ["# Guide", "", "## Deprecations and removals", ""]
    parts += [FILLER.format(n=n) + "\n" for n in range(1, 15)]
    parts += ["### tmp_path_factory", "", "Return a TempPathFactory instance for the test session.", ""]
    parts += [FILLER.format(n=n) + "\n" for n in range(15, 30)]
    return "\n".join(parts)


def memory(
    mid: int = 1,
    kind: str = "memory",
    age_days: float | None = 10.0,
    branch: str | None = None,
    superseded_by: int | None = None,
    stability: float = 7.0,
    surfaced_days_ago: float | None = None,
    opened: bool = False,
    now: float = NOW,
    body: str = "",
) -> Memory:
    """A stored memory as the ranker sees it; ``age_days=None`` means no date (created_at 0)."""
    created = 0.0 if age_days is None else now - age_days * DAY
    surfaced = None if surfaced_days_ago is None else now - surfaced_days_ago * DAY
    return Memory(
        id=mid,
        kind=kind,
        title="",
        body=body or f"memory {mid}",
        created_at=created,
        updated_at=created,
        project=None,
        branch=branch,
        source=Source(),
        content_hash=str(mid),
        superseded_by=superseded_by,
        stability=stability,
        last_surfaced=surfaced,
        opened_in_full=opened,
    )


def candidate(
    mem: Memory,
    text: str = "",
    vector: float | None = None,
    keyword: float | None = None,
    vector_rank: int | None = None,
    keyword_rank: int | None = None,
    chunk_id: int | None = None,
) -> Candidate:
    return Candidate(
        chunk_id=chunk_id or mem.id,
        memory=mem,
        text=text or mem.body,
        vector=vector,
        keyword=keyword,
        bm25=keyword,
        vector_rank=vector_rank,
        keyword_rank=keyword_rank,
    )


def trace_product(hit) -> float:
    return hit.fused * math.prod(f.value for f in hit.factors)


def assert_trace(hits) -> None:
    """Every hit's score is its fused score times the multipliers recorded on it."""
    for hit in hits:
        assert math.isclose(hit.score, trace_product(hit), rel_tol=1e-9, abs_tol=1e-12), (hit.memory.id, hit.factors)


def unit(dim: int, axis: int) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float64)
    v[axis] = 1.0
    return v


def at_similarity(sim: float, axis: int, dim: int) -> np.ndarray:
    """A unit vector whose similarity ``1 - d²/4`` to axis 0 is ``sim`` (cos = 2·sim - 1); each
    ``axis`` gives a direction orthogonal to every other axis's."""
    cos = 2.0 * sim - 1.0
    return cos * unit(dim, 0) + math.sqrt(max(0.0, 1.0 - cos * cos)) * unit(dim, axis)


_sample_cache: dict[str, Path] = {}


def sample_db(tmp_path_factory, embedder) -> Path:
    """The bundled sample notes embedded once with ``embedder`` into a database file (cached for the
    session); copy it before writing to it."""
    key = embedder.model_id
    if key not in _sample_cache:
        from captain_memo.cli.commands.importer import read_records
        from captain_memo.engine.core import Engine
        from captain_memo.memo import Memo
        from captain_memo.store import Store

        path = tmp_path_factory.mktemp("sample") / "sample.db"
        engine = Engine(Store(path), embedder)
        try:
            Memo.over(engine).import_memories(read_records(str(SAMPLE), None))
        finally:
            engine.close()
        _sample_cache[key] = path
    return _sample_cache[key]


def copy_db(source: Path, target_dir: Path) -> Path:
    target = target_dir / "copy.db"
    shutil.copyfile(source, target)
    return target


def days_ago(days: float) -> float:
    return time.time() - days * DAY


def run_cli(capsys, *argv, code: int = 0) -> str:
    """Run ``captain-memo argv`` in-process; check the exit code; return what it printed."""
    from captain_memo.cli import main as cli

    capsys.readouterr()
    assert cli.main([str(a) for a in argv]) == code
    return capsys.readouterr().out


def cli_error(capsys, *argv, code: int = 1) -> str:
    """Run a command that must fail with ``code``; return its message on stderr."""
    from captain_memo.cli import main as cli

    capsys.readouterr()
    assert cli.main([str(a) for a in argv]) == code
    return capsys.readouterr().err
