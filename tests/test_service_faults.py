"""The warm service stopped (SIGSTOP) or killed (SIGKILL) in the middle of a request: every client
comes back in time, answers in its own process, and nothing is lost or saved twice.

Real processes: `captain-memo` commands and the service they start. The model is served over HTTP
on 127.0.0.1 by this test, behind a gate, so the service is caught inside a request for certain:
the gate holds its embedding call while the test signals it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from embed_support import MODEL, REPO, cli, provider_env
from service_support import alive, status, stop_all, wait_for

DEADLINE = "2"  # CAPTAIN_MEMO_SERVICE_TIMEOUT: seconds a client waits for a taken request
# CAPTAIN_MEMO_SERVICE_ACCEPT: seconds a client waits for a stopped service to take a request (5 by
# default; status and stop wait twice as long), shortened where a test waits on a stopped service.
ACCEPT = {"CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}


@pytest.fixture
def env(gate, tmp_path):
    run = tmp_path / "run"
    settings = {
        **provider_env("openai", f"http://127.0.0.1:{gate.server.server_address[1]}", MODEL),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_SERVICE_TIMEOUT": DEADLINE,
        "CAPTAIN_MEMO_RUNTIME_DIR": str(run),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    yield settings
    for pid in _service_pids(run):
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    stop_all(run)


def _service_pids(run: Path) -> list[int]:
    pids = []
    for lock in run.glob("*.lock"):
        try:
            pids.append(int(lock.read_text()))
        except ValueError:
            pass
    return pids


def start(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "captain_memo.cli.main", *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def warm_service(env: dict) -> int:
    saved = cli("remember", "alpha: the invoice total is rounded once", env=env)
    assert saved.returncode == 0 and "running" not in saved.stderr, saved.stderr
    found = cli("recall", "invoice", env=env)
    assert found.returncode == 0 and "alpha" in found.stdout
    return status(env)["pid"]


def caught_mid_request(gate, env: dict, *args: str) -> subprocess.Popen:
    """A command whose request the service has taken and is running (held at its embedding)."""
    gate.arm(0)
    child = start(*args, env=env)
    assert gate.reached.wait(60), "the service never asked for the request's embedding"
    return child


def bodies(env: dict, like: str) -> list[str]:
    conn = sqlite3.connect(env["CAPTAIN_MEMO_DB"])
    try:
        return [r[0] for r in conn.execute("SELECT body FROM memories WHERE body LIKE ?", (f"%{like}%",))]
    finally:
        conn.close()


def test_a_service_stopped_mid_remember_loses_nothing_and_saves_nothing_twice(gate, env):
    env.update(ACCEPT)
    pid = warm_service(env)
    child = caught_mid_request(gate, env, "remember", "zeta: saved while the service was stopped")
    os.kill(pid, signal.SIGSTOP)
    gate.release()
    out, err = child.communicate(timeout=90)
    assert child.returncode == 0 and "remembered #" in out, err
    assert "did not answer within 2 s; running it here" in err

    began = time.monotonic()  # while it is stopped, every command answers in its own process
    found = cli("recall", "zeta stopped", env=env)
    assert found.returncode == 0 and "zeta: saved" in found.stdout
    assert "did not take `recall` within 1 s; running it here" in found.stderr
    checked = cli("service", "status", env=env)
    assert checked.returncode == 1 and f"pid {pid}" in checked.stdout and "does not answer" in checked.stdout
    assert time.monotonic() - began < 60

    os.kill(pid, signal.SIGCONT)  # it finishes the request it had taken: the same key, saved once
    assert wait_for(lambda: cli("service", "status", env=env).returncode == 0, 60)
    assert bodies(env, "zeta") == ["zeta: saved while the service was stopped"]
    again = cli("recall", "zeta stopped", env=env)
    assert "zeta: saved" in again.stdout and "running" not in again.stderr


def test_a_service_killed_mid_remember_loses_nothing_and_saves_nothing_twice(gate, env):
    pid = warm_service(env)
    child = caught_mid_request(gate, env, "remember", "eta: saved while the service was killed")
    os.kill(pid, signal.SIGKILL)
    gate.release()
    out, err = child.communicate(timeout=90)
    assert child.returncode == 0 and "remembered #" in out, err
    assert "the service stopped while running `remember`; running it here" in err
    assert not alive(pid)
    found = cli("recall", "eta killed", env=env)  # a new service answers
    assert found.returncode == 0 and "eta: saved" in found.stdout and "running" not in found.stderr
    assert status(env)["pid"] != pid
    assert bodies(env, "eta:") == ["eta: saved while the service was killed"]


def test_a_recall_the_stopped_service_took_is_answered_here_and_stop_ends_it(gate, env):
    env.update(ACCEPT)
    pid = warm_service(env)
    child = caught_mid_request(gate, env, "recall", "invoice rounding")
    os.kill(pid, signal.SIGSTOP)
    gate.release()
    out, err = child.communicate(timeout=90)
    assert child.returncode == 0 and "alpha: the invoice total" in out, err
    assert "did not answer within 2 s; running it here" in err

    stopped = cli("service", "stop", env=env)
    assert stopped.returncode == 0 and f"(pid {pid})" in stopped.stdout and "ended it with SIG" in stopped.stdout
    assert wait_for(lambda: not alive(pid), 10)
    assert bodies(env, "alpha") == ["alpha: the invoice total is rounded once"]


def test_a_recall_is_answered_while_a_long_remember_is_being_written(gate, env):
    """Reads never wait behind writes: with a remember held inside the service (at its embedding),
    recalls are answered by the service itself, at once."""
    warm_service(env)
    patient = {**env, "CAPTAIN_MEMO_SERVICE_TIMEOUT": "120"}  # the same service, a longer wait
    child = caught_mid_request(gate, patient, "remember", "theta: a remember held while recalls go on")
    # The model server runs one batch at a time, so the held remember holds it: the recalls ask
    # what warm_service asked, whose vector the service keeps, and need no model.
    try:
        for _ in range(3):
            found = cli("recall", "invoice", env=env)
            assert found.returncode == 0 and "alpha: the invoice total" in found.stdout
            assert "running it here" not in found.stderr, found.stderr
        assert child.poll() is None  # the remember is still held meanwhile
    finally:
        gate.release()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0 and "remembered #" in out and "running" not in err, err
    assert bodies(env, "theta") == ["theta: a remember held while recalls go on"]
