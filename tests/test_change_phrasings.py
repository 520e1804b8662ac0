"""Change questions as a new user phrases them: "what's new in <module>", a file name that another
file's name ends with (test_capture.py), "since 8.0" when the tag is 8.0.0, and commits made in the
same second (a rebased stack) in history's order.

A real git repository in a tmp folder, indexed with ``index --git``; recalls on the real engine and
the local model with a fixed clock."""

from __future__ import annotations

import pytest
from sources_support import git, write

from captain_memo.base.git_context import git_context
from captain_memo.engine.core import Engine
from captain_memo.sources.git_history import index_history
from captain_memo.store import Store

DAY = 86400.0
START = 1_741_608_000.0  # 2025-03-10 12:00 UTC
COMMITS = [  # (day, subject, files, tag)
    (0, "Capture stdout into a buffer", ["src/pkg/capture.py"], "8.0.0"),
    (1, "Start the assertion package", ["src/pkg/assertion/__init__.py", "src/pkg/assertion/util.py"], None),
    (2, "Rewrite asserts to explain themselves", ["src/pkg/assertion/rewrite.py"], None),
    (5, "Retry flaky capture tests", ["testing/test_capture.py"], None),
    (8, "Speed up the runner", ["src/pkg/runner.py"], "8.3.0"),
    (9, "Runner reads its options once", ["src/pkg/runner.py"], None),
    # A rebased stack: three commits with one commit time, the last of them newest in history.
    (12, "Stack one: parse the ini", ["src/pkg/config.py"], None),
    (12, "Stack two: validate the ini", ["src/pkg/config.py"], None),
    (12, "Stack three: document the ini", ["src/pkg/config.py"], None),
]


pytestmark = pytest.mark.usefixtures("utc")  # days start at local midnight; read in UTC


@pytest.fixture(scope="module")
def engine(tmp_path_factory, local_embedder):
    root = tmp_path_factory.mktemp("phrasings")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for day, subject, files, tag in COMMITS:
        for path in files:
            write(repo, path, f"{subject}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", subject, when=START + day * DAY)
        if tag:
            git(repo, "tag", tag)
    engine = Engine(Store(root / "memo.db"), local_embedder, clock=lambda: START + 13 * DAY)
    index_history(engine, repo)
    engine.project = git_context(repo).project  # type: ignore[attr-defined]
    yield engine
    engine.close()


def observations(engine, query: str) -> list[str]:
    result = engine.recall(query, project=engine.project, record=False)
    return [hit.memory.title for hit in result.hits if hit.memory.kind == "observation"]


@pytest.mark.parametrize("question", ["what's new in runner", "whats new in runner", "what is new in runner"])
def test_whats_new_in_a_module_is_a_change_question(engine, question):
    result = engine.recall(question, project=engine.project, record=False)
    first, second = result.hits[:2]
    assert [first.memory.title, second.memory.title] == ["Runner reads its options once", "Speed up the runner"]
    assert [f.detail for f in first.factors if f.name == "touches"] == [
        "touches src/pkg/runner.py: changes first, newest first"
    ]


def test_a_file_name_is_that_file_not_one_whose_name_ends_with_it(engine):
    found = observations(engine, "what changed recently in capture.py")
    assert found[0] == "Capture stdout into a buffer"
    assert "Retry flaky capture tests" not in found[:1]


@pytest.mark.parametrize("question", ["what changed since 8.0", "what changed since the 8.3 release"])
def test_a_short_tag_names_the_release_tagged_with_zeros(engine, question):
    result = engine.recall(question, project=engine.project, record=False)
    assert "no tag" not in result.notice, result.notice
    assert "after the tag" in result.notice


def test_commits_of_one_second_come_in_history_order(engine):
    assert observations(engine, "latest change to config")[:3] == [
        "Stack three: document the ini",
        "Stack two: validate the ini",
        "Stack one: parse the ini",
    ]


def test_a_window_before_the_stored_history_says_where_it_starts(engine):
    result = engine.recall("what changed in runner in 2019", project=engine.project, record=False)
    assert "the stored history starts on 2025-03-10, after it" in result.notice, result.notice
    assert "--max-commits" in result.notice
    assert "nothing touching runner" not in result.notice


def test_a_package_s_name_covers_every_file_under_it(engine):
    assert observations(engine, "latest change to assertion")[0] == "Rewrite asserts to explain themselves"
