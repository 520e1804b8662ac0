"""Settings: where the database lives, which embedder to use, and every ranking constant.

Every field of ``RankConfig`` is an environment variable ``CAPTAIN_MEMO_<NAME>`` that overrides
the chosen profile's value alone (constants kept in the ranking modules, such as
``IDENTIFIER_KEYWORD_WEIGHT`` in ranking/union.py, are not). A value that does not parse is reported once, naming the variable,
and the profile's value is used: a typo never yields NaN or a crash.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from captain_memo.base.paths import ENV_PREFIX, data_home, db_path  # noqa: F401 - where settings are read from
from captain_memo.errors import ConfigError

log = logging.getLogger("captain_memo")
_reported: set[str] = set()
# Where `captain-memo serve-embeddings` listens by default: this machine only, next to Ollama's 11434.
SERVE_HOST = "127.0.0.1"
SERVE_PORT = 11435


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
    # A query made only of code-shaped tokens: a chunk holding every one of them gets at least this
    # multiplier (ranking/boosts.py). 1 leaves such a query to the identifier boost alone.
    identifier_only_weight: float = 1.0
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
    # Where a recency age is counted from: "now", or "newest" (the newest dated observation in the
    # pool, so that a history whose last commit is a year old still has a latest; lifecycle.py).
    recency_anchor: str = "now"
    # The recency half-life is at most this share of the time the top N's observations span (0: off).
    recency_span_share: float = 0.0
    # On temporal intent, this many of the newest observations matching the query's topic join the
    # pool (0: none), so that recency has the newest to reorder (store/search.py, newest_matching).
    temporal_pool: int = 0
    # Temporal intent also from "recently", "currently" and "lately" (ranking/query.py).
    temporal_word_forms: bool = False
    # A change question ("latest change to capture", "what changed last week") is answered from the
    # changes touching its topic, newest first, inside its time window (ranking/changes.py, window.py).
    changes_first: bool = False
    # Leg scores of a small pool lean on each score's own scale, not on min-max alone (ranking/union.py).
    calibrated_scores: bool = False
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
    # "seed": the clock restarts at every listing and every surfacing strengthens S in full.
    # "use": the clock starts when a memory is stored or last opened; a strengthening counts in
    # proportion to the time since the last one (spaced repetition, lifecycle.py).
    tide_rule: str = "seed"
    # Union fusion: lean on the keyword leg for a query holding an identifier (ranking/union.py).
    shape_weighting: bool = False
    # v3: an identifier in the keyword query also matches its parts on their own (ranking/query.py).
    keyword_identifier_parts: bool = False
    # Union fusion: the vector leg's weight for a chunk of source code, unless the query is only
    # names (ranking/union.py, ranking/content.py). 0: code is weighed like any other chunk.
    code_vector_weight: float = 0.0
    # In a query that is only names, a name no candidate holds whole gives no keyword evidence from
    # its parts, and the answer says no memory names it (engine/core.py, ranking/query.py unheld_names).
    names_whole: bool = False
    # In a query that is only rare words (two or more), a chunk holding all of them is never ranked
    # below the chunks holding none of them (ranking/coverage.py).
    rare_words_floor: bool = False
    # On a question that is not about a change, an observation (a commit) is weighed this much
    # against curated text (ranking/coverage.py kind_prior); 1 weighs them alike.
    kind_prior: float = 1.0
    # A section of an indexed file whose heading path holds a rare word of the query is weighed this
    # much (ranking/coverage.py heading_words); 1 leaves headings to the legs.
    heading_weight: float = 1.0
    # The keyword leg takes its candidates per kind: the top candidates_per_leg of curated text and
    # as many observations, so commits cannot crowd the docs out of the pool (store/search.py).
    pool_per_kind: bool = False
    # With pool_per_kind: curated text's bm25 from curated text's own word statistics, and on a
    # question not about a change each kind's keyword score scaled to its own best (store/search.py,
    # ranking/union.py), so a history beside the docs does not reweigh the docs' words.
    curated_statistics: bool = False


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
    # Both legs scored over the union and min-max scaled there, then weighted equally (ranking/union.py).
    "v3": RankConfig(
        profile="v3",
        fusion_mode="union",
        vector_weight=0.5,
        keyword_weight=0.5,
        keyword_identifier_parts=True,
        identifier_only_weight=3.0,
        code_vector_weight=0.85,
        names_whole=True,
        rare_words_floor=True,
        kind_prior=0.6,
        heading_weight=1.2,
        pool_per_kind=True,
        curated_statistics=True,
        recency_anchor="newest",
        recency_span_share=0.33,
        temporal_pool=25,
        temporal_word_forms=True,
        changes_first=True,
        calibrated_scores=True,
        tide_rule="use",
        tide_gain_auto=0.1,
        tide_gain_search=0.2,
        tide_gain_open=1.5,
    ),
}
DEFAULT_PROFILE = "v3"
# Settings that take one of a few words: the words each accepts.
CHOICES = {
    "fusion_mode": ("weighted", "rrf", "union"),
    "recency_anchor": ("now", "newest"),
    "tide_rule": ("seed", "use"),
}


@dataclass(frozen=True)
class Bounds:
    """The values a number setting accepts, and why: a value outside is reported and not used."""

    low: float
    high: float
    why: str
    low_excluded: bool = False

    def refusal(self, value: float) -> str | None:
        """Why ``value`` is refused, or None when it is accepted."""
        below = value <= self.low if self.low_excluded else value < self.low
        if below or value > self.high:
            return f"must be {self.describe()}: {self.why}"
        return None

    def describe(self) -> str:
        def number(x: float) -> str:
            return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"

        return f"{'above' if self.low_excluded else 'from'} {number(self.low)} to {number(self.high)}"


# The range of every number setting. Ranges keep stored Tide state recoverable (a stability of 0
# never grows again) and scores finite (weights of 1e308 gave a score of inf): every multiplier is
# at most 100, so the product of the few a hit can get stays far from overflow. A number setting
# not listed gets DEFAULT_BOUNDS.
MULTIPLIER = Bounds(0, 100, "a weight beyond 100 only rescales scores, and bounded weights keep them finite")
TIDE_RATE = Bounds(0, 100, "a Tide rate beyond 100 reaches the cap at the first surfacing")
SHARE = Bounds(0, 1, "it is a fraction")
STABILITY = Bounds(0.1, 36_500, "stability is in days; below 0.1 an observation sinks at once and cannot recover")
BOUNDS: dict[str, Bounds] = {
    "rrf_k": Bounds(0, 1_000_000, "k is added to a rank"),
    "vector_weight": MULTIPLIER,
    "keyword_weight": MULTIPLIER,
    "candidates_per_leg": Bounds(1, 1_000_000, "each leg must return a candidate"),
    "result_limit": Bounds(1, 1_000_000, "a recall returns at least one hit"),
    "identifier_boost_step": MULTIPLIER,
    "identifier_boost_cap": MULTIPLIER,
    "identifier_only_weight": MULTIPLIER,
    "code_vector_weight": SHARE,
    "kind_prior": SHARE,
    "heading_weight": MULTIPLIER,
    "rare_token_weight": MULTIPLIER,
    "rare_token_min_length": Bounds(1, 1_000, "a word length"),
    "branch_weight": MULTIPLIER,
    "supersede_penalty": Bounds(0, 1, "a penalty: 1 leaves superseded memories where they rank"),
    "temporal_half_life_days": Bounds(0, 36_500, "an age in days; 0 means no decay"),
    "temporal_floor": SHARE,
    "temporal_top_n": Bounds(0, 1_000_000, "a number of candidates (0 switches recency off)"),
    "recency_span_share": SHARE,
    "temporal_pool": Bounds(0, 1_000, "a number of candidates (0 switches it off)"),
    "tide_initial_stability": STABILITY,
    "tide_max_stability": STABILITY,
    "tide_age_weight": TIDE_RATE,
    "tide_floor": SHARE,
    "tide_growth": TIDE_RATE,
    "tide_gain_auto": TIDE_RATE,
    "tide_gain_search": TIDE_RATE,
    "tide_gain_open": TIDE_RATE,
    "tide_dormant_buoyancy": SHARE,
    "tide_dormant_days": Bounds(0, 36_500, "an age in days"),
}
DEFAULT_BOUNDS = Bounds(0, 1_000_000, "a ranking constant is a finite number that is not negative")


def bounds(name: str) -> Bounds:
    return BOUNDS.get(name, DEFAULT_BOUNDS)


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


def rank_config(profile: str | None = None, env: Mapping[str, str] | None = None) -> RankConfig:
    """The profile named (else ``CAPTAIN_MEMO_RANK_PROFILE``, else v3) with env overrides applied."""
    env = os.environ if env is None else env
    name = (profile or env.get(ENV_PREFIX + "RANK_PROFILE") or DEFAULT_PROFILE).strip().lower()
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
        refusal = None if isinstance(value, (bool, str)) else bounds(field.name).refusal(value)
        if refusal:
            _warn_once(var, env[var], refusal, default)
            continue
        changes[field.name] = value
    for name, words in CHOICES.items():
        if changes.get(name, getattr(base, name)) not in words:
            _warn_once(ENV_PREFIX + name.upper(), changes[name], "expected " + " or ".join(words), getattr(base, name))
            changes.pop(name)
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
    # Text put before a search query / a document; None: the model's own (embeddings/prefixes.py).
    query_prefix: str | None = None
    document_prefix: str | None = None


def embed_config(env: Mapping[str, str] | None = None, **overrides) -> EmbedConfig:
    env = os.environ if env is None else env
    cfg = EmbedConfig(
        provider=(env.get(ENV_PREFIX + "EMBED_PROVIDER") or "local").strip().lower(),
        url=env.get(ENV_PREFIX + "EMBED_URL") or None,
        model=env.get(ENV_PREFIX + "EMBED_MODEL") or None,
        api_key=env.get(ENV_PREFIX + "EMBED_API_KEY") or None,
        encoding=(env.get(ENV_PREFIX + "EMBED_ENCODING") or "float").strip().lower(),
        # Set but empty means no prefix; unset means the model's own.
        query_prefix=env.get(ENV_PREFIX + "EMBED_QUERY_PREFIX"),
        document_prefix=env.get(ENV_PREFIX + "EMBED_DOCUMENT_PREFIX"),
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


# -- the team store (doc/team.md) -------------------------------------------------------------

TEAM_SCHEMES = ("postgresql://", "postgres://", "sqlite:///")
# How long a recall waits for the team store before it answers from the local store alone.
TEAM_TIMEOUT = Bounds(
    0.05, 60, "it is how long a recall may wait for the team store, in seconds, before answering locally"
)


@dataclass(frozen=True)
class TeamConfig:
    """``CAPTAIN_MEMO_TEAM_DB`` (None: no team store) and ``CAPTAIN_MEMO_TEAM_TIMEOUT`` in seconds."""

    url: str | None = None
    timeout: float = 1.0

    @property
    def problem(self) -> str | None:
        """Why the URL cannot be used, in one line that never shows a password; None when it can."""
        from captain_memo.base.urls import keyword_pairs

        if self.url is None or self.url.startswith(TEAM_SCHEMES) or keyword_pairs(self.url):
            return None
        return (
            f"CAPTAIN_MEMO_TEAM_DB={masked_url(self.url)!r} is not a team store: give postgresql://user@host/db"
            " or host=... dbname=... (or sqlite:///path/to/team.db to try it on one machine)"
        )

    @property
    def shown(self) -> str:
        """The URL with any password masked: the only form that may reach a log or a message."""
        return masked_url(self.url or "")


def team_config(env: Mapping[str, str] | None = None) -> TeamConfig:
    env = os.environ if env is None else env
    cfg = TeamConfig(url=(env.get(ENV_PREFIX + "TEAM_DB") or "").strip() or None)
    var = ENV_PREFIX + "TEAM_TIMEOUT"
    if var in env:
        try:
            value = _parse(float, env[var])
            refusal = TEAM_TIMEOUT.refusal(value)
            if refusal:
                raise ValueError(refusal)
            cfg = replace(cfg, timeout=value)
        except ValueError as exc:
            _warn_once(var, env[var], str(exc), cfg.timeout)
    return cfg


HOOK_TEAM_ENV = ENV_PREFIX + "HOOK_TEAM"


def hook_team(env: Mapping[str, str] | None = None) -> bool:
    """Whether `captain-memo hook` puts team memories in an agent's prompt (``CAPTAIN_MEMO_HOOK_TEAM=1``).
    Off by default: the hook speaks to the model unasked, and a teammate's text would reach it with
    no one choosing to read it (recall and show still find team memories)."""
    env = os.environ if env is None else env
    raw = env.get(HOOK_TEAM_ENV)
    if raw is None or not raw.strip():
        return False
    try:
        return _parse(bool, raw)
    except ValueError as exc:
        _warn_once(HOOK_TEAM_ENV, raw, str(exc), False)
        return False


def masked_url(url: str) -> str:
    """``url`` as it may be printed: its user, password and parameter values masked."""
    from captain_memo.base.urls import masked_url as masked

    return masked(url)


# -- switches read by other modules (each keeps its own default and wording) ------------------

REDACT_ENV = ENV_PREFIX + "REDACT_SECRETS"
EMBED_BACKOFF_ENV = ENV_PREFIX + "EMBED_BACKOFF"
EMBED_BACKOFF_FIRST = 2.0  # seconds an unreachable endpoint is left alone at first
SERVE_API_KEY_ENV = ENV_PREFIX + "SERVE_API_KEY"


def redaction_on(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``CAPTAIN_MEMO_REDACT_SECRETS`` asks for redaction before saving."""
    env = os.environ if env is None else env
    return (env.get(REDACT_ENV) or "").strip().lower() in ("1", "true", "yes", "on")


def embed_backoff(env: Mapping[str, str] | None = None) -> float:
    """``CAPTAIN_MEMO_EMBED_BACKOFF``: the first pause, in seconds, after an endpoint failed (0: none)."""
    env = os.environ if env is None else env
    try:
        value = float(env.get(EMBED_BACKOFF_ENV, EMBED_BACKOFF_FIRST))
    except ValueError:
        log.warning(
            "ignoring %s=%r (not a number); using %g",
            EMBED_BACKOFF_ENV,
            env.get(EMBED_BACKOFF_ENV),
            EMBED_BACKOFF_FIRST,
        )
        return EMBED_BACKOFF_FIRST
    return max(0.0, value)


def serve_api_key(env: Mapping[str, str] | None = None) -> str | None:
    """``CAPTAIN_MEMO_SERVE_API_KEY``: the bearer key `serve-embeddings` requires; None: none."""
    env = os.environ if env is None else env
    return env.get(SERVE_API_KEY_ENV) or None


# -- where memories come from (sources/settings.py holds the defaults and the folder rules) ---------

NOTE_DIRS_ENV = ENV_PREFIX + "NOTE_DIRS"
SKILL_DIRS_ENV = ENV_PREFIX + "SKILL_DIRS"
# Field of sources' SourceSettings: its variable, and the bounds a number must keep.
SOURCE_NUMBERS = {
    "max_file_bytes": (ENV_PREFIX + "MAX_FILE_BYTES", int, 1, None),
    "git_max_commits": (ENV_PREFIX + "GIT_MAX_COMMITS", int, 1, None),
    "git_max_message_chars": (ENV_PREFIX + "GIT_MAX_MESSAGE_CHARS", int, 80, None),
    "auto_supersede_cosine": (ENV_PREFIX + "AUTO_SUPERSEDE_COSINE", float, -1.0, 1.0),
}
SOURCE_SWITCHES = {"auto_supersede": ENV_PREFIX + "AUTO_SUPERSEDE"}


def watch_mode(env: Mapping[str, str] | None = None) -> str:
    """How the serving engine follows the repositories indexed into its store (CAPTAIN_MEMO_WATCH):
    "events" (the default: the file system's change events, or polling where it has none), "polling"
    (``poll``: always poll, for a file system whose events are not to be trusted), or "off" (``0``)."""
    env = os.environ if env is None else env
    raw = (env.get("CAPTAIN_MEMO_WATCH") or "").strip().lower()
    if raw == "poll":
        return "polling"
    return "events" if _switch(env, "CAPTAIN_MEMO_WATCH", True) else "off"


def source_folders(env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``CAPTAIN_MEMO_NOTE_DIRS`` and ``CAPTAIN_MEMO_SKILL_DIRS`` as written (colon-separated)."""
    env = os.environ if env is None else env
    return env.get(NOTE_DIRS_ENV), env.get(SKILL_DIRS_ENV)


def source_values(defaults: Mapping[str, object], env: Mapping[str, str] | None = None) -> dict[str, object]:
    """Each of the sources' numbers and switches: its variable's value, else ``defaults[field]``
    (a value that does not parse or leaves its bounds is reported once, naming the variable)."""
    env = os.environ if env is None else env
    values = {
        field: _number(env, name, defaults[field], kind, low, high)
        for field, (name, kind, low, high) in SOURCE_NUMBERS.items()
    }
    values.update({field: _switch(env, name, bool(defaults[field])) for field, name in SOURCE_SWITCHES.items()})
    return values


def _number(env, name: str, default, kind=int, low: float = 0.0, high: float | None = None):
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        _warn_once(name, raw, f"not a{'n integer' if kind is int else ' number'}", default)
        return default
    if value != value or value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        _warn_once(name, raw, f"must be {bounds}", default)
        return default
    return value


def _switch(env, name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    _warn_once(name, raw, "expected 1/0, true/false, on/off", default)
    return default
