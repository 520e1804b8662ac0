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
from mcp_support import children_named, connect, run
from service_support import bodies, status, wait_for

pytestmark = pytest.mark.mcp
AGENT = "mcp:test-agent"
BACK = "the session is carried back"


def holds(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has the file at ``path`` open."""
    folder = Path(f"/proc/{pid}/fd")
    return any(os.path.realpath(fd) == str(path) for fd in folder.iterdir())


def test_a_relay_that_fell_back_carries_the_session_back_to_the_store_engine(service_env, tmp_path):
    # Short waits, so the stopped service is given up on quickly.
    env = {**service_env, "CAPTAIN_MEMO_SERVICE_TIMEOUT": "2", "CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}
    assert cli("remember", "--project", "none", "alpha: the service is up", env=env).returncode == 0
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
                relays = children_named(" mcp")
                assert any(holds(pid, tmp_path / "memo.db") for pid in relays), relays
            finally:
                os.kill(first["pid"], signal.SIGCONT)
            # The question asked with the remember was pending; the resumed service takes it.
            assert await anyio.to_thread.run_sync(lambda: wait_for(lambda: BACK in log.read_text(), 30))
            back = await agent.call_tool("recall", {"query": "what was saved while the service was stopped"})
            texts = [block.text for block in back.content]
            assert "beta: saved while the service" in texts[0] and not any("own process" in t for t in texts)
            # The engine in the relay's process is closed: only the service holds the store.
            relays = children_named(" mcp")
            assert relays and not any(holds(pid, tmp_path / "memo.db") for pid in relays), relays
            assert (await anyio.to_thread.run_sync(status, env))["pid"] == first["pid"]

    run(body)
    assert Path(log).read_text().count(BACK) == 1
    assert sorted(bodies(Path(env["CAPTAIN_MEMO_DB"]))) == [
        "alpha: the service is up",
        "beta: saved while the service was stopped",
    ]


def test_a_long_line_to_a_stopped_engine_does_not_hold_the_relay(service_env, tmp_path):
    """The service stopped (SIGSTOP) reads nothing, so a line longer than its socket holds (480 KB)
    cannot all be sent: the relay gives up on it within its deadline and the session goes on in
    the relay's own process, instead of the relay waiting in the send until the service resumes."""
    env = {**service_env, "CAPTAIN_MEMO_SERVICE_TIMEOUT": "2", "CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}
    assert cli("remember", "--project", "none", "alpha: the service is up", env=env).returncode == 0

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=env) as agent:
            await agent.call_tool("recall", {"query": "service"})  # the session is held by the service
            pid = (await anyio.to_thread.run_sync(status, env))["pid"]
            os.kill(pid, signal.SIGSTOP)
            try:
                with anyio.fail_after(60):
                    long = await agent.call_tool("recall", {"query": "retry " * 80_000})
                    assert long.is_error and "query" in long.content[0].text, long.content
                    found = await agent.call_tool("recall", {"query": "is the service up"})
                assert "alpha: the service is up" in found.content[0].text
            finally:
                os.kill(pid, signal.SIGCONT)

    run(body)


def test_a_session_started_while_the_engine_is_stopped_moves_to_it_once_it_answers(service_env, tmp_path):
    env = {**service_env, "CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}
    assert cli("remember", "--project", "none", "alpha: the service is up", env=env).returncode == 0
    pid = status(env)["pid"]
    log = tmp_path / "agent.log"
    os.kill(pid, signal.SIGSTOP)
    try:

        async def body():
            async with connect(tmp_path / "memo.db", tmp_path, env=env, stderr=log) as agent:
                here = await agent.call_tool("recall", {"query": "is the service up"})
                assert any("own process" in block.text for block in here.content), here.content
                os.kill(pid, signal.SIGCONT)
                assert await anyio.to_thread.run_sync(lambda: wait_for(lambda: BACK in log.read_text(), 30))
                back = await agent.call_tool("recall", {"query": "is the service up"})
                assert "alpha: the service is up" in back.content[0].text
                counted = (await anyio.to_thread.run_sync(status, env))["clients"]
                assert counted.get(AGENT, 0) >= 1, counted

        run(body)
    finally:
        os.kill(pid, signal.SIGCONT)
