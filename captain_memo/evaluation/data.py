"""Reading a BEIR-style folder: corpus.jsonl, queries.jsonl and qrels.tsv.

corpus.jsonl   {"id", "text", "title"?, "group"?, ...}
queries.jsonl  {"id", "text", "group"?, ...}
qrels.tsv      a header line, then query-id <TAB> corpus-id <TAB> score (> 0 is relevant)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from captain_memo.base.jsonl import parse_lines
from captain_memo.errors import InputError

FILES = ("corpus.jsonl", "queries.jsonl", "qrels.tsv")


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    text: str
    group: str | None = None


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    group: str | None = None
    # What kind of question this is, for sets that tell them apart (evaluation/flask_store.py).
    category: str | None = None


@dataclass(frozen=True)
class Dataset:
    name: str
    docs: tuple[Doc, ...]
    # Only queries with at least one relevant document; a built-in set's may hold questions no text
    # answers, with no qrels (evaluation/flask_store.py).
    queries: tuple[Query, ...]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> graded relevance (> 0)
    grouped: bool = False  # some documents carry a group


def _jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for where, row in parse_lines(handle, str(path)):
            if not isinstance(row, dict) or "id" not in row or not isinstance(row.get("text"), str):
                raise InputError(f'{where}: expected an object with "id" and "text"')
            rows.append(row)
    return rows


def _group(row: dict) -> str | None:
    value = row.get("group")
    return None if value in (None, "") else str(value)


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            parts = line.rstrip("\n").split("\t")
            if not line.strip() or (number == 1 and not parts[-1].strip().lstrip("-").isdigit()):
                continue  # blank line or the header
            if len(parts) < 3:
                raise InputError(f"{path}:{number}: expected query-id, corpus-id and score separated by tabs")
            try:
                score = int(float(parts[2]))
            except ValueError:
                raise InputError(f"{path}:{number}: the score {parts[2]!r} is not a number") from None
            if score > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def load(folder: Path | str) -> Dataset:
    """The set in ``folder``; queries without a relevant document are left out, as BEIR does."""
    folder = Path(folder)
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise InputError(f"{folder} is not a BEIR-style folder: missing {', '.join(missing)}")
    docs = tuple(
        Doc(str(r["id"]), str(r.get("title") or ""), r["text"], _group(r)) for r in _jsonl(folder / "corpus.jsonl")
    )
    if len({d.id for d in docs}) != len(docs):
        raise InputError(f"{folder}/corpus.jsonl: document ids are not unique")
    qrels = _qrels(folder / "qrels.tsv")
    queries = tuple(
        Query(str(r["id"]), r["text"], _group(r)) for r in _jsonl(folder / "queries.jsonl") if str(r["id"]) in qrels
    )
    if not queries:
        raise InputError(f"{folder}: no query has a relevant document in qrels.tsv")
    return Dataset(folder.name, docs, queries, qrels, any(d.group for d in docs))
