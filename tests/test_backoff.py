"""An embedding endpoint that is down costs one attempt, not one per lookup (embeddings/backoff.py).

The endpoint is a real HTTP server on 127.0.0.1 (embed_support.FaultServer) that fails, closes its
port, or comes back; the clock is the real one, with back-off periods of a fraction of a second.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from embed_support import MODEL, cli, provider_env
from service_support import wait_for

from captain_memo.cli.main import main
from captain_memo.config import embed_config
from captain_memo.embeddings import make_embedder
from captain_memo.embeddings.backoff import BackoffEmbedder, outage_of
from captain_memo.engine.core import Engine
from captain_memo.errors import EmbeddingError
from captain_memo.store import NewMemory, Store


@pytest.fixture
def provider(fault_server, monkeypatch):
    for name, value in provider_env("ollama", fault_server.url).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CAPTAIN_MEMO_EMBED_BACKOFF", "0.4")
    return fault_server


def test_a_failing_endpoint_is_asked_once_then_skipped(provider, db_file):
    engine = Engine(Store(db_file), make_embedder(embed_config()))
    try:
        assert isinstance(engine.embedder, BackoffEmbedder)
        engine.remember(NewMemory(body="The zanzibar cache key includes the tenant id."))
        provider.mode = "http500"
        before = provider.requests
        first = engine.recall("zanzibar tenant", record=False)
        asked = provider.requests - before
        assert asked >= 1 and first.legs == ("keyword",) and "answered 500" in first.failures["vector"]

        second = engine.recall("zanzibar cache", record=False)
        assert provider.requests - before == asked  # the endpoint was not asked again
        assert second.legs == ("keyword",) and second.hits[0].memory.body.startswith("The zanzibar")
        assert "answered 500" in second.failures["vector"] and "back-off" in second.failures["vector"]
    finally:
        engine.close()


def test_the_back_off_grows_while_down_and_ends_when_the_endpoint_is_back(provider, db_file):
    engine = Engine(Store(db_file), make_embedder(embed_config()))
    outage = outage_of(engine.embedder.inner)
    try:
        engine.remember(NewMemory(body="Webhook deliveries are retried three times."))
        provider.down()
        assert engine.recall("webhook retries", record=False).legs == ("keyword",)
        assert outage.read().delay == pytest.approx(0.4)
        # Retried in the background as each period ends: still down, so the period doubles.
        assert wait_for(lambda: getattr(outage.read(), "delay", 0) >= 1.6)
        assert "cannot connect" in outage.read().error

        provider.up()
        assert wait_for(lambda: outage.read() is None)  # a background retry found it back
        before = provider.requests
        result = engine.recall("webhook deliveries retried", record=False)
        assert result.legs == ("vector", "keyword") and provider.requests > before
    finally:
        engine.close()


def test_processes_share_the_outage(provider, tmp_path):
    """A second command run after the first found the endpoint failing does not ask it again."""
    db = str(tmp_path / "shared.db")
    provider.mode = "http500"
    env = {"CAPTAIN_MEMO_EMBED_BACKOFF": "60"}
    first = cli("--db", db, "remember", "the ledger export runs nightly", env=env)
    assert first.returncode == 0 and "no vector yet" in first.stdout
    asked = provider.requests
    assert asked >= 1
    second = cli("--db", db, "recall", "ledger export", env=env)
    assert second.returncode == 0 and "ledger export runs nightly" in second.stdout
    assert "back-off" in second.stdout and "keyword" in second.stdout
    assert provider.requests == asked


def test_doctor_makes_a_real_request_and_reports_latency_or_the_error(provider, db_file, capsys):
    engine = Engine(Store(db_file), make_embedder(embed_config()))
    engine.remember(NewMemory(body="The ledger export runs nightly."))
    engine.close()
    assert main(["--db", str(db_file), "doctor", "--json"]) == 0
    items = {row["item"]: row for row in json.loads(capsys.readouterr().out)}
    assert items["embedding"]["ok"] is True
    assert f"ollama:{MODEL} answered (384 dimensions, " in items["embedding"]["detail"]
    assert " ms)" in items["embedding"]["detail"]

    provider.down()
    assert main(["--db", str(db_file), "doctor", "--json"]) == 1
    items = {row["item"]: row for row in json.loads(capsys.readouterr().out)}
    assert items["embedding"]["ok"] is False and "cannot connect" in items["embedding"]["detail"]
    # The failed probe is recorded: the vector audit after it, and the next lookups, skip the endpoint.
    assert "cannot connect" in outage_of(make_embedder(embed_config(), backoff=False)).read().error
    assert "back-off" in items["vectors"]["detail"]


def test_checkhealth_tests_the_provider_even_during_a_back_off(provider, db_file):
    from captain_memo.editor import health_report

    engine = Engine(Store(db_file), make_embedder(embed_config()))
    try:
        provider.mode = "http500"
        assert engine.recall("anything at all", record=False).legs == ("keyword",)
    finally:
        engine.close()
    provider.mode = "ok"
    report = {row["item"]: row for row in health_report({"db": str(db_file)})}
    assert report["embedding"]["status"] == "ok" and " ms)" in report["embedding"]["detail"]
    assert outage_of(make_embedder(embed_config(), backoff=False)).read() is None  # the success ended it


# A process whose wall clock reads an hour earlier than the one that met the failure: the real clock
# cannot be stepped back in a test, so this process's time.time is replaced before the package loads
# (a fake wall clock), as after an NTP step or a manual `date -s`.
CLOCK_AN_HOUR_BACK = """
import time
real = time.time
time.time = lambda: real() - 3600
from captain_memo.config import embed_config
from captain_memo.embeddings import make_embedder
print(len(make_embedder(embed_config()).embed(["the ledger export"])[0]))
"""


def test_a_wall_clock_stepped_back_does_not_stretch_the_back_off(provider):
    inner = make_embedder(embed_config(), backoff=False)
    wrapper = BackoffEmbedder(inner, outage_of(inner), first=0.001)  # over in a millisecond
    provider.mode = "http500"
    with pytest.raises(EmbeddingError, match="answered 500"):
        wrapper.embed(["the ledger export"])
    wrapper.close()  # no background retry: the outage stays recorded, as a process that exited leaves it
    assert outage_of(inner).read() is not None
    provider.mode = "ok"
    stepped = subprocess.run([sys.executable, "-c", CLOCK_AN_HOUR_BACK], capture_output=True, text=True, timeout=120)
    assert stepped.returncode == 0, stepped.stderr
    assert stepped.stdout.strip() == "384"  # the healthy endpoint was asked
