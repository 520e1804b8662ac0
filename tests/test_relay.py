"""An agent's `captain-memo mcp` relaying to the store's engine (service/relay.py): what it does with
requests the engine will never answer, and with the service it started once that exits.

Real processes: the relay is a `captain-memo mcp` child spoken to with raw JSON-RPC lines (no SDK
client sends an id the protocol forbids), the service it starts, and the model served over HTTP on
127.0.0.1 by the test (service_env)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from embed_support import cli
from nvim_support import make_repo
from service_support import status, wait_for

INVALID_REQUEST = -32600
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Agent:
    """A `captain-memo mcp` child and the lines it writes, read on a thread so a test can wait for
    the next one with a bound instead of blocking on a pipe."""

    def __init__(self, env: dict, cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "captain_memo.cli.main", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
            cwd=cwd,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, *messages: dict) -> None:
        for message in messages:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, wait: float = 30.0) -> dict:
        return self.lines.get(timeout=wait)

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read().decode()


@pytest.fixture
def relayed(service_env, tmp_path):
    """An agent's relay, past initialize, to the service it started; closed at the end. The store
    exists: a relay starts no engine for a store that does not (the engine would make it)."""
    from captain_memo.store import Store

    Store(Path(service_env["CAPTAIN_MEMO_DB"])).close()
    agent = Agent({**service_env, "CAPTAIN_MEMO_SERVICE_TIMEOUT": "2"}, make_repo(tmp_path))
    agent.send(INITIALIZE, INITIALIZED)
    assert agent.answer()["id"] == 1
    yield agent
    agent.close()


@pytest.mark.parametrize("bad_id", [None, 1.5, True, {"an": "object"}])
def test_a_request_with_an_id_the_engine_never_answers_is_refused_by_the_relay_at_once(relayed, bad_id):
    """The engine's MCP server drops such a request unanswered: the relay counted it as waiting, took
    the engine for lost once its time was up (2 s here) and reconnected, replaying it, every time."""
    relayed.send({"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"})
    refused = relayed.answer(wait=10)
    assert refused["error"]["code"] == INVALID_REQUEST and refused["id"] is None
    assert "id must be a string or an integer" in refused["error"]["message"]
    relayed.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    listed = relayed.answer()
    assert listed["id"] == 2 and listed["result"]["tools"]


def test_the_service_a_relay_started_is_reaped_when_it_exits(service_env, relayed):
    """The relay outlives the service it started (an idle exit, `service stop`): once the service
    exits, it leaves no zombie behind, for as long as the agent's session lasts."""
    pid = status(service_env)["pid"]
    assert cli("service", "stop", env=service_env).returncode == 0
    assert wait_for(lambda: not Path(f"/proc/{pid}").exists()), Path(f"/proc/{pid}/stat").read_text()
    assert relayed.proc.poll() is None  # the relay is still there: it was its parent
