"""Arguments the command line cannot use end with one line naming what was wrong, never a
traceback, and store nothing."""

from __future__ import annotations

import json

import pytest
from recall_support import cli_error, run_cli


@pytest.mark.parametrize("lines", ["abc", "-5", "0", "5-3", "3-", "1-2-3", "99999999999999999999"])
def test_remember_refuses_a_line_range_it_cannot_use(cli_env, capsys, lines):
    err = cli_error(capsys, "--db", cli_env, "remember", "--project", "none", "--lines", lines, "a note")
    assert err == f"captain-memo: --lines {lines!r}: give a line or a range of lines from 1, like 10 or 10-24\n"
    assert json.loads(run_cli(capsys, "--db", cli_env, "stats", "--json"))["memories"] == 0


def test_remember_takes_a_line_or_a_range(cli_env, capsys):
    run_cli(capsys, "--db", cli_env, "remember", "--project", "none", "--file", "a.py", "--lines", "7", "one line")
    run_cli(capsys, "--db", cli_env, "remember", "--project", "none", "--file", "a.py", "--lines", "3-9", "a range")
    sources = [json.loads(run_cli(capsys, "--db", cli_env, "show", "--json", str(i)))["source"] for i in (1, 2)]
    assert [(s["line_start"], s["line_end"]) for s in sources] == [(7, 7), (3, 9)]


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "99999999999999999999"],
        ["forget", "99999999999999999999"],
        ["supersede", "--undo", "99999999999999999999"],
        ["show", "-9999999999999999999999"],
    ],
)
def test_an_id_too_large_for_sqlite_is_simply_not_found(cli_env, capsys, argv):
    err = cli_error(capsys, "--db", cli_env, *argv)
    assert err == f"captain-memo: no memory with id {argv[-1]}\n"


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_recall_refuses_a_limit_below_one(cli_env, capsys, limit):
    run_cli(capsys, "--db", cli_env, "remember", "--project", "none", "a note about limits")
    err = cli_error(capsys, "--db", cli_env, "recall", "--limit", limit, "limits")
    assert err == "captain-memo: recall: limit must be a whole number from 1 to 1000\n"


def test_a_home_that_is_a_file_is_named(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("CAPTAIN_MEMO_HOME", str(home))
    err = cli_error(capsys, "stats")
    assert err == f"captain-memo: cannot create the database {home / 'memo.db'}: {home} is a file, not a folder\n"
    assert home.read_text() == "not a folder"
