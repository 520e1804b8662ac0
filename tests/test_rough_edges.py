"""Rough edges a new user met on the command line, each run as they met it: the real CLI in-process,
on a real store, in a real git repository where one matters. The hash embedder stands in for the
model (tests/fakes.py): none of these is about ranking."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from fakes import HashEmbedder
from recall_support import cli_error, run_cli
from sources_support import commit, git, init_repo, write

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A database path, the CLI run from a folder outside any repository, the hash embedder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("captain_memo.engine.core.make_embedder", lambda cfg, **_: HashEmbedder())
    return tmp_path / "memo.db"


def remembered(capsys, db, *argv) -> int:
    out = run_cli(capsys, "--db", db, "remember", *argv)
    return int(re.match(r"remembered #(\d+)", out).group(1))


# -- what a recall searched --------------------------------------------------------------------


def test_no_match_outside_a_repository_says_what_was_searched(db, capsys):
    remembered(capsys, db, "--project", "/src/shop", "--title", "Rounding", "keep every decimal place")
    out = run_cli(capsys, "--db", db, "recall", "rounding")
    assert "no memory matched in personal notes only" in out
    assert "--all-projects" in out
    assert "Rounding" in run_cli(capsys, "--db", db, "recall", "--all-projects", "rounding")


def test_no_match_inside_a_repository_names_it(db, tmp_path, capsys, monkeypatch):
    repo = init_repo(tmp_path / "shop")
    commit(repo, "start", {"README.md": "shop\n"})
    monkeypatch.chdir(repo)
    out = run_cli(capsys, "--db", db, "recall", "zyzzyva")
    assert re.search(r"no memory matched in \S*shop and personal notes; --all-projects", out), out
    out = run_cli(capsys, "--db", db, "recall", "--all-projects", "zyzzyva")
    assert "no memory matched in every project's memories and personal notes" in out


# -- show and supersede --undo --------------------------------------------------------------------


def test_show_says_when_a_memory_was_saved(db, capsys):
    mid = remembered(capsys, db, "--title", "Fresh", "just written")
    header = run_cli(capsys, "--db", db, "show", mid).splitlines()[1]
    assert "saved just now" in header and "now old" not in header
    old = remembered(capsys, db, "--date", "2020-01-01", "--title", "Old", "written long ago")
    assert re.search(r"saved \d+y ago", run_cli(capsys, "--db", db, "show", old).splitlines()[1])


def test_undo_of_a_memory_never_superseded_says_so(db, capsys):
    first = remembered(capsys, db, "the first version")
    second = remembered(capsys, db, "the second version")
    out = run_cli(capsys, "--db", db, "supersede", "--undo", first)
    assert out.strip() == f"#{first} was not superseded; nothing changed"
    run_cli(capsys, "--db", db, "supersede", first, second)
    assert run_cli(capsys, "--db", db, "supersede", "--undo", first).strip() == f"#{first} is current again"
    assert "no memory with id 999" in cli_error(capsys, "--db", db, "supersede", "--undo", "999")


# -- backup into a folder -------------------------------------------------------------------------


def test_backup_to_a_path_with_a_trailing_slash_makes_a_folder(db, tmp_path, capsys):
    remembered(capsys, db, "something worth keeping")
    target = tmp_path / "backups" / "nightly"
    out = run_cli(capsys, "--db", db, "backup", f"{target}/")
    assert target.is_dir(), "a trailing slash names a folder"
    copies = list(target.glob("memo-*.db"))
    assert len(copies) == 1 and str(copies[0]) in out
    assert sqlite3.connect(copies[0]).execute("SELECT count(*) FROM memories").fetchone()[0] == 1
    # An existing folder, named without the slash, also gets a dated file inside it.
    existing = tmp_path / "existing"
    existing.mkdir()
    run_cli(capsys, "--db", db, "backup", existing)
    assert len(list(existing.glob("memo-*.db"))) == 1
    # Without a slash a missing path is a file, as before.
    run_cli(capsys, "--db", db, "backup", tmp_path / "copy.db")
    assert (tmp_path / "copy.db").is_file()


def test_backup_into_a_folder_that_cannot_be_made_says_why(db, tmp_path, capsys):
    remembered(capsys, db, "something worth keeping")
    (tmp_path / "plain-file").write_text("not a folder")
    err = cli_error(capsys, "--db", db, "backup", f"{tmp_path / 'plain-file'}/")
    assert "cannot create the backup folder" in err and "plain-file" in err


# -- CRLF line ends -------------------------------------------------------------------------------


def stored_texts(db) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT title, body FROM memories").fetchall()
        rows += conn.execute("SELECT text, '' FROM chunks").fetchall()
        return [text for row in rows for text in row]
    finally:
        conn.close()


def test_crlf_is_stored_as_lf_from_every_way_in(db, tmp_path, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("from stdin\r\nsecond line\r\n"))
    remembered(capsys, db, "--title", "Piped\r")
    run_cli(capsys, "--db", db, "remember", "--title", "Argument", "one\r\ntwo\r\nthree\r")
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"title": "Imported\r\n", "text": "a\r\nb"}) + "\n", encoding="utf-8")
    run_cli(capsys, "--db", db, "import", notes)

    repo = init_repo(tmp_path / "shop")
    write(repo, "docs/decisions/windows.md", b"# Windows note\r\n\r\n## Line ends\r\n\r\nSaved on Windows.\r\n")
    (repo / "message.txt").write_bytes(b"Fix the invoice rounding\r\n\r\nThe total was off by a cent.\r\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "--cleanup=verbatim", "-F", str(repo / "message.txt"))
    raw = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=repo, capture_output=True, check=True).stdout
    assert b"\r\n" in raw, "the commit message keeps its CR (the case met)"
    monkeypatch.chdir(repo)
    run_cli(capsys, "--db", db, "index", "--git")

    texts = stored_texts(db)
    assert any("The total was off by a cent." in t for t in texts)
    assert any("Saved on Windows." in t for t in texts)
    assert any(t == "one\ntwo\nthree\r" for t in texts), "a lone CR is no line end: kept, shown escaped"
    assert [t for t in texts if "\r\n" in t] == []
    out = run_cli(capsys, "--db", db, "recall", "--all-projects", "invoice rounding cent")
    assert "\r" not in out


# -- the README and the folders `index` reads -------------------------------------------------------


def test_readme_names_the_folders_index_reads_by_default():
    from captain_memo.sources.settings import (
        AGENT_MEMORY_FILES,
        AGENT_SKILL_DIRS,
        REPO_MEMORY_DIRS,
        REPO_SKILL_DIRS,
        source_settings,
    )

    line = next(
        line
        for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("captain-memo index  ")
    )
    comment = line.split("#", 1)[1]
    comment = comment.replace(".captain-memo/{memory,skills}", ".captain-memo/memory, .captain-memo/skills")
    for folder in REPO_MEMORY_DIRS + REPO_SKILL_DIRS:
        if folder not in AGENT_MEMORY_FILES + AGENT_SKILL_DIRS:
            assert folder in comment, folder
    assert "AGENTS.md" in comment and "CLAUDE.md" in comment  # the agents' files: doc/sources.md lists all
    sources = (REPO / "doc" / "sources.md").read_text(encoding="utf-8")
    for path in AGENT_MEMORY_FILES + AGENT_SKILL_DIRS:
        assert f"`{path}" in sources, path
    # A personal folder is read only when configured: the README must not promise one by default.
    assert source_settings({}).personal_note_dirs == ()
    if "~/notes" in comment:
        assert "CAPTAIN_MEMO_NOTE_DIRS" in comment


def test_a_notes_folder_in_home_is_indexed_only_when_configured(db, tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    write(home, "notes/deploy.md", "# Deploy\n\nThe deploy needs the VPN up first.\n")
    monkeypatch.setenv("HOME", str(home))
    assert "nothing to index" in cli_error(capsys, "--db", db, "index")
    monkeypatch.setenv("CAPTAIN_MEMO_NOTE_DIRS", "~/notes")
    assert "notes: indexed 1" in run_cli(capsys, "--db", db, "index")
