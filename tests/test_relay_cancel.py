"""A remember the agent cancelled is not carried over: when the engine holding it dies before it
commits, the relay's next engine is not asked to run it.

Real processes: an agent's `captain-memo mcp` relaying to its session held by the warm service,
the service killed (SIGKILL) while its writer embeds the remember, and the real model served over
HTTP behind a gate, so the remember is caught before it commits."""

from __future__ import annotations

import os
import signal

import anyio
import pytest
from embed_support import cli
from mcp_support import connect, run
from service_support import alive, status, stored_bodies, wait_for

pytestmark = pytest.mark.mcp


@pytest.fixture
def env(gated_service_env):
    return gated_service_env


def bodies(env: dict) -> list[str]:
    return stored_bodies(env["CAPTAIN_MEMO_DB"])


def test_a_cancelled_remember_is_not_replayed_to_the_next_engine(env, gate, tmp_path):
    # The store exists first: the agent's `captain-memo mcp` then relays to the service.
    assert cli("remember", "alpha: the store and its service exist", env=env).returncode == 0

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=env) as client:
            await client.call_tool("recall", {"query": "store"})  # the session is held by the service
            first = await anyio.to_thread.run_sync(status, env)
            gate.arm(0)
            with anyio.CancelScope() as scope:  # the SDK sends notifications/cancelled as it leaves

                async def cancel_once_held():
                    assert await anyio.to_thread.run_sync(gate.reached.wait, 60), "the writer embeds gamma"
                    scope.cancel()

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(cancel_once_held)
                    await client.call_tool("remember", {"text": "gamma: cancelled before it was stored"})
            assert scope.cancelled_caught
            # Answered after the relay passed the cancellation on: it sends lines in order.
            await client.list_resources(cache_mode="bypass")
            os.kill(first["pid"], signal.SIGKILL)  # before gamma commits
            assert await anyio.to_thread.run_sync(wait_for, lambda: not alive(first["pid"]))
            gate.release()
            # The relay carries the session to a new service; this call is answered there.
            found = await client.call_tool("recall", {"query": "what exists"})
            assert not found.is_error, found.content
            second = await anyio.to_thread.run_sync(status, env)
            assert second["pid"] != first["pid"], "a new service holds the session"
            after = await client.call_tool("remember", {"text": "delta: after the engine died"})
            assert not after.is_error, after.content

    run(body)
    assert bodies(env) == ["alpha: the store and its service exist", "delta: after the engine died"]
