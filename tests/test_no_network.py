"""Nothing leaves the machine unasked, and the database is private to its owner.

Each command runs in a child process whose sitecustomize installs an audit hook (PEP 578): every
``socket.connect``, ``socket.getaddrinfo``, ``socket.sendto`` and ``socket.sendmsg`` is written to
a log, and any destination other than loopback is refused. Every program started is logged too,
so a git command that would reach a remote is seen. The children run the default configuration,
the real embedded model included, in a real git repository.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from reliability_support import child_env

GUARD = textwrap.dedent('''
    import ipaddress, json, os, sys

    _LOG = os.environ["NETWORK_GUARD_LOG"]
    _NETWORK = {"socket.connect", "socket.getaddrinfo", "socket.sendto", "socket.sendmsg", "socket.gethostbyname"}

    def _loopback(host):
        if host is None or isinstance(host, (bytes, str)) and (host in ("localhost", b"localhost") or
                                                                 str(host).startswith("/")):
            return True
        try:
            return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host).is_loopback
        except ValueError:
            return False

    def _host(event, args):
        if event == "socket.getaddrinfo" or event == "socket.gethostbyname":
            return args[0]
        address = args[1] if event != "socket.sendmsg" else args[1]
        return address[0] if isinstance(address, tuple) else address  # a str or bytes address is a Unix socket

    def _guard(event, args):
        if event in _NETWORK:
            host = _host(event, args)
            allowed = _loopback(host)
            with open(_LOG, "a") as log:
                log.write(json.dumps({"event": event, "host": repr(host), "allowed": allowed}) + "\\n")
            if not allowed:
                raise PermissionError(f"network guard: {event} to {host!r} refused")
        elif event == "subprocess.Popen":
            with open(_LOG, "a") as log:
                log.write(json.dumps({"event": event, "argv": [str(a) for a in (args[1] or [])]}) + "\\n")

    sys.addaudithook(_guard)
''')
REMOTE_GIT = {"fetch", "pull", "push", "clone", "ls-remote", "remote", "submodule"}


@pytest.fixture
def guarded(tmp_path):
    """Environment and helpers for guarded children in a fresh git repository."""
    guard_dir = tmp_path / "guard"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "network.log"
    home = tmp_path / "data" / "captain-memo"
    env = child_env(NETWORK_GUARD_LOG=str(log), CAPTAIN_MEMO_HOME=str(home), HOME=str(tmp_path),
                    GIT_CONFIG_NOSYSTEM="1")
    env["PYTHONPATH"] = os.pathsep.join([str(guard_dir), env["PYTHONPATH"]])
    repo = tmp_path / "repo"
    (repo / "docs" / "decisions").mkdir(parents=True)
    (repo / "docs" / "decisions" / "0001-money.md").write_text(
        "# Money\n\n## Decision\n\nPrices are integer cents; rounding happens once, at invoice time.\n")
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    for argv in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "Record the money decision"]):
        subprocess.run([*git, *argv], cwd=repo, check=True, env=env)

    def run(*argv: str, extra: dict | None = None, umask: int = 0o022):
        old = os.umask(umask)
        try:
            proc = subprocess.run([sys.executable, "-m", "captain_memo.cli", *argv], cwd=repo,
                                  env={**env, **(extra or {})}, capture_output=True, text=True, timeout=300)
        finally:
            os.umask(old)
        return proc

    def events():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    return SimpleNamespace(run=run, events=events, home=home, env=env)


@pytest.mark.slow
def test_default_configuration_opens_no_connection(guarded, tmp_path):
    run, events, home = guarded.run, guarded.events, guarded.home
    records = tmp_path / "notes.jsonl"
    records.write_text(json.dumps({"text": "The staging database is rebuilt every night at 02:00."}) + "\n")
    steps = [
        ("remember", "--title", "cache", "The quote cache keeps prices for ten minutes."),
        ("index", "--git"),
        ("import", str(records)),
        ("recall", "how long are prices cached"),
        ("recall", "--explain", "invoice rounding"),
        ("doctor",),
        ("backup", str(tmp_path / "backup.db")),
    ]
    outputs = {}
    for argv in steps:
        proc = run(*argv, umask=0)  # a umask that masks nothing: the modes below must not rely on it
        assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
        outputs[argv[0] + " " + argv[-1]] = proc.stdout
    assert "indexed 1" in outputs["index --git"] and "1 new commits" in outputs["index --git"]
    assert "cache" in outputs["recall how long are prices cached"].splitlines()[0]
    assert "legs: vector + keyword" in outputs["recall how long are prices cached"]  # the model did answer

    seen = events()
    network = [e for e in seen if e["event"] != "subprocess.Popen"]
    assert [e for e in network if not e["allowed"]] == [], network
    assert network == [], f"no socket at all is expected with the default configuration: {network}"
    programs = [e["argv"] for e in seen if e["event"] == "subprocess.Popen"]
    assert programs, "git was expected to run for the repository context"
    for argv in programs:
        assert os.path.basename(argv[0]) == "git" and not REMOTE_GIT & set(argv), argv

    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "memo.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "backup.db").stat().st_mode) == 0o600


def test_the_guard_sees_and_refuses_an_outbound_connection(guarded):
    """The control: the same guard catches a real attempt, so an empty log above means something."""
    script = textwrap.dedent("""
        import socket
        for attempt in (lambda: socket.create_connection(("example.com", 80), timeout=2),
                        lambda: socket.socket().connect(("192.0.2.1", 9))):
            try:
                attempt()
            except PermissionError as exc:
                print(exc)
    """)
    attempt = subprocess.run([sys.executable, "-c", script], env=guarded.env, capture_output=True, text=True,
                             timeout=60)
    assert attempt.stdout.count("network guard") == 2, attempt.stdout + attempt.stderr
    assert guarded.events() == [{"event": "socket.getaddrinfo", "host": "'example.com'", "allowed": False},
                                {"event": "socket.connect", "host": "'192.0.2.1'", "allowed": False}]


def test_the_only_outbound_call_is_the_configured_embedding_endpoint(guarded):
    run, events = guarded.run, guarded.events
    endpoint = {"CAPTAIN_MEMO_EMBED_PROVIDER": "ollama", "CAPTAIN_MEMO_EMBED_URL": "http://192.0.2.1:11434",
                "CAPTAIN_MEMO_EMBED_TIMEOUT": "2"}
    proc = run("remember", "the staging database is rebuilt nightly", extra=endpoint)
    assert proc.returncode == 0, proc.stderr
    assert "no vector yet" in proc.stdout  # refused by the guard: stored for keyword search meanwhile
    proc = run("recall", "staging database", extra=endpoint)
    assert proc.returncode == 0 and "only the keyword leg answered" in proc.stdout, proc.stdout + proc.stderr
    outbound = {e["host"] for e in events() if e["event"] != "subprocess.Popen" and not e["allowed"]}
    assert outbound == {"'192.0.2.1'"}


def test_wal_and_shared_memory_files_are_private_too(tmp_path, hash_embedder):
    from captain_memo.engine import Engine
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
