"""Neovim quits, or its host stops, while the host serves the store to agents: real Neovim hosts,
real `captain-memo mcp` relays, the real model over HTTP on 127.0.0.1 behind a gate, so a call can
be held inside the host's engine at the moment Neovim goes."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
from pathlib import Path

import anyio
import pytest
from embed_support import REPO, cli
from mcp_support import connect, run
from nvim_support import close, editor_env, host_pid, recall_in, requires_nvim, saved_id, start_editor
from service_support import alive, status, wait_for

pytestmark = [requires_nvim, pytest.mark.nvim, pytest.mark.slow]


@pytest.fixture
def env(gated_service_env):
    return gated_service_env


def bodies(env: dict, like: str) -> list[str]:
    conn = sqlite3.connect(env["CAPTAIN_MEMO_DB"])
    try:
        return [r[0] for r in conn.execute("SELECT body FROM memories WHERE body LIKE ?", (f"%{like}%",))]
    finally:
        conn.close()


def test_neovim_quitting_mid_call_carries_every_agent_call_to_the_next_engine(env, gate, tmp_path):
    """Agent C's remember is held inside the host's engine when Neovim quits; agents A (recall) and
    B (remember) call just after. The host stops serving at once (its socket and lock file go),
    finishes C's call, and A's and B's come back to their relays unanswered, which replay them to
    the next engine: every call answered, no tool error, each memory stored once."""
    editor = start_editor(tmp_path, editor_env(tmp_path, env), cwd=REPO)
    log_file = Path(editor.lua("return require('captain_memo.log').path()"))
    recall_in(editor, "anything at all")  # the host claims the store's socket
    host = host_pid(editor)
    assert wait_for(lambda: status(env)["pid"] == host)
    sock = Path(status(env)["socket"])

    async def body():
        async with (
            connect(tmp_path / "memo.db", tmp_path, env=env, client="agent-a") as a,
            connect(tmp_path / "memo.db", tmp_path, env=env, client="agent-b") as b,
            connect(tmp_path / "memo.db", tmp_path, env=env, client="agent-c") as c,
        ):
            for agent in (a, b, c):  # each session is held in the editor's host
                assert not (await agent.call_tool("recall", {"query": "warm up"})).is_error
            answers: dict[str, object] = {}

            async def call(name, agent, tool, args):
                answers[name] = await agent.call_tool(tool, args)

            gate.arm(0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call, "c", c, "remember", {"text": "gamma: saved as Neovim quit " + "x" * 30000})
                assert await anyio.to_thread.run_sync(gate.reached.wait, 60)
                close(editor)  # Neovim quits while its host embeds C's text
                assert await anyio.to_thread.run_sync(lambda: wait_for(lambda: not sock.exists(), 30))
                tasks.start_soon(call, "a", a, "recall", {"query": "what was saved as Neovim quit"})
                tasks.start_soon(call, "b", b, "remember", {"text": "beta: saved just after Neovim quit"})
                carried = "its relay carries it over"
                assert await anyio.to_thread.run_sync(
                    lambda: wait_for(lambda: log_file.read_text().count(carried) >= 2, 30)
                ), log_file.read_text()
                gate.release()
            for name, answer in answers.items():
                assert not answer.is_error, (name, answer.content)
            found = await a.call_tool("recall", {"query": "beta saved just after"})
            assert "beta: saved just after" in found.content[0].text

    run(body)
    assert bodies(env, "gamma: saved") and len(bodies(env, "gamma: saved")) == 1
    assert bodies(env, "beta: saved") == ["beta: saved just after Neovim quit"]
    assert wait_for(lambda: not alive(host))
    assert not Path(f"{sock}.lock").exists() or status(env)["pid"] != host


def test_an_editor_that_cannot_bind_the_socket_frees_its_lock_and_says_so_once(service_env, tmp_path):
    """A runtime folder so long that a socket in it is over 108 bytes: the host takes the lock, the
    bind fails. It lets the lock go and runs its engine unserved (said once), so a command does not
    wait for a lock nobody serves: it finds no service to start and answers in its own process."""
    long = tmp_path / ("r" * 100)
    settings = {**service_env, "CAPTAIN_MEMO_RUNTIME_DIR": str(long)}
    assert cli("--no-service", "remember", "Tokens expire after 15 minutes.", env=settings).returncode == 0
    editor = start_editor(tmp_path, editor_env(tmp_path, settings), cwd=REPO)
    try:
        assert "Tokens expire" in (rows := recall_in(editor, "when do tokens expire")), rows
        assert all(_free(lock) for lock in long.glob("*.sock.lock")), "the host let the lock go"
        found = cli("recall", "token expiry", env=settings)
        assert found.returncode == 0 and "Tokens expire" in found.stdout, found.stderr
        assert "did not answer within" not in found.stderr, found.stderr
        assert "Tokens expire" in (rows := recall_in(editor, "token expiry minutes")), rows
        said = [n["msg"] for n in editor.notifications() if "could not be shared" in n["msg"]]
    finally:
        close(editor)
    assert len(said) == 1 and "cannot listen on" in said[0], said


def _free(lock: Path) -> bool:
    import fcntl

    with open(lock, "a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def test_the_editor_serves_again_after_its_runtime_folder_is_removed(service_env, tmp_path):
    """The runtime folder removed while Neovim serves (a tmp cleaner, logind at the last logout):
    the host sees its socket gone, makes the folder again (0700) and serves the store there, so a
    command is answered by the editor's engine, not by a second one."""
    assert cli("--no-service", "remember", "Deploys freeze on Fridays after noon.", env=service_env).returncode == 0
    editor = start_editor(tmp_path, editor_env(tmp_path, service_env), cwd=REPO)
    try:
        assert "Deploys freeze" in (rows := recall_in(editor, "when do deploys freeze")), rows
        host = host_pid(editor)
        run_folder = Path(service_env["CAPTAIN_MEMO_RUNTIME_DIR"])
        assert status(service_env)["pid"] == host
        shutil.rmtree(run_folder)
        assert wait_for(lambda: status(service_env).get("pid") == host, 30), status(service_env)
        assert run_folder.stat().st_mode & 0o777 == 0o700
        found = cli("recall", "deploys fridays", env=service_env)
        assert found.returncode == 0 and "Deploys freeze" in found.stdout, found.stderr
        assert status(service_env)["clients"].get("cli") == 1
    finally:
        close(editor)
    # Neovim gone: its host takes its socket and lock file with it.
    assert wait_for(lambda: not list(run_folder.glob("*.sock*")), 30), list(run_folder.iterdir())


def test_a_save_forwarded_to_a_stopped_editor_is_stored_once(env, gate, tmp_path):
    """A second Neovim's save is taken by the first one's host, which is stopped (SIGSTOP) inside
    it past the deadline: the second editor saves it itself, and when the first host resumes and
    finishes the save, it finds the same request stored and stores nothing more."""
    settings = {**env, "CAPTAIN_MEMO_SERVICE_TIMEOUT": "2", "CAPTAIN_MEMO_SERVICE_ACCEPT": "2"}
    one = start_editor(tmp_path, editor_env(tmp_path, settings), cwd=REPO)
    two = None
    try:
        recall_in(one, "anything at all")  # the first host claims the store's socket
        first_host = host_pid(one)
        assert wait_for(lambda: status(env).get("pid") == first_host)
        two = start_editor(tmp_path, editor_env(tmp_path, settings), cwd=REPO)
        recall_in(two, "anything at all")  # forwarded to the first host
        assert status(env)["clients"].get("editor") == 1
        gate.arm(0)
        two.nvim.command("CaptainMemo note")
        two.nvim.current.buffer[:] = ["Forwarded note", "Invoices are sent on the first working day."]
        two.nvim.command("write")
        assert gate.reached.wait(60), "the first host never embedded the forwarded save"
        os.kill(first_host, signal.SIGSTOP)
        try:
            gate.release()
            saved_id(two)  # saved by the second editor itself, past the deadline
        finally:
            os.kill(first_host, signal.SIGCONT)
        # The first host finishes the save it took: a save from the shell through it runs after it
        # on its one writer.
        after = cli("remember", "Credit notes are numbered apart.", env=settings)
        assert after.returncode == 0 and "running" not in after.stderr, after.stderr
        assert status(env)["pid"] == first_host
    finally:
        close(one)
        if two is not None:
            close(two)
    assert len(bodies(env, "first working day")) == 1, bodies(env, "first working day")


def test_a_killed_host_is_said_to_restart_not_to_need_a_build(env, gate, tmp_path):
    """The host killed while a recall waits in it: the editor says it stopped and starts again with
    the next request, not to run :CaptainMemo build (that is for an install that is missing)."""
    editor = start_editor(tmp_path, editor_env(tmp_path, env), cwd=REPO)
    try:
        recall_in(editor, "anything at all")
        host = host_pid(editor)
        gate.arm(0)
        editor.nvim.command("CaptainMemo recall what is held at the gate")
        assert gate.reached.wait(60)
        os.kill(host, signal.SIGKILL)
        editor.wait_for(
            "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
            "if n.msg:find('host stopped', 1, true) then return true end end end)()",
            what="the host's exit to be told",
        )
        gate.release()
        said = [n["msg"] for n in editor.notifications() if "host stopped" in n["msg"]]
        recall_in(editor, "anything again")
        assert host_pid(editor) != host
    finally:
        close(editor)
    assert len(said) == 1 and "killed by signal 9" in said[0] and "next request" in said[0], said
    assert "CaptainMemo build" not in said[0], said
