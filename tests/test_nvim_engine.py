"""One engine per store with the editor open: real Neovim hosts, a real service started from the
shell, real `captain-memo` commands, the model served over HTTP on 127.0.0.1.

The editor's host serves the engine it holds on the store's socket: a service started earlier
hands its socket over and exits, the command line is answered by the editor's host, a second
Neovim sends its requests to the first one's host and serves the store itself once the first quits.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
from pathlib import Path

import pytest
from embed_support import REPO, cli
from mcp_support import CLIENT, connect, run
from nvim_support import close, editor_env, host_pid, recall_in, requires_nvim, start_editor
from service_support import alive, status, wait_for

pytestmark = [requires_nvim, pytest.mark.nvim, pytest.mark.slow]


def served(env: dict) -> dict:
    answer = status(env)
    answer.pop("clients", None)
    return answer


def test_the_editor_takes_the_store_from_the_service_and_serves_the_shell(service_env, tmp_path):
    first = cli("remember", "Invoices are rounded half-even at the end of the month.", env=service_env)
    assert first.returncode == 0, first.stderr
    shell_service = status(service_env)
    assert shell_service["host"] == "service"

    # Saves keep coming from the shell before, while and after the editor takes the store over:
    # each is stored once.
    saves: list[str] = []
    results: list = []

    def keep_saving() -> None:
        served_by_editor = 0
        while served_by_editor < 3 and len(saves) < 80:
            saves.append(f"Batch note {len(saves)}: the nightly export writes to bucket {len(saves)}.")
            results.append(cli("remember", saves[-1], env=service_env))
            served_by_editor += status(service_env)["host"] == "editor"

    saver = threading.Thread(target=keep_saving)
    saver.start()
    editor = start_editor(tmp_path, editor_env(tmp_path, service_env), cwd=REPO)
    try:
        assert "rounded half-even" in (rows := recall_in(editor, "how are invoices rounded")), rows
        host = host_pid(editor)
        saver.join()
        assert [done.returncode for done in results] == [0] * len(saves), [d.stderr for d in results]
        assert wait_for(lambda: not alive(shell_service["pid"])), "the service exits once it handed over"
        now = status(service_env)
        assert (now["host"], now["pid"], now["idle_exit_seconds"]) == ("editor", host, None), now

        # The shell is answered by the editor's engine: nothing runs in the command's own process.
        before = status(service_env)["clients"].get("cli", 0)
        saved = cli("remember", "Refunds go back to the card they came from.", env=service_env)
        assert saved.returncode == 0 and "running" not in saved.stderr, saved.stderr
        found = cli("recall", "invoices rounded", env=service_env)
        assert "rounded half-even" in found.stdout and "running" not in found.stderr, found.stderr
        assert status(service_env)["clients"].get("cli") == before + 2
        # What the shell saved through it, the editor finds at once; and an agent's MCP server too.
        assert "back to the card" in (rows := recall_in(editor, "where do refunds go")), rows
        agent = run(agent_recall, Path(service_env["CAPTAIN_MEMO_DB"]), service_env, "refunds card")
        assert "back to the card" in agent, agent
        answer = status(service_env)
        assert answer["pid"] == host and answer["clients"].get(f"mcp:{CLIENT}", 0) >= 1, answer
        text = cli("service", "status", env=service_env).stdout
        assert text.startswith(f"Neovim's host (pid {host}) serves its engine") and "while Neovim runs" in text
    finally:
        close(editor)

    bodies_now = stored_bodies(Path(service_env["CAPTAIN_MEMO_DB"]))
    assert all(bodies_now.count(text) == 1 for text in saves), bodies_now
    # Neovim gone: its socket is gone with it, and the next command starts a service of its own.
    assert wait_for(lambda: not alive(host))
    after = cli("recall", "refunds card", env=service_env)
    assert after.returncode == 0 and "back to the card" in after.stdout, after.stderr
    assert status(service_env)["host"] == "service"


async def agent_recall(db: Path, env: dict, query: str) -> str:
    async with connect(db, REPO, env=env) as client:
        result = await client.call_tool("recall", {"query": query})
        return str(result.content[0].text)


def stored_bodies(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT body FROM memories")]
    finally:
        conn.close()


def test_a_second_editor_uses_the_first_ones_engine_then_serves_when_it_quits(service_env, tmp_path):
    assert cli("remember", "Deploys freeze on Fridays after noon.", env=service_env).returncode == 0
    cli("service", "stop", env=service_env)
    env = editor_env(tmp_path, service_env)
    one = start_editor(tmp_path, env, cwd=REPO)
    two = None
    try:
        assert "Deploys freeze" in (rows := recall_in(one, "when do deploys freeze")), rows
        first_host = host_pid(one)
        said = cli("service", "status", env=service_env).stdout  # the first request on its socket
        assert f"(pid {first_host})" in said and ": model " in said and ", 1 request, up " in said, said
        assert status(service_env)["pid"] == first_host
        two = start_editor(tmp_path, env, cwd=REPO)
        assert "Deploys freeze" in (rows := recall_in(two, "deploys fridays")), rows
        second_host = host_pid(two)
        answer = status(service_env)
        assert answer["pid"] == first_host and answer["clients"].get("editor") == 1, answer
        # The second host holds no engine: it never loaded the model or opened the store's file.
        maps = open(f"/proc/{second_host}/maps").read()
        assert "memo.db" not in maps and str(service_env["CAPTAIN_MEMO_DB"]) not in _open_files(second_host)

        close(one)
        assert wait_for(lambda: not alive(first_host))
        assert "Deploys freeze" in (rows := recall_in(two, "deploys after noon")), rows
        assert status(service_env)["pid"] == second_host, "the second editor serves the store now"
    finally:
        close(one)
        if two is not None:
            close(two)


def _open_files(pid: int) -> str:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return json.dumps(found)


def test_an_editor_host_that_stops_answering_leaves_the_others_working(service_env, tmp_path):
    """The first editor's host is stopped (SIGSTOP) while it serves the store: a command and a second
    editor each run the request themselves, say so once, and lose nothing; the first resumes."""
    # Clients wait 1 s (not 5) for the stopped host to take a request before running it themselves.
    service_env = {**service_env, "CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}
    assert cli("remember", "Backups run at 02:00 and are kept 35 days.", env=service_env).returncode == 0
    cli("service", "stop", env=service_env)
    env = editor_env(tmp_path, service_env)
    one = start_editor(tmp_path, env, cwd=REPO)
    two = None
    try:
        assert "Backups run" in (rows := recall_in(one, "how long are backups kept")), rows
        first_host = host_pid(one)
        # A save through it runs on its writer after the recall's Tide record: once answered, the
        # host is inside no write, so stopping it holds no lock the others' writes would wait for.
        assert cli("remember", "Restore keys are kept in the vault.", env=service_env).returncode == 0
        os.kill(first_host, signal.SIGSTOP)
        try:
            found = cli("recall", "backups kept", env=service_env)
            assert "Backups run" in found.stdout and "running it here" in found.stderr, found.stderr
            two = start_editor(tmp_path, env, cwd=REPO)
            # Its host waits for the stopped one (1 s) before running the engine itself; Neovim
            # itself answers meanwhile: the request is only a notification to its host.
            two.lua("vim.g.captain_memo_test_results = nil")
            two.nvim.command("CaptainMemo recall backups kept days")
            assert two.nvim.eval("1 + 1") == 2 and two.lua("return vim.g.captain_memo_test_results") is None
            rows = "\n".join(two.results()) + f"\n{two.notifications()}"
            assert "Backups run" in rows, rows
            said = [n["msg"] for n in two.notifications() if "in this editor" in n["msg"]]
            assert len(said) == 1 and f"(pid {first_host}) does not answer" in said[0], two.notifications()
            saved = cli("--no-service", "remember", "Restores are tested every quarter.", env=service_env)
            assert saved.returncode == 0, saved.stderr
            assert "tested every quarter" in (rows := recall_in(two, "how often are restores tested")), rows
        finally:
            os.kill(first_host, signal.SIGCONT)
        assert "tested every quarter" in (rows := recall_in(one, "restores tested quarter")), rows
        assert status(service_env)["pid"] == first_host
    finally:
        close(one)
        if two is not None:
            close(two)


def test_an_editor_that_cannot_share_its_engine_says_so_once_and_works(service_env, tmp_path):
    """A runtime folder nobody may create (sysfs): the editor's host runs its engine unserved, says
    so once, and recalls and saves as ever."""
    unsafe = {**service_env, "CAPTAIN_MEMO_RUNTIME_DIR": "/sys/captain-memo-runtime"}
    assert cli("--no-service", "remember", "Tokens expire after 15 minutes.", env=unsafe).returncode == 0
    editor = start_editor(tmp_path, editor_env(tmp_path, unsafe), cwd=REPO)
    try:
        assert "Tokens expire" in (rows := recall_in(editor, "when do tokens expire")), rows
        assert "Tokens expire" in (rows := recall_in(editor, "token expiry minutes")), rows
        said = [n["msg"] for n in editor.notifications() if "not shared" in n["msg"]]
    finally:
        close(editor)
    assert len(said) == 1 and "/sys/captain-memo-runtime" in said[0], said
