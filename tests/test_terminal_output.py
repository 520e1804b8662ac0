"""Stored text never reaches the terminal raw: an escape sequence in a title, body, branch or file
name is printed as an escape, and a line break in a one-line field cannot forge a line of output."""

from __future__ import annotations

import json

from recall_support import run_cli

from captain_memo.base.terminal import block, one_line

OSC52 = "\x1b]52;c;aGVsbG8=\x07"  # writes "hello" to the clipboard of many terminals
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\x08")


def test_one_line_escapes_every_control_and_line_break():
    assert one_line(f"a{OSC52}b\nc\r\td\u2028\x7f{C1_CSI}") == (
        "a\\u001b]52;c;aGVsbG8=\\u0007b\\nc\\r\\td\\u2028\\u007f\\u009b31m"
    )


def test_a_block_keeps_its_lines_and_tabs_and_escapes_the_rest():
    assert block(f"one\r\ntwo\n\tthree{CLEAR}\rback\x08") == "one\ntwo\n\tthree\\u001b[2J\\u001b[H\\rback\\u0008"


def _printed_raw(text: str) -> list[str]:
    return [c for c in RAW if c in text]


def test_recall_and_show_print_stored_escapes_as_text(cli_env, capsys):
    run_cli(
        capsys,
        "--db",
        cli_env,
        "remember",
        "--project",
        "none",
        "--title",
        f"deploy{OSC52}",
        "--file",
        "ops/run\nbook.md",
        f"deploy steps{CLEAR}\nsecond line\r{C1_CSI}red",
    )
    out = run_cli(capsys, "--db", cli_env, "recall", "--explain", "deploy", "steps")
    assert _printed_raw(out) == [], out
    assert "deploy\\u001b]52;c;aGVsbG8=\\u0007" in out and "run\\nbook.md" in out
    assert not any(line.startswith("book.md") for line in out.splitlines())  # no forged line
    shown = run_cli(capsys, "--db", cli_env, "show", "1")
    assert _printed_raw(shown) == [], shown
    assert "deploy steps\\u001b[2J\\u001b[H\nsecond line\\r\\u009b31mred" in shown


def test_json_output_stays_valid_and_decodes_to_the_stored_text(cli_env, capsys):
    title = f"t{C1_CSI}\x7f\u2028{OSC52}"
    run_cli(capsys, "--db", cli_env, "remember", "--project", "none", "--title", title, "body of the note")
    out = run_cli(capsys, "--db", cli_env, "show", "--json", "1")
    assert _printed_raw(out) == [] and "\x7f" not in out
    assert json.loads(out)["title"] == title
    hits = json.loads(run_cli(capsys, "--db", cli_env, "recall", "--json", "body", "note"))["hits"]
    assert hits[0]["title"] == title


def test_index_cannot_be_made_to_print_a_forged_line(cli_env, capsys, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCabcd"
    (notes / f"x{OSC52}\nnotes: 999 added.md").write_text(f"# Keys\n\nthe bot uses {token}\n", encoding="utf-8")
    out = run_cli(capsys, "--db", cli_env, "index", str(notes))
    assert _printed_raw(out) == [], out
    assert [line for line in out.splitlines() if line.startswith("notes:")] == [out.splitlines()[-1]]
    assert "x\\u001b]52;c;aGVsbG8=\\u0007\\nnotes: 999 added.md" in out


def test_error_messages_are_one_line(cli_env, capsys, tmp_path):
    from recall_support import cli_error

    missing = tmp_path / f"gone{OSC52}\nforged: line.jsonl"
    err = cli_error(capsys, "--db", cli_env, "import", missing)
    assert err.count("\n") == 1 and _printed_raw(err) == [], err
    assert err.startswith("captain-memo: cannot read ")
