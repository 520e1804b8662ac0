"""Change questions are answered from the changes, and time words by dates.

A real git repository with dated commits (one of them a lint sweep over 31 files whose subject
names no module, touching ``_capture.py`` after the 20 files its body lists), indexed with
``index --git`` beside a note about capture; recalls on the real engine and the local model with a
fixed clock, so that "last week" means the same dates on every run."""

from __future__ import annotations

import pytest
from mcp_support import connect, run
from sources_support import git, write

from captain_memo.base.git_context import git_context
from captain_memo.engine.core import Engine
from captain_memo.records import NewMemory
from captain_memo.sources.git_history import index_history
from captain_memo.store import Store

DAY = 86400.0
START = 1_741_608_000.0  # 2025-03-10 12:00 UTC
SWEEP = "[ruff] Enable PERF102 (incorrect dict iterator)"
COMMITS = [  # (day, subject, files)
    (0, "Fix the capture of stdout", ["src/pkg/_capture.py"]),
    (3, "Speed up the runner", ["src/pkg/runner.py"]),
    (5, "Order hits newest first", ["src/pkg/latest.py"]),
    (10, "release version 1.0", ["CHANGES.md"]),
    (20, SWEEP, [f"src/lint/mod{n:02d}.py" for n in range(30)] + ["src/pkg/_capture.py"]),
    (25, "Update the changelog", ["CHANGES.md"]),
    (40, "Speed up the runner again", ["src/pkg/runner.py"]),
]
CAPTURE_NOTE = "How capture works: capture swaps sys.stdout for a buffer; every capture fixture reads it back."


pytestmark = pytest.mark.usefixtures("utc")  # days start at local midnight; read in UTC


@pytest.fixture(scope="module")
def history(tmp_path_factory, local_embedder):
    root = tmp_path_factory.mktemp("changes")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for day, subject, files in COMMITS:
        for path in files:
            write(repo, path, f"{path} on day {day}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", subject, when=START + day * DAY)
        if subject.startswith("release"):
            git(repo, "tag", "1.0")
    db = root / "memo.db"
    engine = Engine(Store(db), local_embedder)
    index_history(engine, repo)
    project = git_context(repo).project
    engine.remember(NewMemory(body=CAPTURE_NOTE, title="How capture works", project=project))
    engine.close()
    return {"repo": repo, "db": db, "project": project}


@pytest.fixture(scope="module")
def engines(history, local_embedder):
    """An engine on the history at a given moment (days after the first commit)."""
    opened = []

    def at(day: float) -> Engine:
        engine = Engine(Store(history["db"]), local_embedder, clock=lambda: START + day * DAY)
        opened.append(engine)
        return engine

    yield at
    for engine in opened:
        engine.close()


def titles(result) -> list[str]:
    return [hit.memory.title for hit in result.hits]


def observations(result) -> list[str]:
    return [hit.memory.title for hit in result.hits if hit.memory.kind == "observation"]


def recall(engines, history, query: str, day: float = 41.5):
    return engines(day).recall(query, project=history["project"], record=False)


@pytest.mark.parametrize(
    "question",
    [
        "latest change to capture",
        "what changed most recently in capture",
        "latest change to src/pkg/_capture.py",
        "latest change to _capture.py",
        "when did we last touch pkg.capture",
        "recent changes to `pkg._capture`",
    ],
)
def test_a_sweep_that_names_no_module_is_the_latest_change_to_it(engines, history, question):
    """The sweep's body lists 20 of its 31 files and then "and 11 more": _capture.py is not in its
    text at all, only in its touched paths. It comes first, the older fix second, the note after."""
    result = recall(engines, history, question)
    assert titles(result)[:2] == [SWEEP, "Fix the capture of stdout"], titles(result)
    assert titles(result).index("How capture works") > 1
    sweep = result.hits[0]
    assert "_capture" not in sweep.memory.body and "and 11 more" in sweep.memory.body
    [touches] = [f for f in sweep.factors if f.name == "touches"]
    assert touches.detail.startswith("touches src/pkg/_capture.py")


def test_a_module_named_like_a_time_word_is_still_the_topic(engines, history):
    """ "latest" is a time word, left out of the topic; after "to" it names latest.py."""
    result = recall(engines, history, "latest change to latest")
    assert titles(result)[0] == "Order hits newest first"


def test_a_question_about_something_other_than_a_change_keeps_to_relevance(engines, history):
    result = recall(engines, history, "what is the latest on how capture works")
    assert titles(result)[0] == "How capture works"
    assert not any(f.name == "touches" for hit in result.hits for f in hit.factors)


@pytest.mark.parametrize(
    ("question", "day", "expected", "label"),
    [
        ("what changed in the runner last week", 41.5, ["Speed up the runner again"], "last week (from 2025-04-15)"),
        ("what changed since yesterday", 40.5, ["Speed up the runner again"], "since yesterday (from 2025-04-19)"),
        (
            "what changed in March",
            41.5,
            [
                SWEEP,
                "release version 1.0",
                "Order hits newest first",
                "Speed up the runner",
                "Fix the capture of stdout",
            ],
            "in March (2025-03-01 to 2025-03-31)",
        ),
        ("what changed this month", 41.5, ["Speed up the runner again", "Update the changelog"], "this month"),
        ("what changed since 1.0", 41.5, ["Speed up the runner again", "Update the changelog", SWEEP], "after the tag"),
        ("changes since the 1.0 release", 41.5, ["Speed up the runner again", "Update the changelog", SWEEP], "1.0"),
    ],
)
def test_a_window_holds_the_observations_inside_it_newest_first(engines, history, question, day, expected, label):
    result = recall(engines, history, question, day)
    assert observations(result) == expected, (titles(result), result.notice)
    assert label in result.notice


def test_an_empty_window_says_so_and_offers_the_newest_before_it(engines, history):
    result = recall(engines, history, "what changed in capture this month")
    assert "nothing touching capture in it; the newest before it" in result.notice
    assert observations(result)[:2] == [SWEEP, "Fix the capture of stdout"]


def test_relative_words_are_read_against_the_newest_observation_when_the_history_stopped(engines, history):
    result = recall(engines, history, "what changed last week", day=200)  # four months after the last commit
    assert "read against 2025-04-19 (the newest observation's date)" in result.notice
    assert observations(result) == ["Speed up the runner again"]


def test_an_unknown_tag_is_said_and_no_window_is_applied(engines, history):
    result = recall(engines, history, "what changed since 9.9")
    assert "no tag '9.9' is known here" in result.notice
    assert observations(result)[0] == "Speed up the runner again"


def test_every_touched_path_is_stored_and_a_store_made_before_gets_what_bodies_listed(history, tmp_path):
    """Migration 7: rows for every path of a commit; an older store is backfilled from its files lines."""
    import shutil

    import sqlean

    copy = tmp_path / "old.db"
    shutil.copy(history["db"], copy)
    with sqlean.connect(str(copy)) as conn:
        assert conn.execute("SELECT count(*) FROM touched_paths").fetchone()[0] == 37
        conn.execute("DROP TABLE touched_paths")
        conn.execute("DELETE FROM schema_migrations WHERE version = 7")
    store = Store(copy)
    try:
        paths = {row[0] for row in store.conn.execute("SELECT path FROM touched_paths")}
    finally:
        store.close()
    assert "src/lint/mod19.py" in paths and "src/lint/mod20.py" not in paths  # the sweep listed 20
    assert "src/pkg/_capture.py" in paths  # the fix's only file, its source path


def test_mcp_recall_answers_a_change_question_the_same_way(history):
    async def body():
        async with connect(history["db"], history["repo"]) as client:
            found = await client.call_tool("recall", {"query": "latest change to capture", "explain": True})
            return found.structured_content

    data = run(body)
    assert [hit["title"] for hit in data["hits"][:2]] == [SWEEP, "Fix the capture of stdout"]
    assert any("touches src/pkg/_capture.py" in line for line in data["hits"][0]["explain"])


def test_an_unknown_tag_in_a_question_about_something_else_ranks_by_relevance(engines, history):
    result = recall(engines, history, "how capture works since 9.9")
    assert "no tag '9.9'" in result.notice
    assert titles(result)[0] == "How capture works"
    assert not any(f.name == "touches" for hit in result.hits for f in hit.factors)


@pytest.mark.parametrize("question", ["what changed since 2024-13-45", "what changed in December 9999"])
def test_dates_that_cannot_be_are_said_and_no_window_is_applied(engines, history, question):
    result = recall(engines, history, question)
    assert "as dates; no window applied" in result.notice
    assert observations(result)[0] == "Speed up the runner again"
