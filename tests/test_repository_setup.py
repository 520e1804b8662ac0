"""The first hour on a real repository: a plain `index` that says where it looked and offers the
documentation it found, folders named once and refreshed from then on, the coding agents' own
files as sources, a progress line fitted to the terminal, and the smaller things a new user meets
(`import`'s default project, an option as a query's name, a command's own usage).

Real git repositories in temporary folders, the CLI's real argument parsing and a real terminal
(a pty with its size set) for the progress line."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import termios

import pytest
from sources_support import commit, init_repo, write

from captain_memo.base.progress import Progress
from captain_memo.cli.main import main
from captain_memo.store import Store

RST_PAGE = "{title}\n{rule}\n\nHow {title} works: use tmp_path for a temporary folder per test.\n"


def rst(title: str) -> str:
    return RST_PAGE.format(title=title, rule="=" * len(title))


def docs_repo(tmp_path):
    """A repository whose prose lives where no built-in folder looks: doc/, docs/, changelog/."""
    repo = init_repo(tmp_path / "repo")
    files = {f"doc/page{n}.rst": rst(f"Fixture {n}") for n in range(4)}
    files |= {f"changelog/{1200 + n}.bugfix.rst": f"Fixed capture of stderr number {n}.\n" for n in range(3)}
    files |= {"docs/index.md": "# Project docs\n\nStart here.\n"}
    commit(repo, "Add the documentation", files)
    return repo


def run(capsys, db, *args: str) -> str:
    assert main(["--db", str(db), *args]) == 0
    return capsys.readouterr().out


def stored(db) -> dict[str, str]:
    """Stored path -> kind of every memory."""
    store = Store(db)
    try:
        return {m.source.path: m.kind for m in store.list_memories()}
    finally:
        store.close()


# -- a plain run that reads nothing, folders named once ------------------------------------------


def test_a_plain_run_that_reads_nothing_says_where_it_looked_and_offers_what_it_found(
    db_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(docs_repo(tmp_path))
    assert "not indexed: doc/ (4 notes): captain-memo index doc/" in run(capsys, db_file, "index", "--list")
    assert main(["--db", str(db_file), "index", "--forget", "doc"]) == 1
    assert "doc is not a folder indexed by name" in capsys.readouterr().err
    assert not db_file.exists(), "listing and forgetting create no store"
    out = run(capsys, db_file, "index")
    assert "(0 files read" in out
    assert "no notes in: docs/decisions/, docs/adr/, .captain-memo/memory/, .captain-memo/skills/, " in out
    assert "the coding agents' files (AGENTS.md, CLAUDE.md" in out
    assert "not indexed: doc/ (4 .rst), changelog/ (3 .rst: changelog fragments), docs/ (1 .md)" in out
    assert "to add one: captain-memo index doc/" in out
    data = json.loads(run(capsys, db_file, "index", "--json"))
    assert [f["path"] for f in data["found"]] == ["doc/", "changelog/", "docs/"]
    assert data["found"][0]["suffixes"] == {".rst": 4}


def test_a_folder_named_once_is_refreshed_by_every_plain_run_and_listed(db_file, tmp_path, capsys, monkeypatch):
    repo = docs_repo(tmp_path)
    monkeypatch.chdir(repo)
    out = run(capsys, db_file, "index", "doc/")
    assert "notes: indexed 4" in out
    assert "remembered doc/: every plain `captain-memo index` in this repository refreshes it" in out

    write(repo, "doc/page9.rst", rst("Fixture 9"))
    (repo / "doc/page0.rst").unlink()
    out = run(capsys, db_file, "index")
    assert "notes: indexed 1 · updated 0 · unchanged 3 · removed 1" in out
    assert "no notes in" not in out
    assert "not indexed: changelog/ (3 .rst: changelog fragments), docs/ (1 .md)" in out, "doc/ is no longer offered"
    assert "remembered" not in run(capsys, db_file, "index", "doc/"), "remembered once"

    listing = run(capsys, db_file, "index", "--list")
    assert re.search(r"^  doc/\s+memory\s+named before\s+4 notes$", listing, re.MULTILINE), listing
    assert "and would read (not here now): " in listing and "AGENTS.md" in listing
    assert "not indexed: changelog/ (3 notes): captain-memo index changelog/" in listing

    # Per repository: another one does not read this one's doc/.
    other = init_repo(tmp_path / "other")
    commit(other, "Docs", {"doc/guide.rst": rst("Guide")})
    monkeypatch.chdir(other)
    assert "(0 files read" in run(capsys, db_file, "index")

    monkeypatch.chdir(repo)
    out = run(capsys, db_file, "index", "--forget", "doc")
    assert "forgot doc/: plain runs no longer read it; 4 memories indexed from it removed" in out
    assert not any(path.startswith("doc/") for path in stored(db_file))
    assert "(0 files read" in run(capsys, db_file, "index")
    assert main(["--db", str(db_file), "index", "--forget", "docs"]) == 1
    assert "docs is not a folder indexed by name" in capsys.readouterr().err


def test_a_note_written_under_a_folder_named_once_is_re_indexed_by_the_editor(db_file, tmp_path, capsys, monkeypatch):
    """The editor's index-on-write request, as the plugin host answers it."""
    from captain_memo.editor.editor_requests import EditorService

    repo = docs_repo(tmp_path)
    monkeypatch.chdir(repo)
    run(capsys, db_file, "index", "doc/")
    page = write(repo, "doc/page1.rst", rst("Fixture 1") + "\nFixtures\n--------\n\nAlso tmp_path_factory.\n")
    other = write(repo, "docs/index.md", "# Project docs\n\nStart here, then read doc/.\n")
    replies: list[dict] = []
    service = EditorService(replies.append, serve=True)
    try:
        ask = {"op": "index", "settings": {"db": str(db_file)}}
        report = service.handle({**ask, "id": 1, "args": {"path": str(page)}})["result"]
        assert (report["files"], report["unchanged"], report["indexed"]) == (1, 1, 1), "the new section only"
        report = service.handle({**ask, "id": 2, "args": {"path": str(other)}})["result"]
        assert report["files"] == 0, "docs/ was never named"
    finally:
        service.close()


# -- the coding agents' own files ------------------------------------------------------------------

AGENT_FILES = {
    "AGENTS.md": "# Agents\n\n## Tests\n\nRun the suite with `pytest -x -q`; never the slow marker.\n",
    "CLAUDE.md": "# Claude\n\nUse uv, not pip, in this repository.\n",
    "GEMINI.md": "# Gemini\n\nAsk before touching the migrations.\n",
    ".github/copilot-instructions.md": "# Copilot\n\nPrefer dataclasses over dicts.\n",
    ".cursor/rules/sql.mdc": "---\ndescription: SQL style\nglobs: *.sql\nalwaysApply: false\n---\n\n"
    "Every statement lives in store/; qualify every name.\n",
    ".claude/skills/release/SKILL.md": "---\nname: release\ndescription: Cut a release.\n---\n# Release\n\n"
    "Tag vX.Y.Z and push the tag.\n",
}


def test_the_agents_own_files_are_indexed_with_their_kind_and_refreshed(db_file, tmp_path, capsys, monkeypatch):
    repo = init_repo(tmp_path / "repo")
    commit(repo, "Agent files", AGENT_FILES)
    monkeypatch.chdir(repo)
    out = run(capsys, db_file, "index")
    assert "notes: indexed 6" in out, out
    kinds = stored(db_file)
    assert kinds == {
        "AGENTS.md": "memory",
        "CLAUDE.md": "memory",
        "GEMINI.md": "memory",
        ".github/copilot-instructions.md": "memory",
        ".cursor/rules/sql.mdc": "memory",
        ".claude/skills/release/SKILL.md": "skill",
    }
    write(repo, "AGENTS.md", AGENT_FILES["AGENTS.md"] + "\n## Style\n\nruff format before every commit.\n")
    (repo / "GEMINI.md").unlink()
    out = run(capsys, db_file, "index")
    assert "notes: indexed 1 · updated 0 · unchanged 5 · removed 1" in out, out
    recalled = run(capsys, db_file, "recall", "--json", "which SQL style do the cursor rules ask for")
    assert json.loads(recalled)["hits"][0]["source"]["path"] == ".cursor/rules/sql.mdc"


def test_agent_files_deeper_in_the_tree_are_found_and_removed_when_deleted(db_file, tmp_path, capsys, monkeypatch):
    from captain_memo.editor.editor_requests import EditorService

    repo = init_repo(tmp_path / "repo")
    rule = "# API package\n\nEvery handler returns a Problem object on error.\n"
    commit(repo, "Packages", {"packages/api/AGENTS.md": rule, "packages/web/src/app.ts": "export {}\n"})
    write(repo, "packages/web/CLAUDE.md", "# Web\n\nRun pnpm, never npm.\n")  # new, not committed
    write(repo, "node_modules/lib/AGENTS.md", "# A dependency's own rules\n\nNot ours.\n")
    write(repo, ".gitignore", "node_modules/\n")
    monkeypatch.chdir(repo)
    assert "notes: indexed 2" in run(capsys, db_file, "index")
    assert stored(db_file) == {"packages/api/AGENTS.md": "memory", "packages/web/CLAUDE.md": "memory"}

    gemini = write(repo, "packages/web/GEMINI.md", "# Web for Gemini\n\nAsk before adding a dependency.\n")
    service = EditorService(lambda _: None, serve=True)
    try:
        ask = {"op": "index", "id": 1, "settings": {"db": str(db_file)}, "args": {"path": str(gemini)}}
        assert service.handle(ask)["result"]["indexed"] == 1, "written in the editor"
    finally:
        service.close()

    (repo / "packages/api/AGENTS.md").unlink()  # tracked: git still lists it, deleted
    (repo / "packages/web/CLAUDE.md").unlink()  # never committed: git no longer lists it
    assert "removed 2" in run(capsys, db_file, "index")
    assert stored(db_file) == {"packages/web/GEMINI.md": "memory"}


# -- progress ----------------------------------------------------------------------------------------


def pty(columns: int):
    """A real terminal of ``columns`` columns: (master fd, the slave as a text stream)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return master, open(slave, "w", closefd=True)


def read_terminal(master: int) -> str:
    """What was written to the terminal so far: a pty hands data over asynchronously, so read
    until it has been quiet for a moment."""
    chunks = []
    while select.select([master], [], [], 0.3)[0]:
        try:
            part = os.read(master, 65536)
        except OSError:  # the other end is closed and drained
            break
        if not part:
            break
        chunks.append(part)
    return b"".join(chunks).decode()


def drawn(master: int, keep_open: bool = False) -> list[str]:
    """Each state of the line the terminal was sent so far (the text between carriage returns)."""
    text = read_terminal(master)
    if not keep_open:
        os.close(master)
    return [s.replace("\x1b[K", "").rstrip("\r\n") for s in text.split("\r") if s.strip()]


@pytest.mark.parametrize("columns", [40, 80, 160])
def test_progress_is_drawn_at_once_and_fits_the_terminal(columns):
    master, tty = pty(columns)
    with tty:
        bar = Progress(5_000, "indexing", stream=tty)
        [before_any_work] = drawn(master, keep_open=True)
        bar.advance(5_000, "new 5000 upd 0 same 0 rm 0 skip 0")
        bar.close()
    lines = [before_any_work, *drawn(master)]
    assert before_any_work.startswith("indexing ") and "0/5,000 0.0/s -:-- left" in before_any_work
    assert all(len(line) <= columns - 1 for line in lines), [len(line) for line in lines]
    if columns >= 160:
        assert "5,000/5,000" in lines[-1] and "taken new 5000 upd 0 same 0 rm 0 skip 0" in lines[-1]
    assert ("[####" in lines[-1]) == (columns >= 60), "no bar cells in a narrow pane: the numbers say more"


def test_the_line_moves_while_a_batch_is_embedded(engine, hash_embedder, tmp_path, monkeypatch):
    """One batch of 256 chunk texts was one embedding call: the line stood still through it, then
    jumped by every file of the batch. Each call now embeds at most 64 texts, and the line moves
    between calls."""
    from captain_memo.base import progress
    from captain_memo.sources import indexer

    monkeypatch.setattr(progress, "REDRAW_SECONDS", -1.0)  # draw at every step
    notes = tmp_path / "notes"
    for n in range(40):  # 40 files of 5 sections: 200 chunk texts, one batch
        sections = "".join(f"## Part {k}\n\nStep {n}-{k} of the rollout, checked by hand.\n\n" for k in range(5))
        write(notes, f"note{n:02}.md", f"# Note {n}\n\n{sections}")
    counts: list[int] = []
    real = type(engine).try_embed

    def counted(self, texts):
        counts.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(type(engine), "try_embed", counted)
    master, tty = pty(120)
    with tty:
        monkeypatch.setattr("sys.stderr", tty)
        report = indexer.index_paths(engine, [notes], show_progress=True)
    lines = drawn(master)
    assert report.indexed == 200 and sum(counts) == 200
    assert max(counts) <= 64 and len(counts) == 4
    done = [int(m.group(1)) for line in lines if (m := re.search(r"\] (\d+)/40 ", line))]
    assert len(set(done)) >= 5 and done == sorted(done) and done[-1] == 40, done  # 0, then per slice


def test_an_interrupted_run_ends_its_progress_line_before_saying_so(db_file, tmp_path, monkeypatch):
    """Ctrl-C raised from the embedder's first call (a fake fault: a real signal's timing is not
    the test's to choose); the line the bar drew is kept and the message starts a line of its own."""
    from captain_memo.engine.core import Engine

    repo = init_repo(tmp_path / "repo")
    commit(repo, "Tune the cache", {"cache.py": "SIZE = 1\n"})
    monkeypatch.chdir(repo)

    def interrupted(self, texts):
        raise KeyboardInterrupt

    monkeypatch.setattr(Engine, "try_embed", interrupted)
    master, tty = pty(120)
    with tty:
        monkeypatch.setattr("sys.stderr", tty)
        assert main(["--db", str(db_file), "index", "--git"]) == 130
    shown = read_terminal(master)
    os.close(master)
    assert re.search(r"commits \[-+\] 0/1 [^\n]*\x1b\[K\r?\ncaptain-memo: interrupted", shown), repr(shown)


def test_index_git_with_no_note_folders_draws_only_the_commits(db_file, tmp_path, monkeypatch):
    repo = init_repo(tmp_path / "repo")
    for n in range(3):
        commit(repo, f"Tune the cache step {n}", {"cache.py": f"SIZE = {n}\n"})
    monkeypatch.chdir(repo)
    master, tty = pty(120)
    with tty:
        monkeypatch.setattr("sys.stderr", tty)
        assert main(["--db", str(db_file), "index", "--git"]) == 0
    lines = drawn(master)
    assert not any("0/0" in line for line in lines), lines
    assert lines and all(line.startswith("commits ") for line in lines), lines
    assert "3/3" in lines[-1]


# -- the rest of a new user's first hour -----------------------------------------------------------------


def test_index_git_after_an_interrupted_first_run_says_what_is_true(db_file, tmp_path, capsys, monkeypatch):
    """Ctrl-C is raised in the main thread wherever it is; here it is raised from the embedder on
    its second call (a fake fault: the timing of a real signal would make the test flaky)."""
    from captain_memo.engine.core import Engine
    from captain_memo.sources import git_history

    repo = init_repo(tmp_path / "repo")
    for n in range(8):
        commit(repo, f"Tune the cache step {n}", {"cache.py": f"SIZE = {n}\n"})
    monkeypatch.chdir(repo)
    monkeypatch.setattr(git_history, "BATCH_COMMITS", 2)
    calls = []
    real = Engine.try_embed

    def interrupted(self, texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts)

    monkeypatch.setattr(Engine, "try_embed", interrupted)
    assert main(["--db", str(db_file), "index", "--git", "--max-commits", "6"]) == 130
    monkeypatch.setattr(Engine, "try_embed", real)
    out = run(capsys, db_file, "index", "--git", "--max-commits", "6")
    assert "first run" not in out
    assert "git: 4 new commits · 2 already stored" in out
    assert "left out: 2 older commits, past the newest 6 read (--max-commits N" in out


def test_import_in_a_repository_stores_its_project_by_default(db_file, tmp_path, capsys, monkeypatch):
    from captain_memo.base.git_context import git_context

    repo = init_repo(tmp_path / "repo")
    commit(repo, "Start", {"README.md": "# Shop\n"})
    lines = write(tmp_path, "notes.jsonl", '{"text": "Prices are rounded once, at the invoice total."}\n')
    monkeypatch.chdir(repo)
    assert "imported 1 memory" in run(capsys, db_file, "import", str(lines))
    run(capsys, db_file, "import", "--project", "none", str(write(tmp_path, "p.jsonl", '{"text": "Personal."}\n')))
    store = Store(db_file)
    try:
        projects = {m.body: m.project for m in store.list_memories()}
    finally:
        store.close()
    assert projects == {
        "Prices are rounded once, at the invoice total.": git_context(repo).project,
        "Personal.": None,
    }


def test_a_command_line_option_is_a_name_searched_whole(engine):
    from captain_memo.ranking.query import analyse, is_code_shaped
    from captain_memo.records import NewMemory, RecallRequest

    for token in ("--lf", "-k", "--tb=short", "-Wall", "--no-header"):
        assert is_code_shaped(token), token
    for token in ("-", "--", "-5", "well-known", "e-mail"):
        assert not is_code_shaped(token), token
    assert analyse("what does --lf do").identifiers == ("--lf",)

    engine.remember(NewMemory(body="LF lf LF: normalise lf line endings to LF", kind="observation", title="LF"))
    engine.remember(
        NewMemory(
            body="Rerunning failures: `--lf`, `--last-failed` reruns only the tests that failed at the last run; "
            "`--ff` runs them first and then the rest of the suite.",
            kind="memory",
            title="Cache plugin options",
        )
    )
    hits = engine.recall(RecallRequest("what does --lf do", record=False)).hits
    assert hits[0].memory.title == "Cache plugin options", [h.memory.title for h in hits]


def test_an_unknown_option_prints_the_commands_own_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["recall", "--bogus", "rounding"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert (
        err.startswith("usage: captain-memo recall ")
        and "captain-memo recall: error: unrecognized arguments: --bogus" in err
    )
    with pytest.raises(SystemExit):
        main(["--bogus"])
    assert "captain-memo: error: unrecognized arguments: --bogus" in capsys.readouterr().err
