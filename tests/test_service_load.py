"""Three front ends on each of two stores, recalling and remembering at once for 10 s: nothing is
lost, nothing is saved twice, and no answer comes from a store other than the caller's.

Real parts: per store, a command-line process whose `remember` and `recall` go through the warm
service, a `captain-memo mcp` process spoken to over stdio (JSON-RPC lines, as an agent does),
and the editor's request handler (editor/service.py, as the plugin's host runs it) in this
process; the model is served over HTTP on 127.0.0.1. Each front end pauses between requests so
the whole stays light on a shared 2-core machine."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from mcp_support import server_command

SECONDS = 10.0  # ~27 rounds a front end on an idle 2-core machine; 30 s proved nothing more
PAUSE = 0.3
MIN_SAVES = 7  # a front end that managed fewer in SECONDS stalled behind the others
STORES = ("amber", "cobalt")

CLI_LOOP = r"""
import json, sys, time
from captain_memo.cli.main import main
from io import StringIO
import contextlib
store, seconds, pause = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    text = f"{store} cli note {n}"
    out = StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["remember", "--json", text])
    if code == 0:
        print(json.dumps({"saved": text}), flush=True)
    out = StringIO()
    with contextlib.redirect_stdout(out):
        main(["recall", "--json", "-n", "30", f"{store} cli note"])
    hits = json.loads(out.getvalue())["hits"]
    print(json.dumps({"recalled": [h["text"] for h in hits]}), flush=True)
    n += 1
    time.sleep(pause)
"""


class Results:
    def __init__(self):
        self.saved: list[str] = []
        self.recalled: list[list[str]] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def add(self, saved: str | None = None, recalled: list[str] | None = None, error: str | None = None):
        with self.lock:
            if saved is not None:
                self.saved.append(saved)
            if recalled is not None:
                self.recalled.append(recalled)
            if error is not None:
                self.errors.append(error)


def cli_front_end(store: str, env: dict, results: Results) -> threading.Thread:
    child = subprocess.Popen(
        [sys.executable, "-c", CLI_LOOP, store, str(SECONDS), str(PAUSE)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=env["WORK"],
    )

    def read():
        for line in child.stdout:
            event = json.loads(line)
            results.add(saved=event.get("saved"), recalled=event.get("recalled"))
        child.wait()
        errors = child.stderr.read()
        if child.returncode or errors.strip():
            results.add(error=f"cli: exit {child.returncode}: {errors[-2000:]}")

    return threading.Thread(target=read)


class StdioMcp:
    """A `captain-memo mcp` child spoken to as an agent does: one JSON-RPC message per line."""

    def __init__(self, env: dict):
        command, args = server_command()
        self.child = subprocess.Popen(
            [command, *args],
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=env["WORK"],
        )
        self.next_id = 0
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}
        self.request("initialize", init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.child.stdin.write(json.dumps(message) + "\n")
        self.child.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            reply = json.loads(self.child.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def tool(self, name: str, arguments: dict) -> dict:
        reply = self.request("tools/call", {"name": name, "arguments": arguments})
        result = reply["result"]
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return (
            json.loads(result["content"][-1]["text"])
            if not result.get("structuredContent")
            else result["structuredContent"]
        )

    def close(self) -> None:
        self.child.stdin.close()
        self.child.wait(timeout=30)


def mcp_front_end(store: str, env: dict, results: Results) -> threading.Thread:
    def run():
        server = StdioMcp(env)
        try:
            loop(
                store,
                "mcp",
                results,
                lambda text: server.tool("remember", {"text": text, "kind": "memory"}),
                lambda query: [
                    h["excerpt"] for h in server.tool("recall", {"query": query, "limit": 30, "detail": "full"})["hits"]
                ],
            )
        finally:
            server.close()

    return threading.Thread(target=run)


def editor_front_end(store: str, env: dict, results: Results) -> threading.Thread:
    from captain_memo.editor.editor_requests import EditorService

    settings = {
        "db": env["CAPTAIN_MEMO_DB"],
        "provider": "openai",
        "url": env["CAPTAIN_MEMO_EMBED_URL"],
        "model": env["CAPTAIN_MEMO_EMBED_MODEL"],
        "secrets": "allow",
    }
    service = EditorService(deliver=lambda reply: None, serve=True)
    context = {"context": env["WORK"]}

    def ask(op: str, args: dict) -> dict:
        reply = service.handle({"id": 1, "op": op, "settings": settings, "args": {**context, **args}})
        if not reply["ok"]:
            raise RuntimeError(reply["error"])
        return reply["result"]

    def run():
        try:
            loop(
                store,
                "editor",
                results,
                lambda text: ask("save", {"text": text}),
                lambda query: [h["text"] for h in ask("recall", {"query": query, "limit": 30})["hits"]],
            )
        finally:
            service.close()

    return threading.Thread(target=run)


def loop(store: str, name: str, results: Results, remember, recall) -> None:
    end, n = time.monotonic() + SECONDS, 0
    while time.monotonic() < end:
        text = f"{store} {name} note {n}"
        try:
            remember(text)
            results.add(saved=text)
            results.add(recalled=recall(f"{store} {name} note"))
        except Exception as exc:
            results.add(error=f"{name}: {exc}")
        n += 1
        time.sleep(PAUSE)


def stored(db: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT body FROM memories")]
    finally:
        conn.close()


@pytest.mark.slow
def test_three_front_ends_on_two_stores_lose_nothing_double_nothing_and_never_cross(embed_server, tmp_path):
    from embed_support import provider_env
    from service_support import stop_all

    envs, results, threads = {}, {}, []
    for store in STORES:
        work = tmp_path / store
        work.mkdir()
        envs[store] = {
            **provider_env("openai", embed_server.url),
            "CAPTAIN_MEMO_SERVICE": "1",
            "CAPTAIN_MEMO_RUNTIME_DIR": str(tmp_path / "run"),
            "CAPTAIN_MEMO_DB": str(tmp_path / f"{store}.db"),
            "WORK": str(work),
        }
        results[store] = Results()
        for front_end in (cli_front_end, mcp_front_end, editor_front_end):
            threads.append(front_end(store, envs[store], results[store]))
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=SECONDS + 120)
            assert not thread.is_alive()
    finally:
        stop_all(tmp_path / "run")

    for store in STORES:
        done = results[store]
        assert done.errors == [], done.errors
        bodies = stored(envs[store]["CAPTAIN_MEMO_DB"])
        assert sorted(bodies) == sorted(done.saved)  # each acknowledged save there once, nothing else
        assert len(set(bodies)) == len(bodies)
        for name in ("cli", "mcp", "editor"):
            assert sum(b.startswith(f"{store} {name} note") for b in bodies) >= MIN_SAVES
        other = [s for s in STORES if s != store][0]
        seen = [text for hits in done.recalled for text in hits]
        assert seen and not any(re.search(rf"\b{other}\b", text) for text in seen)
        assert all(text.startswith(store) for text in seen)
