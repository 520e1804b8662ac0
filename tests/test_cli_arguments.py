"""Arguments the command line cannot use end with one line naming what was wrong, never a
traceback, and store nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


# Lines for the commands a serving engine answers. Each is read by plain_args exactly as argparse
# reads it, or left to argparse (None): help, abbreviations, `--`, values argparse refuses.
PLAIN = [
    ["recall", "zanzibar", "tenant"],
    ["--db", "x.db", "-v", "--no-service", "recall", "--json", "-n", "3", "a", "b", "--explain"],
    ["--db=x.db", "recall", "--limit=4", "--profile", "v2", "--all-projects", "--project", "none", "q"],
    ["recall", "--branch", "main", "--branch", "dev", "q"],
    ["remember", "--title", "x", "hello", "world"],
    ["remember", "--json", "--kind", "skill", "--team", "--allow-secrets"],
    ["remember", "--title=", "--lines", "3-9", "text"],
    ["service", "status", "--json"],
    ["hook", "--budget", "900", "--format", "text"],
    ["mcp", "--folder", "/tmp", "--separate-worktrees"],
]
ARGPARSE = [
    [],
    ["--version"],
    ["-v"],
    ["recall"],
    ["recall", "-h"],
    ["recall", "--exp", "q"],
    ["recall", "a", "--json", "b"],
    ["recall", "--", "-q"],
    ["recall", "-n5", "q"],
    ["recall", "-n", "-5", "q"],
    ["recall", "-n", "five", "q"],
    ["recall", "--profile", "v9", "q"],
    ["recall", "--json=yes", "q"],
    ["recall", "q", "--db", "x.db"],
    ["recall", "-q"],
    ["--db"],
    ["service", "restart"],
    ["service", "status", "stop"],
    ["stats"],
]


def argparse_reads(argv):
    from captain_memo.cli.main import build_parser

    try:
        args, unknown = build_parser(argv).parse_known_args(argv)
    except SystemExit:
        return None
    return None if unknown or not getattr(args, "run", None) else vars(args)


@pytest.mark.parametrize("argv", PLAIN + ARGPARSE)
def test_a_plain_command_line_is_read_as_argparse_reads_it(argv, capsys):
    from captain_memo.cli.main import ALONE_COMMANDS, declare_options
    from captain_memo.cli.plain_args import parsed

    plain = parsed(argv, declare_options, ALONE_COMMANDS)
    if argv in PLAIN:
        assert plain is not None and vars(plain) == argparse_reads(argv)
    else:
        assert plain is None


WORDS = ["recall", "remember", "service", "status", "q", "-n", "--limit", "3", "-3", "--json", "--explain", "--exp"]
WORDS += ["--profile", "v2", "--title", "--title=t", "--kind", "skill", "--db", "--no-service", "-v", "--", "-", ""]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS), max_size=7))
def test_any_line_plain_args_reads_is_read_as_argparse_reads_it(capsys, argv):
    from captain_memo.cli.main import ALONE_COMMANDS, declare_options
    from captain_memo.cli.plain_args import parsed

    plain = parsed(argv, declare_options, ALONE_COMMANDS)
    if plain is not None:
        assert vars(plain) == argparse_reads(argv)
