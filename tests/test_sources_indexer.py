"""Incremental indexing of folders: skipped files, renames, personal folders, the editor's
per-file entry point, an embedder that is down."""

from __future__ import annotations

import os
import time

import pytest
from fakes import failing
from sources_support import DECISION_PORTS, DECISION_SQLITE, init_repo, write

from captain_memo.errors import InputError
from captain_memo.sources.folders import read_note
from captain_memo.sources.indexer import index_file, index_paths
from captain_memo.sources.settings import source_settings

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
LATIN1 = "Café résumé: naïve façade, déjà vu, garçon, señor, über.".encode("latin-1")


def keys(engine) -> set[str]:
    return {m.source_key for m in engine.store.list_memories(limit=1000)}


def test_binary_invalid_utf8_and_oversized_files_are_skipped_and_reported(engine, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    write(notes, "good.md", DECISION_PORTS)
    write(notes, "diagram.md", PNG)
    write(notes, "latin1.md", LATIN1)
    write(notes, "huge.md", "word " * 3000)
    write(notes, "sub/also-good.md", "# Also good\n\nIndexed despite its neighbours.\n")
    monkeypatch.setenv("CAPTAIN_MEMO_MAX_FILE_BYTES", "10000")
    report = index_paths(engine, [notes])

    reasons = dict(report.skipped_files)
    assert report.skipped == 3 and report.files == 5
    assert reasons[(notes / "diagram.md").as_posix()].startswith("binary (NUL byte at offset 8)")
    assert reasons[(notes / "latin1.md").as_posix()].startswith("not UTF-8 (")
    assert "over the 10,000-byte cap" in reasons[(notes / "huge.md").as_posix()]
    assert report.indexed == 3  # good.md's two sections and also-good.md
    assert {k.split("#")[0].rsplit("/", 1)[-1] for k in keys(engine)} == {"good.md", "also-good.md"}


def test_a_file_that_turns_binary_keeps_its_memories(engine, tmp_path, hash_embedder):
    notes = tmp_path / "notes"
    write(notes, "ports.md", DECISION_PORTS)
    index_paths(engine, [notes])
    before = keys(engine)
    write(notes, "ports.md", DECISION_PORTS.encode() + b"\x00")
    report = index_paths(engine, [notes])
    assert report.skipped == 1 and report.removed == 0 and keys(engine) == before


def test_read_note_repairs_a_few_invalid_bytes_and_says_so(tmp_path):
    path = write(tmp_path, "quote.md", b"Smart quote: " + b"\x93quoted\x94 text\n")
    note = read_note(path, 1 << 20)
    assert note.text == "Smart quote: \ufffdquoted\ufffd text\n"
    assert note.problem == "repaired 2 invalid UTF-8 bytes (first at offset 13)"
    bom = read_note(write(tmp_path, "bom.md", b"\xef\xbb\xbf# Title\n"), 1 << 20)
    assert (bom.text, bom.problem) == ("# Title\n", None)


def test_a_renamed_file_keeps_ids_tide_fields_and_vectors(engine, tmp_path, hash_embedder):
    notes = tmp_path / "notes"
    write(notes, "ports.md", DECISION_PORTS)
    index_paths(engine, [notes])
    old = {m.title: m for m in engine.store.list_memories()}
    engine.show(old["Service ports > Allocation"].id)
    texts = hash_embedder.texts_embedded
    os.rename(notes / "ports.md", notes / "service-ports.md")
    report = index_paths(engine, [notes])
    assert hash_embedder.texts_embedded == texts  # same text: nothing embedded
    assert report.updated == 2 and report.removed == report.indexed == 0
    new = {m.title: m for m in engine.store.list_memories()}
    assert {t: m.id for t, m in new.items()} == {t: m.id for t, m in old.items()}
    moved = new["Service ports > Allocation"]
    assert moved.source.path == (notes / "service-ports.md").as_posix() and moved.opened_in_full
    assert moved.source_key.startswith(f"file:{(notes / 'service-ports.md').as_posix()}#")
    assert moved.created_at == old["Service ports > Allocation"].created_at


def test_removing_a_section_removes_only_that_memory(engine, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "ports.md", DECISION_PORTS)
    index_paths(engine, [notes])
    write(notes, "ports.md", DECISION_PORTS.split("## Exceptions")[0])
    report = index_paths(engine, [notes])
    assert (report.removed, report.unchanged) == (1, 1)
    assert [m.title for m in engine.store.list_memories()] == ["Service ports > Allocation"]


def test_personal_folders_belong_to_no_project_and_skill_folders_hold_skills(engine, tmp_path, monkeypatch):
    home = tmp_path / "me"
    write(home, "notes/vim.md", "# Vim\n\nUse `gq` to rewrap a paragraph.\n")
    write(home, "skills/bisect/SKILL.md", "---\nname: bisect\ndescription: Find the commit that broke it.\n---\n")
    monkeypatch.setenv("CAPTAIN_MEMO_NOTE_DIRS", f"{home / 'notes'}:{home / 'missing'}")
    monkeypatch.setenv("CAPTAIN_MEMO_SKILL_DIRS", str(home / "skills"))
    from captain_memo.sources.indexer import index_configured

    report = index_configured(engine, cwd=tmp_path)  # not inside a repository
    assert report.indexed == 2
    assert report.skipped_files == (
        ((home / "missing").as_posix(), "folder not found (CAPTAIN_MEMO_NOTE_DIRS / _SKILL_DIRS)"),
    )
    memories = {m.title: m for m in engine.store.list_memories()}
    assert memories["Vim"].kind == "memory" and memories["bisect"].kind == "skill"
    assert {m.project for m in memories.values()} == {None}
    assert memories["bisect"].body == "Find the commit that broke it."


def test_relative_note_dirs_are_extra_repository_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("CAPTAIN_MEMO_NOTE_DIRS", "notes/team:~/x")
    settings = source_settings()
    assert "notes/team" in settings.repo_note_dirs and "docs/decisions" in settings.repo_note_dirs
    assert settings.personal_note_dirs[0].name == "x" and settings.personal_note_dirs[0].is_absolute()


def test_index_file_is_a_no_op_outside_configured_folders(engine, tmp_path):
    repo = init_repo(tmp_path / "repo")
    other = write(repo, "src/notes.md", "# Not a configured folder\n\ntext\n")
    script = write(repo, "docs/decisions/run.py", "print('not a note')\n")
    started = time.perf_counter()
    for path in (other, script, tmp_path / "elsewhere.md"):
        report = index_file(engine, path, "proj", "main")
        assert report.files == 0 and report.indexed == 0
    assert time.perf_counter() - started < 5  # generous; the point is that nothing was indexed
    assert engine.store.counts()["memories"] == 0


def test_index_file_reindexes_one_written_file(engine, tmp_path, hash_embedder):
    repo = init_repo(tmp_path / "repo")
    path = write(repo, "docs/adr/0001-sqlite.md", DECISION_SQLITE)
    write(repo, "docs/adr/0002-ports.md", DECISION_PORTS)
    first = index_file(engine, path, "proj", "main")
    assert first.indexed == 4 and first.files == 1
    assert {m.project for m in engine.store.list_memories()} == {"proj"}
    assert {m.source.path for m in engine.store.list_memories()} == {"docs/adr/0001-sqlite.md"}

    write(repo, "docs/adr/0001-sqlite.md", DECISION_SQLITE.replace("Backups are a file copy.", "Backups: copy."))
    texts = hash_embedder.texts_embedded
    again = index_file(engine, path, "proj", "feature")
    assert (again.updated, again.unchanged, hash_embedder.texts_embedded - texts) == (1, 3, 1)
    changed = [m for m in engine.store.list_memories() if "Backups: copy." in m.body]
    assert [m.branch for m in changed] == ["feature"]

    path.unlink()
    gone = index_file(engine, path, "proj", "main")
    assert gone.removed == 4 and engine.store.counts()["memories"] == 0


def test_the_same_paths_from_the_editor_and_the_command_line(engine, tmp_path, monkeypatch):
    repo = init_repo(tmp_path / "repo")
    path = write(repo, ".captain-memo/memory/conventions.md", "# Conventions\n\nSnake case for SQL columns.\n")
    from captain_memo.base.git_context import git_context

    ctx = git_context(repo)
    index_file(engine, path, ctx.project, ctx.branch)
    report = index_paths(engine, [repo / ".captain-memo"])
    assert report.unchanged == 1 and report.indexed == 0


def test_an_embedder_that_is_down_stores_text_and_a_later_run_fills_vectors(engine, tmp_path, hash_embedder):
    notes = tmp_path / "notes"
    write(notes, "ports.md", DECISION_PORTS)
    hash_embedder.fail = failing()
    report = index_paths(engine, [notes])
    assert report.indexed == 2 and report.chunks_embedded == 0
    assert report.warnings[0][0] == "embedder"
    assert engine.store.counts()["pending_vectors"] == 2
    hash_embedder.fail = None
    again = index_paths(engine, [notes])
    assert again.unchanged == 2 and again.chunks_embedded == 2
    assert engine.store.counts()["pending_vectors"] == 0


def test_a_missing_path_is_a_clear_error(engine, tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        index_paths(engine, [tmp_path / "nope"])


def test_private_spans_are_not_stored_and_line_numbers_stay_true(engine, tmp_path):
    notes = tmp_path / "notes"
    text = "# Access\n\n## Staging\n\nUser deploy, <private>password\nhunter2</private> in the vault.\n\n## Prod\n\nAsk ops.\n"
    write(notes, "access.md", text)
    index_paths(engine, [notes])
    memories = {m.title: m for m in engine.store.list_memories()}
    assert "hunter2" not in memories["Access > Staging"].body
    assert not any("hunter2" in c.text for m in memories.values() for c in engine.store.chunks_of(m.id))
    prod = memories["Access > Prod"]
    assert text.splitlines()[prod.source.line_start - 1] == "## Prod"


def test_indexing_a_whole_repository_keeps_skill_folders_as_skills(engine, tmp_path):
    repo = init_repo(tmp_path / "repo")
    write(repo, "README.md", "# Service\n\nWhat it does.\n")
    write(repo, ".captain-memo/skills/rollback.md", "# Roll back\n\nRun the rollback job.\n")
    write(repo, "node_modules/pkg/README.md", "# A dependency\n\nNot ours.\n")
    report = index_paths(engine, [repo])
    kinds = {m.source.path: m.kind for m in engine.store.list_memories()}
    assert kinds == {"README.md": "memory", ".captain-memo/skills/rollback.md": "skill"}
    assert report.indexed == 2


def test_a_note_moved_into_a_skill_folder_becomes_a_skill_without_reembedding(engine, tmp_path, hash_embedder):
    repo = init_repo(tmp_path / "repo")
    write(repo, "docs/decisions/rollback.md", "# Roll back\n\nRun the rollback job, then watch errors.\n")
    from captain_memo.sources.indexer import index_configured

    index_configured(engine, cwd=repo)
    before = engine.store.list_memories()
    texts = hash_embedder.texts_embedded
    (repo / ".captain-memo/skills").mkdir(parents=True)
    os.rename(repo / "docs/decisions/rollback.md", repo / ".captain-memo/skills/rollback.md")
    report = index_configured(engine, cwd=repo)
    after = engine.store.list_memories()
    assert report.updated == 1 and report.removed == 0 and hash_embedder.texts_embedded == texts
    assert [(m.id, m.kind) for m in after] == [(before[0].id, "skill")]


def test_a_credential_in_a_note_is_reported_or_redacted(engine, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    token = "ghp_" + "a1B2c3D4e5" * 4
    write(notes, "ci.md", f"# CI\n\n## Token\n\nThe bot uses {token} for releases.\n")
    report = index_paths(engine, [notes])
    assert report.indexed == 1
    assert report.warnings[0][0] == (notes / "ci.md").as_posix()
    assert "line 5: GitHub token" in report.warnings[0][1] and token not in report.warnings[0][1]

    monkeypatch.setenv("CAPTAIN_MEMO_REDACT_SECRETS", "1")
    write(notes, "ci.md", f"# CI\n\n## Token\n\nThe bot uses {token} for all releases.\n")
    report = index_paths(engine, [notes])
    memory = engine.store.list_memories()[0]
    assert report.updated == 1 and report.warnings == ()
    assert token not in memory.body and "[REDACTED GitHub token]" in memory.body
    again = index_paths(engine, [notes])  # the stored text is the redacted one: still unchanged
    assert again.unchanged == 1 and again.updated == 0


def test_index_file_in_a_personal_folder_ignores_the_project_and_follows_a_delete(engine, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    monkeypatch.setenv("CAPTAIN_MEMO_NOTE_DIRS", str(notes))
    path = write(notes, "shell.md", "# Shell\n\n`set -euo pipefail` at the top of every script.\n")
    assert index_file(engine, path, "some-project", "main").indexed == 1
    assert [m.project for m in engine.store.list_memories()] == [None]
    path.unlink()
    assert index_file(engine, path, "some-project", "main").removed == 1
    assert engine.store.counts()["memories"] == 0


def test_a_forgotten_section_of_an_unchanged_file_comes_back_on_the_next_run(engine, tmp_path, hash_embedder):
    notes = tmp_path / "notes"
    write(notes, "ports.md", DECISION_PORTS)
    index_paths(engine, [notes])
    assert index_paths(engine, [notes]).unchanged == 2  # the file is recognised whole, unparsed
    gone = next(m for m in engine.store.list_memories() if m.title == "Service ports > Exceptions")
    engine.forget(gone.id)
    texts = hash_embedder.texts_embedded
    report = index_paths(engine, [notes])
    assert (report.indexed, report.unchanged) == (1, 1) and hash_embedder.texts_embedded == texts + 1
    assert sorted(m.title for m in engine.store.list_memories()) == [
        "Service ports > Allocation",
        "Service ports > Exceptions",
    ]


def test_switching_redaction_on_rereads_unchanged_files(engine, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    token = "ghp_" + "a1B2c3D4e5" * 4
    write(notes, "ci.md", f"# CI\n\nThe bot uses {token}.\n")
    index_paths(engine, [notes])
    monkeypatch.setenv("CAPTAIN_MEMO_REDACT_SECRETS", "1")
    report = index_paths(engine, [notes])
    assert report.updated == 1 and token not in engine.store.list_memories()[0].body
