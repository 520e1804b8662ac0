"""Configuration: every ranking constant is an environment variable that overrides the chosen
profile's value alone; a value that does not parse is reported once and the default is used."""

from __future__ import annotations

import ast
import logging
import math
import re
from dataclasses import fields, replace
from pathlib import Path

import pytest

from captain_memo import config
from captain_memo.config import PROFILES, RankConfig, db_path, embed_config, rank_config
from captain_memo.errors import ConfigError

FIELDS = [f.name for f in fields(RankConfig) if f.name != "profile"]


def var(name: str) -> str:
    return "CAPTAIN_MEMO_" + name.upper()


def other_value(value, name: str = "fusion_mode"):
    """A valid value different from ``value``, as the environment would spell it."""
    if isinstance(value, bool):
        return (not value), ("0" if value else "1")
    step = 3 if isinstance(value, int) else 0.25
    if isinstance(value, (int, float)):
        changed = value + step if config.bounds(name).refusal(value + step) is None else value - step
        return changed, str(changed) if isinstance(value, int) else repr(changed)
    modes = config.CHOICES[name]
    new = modes[(modes.index(value) + 1) % len(modes)]
    return new, new


BAD = {
    bool: ["maybe", "2", ""],
    int: ["ten", "2.5", "-3", ""],
    float: ["abc", "nan", "inf", "-1", "1e999", ""],
    str: ["bogus", ""],
}


@pytest.fixture(autouse=True)
def fresh_reports(monkeypatch):
    """Each test sees the warnings of its own bad values (they are reported once per process)."""
    monkeypatch.setattr(config, "_reported", set())


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("name", FIELDS)
def test_each_variable_overrides_alone_without_leaving_the_profile(profile, name):
    base = PROFILES[profile]
    value, raw = other_value(getattr(base, name), name)
    cfg = rank_config(profile, env={var(name): raw})
    assert cfg == replace(base, **{name: value})
    assert cfg.profile == profile


@pytest.mark.parametrize("name", FIELDS)
def test_a_bad_value_is_reported_once_and_the_default_used(name, caplog):
    base = PROFILES[config.DEFAULT_PROFILE]
    kind = type(getattr(base, name))
    for raw in BAD[kind]:
        config._reported.clear()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="captain_memo"):
            first = rank_config(env={var(name): raw})
            second = rank_config(env={var(name): raw})
        assert first == second == base, raw
        warnings = [r.getMessage() for r in caplog.records if var(name) in r.getMessage()]
        assert len(warnings) == 1, (raw, warnings)
        for value in (getattr(first, f.name) for f in fields(RankConfig)):
            assert not (isinstance(value, float) and not math.isfinite(value))


NUMBERS = [name for name in FIELDS if type(getattr(PROFILES["v2"], name)) in (int, float)]


@pytest.mark.parametrize("name", NUMBERS)
def test_a_value_out_of_its_range_is_reported_naming_the_variable_and_why(name, caplog):
    limits = config.bounds(name)
    kind = type(getattr(PROFILES["v2"], name))
    outside = [limits.high * 2 + 1, 1e308, limits.low - 1]
    if limits.low_excluded:
        outside.append(limits.low)
    for value in outside:
        raw = str(int(value)) if kind is int and value < 1e18 else repr(float(value))
        if kind is int and "e" in raw:
            continue
        config._reported.clear()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="captain_memo"):
            assert rank_config(env={var(name): raw}) == PROFILES[config.DEFAULT_PROFILE], raw
        [warning] = [r.getMessage() for r in caplog.records]
        assert var(name) in warning and limits.why in warning, warning


def test_every_profile_value_is_within_its_range():
    """A constant without a range of its own gets the default one: finite and not negative."""
    for name in NUMBERS:
        for profile in PROFILES.values():
            assert config.bounds(name).refusal(getattr(profile, name)) is None, (profile.profile, name)


def test_the_profile_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("CAPTAIN_MEMO_RANK_PROFILE", "legacy")
    monkeypatch.setenv("CAPTAIN_MEMO_IDENTIFIER_BOOST", "0")
    cfg = rank_config()
    assert cfg == replace(PROFILES["legacy"], identifier_boost=False)
    assert rank_config("v2") == replace(PROFILES["v2"], identifier_boost=False)  # an argument beats the variable
    monkeypatch.setenv("CAPTAIN_MEMO_RANK_PROFILE", " V3 ")
    assert rank_config().profile == "v3"


def test_an_unknown_profile_is_an_error_naming_the_choices():
    with pytest.raises(ConfigError, match="legacy"):
        rank_config("v9")


def test_several_overrides_together():
    cfg = rank_config("legacy", env={var("tide"): "on", var("rrf_k"): "30", var("temporal_top_n"): "4"})
    assert cfg == replace(PROFILES["legacy"], tide=True, rrf_k=30.0, temporal_top_n=4)


def test_v2_defaults_match_the_documented_constants():
    v2 = PROFILES["v2"]
    assert (v2.fusion_mode, v2.vector_weight, v2.keyword_weight, v2.candidates_per_leg, v2.result_limit) == (
        "weighted",
        0.7,
        0.3,
        25,
        10,
    )
    assert (
        v2.identifier_boost_step,
        v2.identifier_boost_cap,
        v2.rare_token_weight,
        v2.branch_weight,
        v2.supersede_penalty,
    ) == (0.3, 2.0, 1.15, 1.1, 0.5)
    assert (v2.temporal_half_life_days, v2.temporal_floor, v2.temporal_top_n) == (21.0, 0.5, 10)
    assert (
        v2.tide_initial_stability,
        v2.tide_max_stability,
        v2.tide_age_weight,
        v2.tide_floor,
        v2.tide_growth,
        v2.tide_gain_auto,
        v2.tide_gain_search,
        v2.tide_gain_open,
    ) == (7.0, 365.0, 0.15, 0.30, 0.5, 0.5, 1.0, 1.5)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"CAPTAIN_MEMO_DB": "/data/x.db", "CAPTAIN_MEMO_HOME": "/h"}, "/data/x.db"),
        ({"CAPTAIN_MEMO_HOME": "/h"}, "/h/memo.db"),
        ({"XDG_DATA_HOME": "/xdg"}, "/xdg/captain-memo/memo.db"),
    ],
)
def test_database_location(env, expected):
    assert str(db_path(env)) == expected


def test_embedding_settings_from_the_environment(caplog):
    cfg = embed_config(
        {
            "CAPTAIN_MEMO_EMBED_PROVIDER": " Ollama ",
            "CAPTAIN_MEMO_EMBED_URL": "http://127.0.0.1:11434",
            "CAPTAIN_MEMO_EMBED_MODEL": "nomic-embed-text",
            "CAPTAIN_MEMO_EMBED_BATCH_SIZE": "8",
            "CAPTAIN_MEMO_EMBED_TIMEOUT": "2.5",
        }
    )
    assert (cfg.provider, cfg.url, cfg.model, cfg.batch_size, cfg.timeout) == (
        "ollama",
        "http://127.0.0.1:11434",
        "nomic-embed-text",
        8,
        2.5,
    )
    with caplog.at_level(logging.WARNING, logger="captain_memo"):
        bad = embed_config({"CAPTAIN_MEMO_EMBED_BATCH_SIZE": "0", "CAPTAIN_MEMO_EMBED_TIMEOUT": "soon"})
    assert (bad.batch_size, bad.timeout) == (32, 30.0)
    text = caplog.text
    assert "CAPTAIN_MEMO_EMBED_BATCH_SIZE" in text and "CAPTAIN_MEMO_EMBED_TIMEOUT" in text


def test_the_configuration_table_lists_every_variable_with_its_profile_values():
    """doc/configuration.md is the one table of variables: it must not drift from the code."""
    from pathlib import Path

    doc = Path(__file__).resolve().parent.parent / "doc" / "configuration.md"
    rows = {}
    for line in doc.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].startswith("`CAPTAIN_MEMO_") and len(cells) == 5:
            rows[cells[0].strip("`")] = cells[1:4]

    def parsed(cell: str):
        if cell in ("on", "off"):
            return cell == "on"
        try:
            return float(cell)
        except ValueError:
            return cell

    assert set(rows) == {var(name) for name in FIELDS}
    for name in FIELDS:
        documented = [parsed(cell) for cell in rows[var(name)]]
        assert documented == [getattr(PROFILES[p], name) for p in ("v2", "legacy", "v3")], name
    text = doc.read_text(encoding="utf-8")
    for other in (
        "CAPTAIN_MEMO_HOME",
        "CAPTAIN_MEMO_DB",
        "CAPTAIN_MEMO_RANK_PROFILE",
        "CAPTAIN_MEMO_EMBED_PROVIDER",
        "CAPTAIN_MEMO_EMBED_URL",
        "CAPTAIN_MEMO_EMBED_MODEL",
        "CAPTAIN_MEMO_EMBED_API_KEY",
        "CAPTAIN_MEMO_EMBED_BATCH_SIZE",
        "CAPTAIN_MEMO_EMBED_TIMEOUT",
        "CAPTAIN_MEMO_EMBED_ENCODING",
    ):
        assert f"`{other}`" in text, other


# -- settings and stored Tide state ---------------------------------------------------------------


def test_a_stability_setting_of_zero_never_reaches_the_store(db_file, hash_embedder, monkeypatch):
    """CAPTAIN_MEMO_TIDE_MAX_STABILITY=0 or ..._INITIAL_STABILITY=0 wrote S = 0, which no later
    setting could raise again: the observation stayed at the Tide floor for good."""
    from captain_memo.engine.core import Engine
    from captain_memo.ranking.lifecycle import MIN_STABILITY
    from captain_memo.store import NewMemory, Store

    monkeypatch.setenv(var("tide_max_stability"), "0")
    monkeypatch.setenv(var("tide_initial_stability"), "0")
    engine = Engine(Store(db_file), hash_embedder)
    try:
        memory_id = engine.remember(NewMemory(body="the staging database restarts nightly", kind="observation"))
        assert engine.store.get(memory_id).stability == PROFILES["v2"].tide_initial_stability
        engine.show(memory_id)
        assert engine.store.get(memory_id).stability > PROFILES["v2"].tide_initial_stability >= MIN_STABILITY
    finally:
        engine.close()


def test_a_stored_stability_of_zero_grows_again_under_the_defaults(engine):
    from captain_memo.store import NewMemory

    memory_id = engine.remember(NewMemory(body="the nightly job emails the team", kind="observation"))
    with engine.store.write() as conn:  # what a version that accepted 0 left behind
        conn.execute("UPDATE memories SET stability = 0 WHERE id = ?", (memory_id,))
    engine.show(memory_id)
    engine.show(memory_id)
    assert engine.store.get(memory_id).stability > 0.1


def test_huge_weights_never_give_an_infinite_score(engine, monkeypatch):
    from captain_memo.store import NewMemory

    for text in ("deploy the billing service on main", "billing deploys wait for the freeze", "deploy checklist"):
        engine.remember(NewMemory(body=text, kind="observation", branch="main"))
    for name in (
        "vector_weight",
        "keyword_weight",
        "branch_weight",
        "rare_token_weight",
        "identifier_boost_cap",
        "identifier_boost_step",
    ):
        monkeypatch.setenv(var(name), "1e308")
    result = engine.recall("deploy billing_service", branch="main", all_projects=True)
    assert result.hits and all(math.isfinite(hit.score) for hit in result.hits)


def test_the_configuration_page_lists_every_range():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "doc" / "configuration.md").read_text(encoding="utf-8")
    for name in NUMBERS:
        limits = config.bounds(name)
        assert f"| `{var(name)}` | {limits.describe()} | {limits.why} |" in doc, name


# -- where settings are read ------------------------------------------------------------------

PACKAGE = Path(config.__file__).parent
# The thin command line's few settings (the store, the service switches, the runtime folder) are
# read where it can afford to: importing config.py costs it 24 ms (dataclasses and the profiles).
THIN_READERS = {"config.py", "base/paths.py", "base/runtime_folder.py"}
# onnxruntime reads its telemetry switch from the process environment alone, once, at its import.
ENVIRONMENT_WRITERS = {"embeddings/local.py"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _is_environ(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _environment_writes(tree) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        lines += [t.lineno for t in targets if isinstance(t, ast.Subscript) and _is_environ(t.value)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.attr == "putenv" or (
                _is_environ(func.value) and func.attr in ("setdefault", "update", "pop", "clear")
            ):
                lines.append(node.lineno)
    return lines


def _is_setting_key(node) -> bool:
    """A variable's name as a lookup key: ``"CAPTAIN_MEMO_X"``, ``ENV_PREFIX + "X"``, ``REDACT_ENV``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and re.fullmatch("CAPTAIN_MEMO_[A-Z_]+", node.value) is not None
    if isinstance(node, ast.BinOp):
        return isinstance(node.left, ast.Name) and node.left.id == "ENV_PREFIX"
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.endswith(("_ENV", "_VAR"))


def _setting_reads(tree) -> list[int]:
    """Lines looking a setting up: ``env.get(KEY)``, ``env[KEY]``, or a reader handed ``KEY``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(_is_setting_key(arg) for arg in node.args):
            found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_setting_key(node.slice):
            found.append(node.lineno)
    return found


def test_no_module_writes_the_environment_but_onnxruntimes_own_switch():
    writes = {name: lines for name, tree in _modules() if (lines := _environment_writes(tree))}
    assert set(writes) <= ENVIRONMENT_WRITERS, writes


def test_settings_are_read_in_config_alone_beside_the_thin_command_lines_few():
    reads = {name: names for name, tree in _modules() if name not in THIN_READERS and (names := _setting_reads(tree))}
    assert reads == {}


def test_every_setting_read_is_documented():
    documented = (PACKAGE.parent / "doc" / "configuration.md").read_text(encoding="utf-8")
    names = set()
    for name in THIN_READERS:
        text = (PACKAGE / name).read_text(encoding="utf-8")
        names |= set(re.findall(r"CAPTAIN_MEMO_[A-Z_]*[A-Z]", text))
        names |= {config.ENV_PREFIX + suffix for suffix in re.findall(r'ENV_PREFIX \+ "([A-Z_]+)"', text)}
    names |= {config.ENV_PREFIX + f.name.upper() for f in fields(RankConfig) if f.name != "profile"}
    missing = sorted(n for n in names if n not in documented and not n.endswith("_"))
    assert missing == []
