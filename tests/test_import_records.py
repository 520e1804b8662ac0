"""`captain-memo import` of hostile records: every field checked, each bad line named by number and
reason, the good ones imported (or none with --strict), nothing stored that cannot be read back
as valid JSON, and the same content stored once wherever it sits in the file."""

from __future__ import annotations

import json

import pytest
from recall_support import cli_error, run_cli

from captain_memo.requests.import_records import read_import

GOOD = {"text": "the tax service answers 429 during the month-end run", "kind": "observation"}
# (record as written in the file, what the refusal names)
BAD = [
    (
        '{"text": "a date as an object", "created_at": {"year": 2026}}',
        "created_at must be an ISO date or epoch seconds, not an object",
    ),
    (
        '{"text": "a date as a list", "created_at": [2026, 1, 1]}',
        "created_at must be an ISO date or epoch seconds, not a list",
    ),
    ('{"text": "a date as NaN", "created_at": NaN}', "not valid JSON (NaN is not a number JSON allows)"),
    ('{"text": "an infinite date", "created_at": Infinity}', "not valid JSON (Infinity is not a number JSON allows)"),
    ('{"text": "a huge date", "created_at": 1e300}', "created_at 1e+300 is outside 1970-01-01 .. 9999-12-31"),
    ('{"text": "an overflowing date", "created_at": 1e400}', "is outside 1970-01-01 .. 9999-12-31"),
    ('{"text": "a date as text", "created_at": "last tuesday"}', "cannot read the date 'last tuesday'"),
    ('{"text": "tags as text", "tags": "money"}', "tags must be a list of strings, not a string"),
    ('{"text": "a tag as a number", "tags": ["money", 5]}', "tags[1] must be a string, not 5"),
    ('{"text": "a lone surrogate \\ud800 here"}', "text contains an unpaired surrogate"),
    ('{"text": "ok", "title": "\\udfff"}', "title contains an unpaired surrogate"),
    (
        '{"text": "a line number as an object", "source": {"path": "a.py", "line_start": {"n": 3}}}',
        "source.line_start must be a whole number, not an object",
    ),
    (
        '{"text": "a line number as text", "source": {"path": "a.py", "line_start": "12"}}',
        "source.line_start must be a whole number, not a string",
    ),
    (
        '{"text": "a huge line number", "source": {"path": "a.py", "line_start": 99999999999999999999999}}',
        "source.line_start is 99999999999999999999999; a line number is between 1 and 1,000,000,000",
    ),
    (
        '{"text": "lines backwards", "source": {"path": "a.py", "line_start": 9, "line_end": 3}}',
        "source.line_end 3 is before source.line_start 9",
    ),
    ('{"text": "a path as a number", "source": 12}', "source must be a path or an object, not 12"),
    ('{"text": "a commit as a list", "source": {"commit": ["abc"]}}', "source.commit must be a string, not a list"),
    ('{"text": "a branch as true", "branch": true}', "branch must be a string, not true or false"),
    ('{"text": "a bad kind", "kind": "secret"}', "kind must be one of memory, skill, observation, not 'secret'"),
    ('{"text": 42}', "text must be a string, not 42"),
    (
        '{"text": "a fractional line", "source": {"line_start": 12.5}}',
        "source.line_start must be a whole number, not 12.5",
    ),
    ('{"text": "<private>only this</private>"}', "'text' is empty once its <private> spans are removed"),
    ('["a list, not an object"]', "expected a JSON object, not a list"),
    ('{"text": "NUL \\u0000 inside"}', "text contains a NUL character"),
    ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested too deeply)"),
    ('{"text": "cut short', "not valid JSON"),
]


def lines_of(*records: str) -> list[str]:
    return "\n".join(records).split("\n")


@pytest.mark.parametrize("record, reason", BAD, ids=[str(i) for i in range(len(BAD))])
def test_each_bad_record_is_refused_with_its_line_number_and_reason(record, reason):
    found = read_import(lines_of(json.dumps(GOOD), "", record, json.dumps({**GOOD, "text": "after"})), None)
    assert [m.body for m in found.memories] == [GOOD["text"], "after"]
    [refused] = found.refused
    assert refused.line == 3 and isinstance(refused.line, int)
    assert reason in refused.reason, refused.reason


def test_a_raw_line_separator_inside_a_string_does_not_split_the_record():
    found = read_import(lines_of(json.dumps({"text": "one\u2028two"}, ensure_ascii=False), json.dumps(GOOD)), None)
    assert found.refused == () and [m.body for m in found.memories] == ["one\u2028two", GOOD["text"]]


def test_import_stores_the_good_lines_names_every_bad_one_and_exits_1(cli_env, tmp_path, capsys):
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(GOOD),
                BAD[0][0],
                json.dumps({**GOOD, "text": "second good"}),
                BAD[3][0],
                '{"text": "numbers", "source": {"path": "a.py", "line_start": 3, "line_end": 4}}',
            ]
        ),
        encoding="utf-8",
    )
    from captain_memo.cli import main as cli

    capsys.readouterr()
    assert cli.main(["--db", str(cli_env), "import", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert err.splitlines() == [f"captain-memo: {path}:2: {BAD[0][1]}", f"captain-memo: {path}:4: {BAD[3][1]}"]
    assert out.strip() == "imported 3 memories, 0 already present; 2 lines refused"
    hits = json.loads(run_cli(capsys, "--db", cli_env, "recall", "--json", "numbers"))["hits"]
    source = next(h["source"] for h in hits if h["text"] == "numbers")
    assert (source["line_start"], source["line_end"]) == (3, 4)


def test_strict_imports_nothing_when_a_line_is_refused(cli_env, tmp_path, capsys):
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([json.dumps(GOOD), BAD[2][0]]), encoding="utf-8")
    err = cli_error(capsys, "--db", cli_env, "import", "--strict", str(path))
    assert f"{path}:2: not valid JSON" in err
    assert "nothing was imported (--strict): 1 of 2 records refused" in err
    assert json.loads(run_cli(capsys, "--db", cli_env, "stats", "--json"))["memories"] == 0


def test_no_stored_value_makes_recall_json_invalid(cli_env, tmp_path, capsys):
    """Infinity was accepted, stored, and printed by `recall --json` as a bare Infinity."""
    path = tmp_path / "dates.jsonl"
    path.write_text("\n".join([BAD[3][0], BAD[4][0], json.dumps({**GOOD, "created_at": 1.7e9})]), encoding="utf-8")
    cli_error(capsys, "--db", cli_env, "import", str(path))
    out = run_cli(capsys, "--db", cli_env, "recall", "--json", "date", "tax")
    json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in recall --json"))


@pytest.mark.parametrize("gap", [0, 1, 40, 41])
def test_the_same_content_in_the_same_project_is_stored_once_wherever_it_sits(engine, gap):
    """Three identical lines in one batch were stored three times; 41 lines apart, once."""
    from captain_memo.memo import Memo

    filler = [json.dumps({"text": f"filler note {i}"}) for i in range(gap)]
    same = json.dumps({"text": "the deploy needs the VPN", "title": "deploy"})
    found = read_import(lines_of(same, *filler, same, same, json.dumps({**json.loads(same), "project": "other"})), None)
    added, skipped = Memo.over(engine).import_memories(list(found.memories))
    assert (added, skipped) == (gap + 2, 2)
    rows = engine.store.conn.execute("SELECT project FROM memories WHERE title = 'deploy' ORDER BY id").fetchall()
    assert rows == [(None,), ("other",)]
