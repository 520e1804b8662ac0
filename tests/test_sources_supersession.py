"""Automatic supersession of version facts, on the real embedding model (the cosine threshold is a
statement about that model's vectors, so a fake embedder would prove nothing here)."""

from __future__ import annotations

import pytest

from captain_memo.cli.main import main
from captain_memo.records import NewMemory, Superseded
from captain_memo.sources.supersession import masked, version_fact

ROUTINE = "Rolled out to production; all health checks stayed green."
ROLLBACK = "Rolled back within minutes: the orders migration locked its table and checkout timed out."


def observe(engine, text: str, branch: str = "main", project: str | None = "svc") -> int:
    title = text.splitlines()[0]
    return engine.remember(NewMemory(body=text, kind="observation", title=title, project=project, branch=branch))


def test_a_newer_version_supersedes_the_same_fact_on_the_same_branch(local_engine):
    old = observe(local_engine, "deploy version 2.3.0")
    new = observe(local_engine, "deploy version 2.4.1")
    assert local_engine.store.get(old).superseded_by == new
    assert local_engine.store.get(new).superseded_by is None
    assert local_engine.store.superseded() == [Superseded(old, new, True, "deploy version 2.3.0")]


def test_not_on_another_branch_nor_in_another_project(local_engine):
    old = observe(local_engine, "deploy version 2.3.0", branch="main")
    observe(local_engine, "deploy version 2.4.1", branch="release/2.4")
    observe(local_engine, "deploy version 2.4.1", branch="main", project="other-service")
    assert local_engine.store.get(old).superseded_by is None


def test_not_when_the_text_differs_below_the_cosine_threshold(local_engine):
    texts = [f"deploy version 2.3.0\n{ROUTINE}", f"deploy version 2.4.1\n{ROLLBACK}"]
    vectors = local_engine.embed([masked(t) for t in texts])
    cosine = float(vectors[0] @ vectors[1])
    assert cosine < 0.93  # the titles match; what happened does not
    old = observe(local_engine, texts[0])
    observe(local_engine, texts[1])
    assert local_engine.store.get(old).superseded_by is None


def test_the_same_story_in_other_words_is_close_enough(local_engine):
    old = observe(local_engine, f"deploy version 2.3.0\n{ROUTINE}")
    new = observe(local_engine, "deploy version 2.4.1\nRolled out to production; all the health checks stayed green.")
    assert local_engine.store.get(old).superseded_by == new


def test_a_lower_or_equal_version_supersedes_nothing(local_engine):
    newest = observe(local_engine, "deploy version 2.4.1")
    observe(local_engine, "deploy version 2.2.0")
    observe(local_engine, "deploy version 2.4.1")
    assert local_engine.store.get(newest).superseded_by is None


def test_undo_restores_it_and_the_ranker_stops_demoting_it(local_engine):
    old = observe(local_engine, "deploy version 2.3.0")
    observe(local_engine, "deploy version 2.4.1")
    hits = {h.memory.id: h for h in local_engine.recall("deploy version", project="svc", record=False).hits}
    assert hits[old].factor("superseded") == 0.5
    local_engine.unsupersede(old)
    assert local_engine.store.get(old).superseded_by is None and local_engine.store.superseded() == []
    hits = {h.memory.id: h for h in local_engine.recall("deploy version", project="svc", record=False).hits}
    assert hits[old].factor("superseded") == 1.0


def test_switched_off_and_threshold_from_the_environment(local_engine, monkeypatch):
    monkeypatch.setenv("CAPTAIN_MEMO_AUTO_SUPERSEDE", "0")
    off = observe(local_engine, "deploy version 1.0.0")
    observe(local_engine, "deploy version 1.0.1")
    assert local_engine.store.get(off).superseded_by is None
    monkeypatch.setenv("CAPTAIN_MEMO_AUTO_SUPERSEDE", "1")
    monkeypatch.setenv("CAPTAIN_MEMO_AUTO_SUPERSEDE_COSINE", "0.1")
    loose = observe(local_engine, f"release version 3.0.0\n{ROUTINE}")
    new = observe(local_engine, f"release version 3.1.0\n{ROLLBACK}")
    assert local_engine.store.get(loose).superseded_by == new


def test_curated_memory_is_never_superseded_automatically(local_engine):
    curated = local_engine.remember(
        NewMemory(body="deploy version 2.3.0", title="deploy version 2.3.0", project="svc", branch="main")
    )
    observe(local_engine, "deploy version 2.4.1")
    assert local_engine.store.get(curated).superseded_by is None


@pytest.mark.parametrize(
    "title, template, versions",
    [
        ("deploy version 2.4.1", "deploy version \x00", [(2, 4, 1)]),
        ("Deploy  version v2.4.1.", "deploy version \x00", [(2, 4, 1)]),
        ("upgrade postgres 15.2 to 16.1", "upgrade postgres \x00 to \x00", [(15, 2, 0), (16, 1, 0)]),
        ("step 3 of the runbook", None, None),
        ("see src/v1.2/api.py", None, None),
        ("released 2.4.1-rc.1", "released \x00", [(2, 4, 1)]),
    ],
)
def test_what_counts_as_a_version_fact(title, template, versions):
    fact = version_fact(title)
    if template is None:
        assert fact is None
    else:
        assert fact[0] == template and [v[:3] for v in fact[1]] == versions


def test_a_release_candidate_is_below_its_release():
    assert version_fact("ship 2.4.1-rc.1")[1] < version_fact("ship 2.4.1")[1] < version_fact("ship 2.4.2")[1]
    assert version_fact("ship 2.4")[1] == version_fact("ship 2.4.0")[1]


def test_observe_command_reports_and_supersede_list_shows_it(db_file, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    base = ["--db", str(db_file)]
    assert main(base + ["observe", "--project", "svc", "--branch", "main", "deploy version 2.3.0"]) == 0
    assert main(base + ["observe", "--project", "svc", "--branch", "main", "deploy version 2.4.1"]) == 0
    out = capsys.readouterr().out
    assert "observed #2" in out and "supersedes #1: deploy version 2.3.0" in out
    assert main(base + ["supersede", "--list"]) == 0
    assert "#1 superseded by #2 (auto): deploy version 2.3.0" in capsys.readouterr().out
    assert main(base + ["supersede", "--undo", "1"]) == 0
    capsys.readouterr()
    assert main(base + ["supersede", "--list"]) == 0
    assert capsys.readouterr().out == ""


# -- only where two memories state the current version of the same thing ----------------------------


def test_commits_from_git_history_never_supersede_each_other(local_engine, tmp_path):
    """Two release commits are two events, not two versions of one fact."""
    from sources_support import commit, init_repo

    from captain_memo.sources.git_history import index_history

    root = init_repo(tmp_path / "repo")
    commit(root, "Cherry pick 8.0.2 release notes", {"doc/changelog.rst": "8.0.2\n"}, when=1_700_000_000)
    commit(root, "Cherry pick 8.4.1 release notes", {"doc/changelog.rst": "8.4.1\n"}, when=1_700_100_000)
    commit(root, "Release version 8.4.1", {"VERSION": "8.4.1\n"}, when=1_700_200_000)
    commit(root, "Release version 8.4.2", {"VERSION": "8.4.2\n"}, when=1_700_300_000)
    assert index_history(local_engine, root).indexed == 4
    assert local_engine.store.superseded() == []


@pytest.mark.parametrize(
    "older, newer",
    [
        ("Cherry pick 8.0.2 release notes", "Cherry pick 8.4.1 release notes"),
        ("upgrade postgres 15.2 to 16.1", "upgrade postgres 16.1 to 17.0"),
    ],
)
def test_a_version_inside_an_event_is_not_a_current_version(local_engine, older, newer):
    old = observe(local_engine, older)
    observe(local_engine, newer)
    assert local_engine.store.get(old).superseded_by is None


def test_a_stated_version_still_supersedes_an_older_statement(local_engine):
    old = observe(local_engine, "payments service runs postgres: 15.2")
    new = observe(local_engine, "payments service runs postgres: 16.1")
    assert local_engine.store.get(old).superseded_by == new
