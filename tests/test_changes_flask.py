"""Change questions on a real project's history: Flask's, rebuilt from ../shared/histories/flask.jsonl
(5,531 commits as data: placeholder file contents, real dates, parents, messages and paths; tagged
at its release commits), with 240 notes about its modules indexed beside it, as docs would be.

For every module touched by 3+ of the newest 1,500 commits, three questions; the newest non-merge
commit touching it must be in the top 3 for 90% of them. Then time windows with a fixed clock. The
repository and store are built once per session (about a minute and a half on 2 busy cores, most of
it embedding 870 commits); the tests skip when ../shared is absent."""

from __future__ import annotations

import calendar
import time
from pathlib import Path

import pytest

from captain_memo.base.git_context import git_context
from captain_memo.bench import changes
from captain_memo.bench.histories import rebuild
from captain_memo.engine.core import Engine
from captain_memo.sources.git_history import index_history, read_commits
from captain_memo.sources.indexer import index_paths
from captain_memo.store import Store

FLASK = Path(__file__).resolve().parents[2] / "shared" / "histories" / "flask.jsonl"
NEWEST = 1500
NOTES = 240
DAY = 86400.0
# 2026-04-12 12:00 UTC: three days after Flask's last commit in the record (2026-04-09 04:04).
CLOCK = 1_775_995_200.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FLASK.exists(), reason=f"{FLASK} is absent (the shared histories are not here)"),
]


@pytest.fixture(scope="module")
def flask(tmp_path_factory, local_embedder):
    root = tmp_path_factory.mktemp("flask") / "flask"
    rebuild(FLASK, root)
    modules = changes.modules_touched(root, NEWEST)
    engine = Engine(Store(root.parent / "memo.db"), local_embedder)
    index_history(engine, root, max_commits=NEWEST)
    changes.write_notes(root / "notes", list(modules), count=NOTES)
    index_paths(engine, [root / "notes"])
    engine.close()
    commits = [c for c in read_commits(root, None, NEWEST) if c.parents < 2]
    return {"root": root, "db": root.parent / "memo.db", "modules": modules, "commits": commits}


@pytest.fixture
def at(flask, local_embedder, monkeypatch):
    """An engine on the store whose clock reads ``moment``; days in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    opened = []

    def engine(moment: float = CLOCK) -> Engine:
        opened.append(Engine(Store(flask["db"]), local_embedder, clock=lambda: moment))
        return opened[-1]

    yield engine
    for e in opened:
        e.close()
    monkeypatch.undo()
    time.tzset()


def test_the_newest_change_of_every_module_is_in_the_top_three(flask, at):
    assert len(flask["modules"]) >= 40
    result = changes.measure(at(), git_context(flask["root"]).project, changes.cases_for(flask["modules"]))
    assert result.share() >= 0.9, result.misses
    assert result.share(changes.FORMS[2]) >= 0.95, result.misses  # by path: no other file has it


def expected(flask, start: float, end: float, touches=lambda files: True) -> list[str]:
    """Subjects of the non-merge commits dated in [start, end) touching, newest first."""
    inside = [c for c in flask["commits"] if start <= c.committed_at < end and touches(c.files)]
    return [c.subject for c in sorted(inside, key=lambda c: -c.committed_at)]


def observed(result) -> list[str]:
    return [hit.memory.title for hit in result.hits if hit.memory.kind == "observation"]


def ask(flask, engine, question: str):
    return engine.recall(question, project=git_context(flask["root"]).project, record=False)


def utc(day: str) -> float:
    return float(calendar.timegm(time.strptime(day, "%Y-%m-%d")))


SESSIONS = lambda files: "src/flask/sessions.py" in files  # noqa: E731
OPEN = 1e18


@pytest.mark.parametrize(
    ("question", "start", "end", "touches", "said"),
    [
        ("what changed last week", "2026-04-06", None, None, "last week (from 2026-04-06)"),
        ("what changed this month", "2026-04-01", None, None, "this month (from 2026-04-01)"),
        ("what changed in March", "2026-03-01", "2026-04-01", None, "in March (2026-03-01 to 2026-03-31)"),
        ("what changed in sessions since 3.1.2", None, None, SESSIONS, "since 3.1.2 (after the tag, 2025-08-19"),
        ("changes since the 3.1.3 release", None, None, None, "since the 3.1.3 release (after the tag"),
    ],
)
def test_a_window_holds_what_changed_inside_it_newest_first(flask, at, question, start, end, touches, said):
    result = ask(flask, at(), question)
    tag = {"3.1.2": 1755637067.0, "3.1.3": 1771472515.0}
    low = utc(start) if start else next(t for name, t in tag.items() if name in question) + 0.5
    want = expected(flask, low, utc(end) if end else OPEN, touches or (lambda files: True))
    assert want, "the window holds commits in the record"
    assert observed(result) == want[: len(observed(result))] and len(observed(result)) == min(len(want), 10)
    assert said in result.notice


def test_since_yesterday_after_the_history_stopped_is_read_against_its_last_day(flask, at):
    result = ask(flask, at(CLOCK + 30 * DAY), "what changed since yesterday")
    assert "read against 2026-04-09 (the newest observation's date)" in result.notice
    assert observed(result) == expected(flask, utc("2026-04-08"), OPEN)  # the typo fix of 04-09


def test_an_empty_window_says_so_and_offers_the_newest_before_it(flask, at):
    result = ask(flask, at(), "what changed in sessions last week")
    assert "nothing touching sessions in it; the newest before it:" in result.notice
    assert observed(result)[:3] == expected(flask, 0.0, utc("2026-04-06"), SESSIONS)[:3]
