"""Tide under the default profile (v3, the ``use`` rule) measures use, not display: observable
properties on a real store with the real model, real recalls and a controlled clock."""

from __future__ import annotations

from dataclasses import replace

import pytest
from recall_support import assert_trace, copy_db

from captain_memo.config import PROFILES, rank_config
from captain_memo.engine.core import Engine
from captain_memo.ranking import lifecycle
from captain_memo.store import NewMemory, Source, Store

DAY = 86400.0
T0 = 1_790_000_000.0  # when the store is filled (mid 2026)
V3 = PROFILES["v3"]

NOTES = [
    (
        "Fixture scopes",
        "FixtureRequest.getfixturevalue resolves a fixture lazily; prefer declaring it as an "
        "argument so the scope is checked at collection.",
    ),
    (
        "Capture and logging",
        "The capture plugin swaps sys.stdout per test; logging handlers created at import time "
        "keep the old stream, so attach them inside the test.",
    ),
    ("Release checklist", "Tag from main, build the sdist and wheel, upload with twine, then announce."),
    (
        "Assertion rewriting",
        "The assertion rewriter only touches test modules and conftest files; helpers need register_assert_rewrite.",
    ),
]
TOPICS = [
    "fixture teardown order",
    "capture of stdout in subprocesses",
    "assertion rewrite of BoolOp",
    "parametrize ids with unicode",
    "tmp_path cleanup on Windows",
    "junitxml properties",
    "cache provider lastfailed",
    "monkeypatch setenv restore",
    "doctest collection of modules",
    "warnings filter in ini",
    "plugin hook ordering",
    "terminal reporter width",
    "skip markers with reasons",
    "xfail strict mode",
    "collection of packages",
]
UNRELATED = [
    "database connection pool sizing",
    "kubernetes pod eviction",
    "css grid layout",
    "tax invoice rounding",
    "docker image layers",
    "postgres vacuum settings",
    "react state hooks",
    "oauth token refresh",
    "s3 bucket lifecycle",
    "nginx gzip compression",
    "rust borrow checker",
    "golang channels select",
    "terraform state locking",
    "redis eviction policy",
    "kafka consumer lag",
    "grpc deadlines",
    "elasticsearch shards",
    "vim macros",
    "bash arrays",
    "csv export to excel",
    "dns ttl caching",
    "load balancer health checks",
    "cron schedule syntax",
    "email bounce handling",
    "pdf rendering fonts",
    "image thumbnails resizing",
    "websocket reconnect backoff",
    "feature flags rollout",
    "audit log retention",
    "unicode normalisation forms",
]
PROBE = "fixture teardown and capture"


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float = 0.0, minutes: float = 0.0) -> None:
        self.now += days * DAY + minutes * 60


@pytest.fixture(scope="module")
def filled(tmp_path_factory, local_embedder):
    """Curated notes and a history of commit observations dated over three years, stored at T0."""
    path = tmp_path_factory.mktemp("tide") / "memo.db"
    engine = Engine(Store(path), local_embedder, clock=Clock(T0))
    for title, body in NOTES:
        engine.remember(NewMemory(body=body, title=title, kind="memory"))
    for i in range(60):
        topic = TOPICS[i % len(TOPICS)]
        message = f"Fix {topic} (round {i // len(TOPICS) + 1})"
        engine.remember(
            NewMemory(
                body=f"{message}\n\nFiles: src/_pytest/{topic.split()[0]}.py",
                title=message,
                kind="observation",
                source=Source(commit=f"{i:040x}", origin="git"),
                created_at=T0 - (1100 - i * 18) * DAY,
            )
        )
    engine.close()
    return path


@pytest.fixture
def store_at(filled, tmp_path, local_embedder):
    """An engine over a fresh copy of the filled store, with its clock at ``T0 + days``."""
    engines = []

    def make(days: float = 0.0, path=None) -> tuple[Engine, Clock]:
        clock = Clock(T0 + days * DAY)
        target = path or copy_db(filled, tmp_path / f"copy{len(engines)}")
        engine = Engine(Store(target), local_embedder, clock=clock)
        engines.append(engine)
        return engine, clock

    for sub in range(4):
        (tmp_path / f"copy{sub}").mkdir()
    yield make
    for engine in engines:
        engine.close()


def order(engine: Engine, query: str = PROBE, record: bool = False) -> list[int]:
    result = engine.recall(query, record=record)
    assert_trace(result.hits)
    return [hit.memory.id for hit in result.hits]


def hit_of(engine: Engine, memory_id: int, query: str = PROBE):
    return next((h for h in engine.recall(query, record=False, limit=25).hits if h.memory.id == memory_id), None)


def test_the_default_profile_uses_the_use_rule():
    assert rank_config().tide_rule == "use" and rank_config().profile == "v3"


def test_a_history_indexed_today_is_not_dormant_and_dates_still_drive_recency(store_at):
    engine, _ = store_at(days=0)
    result = engine.recall("latest fixture teardown order", record=False)
    observations = [h for h in result.hits if h.memory.kind == "observation"]
    assert observations and all(h.factor("tide") == pytest.approx(1.0) for h in observations)
    # The commits are dated months to years back: recency still sees those dates.
    assert any(h.factor("recency") < 1.0 for h in observations)
    assert any(
        f.name == "recency" and "older than the newest match" in f.detail for h in observations for f in h.factors
    )


def test_repeating_one_query_twenty_times_keeps_its_top_ten(store_at):
    engine, clock = store_at(days=200)  # 200 days after indexing: Tide has moved things
    first = order(engine)
    assert any(hit_of(engine, mid).factor("tide") < 0.9 for mid in first if engine.store.get(mid).kind == "observation")
    for _ in range(20):
        clock.advance(minutes=1)
        assert order(engine, record=True) == first


def test_thirty_unrelated_queries_leave_a_probe_in_order_unless_a_hit_is_opened(store_at, tmp_path):
    engine, clock = store_at(days=200)
    control, control_clock = store_at(days=200)  # the same store, where nothing else happens
    before = order(engine)
    for query in UNRELATED:
        clock.advance(minutes=2)
        control_clock.advance(minutes=2)
        engine.recall(query)
    assert order(engine) == order(control) == before
    # Opening one of its observations is use: the probe changes, that hit moving up.
    opened = next(mid for mid in before[3:] if engine.store.get(mid).kind == "observation")
    engine.show(opened)
    after = order(engine)
    assert after.index(opened) < before.index(opened)


def test_being_listed_never_restores_full_buoyancy_in_one_step(store_at):
    engine, clock = store_at(days=300)
    listed = [mid for mid in order(engine) if engine.store.get(mid).kind == "observation"]
    before = {mid: hit_of(engine, mid).factor("tide") for mid in listed}
    assert max(before.values()) < 0.6
    order(engine, record=True)
    clock.advance(minutes=1)
    after = {mid: hit_of(engine, mid).factor("tide") for mid in listed}
    for mid in listed:
        assert before[mid] - 1e-6 <= after[mid] < before[mid] + 0.05


def test_ten_lookups_in_ten_minutes_count_about_as_much_as_one(store_at):
    once, clock_once = store_at(days=30)
    ten, clock_ten = store_at(days=30)
    spread, clock_spread = store_at(days=30)
    query = "cache provider lastfailed"
    target = next(mid for mid in order(once, query) if once.store.get(mid).kind == "observation")
    once.recall(query)
    for _ in range(10):
        ten.recall(query)
        clock_ten.advance(minutes=1)
    for _ in range(10):
        spread.recall(query)
        clock_spread.advance(days=7)
    s_once, s_ten, s_spread = (e.store.get(target).stability for e in (once, ten, spread))
    assert s_once > 7.0
    assert s_ten == pytest.approx(s_once, rel=0.01)
    assert s_spread > 1.5 * s_ten  # the same ten, a week apart: strong evidence of use


def test_opening_is_strong_evidence_and_lifts_the_memory_on_its_next_recall(store_at):
    engine, clock = store_at(days=200)
    hits = engine.recall(PROBE, record=False).hits
    target = hits[-1]
    assert target.memory.kind == "observation" and target.factor("tide") < 0.6
    opened = engine.show(target.memory.id)
    assert opened.last_opened == clock.now and opened.stability > 7.0 * 1.5
    clock.advance(minutes=1)
    lifted = hit_of(engine, target.memory.id)
    assert lifted.factor("tide") > 0.99 and lifted.score > target.score
    assert [h.memory.id for h in engine.recall(PROBE, record=False).hits].index(target.memory.id) < len(hits) - 1
    assert any(f.name == "tide" and "since opened" in f.detail for f in lifted.factors) or lifted.factor("tide") == 1.0


def test_a_curated_note_never_falls_below_an_observation_through_tide_alone(store_at):
    engine, clock = store_at(days=0)
    for day in (0, 30, 200, 400):
        clock.now = T0 + day * DAY
        for query in (PROBE, "release checklist", "capture of stdout", "assertion rewrite"):
            result = engine.recall(query, limit=25)  # listed: the weak evidence, recorded
            for hit in result.hits[:3]:
                if hit.memory.kind == "observation":
                    engine.show(hit.memory.id)  # and opened: the strong one
            ranked = [h.memory for h in engine.recall(query, record=False, limit=25).hits]
            untided = [
                h.memory.id for h in engine.recall(query, record=False, limit=25, cfg=replace(V3, tide=False)).hits
            ]
            position = {m.id: i for i, m in enumerate(ranked)}
            for note in (m for m in ranked if m.kind == "memory"):
                below_before = [mid for mid in untided[untided.index(note.id) + 1 :] if mid in position]
                assert all(
                    position[mid] > position[note.id]
                    for mid in below_before
                    if engine.store.get(mid).kind == "observation"
                ), (day, query)


def test_the_trace_says_what_started_the_clock(store_at):
    engine, _ = store_at(days=100)
    hit = next(h for h in engine.recall(PROBE, record=False).hits if h.memory.kind == "observation")
    (tide,) = [f for f in hit.factors if f.name == "tide"]
    assert tide.detail == "S=7.0d, 100d since stored"
    assert tide.value == pytest.approx(lifecycle.tide_multiplier(100, 7.0, V3))


def test_stats_does_not_count_lookups_minutes_after_storing_as_strengthening(store_at):
    from captain_memo.engine.stats import tide_counts

    engine, clock = store_at(days=0)
    for query in (PROBE, PROBE, "release checklist"):
        clock.advance(minutes=1)
        engine.recall(query)
    assert tide_counts(engine.store.list_memories(kind="observation", limit=-1), clock.now)["strengthening"] == 0
    clock.advance(days=10)
    engine.recall(PROBE)  # ten days on, a lookup is evidence of use
    assert tide_counts(engine.store.list_memories(kind="observation", limit=-1), clock.now)["strengthening"] > 0
