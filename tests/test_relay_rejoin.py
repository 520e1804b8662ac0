"""An agent's relay that ran the session on an engine of its own, while the store's engine did not
answer (stopped with SIGSTOP past the deadline, as Ctrl-Z stops the editor's host), carries it
back to that engine once it answers again, instead of keeping a second engine for the rest of the
session.

Real processes: the shell's `captain-memo remember` starting the service, an agent's
`captain-memo mcp` relay driven by the MCP SDK's stdio client, the model over HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from embed_support import cli
from mcp_support import connect, run
from service_support import bodies, status, wait_for

pytestmark = pytest.mark.mcp
AGENT = "mcp:test-agent"
BACK = "the session is carried back"


def test_a_relay_that_fell_back_carries_the_session_back_to_the_store_engine(service_env, tmp_path):
    # Short waits, so the stopped service is given up on quickly.
    env = {**service_env, "CAPTAIN_MEMO_SERVICE_TIMEOUT": "2", "CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}
    assert cli("remember", "alpha: the service is up", env=env).returncode == 0
    log = tmp_path / "agent.log"

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=env, stderr=log) as agent:
            await agent.call_tool("recall", {"query": "service"})  # the session is held by the service
            first = await anyio.to_thread.run_sync(status, env)
            assert first["clients"][AGENT] == 1
            os.kill(first["pid"], signal.SIGSTOP)
            try:
                here = await agent.call_tool("recall", {"query": "is the service up"})
                texts = [block.text for block in here.content]
                assert any("own process" in text for text in texts), texts
                assert "alpha: the service is up" in texts[0]
                saved = await agent.call_tool("remember", {"text": "beta: saved while the service was stopped"})
                assert not saved.is_error, saved.content
            finally:
                os.kill(first["pid"], signal.SIGCONT)
            # The question asked with the remember was pending; the resumed service takes it.
            assert await anyio.to_thread.run_sync(lambda: wait_for(lambda: BACK in log.read_text(), 30))
            back = await agent.call_tool("recall", {"query": "what was saved while the service was stopped"})
            texts = [block.text for block in back.content]
            assert "beta: saved while the service" in texts[0] and not any("own process" in t for t in texts)
            after = await anyio.to_thread.run_sync(status, env)
            assert after["pid"] == first["pid"] and after["clients"][AGENT] == 2, after

    run(body)
    assert Path(log).read_text().count(BACK) == 1
    assert sorted(bodies(Path(env["CAPTAIN_MEMO_DB"]))) == [
        "alpha: the service is up",
        "beta: saved while the service was stopped",
    ]
