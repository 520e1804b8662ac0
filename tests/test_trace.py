"""Every hit explains itself: its score is its fused score times the multipliers on its trace, for
every hit of every query, in every profile, over the whole candidate pool of the sample notes.

The sample is embedded with the deterministic test embedder here: the trace arithmetic does not
depend on the model, and the real model's run over the sample is in test_worked_example.py."""

from __future__ import annotations

import math

import pytest
from fakes import HashEmbedder
from recall_support import assert_trace, copy_db, sample_db

from captain_memo.engine.core import Engine
from captain_memo.store import Store

QUERIES = [
    "get_effective_contract_price rounding",
    "get_effective_contract_price get_effective_contract_price get_effective_contract_price",
    "what is the latest deploy version",
    "most recent deploy",
    "deploy version 2.4.0 canary",
    "current production version now",
    "why does the quote API answer 409",
    "formatMoney locale",
    "useQuotePreview re-renders",
    "api/routes/quotes.py KeyError",
    "billing.money.Money floats",
    "tier boundaries",
    "how do I cut a release",
    "webhook secret rotation",
    "gapless invoice numbers",
    "HTTP TODO",
    "proration seconds DST",
    "contract overrides timezone",
    "slow resolver for accounts with many overrides",
]
KNOWN = {"identifier", "rare_token", "branch", "superseded", "recency", "tide"}
# v3's own stages (ranking/coverage.py): a commit weighed on a question not about a change, and a
# chunk holding every rare word lifted over those holding none.
KNOWN_V3 = KNOWN | {"kind", "rare_words", "heading"}


@pytest.fixture(scope="module")
def sample_engine(tmp_path_factory):
    embedder = HashEmbedder()
    path = copy_db(sample_db(tmp_path_factory, embedder), tmp_path_factory.mktemp("trace"))
    engine = Engine(Store(path), embedder)
    ids = {m.body.split(";")[0]: m.id for m in engine.store.list_memories(kind="observation", limit=100)}
    # One superseded fact, so the superseded multiplier is traced too.
    engine.supersede(ids["deploy version 2.4.0 to production"], ids["deploy version 2.5.0 to production this morning"])
    yield engine
    engine.close()


@pytest.mark.parametrize("profile", ["v2", "legacy", "v3"])
def test_every_hit_multiplies_out(sample_engine, profile):
    seen = set()
    for query in QUERIES:
        for branch in ("main", "feature/contract-pricing"):
            result = sample_engine.recall(query, branch=branch, profile=profile, limit=100, record=False)
            assert result.profile == profile and result.legs == ("vector", "keyword")
            assert len(result.hits) == len({h.memory.id for h in result.hits}) >= 10, query
            assert_trace(result.hits)
            for hit in result.hits:
                assert math.isfinite(hit.score) and hit.score >= 0
                assert {f.name for f in hit.factors} <= (KNOWN_V3 if profile == "v3" else KNOWN)
                seen.update(f.name for f in hit.factors)
            scores = [h.score for h in result.hits]
            assert scores == sorted(scores, reverse=True)
    if profile == "v2":
        assert seen == KNOWN  # every kind of multiplier was exercised and multiplied out
    if profile == "legacy":
        assert seen == {"identifier"}
