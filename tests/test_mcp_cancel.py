"""A `remember` the agent cancels (`notifications/cancelled`) before its write is stored nothing, and
a retry with the same idempotency key returns the first save's id.

Real processes: an agent's `captain-memo mcp` relaying to its session held by the warm service, a
`captain-memo remember` from the shell, and the real model served over HTTP behind a gate, so the
service's writer can be caught inside the shell's write while the agent's waits its turn."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from mcp_support import connect, run
from service_support import status, stored_bodies, wait_for

pytestmark = pytest.mark.mcp
AGENT = "mcp:test-agent"


@pytest.fixture
def env(gated_service_env):
    return gated_service_env


def bodies(env: dict) -> list[str]:
    return stored_bodies(env["CAPTAIN_MEMO_DB"])


def shell_remember(text: str, env: dict, cwd) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "captain_memo.cli.main", "remember", text],
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def agent_calls(env: dict) -> int:
    return status(env)["clients"].get(AGENT, 0)


def test_a_cancelled_remember_waiting_its_turn_is_not_stored_and_a_retry_by_key_saves_once(env, gate, tmp_path):
    assert shell_remember("alpha: the service is warm", env, tmp_path).wait(120) == 0

    async def body():
        out = {}
        async with connect(tmp_path / "memo.db", tmp_path, env=env) as client:
            await client.call_tool("recall", {"query": "warm"})  # the session is held by the service
            before = await anyio.to_thread.run_sync(agent_calls, env)
            gate.arm(0)
            shell = shell_remember("beta: holds the writer", env, tmp_path)
            assert await anyio.to_thread.run_sync(gate.reached.wait, 60), "the service's writer embeds beta"
            with anyio.CancelScope() as scope:  # the SDK sends notifications/cancelled as it leaves

                async def cancel_once_waiting():
                    waiting = await anyio.to_thread.run_sync(wait_for, lambda: agent_calls(env) == before + 1, 60)
                    assert waiting, "the agent's remember reached the service and waits for the writer"
                    scope.cancel()

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(cancel_once_waiting)
                    await client.call_tool("remember", {"text": "gamma: cancelled", "idempotency_key": "k-gamma"})
            assert scope.cancelled_caught
            await client.list_resources(cache_mode="bypass")  # answered after the session took the cancellation in
            gate.release()
            assert await anyio.to_thread.run_sync(shell.wait, 120) == 0
            # The writer takes calls in order: this one is answered after gamma's turn came.
            out["after"] = (
                await client.call_tool("remember", {"text": "delta: after the cancelled one"})
            ).structured_content
            out["retry"] = (
                await client.call_tool("remember", {"text": "gamma: cancelled", "idempotency_key": "k-gamma"})
            ).structured_content
            out["again"] = (
                await client.call_tool("remember", {"text": "gamma: cancelled", "idempotency_key": "k-gamma"})
            ).structured_content
        return out

    out = run(body)
    # The cancelled call was not waited for: the session's next call was answered at once, not
    # after the relay's deadline took the engine for lost and carried the session over (20 s).
    assert status(env)["sessions"] == 1, "the relay carried the session to a second one"
    assert not out["after"]["already_saved"]
    assert not out["retry"]["already_saved"], "the cancelled call stored nothing, so the retry saves"
    assert out["again"]["id"] == out["retry"]["id"] and out["again"]["already_saved"]
    assert bodies(env) == [
        "alpha: the service is warm",
        "beta: holds the writer",
        "delta: after the cancelled one",
        "gamma: cancelled",
    ], "gamma once: by its retry, not by the cancelled call"
