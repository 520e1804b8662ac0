"""Neovim takes the store back from the shell's service while an agent's long remember runs in the
service and another agent saves: every call is answered and every save stored once.

Real processes: the shell's `captain-memo remember` starting the service, two agents' `captain-memo
mcp` relays with their sessions held by it, a real Neovim whose host claims the store (the service
hands its listening socket over, service/handover.py), and the real model over HTTP on 127.0.0.1,
which holds texts marked HOLD until the test lets them go (the other texts pass), so agent C's
remember is inside the service's engine as the hand-over happens."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from embed_support import MODEL, REPO, cli, provider_env, start_server, stop_server
from mcp_support import connect
from nvim_support import child_env, close, requires_nvim, start_editor
from service_support import status, stop_all, wait_for

pytestmark = [requires_nvim, pytest.mark.nvim, pytest.mark.slow]
TRIES = int(os.environ.get("CAPTAIN_MEMO_TEST_TRIES", "2"))  # more to hunt the race: 20
HANDED = "handed the socket to the editor"


class HeldTexts:
    """The real model; a batch holding a text marked HOLD waits until ``release()``."""

    def __init__(self, inner):
        self.inner, self.model_id = inner, inner.model_id
        self.reached, self.open = threading.Event(), threading.Event()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):
        if any("HOLD" in text for text in texts):
            self.reached.set()
            self.open.wait(120)
        return self.inner.embed(texts)

    def release(self) -> None:
        self.open.set()


@pytest.fixture
def held(local_embedder):
    model = HeldTexts(local_embedder)
    server = start_server(model)
    yield model, f"http://127.0.0.1:{server.server_address[1]}"
    model.release()
    stop_server(server)


class Agents:
    """Agents' MCP sessions on an asyncio loop of their own thread (pynvim runs its own loop on the
    main thread). ``call`` returns a concurrent Future of the tool's result."""

    def __init__(self, folder: Path, env: dict, names: list[str]):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.sessions: dict[str, object] = {}
        self.ready, self.stop = threading.Event(), asyncio.Event()
        self.held = asyncio.run_coroutine_threadsafe(self._hold(folder, env, names), self.loop)
        assert self.ready.wait(120), self.held

    async def _hold(self, folder: Path, env: dict, names: list[str]) -> None:
        try:
            async with AsyncExitStack() as stack:
                for name in names:
                    self.sessions[name] = await stack.enter_async_context(
                        connect(folder / "memo.db", folder, env=env, client=name)
                    )
                self.ready.set()
                await self.stop.wait()
        finally:
            self.ready.set()

    def call(self, name: str, tool: str, args: dict):
        return asyncio.run_coroutine_threadsafe(self.sessions[name].call_tool(tool, args), self.loop)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.held.result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


def bodies(db: Path, like: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT body FROM memories WHERE body LIKE ?", (f"%{like}%",))]
    finally:
        conn.close()


def take_back(folder: Path, url: str, model: HeldTexts, early: bool) -> None:
    """One try. ``early``: B saves as the editor starts, else the moment the service hands over."""
    run_folder = folder / "run"
    env = {
        **provider_env("openai", url, MODEL),
        "CAPTAIN_MEMO_SERVICE": "1",
        "CAPTAIN_MEMO_RUNTIME_DIR": str(run_folder),
        "CAPTAIN_MEMO_DB": str(folder / "memo.db"),
    }
    model.reached.clear()
    model.open.clear()
    editor = agents = None
    try:
        assert cli("remember", "alpha: the shell starts the service", env=env).returncode == 0
        service = status(env)
        assert service["host"] == "service", service
        log = run_folder / Path(service["socket"]).with_suffix(".log").name
        agents = Agents(folder, env, ["agent-b", "agent-c"])
        for name in ("agent-b", "agent-c"):  # both sessions are held by the service
            assert not agents.call(name, "recall", {"query": "warm up"}).result(120).is_error
        c = agents.call("agent-c", "remember", {"text": "gamma: HOLD held in the service " + "x" * 3000})
        assert model.reached.wait(60), "C's remember is inside the service's engine"
        shell = {k: v for k, v in os.environ.items() if k.startswith("CAPTAIN_MEMO_")}
        editor = start_editor(folder, child_env(folder, **{**shell, **env}), cwd=REPO)
        editor.nvim.command("CaptainMemo recall anything at all")  # its host claims the store
        if not early:
            assert wait_for(lambda: HANDED in log.read_text(), 60), log.read_text()
        b = agents.call("agent-b", "remember", {"text": "beta: saved as the editor took the store"})
        assert wait_for(lambda: status(env)["host"] == "editor", 60)
        model.release()
        for name, call in (("c", c), ("b", b)):
            answer = call.result(120)  # a call never answered fails here
            assert not answer.is_error, (name, answer.content)
        editor.results(120)
    finally:
        model.release()
        if agents is not None:
            agents.close()
        if editor is not None:
            close(editor)
        stop_all(run_folder)
    db = folder / "memo.db"
    assert len(bodies(db, "gamma: HOLD")) == 1
    assert bodies(db, "beta: saved") == ["beta: saved as the editor took the store"]


def test_calls_during_a_take_back_are_each_answered_and_stored_once(held, tmp_path):
    model, url = held
    for attempt in range(TRIES):
        folder = tmp_path / f"try{attempt}"
        folder.mkdir()
        take_back(folder, url, model, early=attempt % 2 == 0)
