"""`captain-memo mcp` as a thin client of the store's warm service: one engine per store.

Real processes: `captain-memo` commands, the service they start and a `captain-memo mcp` child
spoken to with the MCP SDK's stdio client. The model is served over HTTP on 127.0.0.1 by this test
(behind a gate, so the service can be caught inside a request), so no process loads it itself;
whether a process opened the store's engine shows in its memory map (the sqlite-vec extension).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest
from embed_support import cli
from mcp.shared.exceptions import MCPError
from mcp_support import children_named, connect, maps_of, run
from service_support import alive, status, wait_for

ENGINE_LIBRARY = "vec0"  # the sqlite-vec extension: mapped by whichever process opens the store
READ_ONLY_FOLDER = "/sys/captain-memo-runtime"  # sysfs: no one, root included, may create a folder there
# What a relayed session's process has no use for: the engine's libraries (store, model, git), and
# the MCP SDK and what it builds on, since the session itself is held by the store's engine; and
# the other commands' modules and what they import (the relay stays resident while its agent runs).
# Of the MCP package it runs only its command (mcpserver/command.py); the session's modules stay out.
MCP_SESSION = tuple(
    f"captain_memo.mcpserver.{name}" for name in ("mcp_server", "sdk", "memory_calls", "tools", "render")
)
NOT_IN_A_RELAY = (
    *("numpy", "onnxruntime", "tokenizers", "sqlite3", "sqlean", "sqlite_vec", "git", "httpx", "httpx2"),
    *("cryptography", "mcp", "mcp_types", "pydantic", "anyio", *MCP_SESSION),
    *("captain_memo.cli.commands.recall", "captain_memo.cli.commands.importer", "captain_memo.config", "logging"),
)
ENGINE_SHARED_LIBRARIES = ("vec0", "onnxruntime", "_multiarray_umath")  # sqlite-vec, the model, numpy


@pytest.fixture
def env(gated_service_env):
    return gated_service_env


def bodies(env: dict, like: str) -> list[str]:
    conn = sqlite3.connect(env["CAPTAIN_MEMO_DB"])
    try:
        return [r[0] for r in conn.execute("SELECT body FROM memories WHERE body LIKE ?", (f"%{like}%",))]
    finally:
        conn.close()


def mcp_pid() -> int:
    [pid] = children_named("captain-memo")
    return pid


def test_an_agent_is_answered_by_the_service_the_shell_started(env, tmp_path):
    saved = cli("remember", "--project", "none", "alpha: the invoice total is rounded once, at the end", env=env)
    assert saved.returncode == 0 and "running" not in saved.stderr, saved.stderr
    service = status(env)["pid"]

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=env) as client:
            found = await client.call_tool("recall", {"query": "invoice rounding"})
            assert not found.is_error and "alpha: the invoice total" in found.content[0].text
            assert len(found.content) == 1, "no notice: the call was answered by the service"
            stored = await client.call_tool("remember", {"text": "beta: the agent learned the rounding rule"})
            assert not stored.is_error and stored.structured_content["id"] == "2"
            assert ENGINE_LIBRARY not in maps_of(mcp_pid()), "the MCP server must not open the store itself"
            with pytest.raises(MCPError) as missing:  # the service's "no such memory" stays one
                await client.read_resource("captain-memo://memory/99")
            assert missing.value.error.code == -32002

    run(body)
    answer = cli("recall", "agent rounding rule", env=env)
    assert "beta: the agent learned" in answer.stdout
    seen = status(env)
    assert seen["pid"] == service and seen["clients"]["mcp:test-agent"] == 3
    assert "(cli 2, mcp:test-agent 3)" in cli("service", "status", env=env).stdout
    assert ENGINE_LIBRARY in maps_of(service)
    assert bodies(env, "beta") == ["beta: the agent learned the rounding rule"]


def imported_modules(log) -> set[str]:
    """The modules a Python process imported, from the lines PYTHONPROFILEIMPORTTIME had it write
    to stderr (``import time: self | cumulative | name``)."""
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:") and "|" in line}


def test_a_session_the_service_holds_loads_no_engine_and_no_sdk_in_the_agents_process(env, tmp_path):
    assert cli("remember", "--project", "none", "gamma: the ledger closes at midnight", env=env).returncode == 0
    log = tmp_path / "mcp-imports.log"

    async def body():
        async with connect(
            tmp_path / "memo.db", tmp_path, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, stderr=log
        ) as client:
            assert len((await client.list_tools()).tools) == 5
            found = await client.call_tool("recall", {"query": "ledger midnight"})
            assert not found.is_error and "gamma: the ledger" in found.content[0].text
            saved = await client.call_tool("remember", {"text": "delta: the ledger reopens at six"})
            assert not saved.is_error and saved.structured_content["id"] == "2"
            assert [len(found.content), len(saved.content)] == [1, 1], "no notice: the service answered both"
            return maps_of(mcp_pid())

    maps = run(body)
    imported = imported_modules(log)
    assert "captain_memo.hosting.relay" in imported
    unused = [name for name in imported if any(name == p or name.startswith(p + ".") for p in NOT_IN_A_RELAY)]
    assert sorted(unused) == []
    assert [library for library in ENGINE_SHARED_LIBRARIES if library in maps] == []


def test_where_no_service_can_start_the_agent_is_told_once_and_answered_here(env, tmp_path):
    local = {**env, "CAPTAIN_MEMO_RUNTIME_DIR": READ_ONLY_FOLDER}
    log = tmp_path / "mcp.log"

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=local, stderr=log) as client:
            first = await client.call_tool("remember", {"text": "gamma: saved with no service to be had"})
            assert not first.is_error and first.structured_content["id"] == "1"
            [notice] = [block.text for block in first.content[1:]]
            assert "own process" in notice and READ_ONLY_FOLDER in notice
            found = await client.call_tool("recall", {"query": "gamma saved"})
            assert "gamma: saved" in found.content[0].text and len(found.content) == 1, "said once only"
            assert ENGINE_LIBRARY in maps_of(mcp_pid())

    run(body)
    assert log.read_text().count("own process") == 1
    assert not os.path.exists(READ_ONLY_FOLDER)


def test_an_agent_outlives_its_service_killed_mid_remember(env, gate, tmp_path):
    """SIGKILL while the service embeds the agent's remember: the agent's relay carries the session
    over to a new service (the remember replayed under its request key), which answers it; it is
    saved once, the session goes on, and the agent's process never loads an engine."""
    assert cli("remember", "delta: the service is warm", env=env).returncode == 0
    service = status(env)["pid"]

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=env) as client:
            gate.arm(0)
            async with anyio.create_task_group() as tasks:
                answers = []

                async def remember():
                    answers.append(await client.call_tool("remember", {"text": "eta: saved while it was killed"}))

                tasks.start_soon(remember)
                assert await anyio.to_thread.run_sync(gate.reached.wait, 60)
                os.kill(service, signal.SIGKILL)
                gate.release()
            [saved] = answers
            assert not saved.is_error and saved.structured_content["id"] == "2", saved.content
            found = await client.call_tool("recall", {"query": "eta killed"})
            assert not found.is_error and "eta: saved" in found.content[0].text
            assert ENGINE_LIBRARY not in maps_of(mcp_pid())

    run(body)
    assert not alive(service)
    assert bodies(env, "eta:") == ["eta: saved while it was killed"]
    now = status(env)
    assert now["pid"] != service and now["clients"]["mcp:test-agent"] == 2


def services_logged(run_folder) -> tuple[list[int], list[int], str]:
    """The services that started serving and those that stopped, by pid, from their shared log in
    the runtime folder (it outlives them: a service given a second to live may be gone before a
    command started to ask its status can ask), and the log's text."""
    text = "".join(log.read_text(errors="replace") for log in sorted(run_folder.glob("*.log")))
    started = [int(pid) for pid in re.findall(r"captain-memo service (\d+): serving ", text)]
    stopped = [int(pid) for pid in re.findall(r"captain-memo service (\d+): stopped after ", text)]
    return started, stopped, text


def clients_in(run_folder) -> dict:
    """Who the running service has counted, asked on its socket (no command to start, and nothing
    counted for asking): a call is counted as it starts, so one held at the gate is counted."""
    [path] = run_folder.glob("*.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(b'{"op": "status"}\n')
        reader = sock.makefile("rb")
        reader.readline()  # accepted
        return json.loads(reader.readline())["result"]["clients"]


def skip_where_the_package_was_edited(run_folder) -> None:
    """A checkout whose modules change while the test runs (an editor saving in it) makes a service
    step down for a client of other code, as it should; that is not what is tested here."""
    if "a client of other code" in services_logged(run_folder)[2]:
        pytest.skip("the package's files changed during the test: a service rightly stepped down")


def test_a_session_is_carried_over_when_its_service_stops_when_idle(env, gate, tmp_path):
    """The service exits after its idle time with an agent's session open: the agent's next call
    goes to the next service, which takes the session from where it stood (no second initialize
    seen).

    Every step waits on an event, none on the service's second of idle time: the first service is
    held busy by the gate until the agent's first call is inside it, its exit is read from the
    services' log, and the next service is the shell's, which does not idle out that soon."""
    idle = {**env, "CAPTAIN_MEMO_SERVICE_IDLE": "1"}
    run_folder = tmp_path / "run"
    saved = cli(
        "remember", "--project", "none", "theta: the cache holds ten minutes", env={**env, "CAPTAIN_MEMO_SERVICE": "0"}
    )
    assert saved.returncode == 0, saved.stderr
    gate.arm(0)
    shell = ThreadPoolExecutor(1)
    holding = shell.submit(cli, "recall", "cache", env=idle)  # starts the service, busy until the gate opens
    assert gate.reached.wait(60)

    def agent_call_inside() -> bool:
        return clients_in(run_folder).get("mcp:test-agent") == 1

    def all_stopped() -> bool:
        started, stopped, _ = services_logged(run_folder)
        return bool(started) and sorted(started) == sorted(stopped)

    async def body():
        async with connect(tmp_path / "memo.db", tmp_path, env=idle) as client:
            answers = []
            async with anyio.create_task_group() as tasks:

                async def first_call():
                    answers.append(await client.call_tool("recall", {"query": "cache minutes"}))

                tasks.start_soon(first_call)
                assert await anyio.to_thread.run_sync(lambda: wait_for(agent_call_inside, 60))
                gate.release()
            [found] = answers
            assert "theta: the cache" in found.content[0].text and len(found.content) == 1, found.content
            # The service exits when idle; the session stays open in the agent's process.
            assert await anyio.to_thread.run_sync(lambda: wait_for(all_stopped, 60))
            held, _, _ = services_logged(run_folder)
            assert cli("recall", "cache", env=env).returncode == 0  # the next service, the shell's
            again = await client.call_tool("recall", {"query": "how long does the cache hold"})
            return held, again

    try:
        held, again = run(body)
        assert holding.result().returncode == 0
    except Exception:
        skip_where_the_package_was_edited(run_folder)
        raise
    finally:
        gate.release()
        shell.shutdown()
    skip_where_the_package_was_edited(run_folder)
    assert not again.is_error and "theta: the cache" in again.content[0].text, again.content
    assert len(again.content) == 1, "answered by the next service: nothing to tell"
    now = status(env)
    assert len(held) == 1 and now["pid"] not in held and now["clients"]["mcp:test-agent"] == 1, now


def test_one_store_named_two_ways_has_one_service(tmp_path):
    """The shell on the default store and an agent configured with its path share one service."""
    from captain_memo.base import runtime_folder

    home = {"CAPTAIN_MEMO_HOME": str(tmp_path)}
    store = tmp_path / "memo.db"
    assert runtime_folder.service_key(store, home) == runtime_folder.service_key(
        store, {**home, "CAPTAIN_MEMO_DB": str(store)}
    )
    assert runtime_folder.service_key(store, home) != runtime_folder.service_key(tmp_path / "other.db", home)


@pytest.mark.parametrize(
    "request_, named",
    [
        ({"tool": "recall", "args": {"query": "x", "limit": "10"}, "folder": "/"}, "recall: limit must be an integer"),
        ({"tool": "remember", "args": {"text": "x", "line_start": "abc"}, "folder": "/"}, "line_start"),
        ({"tool": "remember", "args": {"text": "x", "created_at": 1}, "folder": "/"}, "unknown argument"),
        ({"tool": "forget", "args": {"id": "12; drop"}, "folder": "/"}, "not a memory id"),
        ({"tool": "recall", "args": {"query": "x"}, "folder": 7}, "folder must be a string"),
        ({"tool": "exec", "args": {}, "folder": "/"}, "tool must be one of"),
    ],
)
def test_an_agent_call_the_service_reads_is_checked_field_by_field(request_, named):
    from captain_memo.errors import InputError
    from captain_memo.requests.agent_calls import checked_envelope

    with pytest.raises(InputError, match=named):
        checked_envelope(request_)


def test_the_service_checks_an_agent_call_with_the_rules_its_tool_shows():
    """One declaration (requests/tool_arguments.py) makes each tool's inputSchema and both checks,
    the MCP server's and the service's, so a call one lets through the other never refuses."""
    from captain_memo.mcpserver.tools import TOOLS, checked_arguments
    from captain_memo.requests.agent_calls import checked_envelope

    calls = {"recall": {"query": "x", "limit": 50}, "remember": {"text": "x", "line_start": 3}, "show": {"id": "1:2"}}
    calls.update(supersede={"old": "1", "undo": True}, forget={"id": "t1"})
    for name, tool in TOOLS.items():
        served = checked_envelope({"tool": name, "args": calls[name], "folder": "/"})["args"]
        assert served == checked_arguments(tool, calls[name]), name
