"""Every ranking rule, table-driven, on candidates built by hand and run through the real stages."""

from __future__ import annotations

import math
from dataclasses import asdict, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recall_support import NOW, assert_trace, candidate, memory

from captain_memo.config import PROFILES, RankConfig, rank_config
from captain_memo.ranking import lifecycle
from captain_memo.ranking.fusion import fuse, min_max
from captain_memo.ranking.pipeline import RankRequest, cut, rank_pool
from captain_memo.ranking.query import analyse, is_code_shaped, keyword_hit_is_the_option, strip_token

V2 = PROFILES["v2"]
LEGACY = PROFILES["legacy"]


def ranked(cands, query: str, cfg: RankConfig = V2, branch: str | None = None, now: float = NOW):
    req = RankRequest(analyse(query, cfg.rare_token_min_length), branch, now, cfg.result_limit)
    pool = rank_pool(cands, req, cfg)
    assert_trace(pool)
    return pool


def one(query: str, text: str, cfg: RankConfig = V2, **mem):
    (hit,) = ranked([candidate(memory(**mem), text, vector=0.8)], query, cfg, branch=mem.get("branch"))
    return hit


def factors_named(hit, name: str) -> list[float]:
    return [f.value for f in hit.factors if f.name == name]


# -- fusion ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "vector, keyword, fused",
    [
        (0.81, None, 0.81),  # vector only: full weight
        (None, 1.0, 1.0),  # keyword only: full weight
        (None, 0.4, 0.4),
        (0.62, 1.0, 0.734),  # both: 0.7 × 0.62 + 0.3 × 1.0
        (0.9, 0.0, 0.63),
        (0.5, 0.5, 0.5),
    ],
)
def test_weighted_fusion_keeps_single_leg_hits_at_full_weight(vector, keyword, fused):
    (c,) = fuse([candidate(memory(), vector=vector, keyword=keyword)], V2)
    assert c.fused == pytest.approx(fused, abs=1e-12)
    assert c.score == c.fused and c.factors == ()


@pytest.mark.parametrize(
    "vector_rank, keyword_rank, fused",
    [
        (1, 1, 2 / 61),
        (1, None, 1 / 61),
        (None, 3, 1 / 63),
        (10, 25, 1 / 70 + 1 / 85),
    ],
)
def test_rrf_is_a_sum_of_reciprocal_ranks_with_k_60(vector_rank, keyword_rank, fused):
    c = candidate(memory(), vector=0.5, keyword=0.5, vector_rank=vector_rank, keyword_rank=keyword_rank)
    (out,) = fuse([c], LEGACY)
    assert out.fused == pytest.approx(fused, abs=1e-15)


@pytest.mark.parametrize(
    "raw, normalised",
    [
        ({}, {}),
        ({1: 7.5}, {1: 1.0}),  # a single hit is the best hit
        ({1: 2.0, 2: 2.0, 3: 2.0}, {1: 1.0, 2: 1.0, 3: 1.0}),  # all tied: all 1.0, never 0 or NaN
        ({1: 1.0, 2: 3.0, 3: 2.0}, {1: 0.0, 2: 1.0, 3: 0.5}),
    ],
)
def test_keyword_min_max(raw, normalised):
    assert min_max(raw) == pytest.approx(normalised)


# -- identifier boost ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, text, multiplier",
    [
        ("get_effective_contract_price", "calls get_effective_contract_price(acc, sku)", 1.3),
        ("get_effective_contract_price " * 5, "get_effective_contract_price", 2.0),  # 1 + 0.3 × 5 = 2.5, capped
        ("foo_bar foo_bar foo_bar", "foo_bar", 1.9),  # a repeated token counts each time
        ("foo_bar billing.money", "foo_bar and billing.money", 1.6),
        ("foo_bar billing.money", "only foo_bar here", 1.3),
        ("HTTP TODO", "HTTP TODO", 1.0),  # ALL-CAPS never counts
        ("price invoice", "price invoice", 1.0),  # plain words never count
        ("foo_bar,", "foo_bar", 1.3),  # trailing punctuation stripped
        ("(foo_bar)", "foo_bar", 1.3),
        ("is it foo_bar?", "foo_bar", 1.3),
        ("'foo_bar'", "foo_bar", 1.3),
        ('"foo_bar";', "foo_bar", 1.3),
        ("see foo_bar.", "foo_bar", 1.3),  # a sentence-final '.' is stripped ...
        ("see foo_bar.", "foo_bar.", 1.3),
        ("billing.money.Money", "from billing.money.Money import Money", 1.3),  # ... an internal one counts
        ("see billing.money.", "in billing.money we", 1.3),
        ("api/routes/quotes.py", "KeyError in api/routes/quotes.py", 1.3),
        ("formatMoney", "formatMoney(amount)", 1.3),  # camelCase hump
        ("formatmoney", "formatmoney", 1.0),  # no hump, no '_', '.' or '/': a plain word
        ("Foo_Bar", "foo_bar", 1.0),  # case-sensitive containment
        ("formatMoney", "formatmoney", 1.0),
        # A name matches whole: not inside a longer word, name or option ...
        ("pytest -k expr", "run pytest -k expr to pick tests", 1.3),
        ("-k", "the make-kit target", 1.0),
        ("-k", "pytest --k", 1.0),
        ("--lf", "rerun the failures (--lf).", 1.3),
        ("--lf", "the --lf-foo plugin", 1.0),
        ("--lf", "git lfs and --lfs", 1.0),  # an option takes no plural
        ("--tb=short", "pytest --tb=short -q", 1.3),
        ("-r", "`-rA` shows every outcome", 1.3),  # a one-letter option takes its value attached
        ("-k", "-kexpr", 1.3),
        ("ExceptionGroup", "inner exceptions in ``ExceptionGroups``", 1.3),  # a class's plural in prose
        ("iter_marker", "node.iter_markers()", 1.0),  # another function
        ("get_price", "get_price_total(order)", 1.0),
        ("get_price", "_get_price(order)", 1.0),
        ("formatMoney", "formatMoneyValue(amount)", 1.0),
        # ... but a dotted or slashed path around it is still the name
        ("get_price", "self.get_price(order)", 1.3),
        ("tmp_path_factory", "tmp_path_factory.mktemp(name)", 1.3),
        ("billing.money", "billing.money.Money", 1.3),
        ("routes/quotes.py", "api/routes/quotes.py:12", 1.3),
        ("ExceptionGroup", "an ExceptionGroup-related fix", 1.3),  # '-' joins options only
        ("deprecated.html", "see setup-py-deprecated.html", 1.3),
    ],
)
def test_identifier_boost(query, text, multiplier):
    hit = one(query, text)
    assert hit.factor("identifier") == pytest.approx(multiplier)
    assert len(factors_named(hit, "identifier")) == (0 if multiplier == 1.0 else 1)


@pytest.mark.parametrize(
    "token, shaped",
    [
        ("snake_case", True),
        ("MAX_RETRIES", True),
        ("billing.money", True),
        ("api/routes", True),
        ("formatMoney", True),
        ("useQuotePreview", True),
        ("v2.5.0", True),
        ("HTTP", False),
        ("TODO", False),
        ("JSON", False),
        ("price", False),
        ("Price", False),
        ("", False),
        ("...", False),
        ("_", False),
        ("/", False),
    ],
)
def test_code_shape(token, shaped):
    assert is_code_shaped(token) is shaped


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("foo_bar,", "foo_bar"),
        ("foo_bar;", "foo_bar"),
        ("foo_bar:", "foo_bar"),
        ("foo_bar!", "foo_bar"),
        ("foo_bar?", "foo_bar"),
        ("foo_bar)", "foo_bar"),
        ("foo_bar]", "foo_bar"),
        ("foo_bar}", "foo_bar"),
        ("foo_bar'", "foo_bar"),
        ('foo_bar"', "foo_bar"),
        ("foo_bar.", "foo_bar"),
        ("a.b.c.", "a.b.c"),
        ("foo_bar?).", "foo_bar"),
    ],
)
def test_query_tokens_lose_trailing_punctuation(raw, clean):
    assert strip_token(raw) == clean


@pytest.mark.parametrize(
    "query, text, kept",
    [
        ("what does -k do", "pytest -k expr picks tests", True),
        ("what does -k do", "the make-kit target", False),
        ("--lf", "the --lf-foo plugin", False),
        ("--lf", "rerun the failures (--lf).", True),
        ("--maxfail=1", "stop early with --maxfail=3", True),
        ("--lf rerun", "the --lf-foo plugin can rerun", True),  # another word of the query
    ],
)
def test_a_keyword_hit_for_an_option_holds_it_whole(query, text, kept):
    """The full-text index keeps an option's letters alone: a hit must hold the option itself."""
    assert keyword_hit_is_the_option(query, text) is kept


def test_identifier_boost_switch_and_cap_from_the_profile():
    off = replace(V2, identifier_boost=False)
    assert one("foo_bar", "foo_bar", off).factors == ()
    capped = replace(V2, identifier_boost_cap=1.45)
    assert one("foo_bar foo_bar", "foo_bar", capped).factor("identifier") == pytest.approx(1.45)


# -- rare token ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, text, fires",
    [
        ("ledger reconciliation", "ledger ledger reconciliation ledger", True),  # once per chunk, not per word
        ("Ledger", "the ledger", True),  # any case
        ("ledgers", "the ledger", False),  # whole words
        ("ledger", "ledgers", False),
        ("tax", "tax", False),  # shorter than 4 characters
        ("with about would", "with about would", False),  # stopwords
        ("foo_bar", "foo_bar", False),  # code-shaped tokens are the identifier boost's
        ("ledger", "nothing here", False),
    ],
)
def test_rare_token_boost_once_per_chunk(query, text, fires):
    hit = one(query, text)
    assert factors_named(hit, "rare_token") == ([1.15] if fires else [])


def test_rare_token_boost_is_off_in_legacy():
    assert factors_named(one("ledger", "ledger", LEGACY), "rare_token") == []


# -- branch and supersession ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "written_on, current, factor",
    [
        ("feature/contract-pricing", "feature/contract-pricing", 1.1),
        ("main", "feature/contract-pricing", None),
        (None, "feature/contract-pricing", None),
        ("main", None, None),
    ],
)
def test_branch_boost(written_on, current, factor):
    (hit,) = ranked([candidate(memory(branch=written_on), "text", vector=0.8)], "query words", branch=current)
    assert factors_named(hit, "branch") == ([] if factor is None else [factor])


def test_superseded_is_halved_and_never_dropped():
    old = candidate(memory(1, superseded_by=2), "tier boundaries", vector=0.9)
    new = candidate(memory(2), "tier boundaries", vector=0.6)
    pool = ranked([old, new], "tier boundaries")
    by_id = {c.memory.id: c for c in pool}
    assert factors_named(by_id[1], "superseded") == [0.5]
    assert by_id[1].score == pytest.approx(by_id[1].fused * 0.5 * by_id[1].factor("rare_token"))
    assert {c.memory.id for c in cut(pool, 10)} == {1, 2}
    assert factors_named(by_id[1], "superseded") == [0.5]
    assert factors_named(ranked([old], "tier boundaries", LEGACY)[0], "superseded") == []


# -- recency -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "age_days, factor",
    [
        (0, 1.0),
        (21, 0.75),
        (42, 0.625),
        (63, 0.5625),
        (10_000, 0.5),
        (None, 1.0),
        (-3, 1.0),
    ],
)
def test_recency_factor(age_days, factor):
    assert lifecycle.recency_factor(age_days, V2) == pytest.approx(factor)


@pytest.mark.parametrize(
    "query, temporal",
    [
        ("latest deploy version", True),
        ("LAST release", True),
        ("newest note", True),
        ("current version", True),
        ("most recent deploy", True),
        ("recent changes", True),
        ("is the doc up to date", True),
        ("up-to-date docs", True),
        ("what now", True),
        ("Now?", True),
        ("(latest)", True),
        ("deploy version", False),
        ("lastly", False),
        ("recently", False),
        ("currently", False),
        ("nowhere", False),
        ("snow", False),
        ("blast radius", False),
        ("get_effective_contract_price", False),
    ],
)
def test_temporal_intent_is_whole_words_in_any_case(query, temporal):
    assert analyse(query).temporal is temporal


@pytest.mark.parametrize(
    "kind, age_days, query, factor",
    [
        ("observation", 21, "latest deploy", 0.75),
        ("observation", 63, "latest deploy", 0.5625),
        ("observation", 63, "deploy", None),  # no temporal intent
        ("memory", 63, "latest deploy", None),  # curated: anchored
        ("skill", 63, "latest deploy", None),
        ("observation", None, "latest deploy", None),  # no date
        ("observation", -5, "latest deploy", None),  # a date in the future
    ],
)
def test_recency_only_on_temporal_intent_and_only_observations(kind, age_days, query, factor):
    (hit,) = ranked([candidate(memory(kind=kind, age_days=age_days), "deploy", vector=0.8)], query)
    assert factors_named(hit, "recency") == ([] if factor is None else [pytest.approx(factor)])


def test_recency_only_over_the_top_n():
    cfg = replace(V2, tide=False)
    pool = [
        candidate(memory(i, kind="observation", age_days=30), "deploy", vector=0.95 - 0.01 * i) for i in range(1, 13)
    ]
    out = ranked(pool, "latest deploy", cfg)
    touched = {c.memory.id for c in out if factors_named(c, "recency")}
    assert touched == set(range(1, 11))  # the 10 best by score; 11 and 12 left as they were


# -- Tide ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("age_days", [0, 0.5, 1, 7, 30, 90, 365, 3650, 1e6])
@pytest.mark.parametrize("stability", [0.01, 1, 7, 30, 365])
def test_tide_multiplier_stays_within_floor_and_one(age_days, stability):
    value = lifecycle.tide_multiplier(age_days, stability, V2)
    assert 0.30 <= value <= 1.0
    if age_days == 0:
        assert value == 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e9, allow_nan=False), st.floats(1e-6, 1e6, allow_nan=False))
def test_tide_multiplier_bounds_for_any_age_and_stability(age_days, stability):
    assert 0.30 <= lifecycle.tide_multiplier(age_days, stability, V2) <= 1.0


def test_tide_multiplier_values():
    # buoyancy 1 / (1 + 0.15 × 7 / 7) = 0.8696; multiplier 0.30 + 0.70 × 0.8696
    assert lifecycle.tide_multiplier(7, 7, V2) == pytest.approx(0.30 + 0.70 / 1.15)
    assert lifecycle.buoyancy(140, 7, V2) == pytest.approx(0.25)


@pytest.mark.parametrize("gain", [0.5, 1.0, 1.5])
def test_stability_growth_per_gain(gain):
    assert lifecycle.strengthened(7.0, gain, V2) == pytest.approx(7.0 * (1 + 0.5 * gain * 365 / 372))


def test_stability_is_capped_at_365():
    stability = 7.0
    for _ in range(200):
        grown = lifecycle.strengthened(stability, 1.5, V2)
        assert stability <= grown <= 365.0
        stability = grown
    assert stability == 365.0
    assert lifecycle.strengthened(365.0, 1.5, V2) == 365.0
    assert lifecycle.strengthened(364.0, 1.5, V2) == 365.0


@pytest.mark.parametrize(
    "kind, opened, demoted",
    [
        ("observation", False, True),
        ("observation", True, False),  # opened in full once: never demoted
        ("memory", False, False),  # curated: anchored at ×1
        ("skill", False, False),
    ],
)
def test_tide_applies_to_observations_never_opened(kind, opened, demoted):
    (hit,) = ranked([candidate(memory(kind=kind, age_days=200, opened=opened), "x", vector=0.8)], "plain")
    tide = factors_named(hit, "tide")
    if demoted:
        assert len(tide) == 1 and 0.30 <= tide[0] < 1.0
    else:
        assert tide == []


def test_tide_counts_age_from_the_last_surfacing():
    fresh = memory(1, kind="observation", age_days=300, surfaced_days_ago=0)
    stale = memory(2, kind="observation", age_days=300)
    pool = {c.memory.id: c for c in ranked([candidate(fresh, vector=0.8), candidate(stale, vector=0.8)], "x")}
    assert factors_named(pool[1], "tide") == []
    assert factors_named(pool[2], "tide") == [pytest.approx(lifecycle.tide_multiplier(300, 7, V2))]


# -- the legacy profile ----------------------------------------------------------------------------


def test_legacy_profile_values_are_frozen():
    assert asdict(PROFILES["legacy"]) == {
        "profile": "legacy",
        "fusion_mode": "rrf",
        "rrf_k": 60.0,
        "vector_weight": 0.7,
        "keyword_weight": 0.3,
        "candidates_per_leg": 25,
        "result_limit": 10,
        "identifier_boost": True,
        "identifier_boost_step": 0.3,
        "identifier_boost_cap": 2.0,
        "identifier_only_weight": 1.0,
        "rare_token_boost": False,
        "rare_token_weight": 1.15,
        "rare_token_min_length": 4,
        "branch_boost": False,
        "branch_weight": 1.1,
        "supersede_penalty": 1.0,
        "temporal_intent": False,
        "temporal_half_life_days": 21.0,
        "temporal_floor": 0.5,
        "temporal_top_n": 10,
        "tide": False,
        "tide_initial_stability": 7.0,
        "tide_max_stability": 365.0,
        "tide_age_weight": 0.15,
        "tide_floor": 0.30,
        "tide_growth": 0.5,
        "tide_gain_auto": 0.5,
        "tide_gain_search": 1.0,
        "tide_gain_open": 1.5,
        "tide_dormant_buoyancy": 0.30,
        "tide_dormant_days": 90.0,
        "shape_weighting": False,
        "keyword_identifier_parts": False,
        "code_vector_weight": 0.0,
        "recency_anchor": "now",
        "recency_span_share": 0.0,
        "temporal_pool": 0,
        "temporal_word_forms": False,
        "changes_first": False,
        "calibrated_scores": False,
        "tide_rule": "seed",
        "names_whole": False,
        "rare_words_floor": False,
        "kind_prior": 1.0,
        "heading_weight": 1.0,
        "pool_per_kind": False,
        "curated_statistics": False,
    }


def test_v2_is_the_seed_design_frozen():
    """v2 differs from legacy only by the seed design's rules, with the seed's values."""
    assert asdict(PROFILES["v2"]) == {
        **asdict(PROFILES["legacy"]),
        "profile": "v2",
        "fusion_mode": "weighted",
        "rare_token_boost": True,
        "branch_boost": True,
        "supersede_penalty": 0.5,
        "temporal_intent": True,
        "tide": True,
    }


def rich_pool():
    """Candidates on which every v2 rule fires for the query ``latest foo_bar ledger`` on branch feat."""
    return [
        candidate(
            memory(1, kind="observation", age_days=21, branch="feat", superseded_by=2),
            "foo_bar ledger",
            vector=0.8,
            keyword=1.0,
            vector_rank=1,
            keyword_rank=1,
        ),
        candidate(memory(2, kind="observation", age_days=400), "other words", vector=0.7, vector_rank=2),
    ]


def test_legacy_pipeline_applies_only_rrf_and_the_identifier_boost():
    pool = {c.memory.id: c for c in ranked(rich_pool(), "latest foo_bar ledger", LEGACY, branch="feat")}
    assert [f.name for f in pool[1].factors] == ["identifier"]
    assert pool[1].fused == pytest.approx(2 / 61)
    assert pool[2].factors == () and pool[2].fused == pytest.approx(1 / 62)


def test_v2_pipeline_fires_every_rule_in_order():
    pool = {c.memory.id: c for c in ranked(rich_pool(), "latest foo_bar ledger", V2, branch="feat")}
    assert [f.name for f in pool[1].factors] == ["identifier", "rare_token", "branch", "superseded", "recency", "tide"]
    assert [f.name for f in pool[2].factors] == ["recency", "tide"]


# -- every switch, through the environment, changes its own stage -----------------------------------


def _factor(name):
    return lambda pool: pool[1].factor(name)


SWITCHES = [
    ({}, "identifier", 1.3),
    ({"IDENTIFIER_BOOST": "0"}, "identifier", 1.0),
    ({"IDENTIFIER_BOOST_STEP": "0.5"}, "identifier", 1.5),
    ({"IDENTIFIER_BOOST_CAP": "1.2"}, "identifier", 1.2),
    ({}, "rare_token", 1.15),
    ({"RARE_TOKEN_BOOST": "off"}, "rare_token", 1.0),
    ({"RARE_TOKEN_WEIGHT": "1.5"}, "rare_token", 1.5),
    ({"RARE_TOKEN_MIN_LENGTH": "7"}, "rare_token", 1.0),
    ({}, "branch", 1.1),
    ({"BRANCH_BOOST": "false"}, "branch", 1.0),
    ({"BRANCH_WEIGHT": "1.3"}, "branch", 1.3),
    ({}, "superseded", 0.5),
    ({"SUPERSEDE_PENALTY": "1"}, "superseded", 1.0),
    ({"SUPERSEDE_PENALTY": "0.25"}, "superseded", 0.25),
    ({}, "recency", 0.75),
    ({"TEMPORAL_INTENT": "no"}, "recency", 1.0),
    ({"TEMPORAL_HALF_LIFE_DAYS": "42"}, "recency", 0.5 + 0.5 * 0.5**0.5),
    ({"TEMPORAL_FLOOR": "0.8"}, "recency", 0.9),
    ({"TEMPORAL_TOP_N": "0"}, "recency", 1.0),
    ({}, "tide", 0.30 + 0.70 / (1 + 0.15 * 21 / 7)),
    ({"TIDE": "0"}, "tide", 1.0),
    ({"TIDE_FLOOR": "0.5"}, "tide", 0.5 + 0.5 / (1 + 0.15 * 21 / 7)),
    ({"TIDE_AGE_WEIGHT": "0.3"}, "tide", 0.30 + 0.70 / (1 + 0.3 * 21 / 7)),
]


@pytest.mark.parametrize("env, stage, value", SWITCHES)
def test_each_switch_changes_its_stage(env, stage, value):
    cfg = rank_config("v2", env={"CAPTAIN_MEMO_" + k: v for k, v in env.items()})
    assert cfg.profile == "v2"
    pool = {c.memory.id: c for c in ranked(rich_pool(), "latest foo_bar ledger", cfg, branch="feat")}
    assert pool[1].factor(stage) == pytest.approx(value)


@pytest.mark.parametrize(
    "env, fused",
    [
        ({}, 0.7 * 0.8 + 0.3 * 1.0),
        ({"VECTOR_WEIGHT": "0.5", "KEYWORD_WEIGHT": "0.5"}, 0.9),
        ({"KEYWORD_WEIGHT": "0"}, 0.56),
        ({"FUSION_MODE": "rrf"}, 2 / 61),
        ({"FUSION_MODE": "rrf", "RRF_K": "10"}, 2 / 11),
    ],
)
def test_fusion_switches(env, fused):
    cfg = rank_config("v2", env={"CAPTAIN_MEMO_" + k: v for k, v in env.items()})
    pool = {c.memory.id: c for c in ranked(rich_pool(), "latest foo_bar ledger", cfg, branch="feat")}
    assert pool[1].fused == pytest.approx(fused)


@pytest.mark.parametrize(
    "env, gain",
    [
        ({}, {"auto": 0.5, "search": 1.0, "open": 1.5}),
        (
            {"TIDE_GAIN_AUTO": "0.25", "TIDE_GAIN_SEARCH": "2", "TIDE_GAIN_OPEN": "3"},
            {"auto": 0.25, "search": 2.0, "open": 3.0},
        ),
    ],
)
def test_tide_gain_switches(env, gain):
    cfg = rank_config("v2", env={"CAPTAIN_MEMO_" + k: v for k, v in env.items()})
    for how, g in gain.items():
        assert getattr(cfg, f"tide_gain_{how}") == g
        assert lifecycle.strengthened(7.0, g, cfg) == pytest.approx(7.0 * (1 + 0.5 * g * 365 / 372))
    grown = rank_config("v2", env={"CAPTAIN_MEMO_TIDE_GROWTH": "1", "CAPTAIN_MEMO_TIDE_MAX_STABILITY": "100"})
    assert lifecycle.strengthened(7.0, 1.0, grown) == pytest.approx(7.0 * (1 + 100 / 107))
    assert lifecycle.strengthened(90.0, 1.5, grown) == 100.0


def test_the_cut_keeps_the_best_chunk_of_each_memory_then_the_limit():
    m1, m2, m3 = memory(1), memory(2), memory(3)
    pool = [
        candidate(m1, vector=0.9, chunk_id=10),
        candidate(m1, vector=0.8, chunk_id=11),
        candidate(m2, vector=0.7, chunk_id=20),
        candidate(m3, vector=0.6, chunk_id=30),
    ]
    out = cut(ranked(pool, "plain"), 2)
    assert [(c.memory.id, c.chunk_id) for c in out] == [(1, 10), (2, 20)]
    assert math.isclose(out[0].score, 0.9)


def test_v3_explains_the_keyword_score_its_fusion_used(engine):
    from captain_memo.config import rank_config
    from captain_memo.store import NewMemory

    for text in ("ledger export nightly", "ledger rotation policy for archives", "unrelated queue notes"):
        engine.remember(NewMemory(body=text))
    cfg = rank_config("v3")
    result = engine.recall("ledger export", cfg=cfg, record=False)
    for hit in result.hits:
        assert hit.keyword is not None and 0.0 <= hit.keyword <= 1.0
        w_v, w_k = 0.5, 0.5
        pool_vectors = [h.vector for h in result.hits]
        low, high = min(pool_vectors), max(pool_vectors)
        scaled_vector = (hit.vector - low) / (high - low)
        assert abs(hit.fused - (w_v * scaled_vector + w_k * hit.keyword)) < 1e-9
