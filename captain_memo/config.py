"""Settings: where the database lives, which embedder to use, and every ranking constant.

Every ranking constant is an environment variable ``CAPTAIN_MEMO_<NAME>`` that overrides the
chosen profile's value alone. A value that does not parse is reported once, naming the variable,
and the profile's value is used: a typo never yields NaN or a crash.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, fields, replace

from captain_memo.errors import ConfigError
from captain_memo.paths import ENV_PREFIX, data_home, db_path  # noqa: F401 - where settings are read from

log = logging.getLogger("captain_memo")
_reported: set[str] = set()


@dataclass(frozen=True)
class RankConfig:
    """One ranking profile; field names are the environment variables without the prefix."""

    profile: str = "v2"
    fusion_mode: str = "weighted"  # weighted | rrf | union
    rrf_k: float = 60.0
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    candidates_per_leg: int = 25
    result_limit: int = 10
    identifier_boost: bool = True
    identifier_boost_step: float = 0.3
    identifier_boost_cap: float = 2.0
    rare_token_boost: bool = True
    rare_token_weight: float = 1.15
    rare_token_min_length: int = 4
    branch_boost: bool = True
    branch_weight: float = 1.1
    supersede_penalty: float = 0.5
    temporal_intent: bool = True
    temporal_half_life_days: float = 21.0
    temporal_floor: float = 0.5
    temporal_top_n: int = 10
    tide: bool = True
    tide_initial_stability: float = 7.0
    tide_max_stability: float = 365.0
    tide_age_weight: float = 0.15
    tide_floor: float = 0.30
    tide_growth: float = 0.5
    tide_gain_auto: float = 0.5
    tide_gain_search: float = 1.0
    tide_gain_open: float = 1.5
    tide_dormant_buoyancy: float = 0.30
    tide_dormant_days: float = 90.0
    # v3 only: how far a query's shape moves weight between the legs (see ranking/fusion.py).
    shape_weighting: bool = False
    # v3: an identifier in the keyword query also matches its parts on their own (ranking/query.py).
    keyword_identifier_parts: bool = False


PROFILES: dict[str, RankConfig] = {
    "v2": RankConfig(),
    # Frozen so a regression can be bisected against it; never change these values.
    "legacy": RankConfig(
        profile="legacy",
        fusion_mode="rrf",
        rare_token_boost=False,
        branch_boost=False,
        supersede_penalty=1.0,
        temporal_intent=False,
        tide=False,
    ),
    # Both legs scored over the union and min-max scaled there, then weighted equally (ranking/v3.py).
    "v3": RankConfig(profile="v3", fusion_mode="union", vector_weight=0.5, keyword_weight=0.5,
                     keyword_identifier_parts=True),
}


def _parse(kind: type, raw: str):
    text = raw.strip()
    if kind is bool:
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected 1/0, true/false, on/off")
    if kind is int:
        return int(text)
    if kind is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return value
    return text


def _warn_once(name: str, raw: str, why: str, default) -> None:
    if name not in _reported:
        _reported.add(name)
        log.warning("ignoring %s=%r (%s); using %r", name, raw, why, default)


def rank_config(profile: str | None = None, env: dict | None = None) -> RankConfig:
    """The profile named (else ``CAPTAIN_MEMO_RANK_PROFILE``, else v2) with env overrides applied."""
    env = os.environ if env is None else env
    name = (profile or env.get(ENV_PREFIX + "RANK_PROFILE") or "v2").strip().lower()
    if name not in PROFILES:
        raise ConfigError(f"unknown ranking profile {name!r}; choose one of {', '.join(PROFILES)}")
    base = PROFILES[name]
    changes = {}
    for field in fields(RankConfig):
        if field.name == "profile":
            continue
        var = ENV_PREFIX + field.name.upper()
        if var not in env:
            continue
        default = getattr(base, field.name)
        try:
            value = _parse(type(default), env[var])
        except ValueError as exc:
            _warn_once(var, env[var], str(exc), default)
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            _warn_once(var, env[var], "negative", default)
            continue
        changes[field.name] = value
    if changes.get("fusion_mode", base.fusion_mode) not in ("weighted", "rrf", "union"):
        _warn_once(ENV_PREFIX + "FUSION_MODE", changes["fusion_mode"], "expected weighted, rrf or union", base.fusion_mode)
        changes.pop("fusion_mode")
    return replace(base, **changes)


@dataclass(frozen=True)
class EmbedConfig:
    provider: str = "local"  # local | ollama | openai
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    batch_size: int = 32
    timeout: float = 30.0
    encoding: str = "float"  # openai provider: float | base64 (CAPTAIN_MEMO_EMBED_ENCODING)


def embed_config(env: dict | None = None, **overrides) -> EmbedConfig:
    env = os.environ if env is None else env
    cfg = EmbedConfig(
        provider=(env.get(ENV_PREFIX + "EMBED_PROVIDER") or "local").strip().lower(),
        url=env.get(ENV_PREFIX + "EMBED_URL") or None,
        model=env.get(ENV_PREFIX + "EMBED_MODEL") or None,
        api_key=env.get(ENV_PREFIX + "EMBED_API_KEY") or None,
        encoding=(env.get(ENV_PREFIX + "EMBED_ENCODING") or "float").strip().lower(),
    )
    for name in ("batch_size", "timeout"):
        var = ENV_PREFIX + "EMBED_" + name.upper()
        if var in env:
            try:
                value = _parse(type(getattr(cfg, name)), env[var])
                if value <= 0:
                    raise ValueError("must be positive")
                cfg = replace(cfg, **{name: value})
            except ValueError as exc:
                _warn_once(var, env[var], str(exc), getattr(cfg, name))
    return replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
