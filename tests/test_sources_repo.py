"""A real repository with decisions, skills and 30 commits, indexed end to end (HashEmbedder counts
every text sent to the embedder, so "nothing re-embedded" is measured, not assumed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sources_support import BASE_DAY, DECISION_SQLITE, git, make_project, write

from captain_memo.sources.git_history import index_history
from captain_memo.sources.indexer import index_configured
from captain_memo.sources.markdown import parse_date


@pytest.fixture(scope="module")
def template_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("template") / "service"
    return root, make_project(root, commits=30)


@pytest.fixture
def repo(template_repo, tmp_path):
    """A fresh copy per test (30 git commits take ~1 s to make; a copy takes a few ms)."""
    source, shas = template_repo
    root = tmp_path / "service"
    shutil.copytree(source, root, symlinks=True)
    return root, shas


def index_all(engine, root: Path):
    return index_configured(engine, cwd=root), index_history(engine, root)


def by_key(engine) -> dict:
    return {m.source_key: m for m in engine.store.list_memories(limit=1000)}


def test_index_creates_kinds_dates_branches_and_sources(engine, repo):
    root, shas = repo
    notes, history = index_all(engine, root)
    memories = by_key(engine)

    decisions = [m for k, m in memories.items() if k.startswith("file:docs/decisions/")]
    skills = [m for k, m in memories.items() if k.startswith("file:.captain-memo/skills/")]
    commits = [m for k, m in memories.items() if k.startswith("commit:")]
    assert {m.kind for m in decisions} == {"memory"}
    assert {m.kind for m in skills} == {"skill"}
    assert {m.kind for m in commits} == {"observation"}
    assert len(commits) == 30 and history.indexed == 30
    # 0001: preamble, Context, Decision, Consequences; 0002: Allocation, Exceptions (its preamble is only a heading)
    assert len(decisions) == 6 and notes.indexed == len(decisions) + len(skills)

    project = engine.store.get(decisions[0].id).project
    assert project and Path(project).resolve() == (root / ".git").resolve().parent
    assert {m.branch for m in memories.values()} == {"main"}
    assert {m.project for m in memories.values()} == {project}

    decision = memories["file:docs/decisions/0001-sqlite.md#decision"]
    assert decision.title == "Store memories in SQLite > Decision"
    assert decision.created_at == parse_date("2024-02-10")  # from the front matter
    assert decision.tags == ("storage", "sqlite")
    assert decision.source.path == "docs/decisions/0001-sqlite.md" and decision.source.origin == "file"
    lines = DECISION_SQLITE.splitlines()
    assert lines[decision.source.line_start - 1] == "## Decision"
    assert lines[decision.source.line_end - 1] == "```"
    assert "## not a heading" in decision.body  # the fence stayed inside its section

    skill = memories["file:.captain-memo/skills/release/SKILL.md#top"]
    assert skill.title == "cut-a-release"
    assert skill.body.startswith("How to cut and publish a release")

    first = memories[f"commit:{shas[0]}"]
    assert first.created_at == BASE_DAY  # the commit date
    assert first.source.commit == shas[0] and first.source.origin == "git"
    assert "docs/decisions/0001-sqlite.md" in first.body  # files touched are listed
    single = memories[f"commit:{shas[7]}"]
    assert single.title == "Tune worker pool step 7"
    assert single.source.path == "src/worker_2.py" and single.created_at == BASE_DAY + 7 * 86400


def test_second_run_embeds_nothing(engine, repo, hash_embedder):
    root, _ = repo
    index_all(engine, root)
    calls, texts = hash_embedder.calls, hash_embedder.texts_embedded
    assert texts > 0
    notes, history = index_all(engine, root)
    assert (hash_embedder.calls, hash_embedder.texts_embedded) == (calls, texts)
    assert notes.indexed == notes.updated == notes.removed == 0 and notes.unchanged == 10
    assert history.indexed == 0 and history.chunks_embedded == 0


def test_editing_one_section_reembeds_only_its_chunks_and_keeps_the_rest(engine, repo, hash_embedder):
    root, _ = repo
    index_all(engine, root)
    before = by_key(engine)
    context = before["file:docs/decisions/0001-sqlite.md#context"]
    consequences = before["file:docs/decisions/0001-sqlite.md#consequences"]
    engine.show(context.id)  # Tide: opened in full, stability grows
    engine.show(consequences.id)
    opened = engine.store.get(consequences.id)
    chunk_ids = {c.id for c in engine.store.chunks_of(consequences.id)}

    edited = DECISION_SQLITE.replace(
        "survives crashes and needs no server.", "survives crashes, needs no server,\nand can be copied as a backup."
    )
    write(root, "docs/decisions/0001-sqlite.md", edited)
    texts = hash_embedder.texts_embedded
    notes = index_configured(engine, cwd=root)

    changed = engine.store.get(context.id)
    assert hash_embedder.texts_embedded - texts == len(engine.store.chunks_of(context.id)) == 1
    assert notes.updated == 1 and notes.unchanged == 9 and notes.indexed == notes.removed == 0
    assert "copied as a backup" in changed.body and changed.id == context.id
    assert changed.opened_in_full and changed.stability == engine.store.get(context.id).stability > 7.0
    # The section below moved down a line: same id, same Tide fields, same chunks, new line range.
    after = engine.store.get(consequences.id)
    assert (after.stability, after.last_surfaced, after.opened_in_full) == (
        opened.stability,
        opened.last_surfaced,
        opened.opened_in_full,
    )
    assert after.source.line_start == opened.source.line_start + 1
    assert {c.id for c in engine.store.chunks_of(consequences.id)} == chunk_ids


def test_deleting_a_file_removes_its_memories(engine, repo):
    root, _ = repo
    index_all(engine, root)
    doomed = [m.id for k, m in by_key(engine).items() if k.startswith("file:docs/decisions/0002-ports.md#")]
    assert len(doomed) == 2
    (root / "docs/decisions/0002-ports.md").unlink()
    vectors = engine.store.counts()["vectors"]
    notes = index_configured(engine, cwd=root)
    assert notes.removed == 2 and notes.unchanged == 8
    left = by_key(engine)
    assert not any(k.startswith("file:docs/decisions/0002-ports.md#") for k in left)
    assert not {m.id for m in left.values()} & set(doomed)
    counts = engine.store.counts()
    assert counts["vectors"] == vectors - 2 and counts["chunks"] == counts["fts_rows"] == counts["vectors"]


def test_new_commits_only_are_embedded_and_branches_are_recorded(engine, repo, hash_embedder):
    root, _ = repo
    index_history(engine, root)
    git(root, "checkout", "-q", "-b", "feature/cache")
    write(root, "src/cache.py", "TTL = 30\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add a response cache", when=BASE_DAY + 40 * 86400)
    texts = hash_embedder.texts_embedded
    history = index_history(engine, root)
    assert history.indexed == 1 and hash_embedder.texts_embedded - texts == 1
    cache = [m for m in engine.store.list_memories(kind="observation", limit=100) if m.title == "Add a response cache"]
    assert [m.branch for m in cache] == ["feature/cache"]
    assert {m.branch for m in engine.store.list_memories(kind="observation", limit=100)} == {"main", "feature/cache"}
