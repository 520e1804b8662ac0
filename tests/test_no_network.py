"""Nothing leaves the machine unasked, and nothing is written outside the store, seen from outside.

Each real command runs under ``strace -f``, which logs the system calls of the process and of
every thread and child it starts, native code included (the ONNX runtime's own threads opened
sockets and wrote files that an in-process audit hook never saw). From the log:

- every socket address used (connect, bind, sendto, sendmsg) is loopback or a Unix socket, and
  no socket of another family (netlink, packet) is opened;
- every file opened for writing, created, renamed or made a folder lies in the store's folder
  (or is a folder on the way to it), the documented cache folder ($XDG_CACHE_HOME/captain-memo),
  the temporary folder, the repository the command runs in (git's own files), or /dev;
- every program started is Python itself or a local git command (no fetch, pull, push, clone).

The commands run the default configuration with the real model, in a fresh git repository, with a
fresh HOME, so anything written under HOME shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from reliability_support import child_env

REMOTE_GIT = {"fetch", "pull", "push", "clone", "ls-remote", "remote", "submodule"}
TRACED = "network,execve,open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat"
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$")
ADDRESS = re.compile(r'(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")')


def strace_unusable() -> str | None:
    """Why strace cannot trace here, or None when it can."""
    if shutil.which("strace") is None:
        return "strace is not installed (.ci/run installs it with apt-get where it can)"
    probe = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=network", "-o", os.devnull, "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"strace cannot trace in this environment (ptrace refused: {probe.stderr.strip()[:200]})"
    return None


def violations(trace: str, allowed: list[Path]) -> dict[str, list[str]]:
    """The lines of an strace log that break the rules in the module's docstring."""
    found: dict[str, list[str]] = {"network": [], "files": [], "programs": []}
    roots = [str(p) for p in allowed]
    for line in trace.splitlines():
        call = re.match(r"^\d+\s+(?:<\.\.\. )?(\w+)", line)
        if not call:
            continue
        name = call.group(1)
        if name == "socket" and not re.search(r"socket\((AF_UNIX|AF_LOCAL|AF_INET|AF_INET6),", line):
            found["network"].append(line)
        for v4, v6 in ADDRESS.findall(line):
            if not LOOPBACK.match(v4 or v6):
                found["network"].append(line)
        if name == "execve":
            argv = re.findall(r'"([^"]*)"', line.split("[", 1)[-1].split("]", 1)[0])
            program = os.path.basename(argv[0]) if argv else ""
            if not (program.startswith("python") or program == "git" and not REMOTE_GIT & set(argv)):
                found["programs"].append(line)
        writes = (
            name in ("open", "openat")
            and any(flag in line for flag in WRITE_FLAGS)
            or name
            in (
                "creat",
                "mkdir",
                "mkdirat",
                "rename",
                "renameat",
                "renameat2",
                "link",
                "linkat",
                "symlink",
                "symlinkat",
            )
        )
        if writes and " = -1 " not in line:  # a failed write changed nothing (a failed connect still tried)
            paths = re.findall(r'"([^"]*)"', line)
            targets = paths[-1:] if name.startswith(("rename", "link", "symlink")) else paths[:1]
            for path in targets:
                inside = any(path == r or path.startswith(r + "/") for r in roots)
                on_the_way = name.startswith("mkdir") and any(r.startswith(path + "/") for r in roots)
                if path.startswith("/") and not inside and not on_the_way:  # relative: inside the repository
                    found["files"].append(line)
    return {kind: lines for kind, lines in found.items() if lines}


@pytest.fixture
def traced(tmp_path):
    """Run captain-memo under strace in a fresh git repository with a fresh HOME."""
    reason = strace_unusable()
    if reason:
        pytest.skip(reason)
    home_dir = tmp_path / "home"
    store = home_dir / ".local" / "share" / "captain-memo"
    temp = tmp_path / "tmp"
    for folder in (home_dir, temp):
        folder.mkdir()
    env = child_env(HOME=str(home_dir), TMPDIR=str(temp), GIT_CONFIG_NOSYSTEM="1", PYTHONDONTWRITEBYTECODE="1")
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "ORT_DISABLE_TELEMETRY"):
        env.pop(name, None)  # the defaults are under test, the runtime's telemetry switch included
    repo = tmp_path / "repo"
    (repo / "docs" / "decisions").mkdir(parents=True)
    for i in range(12):
        (repo / "docs" / "decisions" / f"{i:04d}-decision.md").write_text(
            f"# Decision {i}\n\n## Context\n\nService {i} answered slowly under load.\n\n"
            f"## Decision\n\nPrices are integer cents in service {i}; rounding happens once, at invoice time.\n"
        )
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    for argv in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "Record the decisions"]):
        subprocess.run([*git, *argv], cwd=repo, check=True, env=env)
    allowed = [store, home_dir / ".cache" / "captain-memo", temp, repo, Path("/dev")]
    logs = []

    def command(*argv: str, umask: int = 0o022, **popen) -> tuple[list[str], Path]:
        log = tmp_path / f"trace-{len(logs)}.txt"
        logs.append(log)
        # -s: strace cuts strings at 32 characters by default, which cut a long interpreter path (a
        # worktree's .venv/bin/python) before "python" and the check took it for another program.
        return [
            "strace",
            "-f",
            "-qq",
            "-s",
            "4096",
            "-e",
            f"trace={TRACED}",
            "-o",
            str(log),
            sys.executable,
            "-m",
            "captain_memo.cli.main",
            *argv,
        ], log

    def run(*argv: str, umask: int = 0o022) -> subprocess.CompletedProcess:
        args, _ = command(*argv)
        old = os.umask(umask)
        try:
            return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        finally:
            os.umask(old)

    def broken() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for log in logs:
            for kind, lines in violations(log.read_text(errors="replace"), allowed).items():
                out.setdefault(kind, []).extend(lines)
        return out

    return SimpleNamespace(
        run=run, command=command, broken=broken, env=env, repo=repo, store=store, home=home_dir, tmp=tmp_path
    )


@pytest.mark.slow
def test_the_default_configuration_opens_no_socket_and_writes_only_its_own_files(traced):
    records = traced.tmp / "notes.jsonl"
    records.write_text(json.dumps({"text": "The staging database is rebuilt every night at 02:00."}) + "\n")
    steps = [
        ("remember", "--title", "cache", "The quote cache keeps prices for ten minutes."),
        ("index", "--git"),
        ("import", str(records)),
        ("recall", "how long are prices cached"),
        ("recall", "--explain", "invoice rounding"),
        ("doctor",),
        ("backup", str(traced.store / "backup.db")),
        ("demo",),
    ]
    outputs = {}
    # The server is traced for 15 s after its request while the other commands run beside it.
    with serving(traced, seconds=15):
        for argv in steps:
            proc = traced.run(*argv, umask=0)  # a umask that masks nothing: the modes below must not rely on it
            assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
            outputs[argv[0] + " " + argv[-1]] = proc.stdout
    assert "12 files read" in outputs["index --git"], outputs["index --git"]
    assert "cache" in outputs["recall how long are prices cached"].splitlines()[0]
    assert "legs: vector + keyword" in outputs["recall how long are prices cached"]  # the model did answer

    assert traced.broken() == {}
    assert not (traced.home / ".cache" / "Microsoft").exists()
    assert stat.S_IMODE(traced.store.stat().st_mode) == 0o700
    assert stat.S_IMODE((traced.store / "memo.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((traced.store / "backup.db").stat().st_mode) == 0o600


@contextlib.contextmanager
def serving(traced, seconds: float):
    """serve-embeddings answering one request, then running on for ``seconds`` at least (the
    block's own time counts): the runtime's telemetry used to resolve its collector's host name
    about 9 s after the model loaded."""
    args, _ = traced.command("serve-embeddings", "--port", "0")
    proc = subprocess.Popen(
        args, cwd=traced.repo, env=traced.env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        line = proc.stderr.readline()
        url = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        assert url, line
        answer = httpx.post(url.group(1) + "/api/embed", json={"input": "one request"}, timeout=60)
        assert answer.status_code == 200
        answered = time.monotonic()
        yield
        time.sleep(max(0.0, answered + seconds - time.monotonic()))
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # strace and the server alike; the server stops on Ctrl-C
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # a tracer may hold Ctrl-C back: never leave a server behind
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def test_the_trace_reader_catches_a_real_connection_and_a_stray_file(traced):
    """The control: the same reading of the same strace log flags a real outbound attempt, a name
    lookup and a file written in HOME, so an empty verdict above means something."""
    script = (
        "import socket, os\n"
        "for host in ('192.0.2.1', 'example.invalid'):\n"
        "    try:\n"
        "        socket.create_connection((host, 9), timeout=0.5)\n"
        "    except OSError:\n"
        "        pass\n"
        f"open(os.path.join({str(traced.home)!r}, 'stray'), 'w').close()\n"
    )
    log = traced.tmp / "control.txt"
    subprocess.run(
        ["strace", "-f", "-qq", "-e", f"trace={TRACED}", "-o", str(log), sys.executable, "-c", script],
        env=traced.env,
        capture_output=True,
        timeout=60,
    )
    found = violations(log.read_text(), [traced.store, traced.tmp / "tmp"])
    assert any("192.0.2.1" in line for line in found["network"]), found
    assert any(str(traced.home / "stray") in line for line in found["files"]), found
    # The name lookup reaches a resolver: a DNS server's address, or nscd / systemd-resolved over a
    # Unix socket (allowed: it is local, and what it does next is that daemon's business).
    assert len(found["network"]) >= 1


def test_the_only_outbound_call_is_the_configured_embedding_endpoint(traced):
    env = {
        "CAPTAIN_MEMO_EMBED_PROVIDER": "ollama",
        "CAPTAIN_MEMO_EMBED_URL": "http://192.0.2.1:11434",
        "CAPTAIN_MEMO_EMBED_TIMEOUT": "1",
        # Its own back-off record: one left in the shared runtime folder by an earlier run for this
        # endpoint would skip the very connect this test looks for.
        "CAPTAIN_MEMO_RUNTIME_DIR": str(traced.tmp / "run"),
    }
    traced.env.update(env)
    proc = traced.run("remember", "the staging database is rebuilt nightly")
    assert proc.returncode == 0, proc.stderr
    assert "no vector yet" in proc.stdout  # nothing answers there: stored for keyword search meanwhile
    proc = traced.run("recall", "staging database")
    assert proc.returncode == 0 and "only the keyword leg answered" in proc.stdout, proc.stdout + proc.stderr
    outbound = traced.broken()["network"]
    assert outbound and all("192.0.2.1" in line and "htons(11434)" in line for line in outbound), outbound


def test_wal_and_shared_memory_files_are_private_too(tmp_path, hash_embedder):
    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    old = os.umask(0)
    try:
        engine = Engine(Store(tmp_path / "fresh" / "memo.db"), hash_embedder)
        engine.remember(NewMemory(body="written while the connection is open"))
        folder = tmp_path / "fresh"
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.iterdir()]}
        engine.close()
    finally:
        os.umask(old)
    assert modes == {"fresh": 0o700, "memo.db": 0o600, "memo.db-wal": 0o600, "memo.db-shm": 0o600}
