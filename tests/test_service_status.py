"""What the command line says about the process serving the store: how long it has been up, and who
failed when a request is lost (Neovim's host or a service of its own).

Real processes: the service a `captain-memo` command starts, and a process serving the store as
the editor's host does (service/server.py's Service with host EDITOR, which editor/service.py runs
inside Neovim's host; no Neovim is needed to be killed mid-request). The model is served over HTTP
on 127.0.0.1 behind a gate, so the host is caught inside a request for certain."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from embed_support import MODEL, REPO, cli, provider_env
from service_support import alive, status, stop_all, wait_for

from captain_memo.cli.main import main

# Serves the store as the editor's host does, until killed.
EDITOR_HOST = """
import os, sys
from pathlib import Path
from captain_memo.base import runtime_folder
from captain_memo.hosting.socket_server import EDITOR, Service, listen, take_lock, write_pid
db = Path(os.environ["CAPTAIN_MEMO_DB"])
path = runtime_folder.socket_path(db)
lock = take_lock(path)
write_pid(lock)
Service(path, db, float("inf"), host=EDITOR, lock=lock).serve(listen(path))
"""


@pytest.fixture
def env(gate, tmp_path):
    run = tmp_path / "run"
    settings = {
        **provider_env("openai", f"http://127.0.0.1:{gate.server.server_address[1]}", MODEL),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_SERVICE_TIMEOUT": "2",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(run),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
    }
    yield settings
    stop_all(run)


def test_status_after_the_clock_is_set_back_a_year_says_no_negative_uptime(env, monkeypatch, capsys):
    """The real clock cannot be set back in a test: this process (the `service status` command)
    reads a wall clock a year behind the service's start instead (its time.time is replaced)."""
    assert cli("remember", "alpha: the invoice total is rounded once", env=env).returncode == 0
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 365 * 86400)
    assert main(["service", "status"]) == 0
    said = capsys.readouterr().out
    up = int(said.split(" up ", 1)[1].split(" s,", 1)[0])
    assert 0 <= up < 600, said


def test_a_request_lost_when_the_editors_host_dies_names_the_host_not_a_service(gate, env):
    host = subprocess.Popen([sys.executable, "-c", EDITOR_HOST], env={**os.environ, **env}, cwd=REPO)
    try:
        assert wait_for(lambda: cli("service", "status", env=env).returncode == 0 and status(env)["running"], 60)
        assert status(env)["host"] == "editor"
        warm = cli("remember", "alpha: the invoice total is rounded once", env=env)
        assert warm.returncode == 0 and "running" not in warm.stderr, warm.stderr
        gate.arm(0)
        child = subprocess.Popen(
            [sys.executable, "-m", "captain_memo.cli.main", "remember", "eta: saved while the host was killed"],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert gate.reached.wait(60), "the host never asked for the request's embedding"
        host.kill()
        gate.release()
        out, err = child.communicate(timeout=90)
    finally:
        host.kill()
        host.wait(timeout=30)
    assert child.returncode == 0 and "remembered #" in out, err
    assert "Neovim's host stopped while running `remember`; running it here" in err
    assert "the service" not in err
    assert not alive(host.pid)
