"""The command line: each subcommand in-process against a database in a temporary folder, with the
real embedded model."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import pytest
from recall_support import cli_error, run_cli

NOTES = [
    {
        "kind": "memory",
        "title": "Money is Decimal",
        "text": "All amounts are billing.money.Money; floats are refused.",
        "created_at": "2026-05-19T09:02:00",
        "branch": "main",
        "source": "billing/money/__init__.py",
        "tags": ["money"],
    },
    {
        "kind": "skill",
        "title": "Cut a release",
        "text": "scripts/release.sh 2.5.0 bumps the version and tags v2.5.0.",
        "created_at": "2026-08-18",
        "branch": None,
        "source": {"path": "scripts/release.sh", "line_start": 1, "line_end": 20, "commit": "abc123"},
    },
    {
        "kind": "observation",
        "title": "",
        "text": "production is on version 2.5.0 since this morning",
        "created_at": "2026-11-18T08:30:00Z",
        "branch": "main",
        "source": None,
    },
    {
        "kind": "observation",
        "title": "",
        "text": "the tax service answers 429 during the month-end run",
        "created_at": "2026-09-01T07:55:00+02:00",
    },
]

HIT_KEYS = {
    "rank",
    "id",
    "store",
    "chunk_id",
    "kind",
    "title",
    "text",
    "score",
    "created_at",
    "age_days",
    "project",
    "branch",
    "source",
    "superseded_by",
    "explain",
    "author",
    "chunk",
}
CHUNK_KEYS = {"title", "label", "line_start", "line_end", "snippet", "snippet_line", "matched", "ref"}
SOURCE_KEYS = {"path", "line_start", "line_end", "commit", "origin", "filetype", "label"}
EXPLAIN_KEYS = {"vector", "keyword", "keyword_among", "bm25", "fused", "code_vector_weight", "factors", "product"}
MEMORY_KEYS = {
    "id",
    "kind",
    "title",
    "body",
    "created_at",
    "updated_at",
    "project",
    "branch",
    "source",
    "superseded_by",
    "store",
    "author",
    "stability",
    "last_surfaced",
    "opened_in_full",
    "tags",
}


AUG_18 = datetime(2026, 8, 18, tzinfo=timezone.utc).timestamp()  # a date alone means midnight UTC


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def notes_file(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("\n".join(json.dumps(n) for n in NOTES) + "\n\n", encoding="utf-8")
    return path


@pytest.fixture
def imported(cli_env, notes_file, capsys):
    run_cli(capsys, "--db", cli_env, "import", notes_file)
    return cli_env


def remembered_id(out: str) -> int:
    assert out.startswith("remembered #")
    return int(out.split("#")[1].split()[0])


def test_remember_from_an_argument_and_show(cli_env, capsys):
    out = run_cli(
        capsys,
        "--db",
        cli_env,
        "remember",
        "--kind",
        "skill",
        "--title",
        "Cut a release",
        "--branch",
        "main",
        "--date",
        "2026-08-18",
        "--file",
        "scripts/release.sh",
        "--lines",
        "3-9",
        "scripts/release.sh",
        "bumps",
        "the",
        "version",
    )
    mid = remembered_id(out)
    shown = json.loads(run_cli(capsys, "--db", cli_env, "show", "--json", mid))
    assert set(shown) == MEMORY_KEYS
    assert (shown["kind"], shown["title"], shown["body"], shown["branch"]) == (
        "skill",
        "Cut a release",
        "scripts/release.sh bumps the version",
        "main",
    )
    assert (shown["source"]["path"], shown["source"]["line_start"], shown["source"]["line_end"]) == (
        "scripts/release.sh",
        3,
        9,
    )
    assert shown["created_at"] == AUG_18
    assert shown["project"] is None  # not inside a repository: a personal note
    # Opening in full is the strongest surfacing; seconds after saving, spaced repetition (v3, the
    # default) gives it almost no strength yet: its gain counts in proportion to the time since.
    assert shown["opened_in_full"] is True
    assert 7.0 <= shown["stability"] < 7.01
    text = run_cli(capsys, "--db", cli_env, "show", mid)
    assert text.startswith(f"#{mid} [skill] Cut a release") and "scripts/release.sh:3-9" in text
    assert "scripts/release.sh bumps the version" in text


def test_remember_from_stdin(cli_env, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("the tax service answers 429 at month end\n"))
    data = json.loads(run_cli(capsys, "--db", cli_env, "remember", "--kind", "observation", "--json"))
    assert data == {"id": 1, "pending_vectors": 0}
    assert json.loads(run_cli(capsys, "--db", cli_env, "show", "--json", "1"))["body"].startswith("the tax service")


def test_remember_refuses_bad_input(cli_env, capsys):
    assert "cannot read the date" in cli_error(capsys, "--db", cli_env, "remember", "--date", "yesterday-ish", "text")
    assert "the text is empty" in cli_error(capsys, "--db", cli_env, "remember", "   ")


def test_recall_json_has_stable_keys(imported, capsys):
    data = json.loads(run_cli(capsys, "--db", imported, "recall", "--json", "production", "version"))
    assert set(data) == {
        *("query", "profile", "legs", "failures", "stores", "elapsed_ms", "pool_size", "notice", "unnamed", "hits")
    }
    assert data["query"] == "production version" and data["profile"] == "v3"
    assert data["legs"] == ["vector", "keyword"] and data["failures"] == {}
    assert [h["rank"] for h in data["hits"]] == list(range(1, len(data["hits"]) + 1))
    for hit in data["hits"]:
        assert set(hit) == HIT_KEYS and set(hit["source"]) == SOURCE_KEYS and set(hit["explain"]) == EXPLAIN_KEYS
        assert set(hit["chunk"]) == CHUNK_KEYS and hit["author"] is None
        for factor in hit["explain"]["factors"]:
            assert set(factor) == {"name", "value", "detail"}
        assert hit["score"] == pytest.approx(hit["explain"]["product"], abs=1e-5)
    assert "2.5.0" in data["hits"][0]["text"]


def test_recall_text_and_explain(imported, capsys):
    plain = run_cli(capsys, "--db", imported, "recall", "billing.money.Money")
    assert plain.splitlines()[0].startswith(" 1. ") and "Money is Decimal" in plain.splitlines()[0]
    assert "profile v3 · legs: vector + keyword" in plain and "identifier" not in plain
    explained = run_cli(capsys, "--db", imported, "recall", "--explain", "billing.money.Money")
    # The query is only a name, so v3 gives the chunk holding it x3 (IDENTIFIER_ONLY_WEIGHT).
    assert "x 3.000 identifier (billing.money.Money)" in explained and "fused" in explained
    legacy = json.loads(run_cli(capsys, "--db", imported, "recall", "--json", "--profile", "legacy", "version"))
    assert legacy["profile"] == "legacy"
    limited = json.loads(run_cli(capsys, "--db", imported, "recall", "--json", "-n", "2", "version"))
    assert len(limited["hits"]) == 2


def test_forget(imported, capsys):
    assert "forgot #2" in run_cli(capsys, "--db", imported, "forget", "2")
    assert "no memory with id 2" in cli_error(capsys, "--db", imported, "show", "2")
    run_cli(capsys, "--db", imported, "forget", "2", code=1)
    stats = json.loads(run_cli(capsys, "--db", imported, "stats", "--json"))
    assert stats["memories"] == 3 and stats["chunks"] == stats["fts_rows"] == stats["vectors"] == 3


def test_supersede_undo_and_list(imported, capsys):
    assert "#3 is superseded by #1" in run_cli(capsys, "--db", imported, "supersede", "3", "1")
    listed = run_cli(capsys, "--db", imported, "supersede", "--list")
    assert listed.startswith("#3 superseded by #1 (manual)")
    hits = json.loads(run_cli(capsys, "--db", imported, "recall", "--json", "production", "version"))["hits"]
    old = next(h for h in hits if h["id"] == 3)
    assert old["superseded_by"] == 1
    assert {"name": "superseded", "value": 0.5, "detail": "by #1"} in old["explain"]["factors"]
    assert "#3 is current again" in run_cli(capsys, "--db", imported, "supersede", "--undo", "3")
    assert run_cli(capsys, "--db", imported, "supersede", "--list") == ""
    assert "OLD NEW" in cli_error(capsys, "--db", imported, "supersede", "3")
    run_cli(capsys, "--db", imported, "supersede", "3", "3", code=1)
    run_cli(capsys, "--db", imported, "supersede", "3", "99", code=1)


def test_import_shows_progress_and_a_rerun_skips_duplicates(cli_env, notes_file, capsys, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert run_cli(capsys, "--db", cli_env, "import", notes_file).strip() == "imported 4 memories, 0 already present"
    assert "importing [" in terminal.getvalue() and "4/4" in terminal.getvalue()
    assert run_cli(capsys, "--db", cli_env, "import", notes_file).strip() == "imported 0 memories, 4 already present"
    first = json.loads(run_cli(capsys, "--db", cli_env, "show", "--json", "2"))
    assert first["source"] == {
        "path": "scripts/release.sh",
        "line_start": 1,
        "line_end": 20,
        "commit": "abc123",
        "origin": "import",
        "filetype": None,
    }
    assert first["created_at"] == AUG_18


def test_import_reports_the_bad_line(cli_env, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(NOTES[0]) + "\n{not json\n", encoding="utf-8")
    assert f"{bad}:2: not valid JSON" in cli_error(capsys, "--db", cli_env, "import", bad)
    empty_text = tmp_path / "empty.jsonl"
    empty_text.write_text(json.dumps({"kind": "memory", "text": ""}) + "\n", encoding="utf-8")
    assert "'text' is missing or empty" in cli_error(capsys, "--db", cli_env, "import", empty_text)


def test_stats(imported, capsys):
    data = json.loads(run_cli(capsys, "--db", imported, "stats", "--json"))
    assert set(data) >= {"database", "memories", "chunks", "fts_rows", "vectors", "pending_vectors", "tide"}
    assert (data["memories"], data["memory"], data["skill"], data["observation"]) == (4, 1, 1, 2)
    assert set(data["tide"]) == {"strengthening", "active", "dormant"}
    text = run_cli(capsys, "--db", imported, "stats")
    assert "memories   4  (memory 1, skill 1, observation 2)" in text


def test_doctor_passes_on_a_good_database(imported, capsys):
    out = run_cli(capsys, "--db", imported, "doctor")
    assert "FAIL" not in out
    for item in ("sqlite", "sqlite-vec", "fts5", "integrity", "database", "model", "counts"):
        assert any(line.split()[1] == item for line in out.splitlines() if line.startswith("ok")), item
    checks = json.loads(run_cli(capsys, "--db", imported, "doctor", "--json"))
    assert all(c["ok"] for c in checks) and {c["item"] for c in checks} >= {"sqlite-vec", "fts5", "counts"}


def test_doctor_finds_curated_text_missing_from_its_own_keyword_index(imported, capsys):
    """Curated text is indexed twice (its bm25 has statistics of its own): a row the second index
    lost ranks that text as if it held none of its words, and the counts say so."""
    import sqlite3

    stats = json.loads(run_cli(capsys, "--db", imported, "stats", "--json"))
    assert stats["curated_chunks"] == stats["curated_fts_rows"] == 2
    with sqlite3.connect(imported) as conn:
        conn.execute("DELETE FROM curated_fts WHERE rowid = (SELECT min(rowid) FROM curated_fts)")
    checks = json.loads(run_cli(capsys, "--db", imported, "doctor", "--json", code=1))
    counts = next(c for c in checks if c["item"] == "counts")
    assert not counts["ok"] and "curated_fts_rows 1" in counts["detail"], counts


def test_no_command_prints_help(capsys):
    from captain_memo.cli import main as cli

    assert cli.main([]) == 2
    assert "remember" in capsys.readouterr().out


def test_stats_json_names_every_kind_even_when_empty(cli_env, capsys):
    data = json.loads(run_cli(capsys, "--db", cli_env, "stats", "--json"))
    assert (data["memories"], data["memory"], data["skill"], data["observation"]) == (0, 0, 0, 0)
    assert data["tide"] == {"strengthening": 0, "active": 0, "dormant": 0}


def test_the_json_document_names_every_key():
    """doc/json.md documents the --json shapes: every key the code prints is in it."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "doc" / "json.md").read_text(encoding="utf-8")
    keys = (
        HIT_KEYS
        | SOURCE_KEYS
        | EXPLAIN_KEYS
        | MEMORY_KEYS
        | {
            "query",
            "profile",
            "legs",
            "failures",
            "elapsed_ms",
            "pool_size",
            "notice",
            "unnamed",
            "hits",
            "pending_vectors",
            "database",
            "memories",
            "chunks",
            "fts_rows",
            "curated_chunks",
            "curated_fts_rows",
            "vectors",
            "strengthening",
            "active",
            "dormant",
            "item",
            "ok",
            "detail",
            "name",
            "value",
        }
    )
    for key in keys:
        assert f"`{key}`" in doc or f'"{key}"' in doc, key
    for factor in ("identifier", "rare_token", "branch", "superseded", "recency", "tide"):
        assert f"| `{factor}` |" in doc, factor
