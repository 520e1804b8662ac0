"""What is measured: each single leg, each profile, and each profile with one part switched off.

Every method is a ranking configuration plus the legs it runs, and every one goes through
``Engine.recall`` exactly as a user's search does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from captain_memo.config import PROFILES, RankConfig

LEGS = ("vector", "keyword")


@dataclass(frozen=True)
class Method:
    name: str
    cfg: RankConfig
    legs: tuple[str, ...] = LEGS
    ablation_of: str | None = None  # the profile this is a variant of


def single_leg(leg: str) -> Method:
    """One leg's own order: weighted fusion keeps a one-leg hit's score, and nothing multiplies it."""
    cfg = replace(
        PROFILES["v2"],
        profile=f"{leg} only",
        identifier_boost=False,
        rare_token_boost=False,
        branch_boost=False,
        supersede_penalty=1.0,
        temporal_intent=False,
        tide=False,
    )
    return Method(f"{leg} leg only", cfg, (leg,))


# Each switch, and the value that turns it off. Branch, superseded, recency and Tide are listed
# too: on the public sets they never fire (no branches, nothing superseded, only curated memories),
# and the ablation shows that by leaving the scores unchanged.
SWITCHES: dict[str, dict] = {
    "identifier boost": {"identifier_boost": False},
    "rare-token boost": {"rare_token_boost": False},
    "branch boost": {"branch_boost": False},
    "superseded penalty": {"supersede_penalty": 1.0},
    "recency": {"temporal_intent": False},
    "tide": {"tide": False},
}
# v3's own parts (see ranking/union.py), each switched off in turn.
V3_SWITCHES: dict[str, dict] = {
    "union scoring": {"fusion_mode": "weighted"},  # v2's fusion, with v3's weights
    "identifier parts": {"keyword_identifier_parts": False},
    "code weighting": {"code_vector_weight": 0.0},
    # What kind of text answers, and names and rare words held whole (ranking/coverage.py, engine/core.py).
    "kind prior": {"kind_prior": 1.0},
    "heading weight": {"heading_weight": 1.0},
    "names whole": {"names_whole": False},
    "rare words floor": {"rare_words_floor": False},
    "pool per kind": {"pool_per_kind": False},
    "curated statistics": {"curated_statistics": False},
}
# Settings v3 leaves off, measured switched on.
V3_VARIANTS: dict[str, dict] = {
    "shape weighting": {"shape_weighting": True},
}


def ablations(profile: str, switches: dict[str, dict]) -> list[Method]:
    base = PROFILES[profile]
    return [
        Method(f"{profile} − {name}", replace(base, **change), LEGS, profile)
        for name, change in switches.items()
        if any(getattr(base, key) != value for key, value in change.items())
    ]


def variants(profile: str, switches: dict[str, dict]) -> list[Method]:
    base = PROFILES[profile]
    return [Method(f"{profile} + {name}", replace(base, **change), LEGS, profile) for name, change in switches.items()]


def default_methods(with_ablations: bool = True) -> list[Method]:
    methods = [single_leg("keyword"), single_leg("vector")]
    methods += [Method(name, PROFILES[name]) for name in ("legacy", "v2", "v3")]
    if with_ablations:
        methods += ablations("v2", SWITCHES)
        methods += ablations("v3", {**SWITCHES, **V3_SWITCHES})
        methods += variants("v3", V3_VARIANTS)
    return methods
