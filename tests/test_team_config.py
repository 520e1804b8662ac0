"""CAPTAIN_MEMO_TEAM_DB and CAPTAIN_MEMO_TEAM_TIMEOUT: read, bounded, and never shown with a password."""

from __future__ import annotations

import logging

import pytest

from captain_memo import config
from captain_memo.config import team_config


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(config, "_reported", set())


def test_unset_means_no_team_store():
    cfg = team_config({})
    assert cfg.url is None and cfg.timeout == 1.0 and cfg.problem is None


def test_the_url_and_the_timeout_are_read():
    cfg = team_config({"CAPTAIN_MEMO_TEAM_DB": " postgresql://dev@db/memo ", "CAPTAIN_MEMO_TEAM_TIMEOUT": "2.5"})
    assert cfg.url == "postgresql://dev@db/memo" and cfg.timeout == 2.5 and cfg.problem is None


@pytest.mark.parametrize("raw", ["0", "0.01", "61", "nan", "soon", "-1"])
def test_a_timeout_out_of_bounds_is_reported_once_and_not_used(raw, caplog):
    with caplog.at_level(logging.WARNING, logger="captain_memo"):
        cfg = team_config({"CAPTAIN_MEMO_TEAM_TIMEOUT": raw})
        team_config({"CAPTAIN_MEMO_TEAM_TIMEOUT": raw})
    assert cfg.timeout == 1.0
    assert caplog.text.count("CAPTAIN_MEMO_TEAM_TIMEOUT") == 1


def test_a_password_is_never_shown():
    cfg = team_config({"CAPTAIN_MEMO_TEAM_DB": "postgresql://dev:s3cr3t@db.example.com:5433/memo?sslmode=require"})
    assert "s3cr3t" not in cfg.shown and "db.example.com:5433/memo" in cfg.shown
    bad = team_config({"CAPTAIN_MEMO_TEAM_DB": "mysql://dev:s3cr3t@db/memo"})
    assert bad.problem is not None and "s3cr3t" not in bad.problem and "postgresql://" in bad.problem


def test_one_masker_for_both_forms_of_a_connection_string():
    from captain_memo.base.urls import masked_url
    from captain_memo.config import TeamConfig

    assert masked_url("host=db.example port=5432 dbname=memo user=alice password='a b\\'c' sslmode=require") == (
        "host=db.example port=5432 dbname=memo user=*** password=*** sslmode=***"
    )
    assert masked_url("postgresql://alice:pw@db.example/memo?sslmode=require") == (
        "postgresql://***@db.example/memo?sslmode=***"
    )
    kv = TeamConfig(url="host=db.example dbname=memo user=alice password=hunter2")
    assert kv.problem is None and "hunter2" not in kv.shown and "alice" not in kv.shown
    unknown = TeamConfig(url="mysql://bob:s3cret@db/memo")
    assert "s3cret" not in (unknown.problem or "") and "is not a team store" in (unknown.problem or "")
