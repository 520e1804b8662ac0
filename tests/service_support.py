"""The warm service in tests: real `captain-memo` child processes, a real service process, and the
real local model served over HTTP on 127.0.0.1 (so no child loads the model itself)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import time
from pathlib import Path

from embed_support import cli


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped (a container's init may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def status(env: dict) -> dict:
    done = cli("service", "status", "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def stop_all(folder: Path) -> None:
    """Stop every service listening in ``folder``; kill one that does not go."""
    for path in folder.glob("*.sock"):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(10)
                sock.connect(str(path))
                sock.sendall(b'{"op": "stop"}\n')
                reader = sock.makefile("rb")
                reader.readline()
                pid = json.loads(reader.readline())["result"]["pid"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not wait_for(lambda pid=pid: not alive(pid), 10):
            os.kill(pid, signal.SIGKILL)


def bodies(path: Path) -> list[str]:
    """The memories in the file at ``path`` alone, as a copy read cold (no -wal or -shm beside it)."""
    copy = path.with_name(f"cold-{path.name}")
    shutil.copyfile(path, copy)
    try:
        conn = sqlite3.connect(copy)
        try:
            return sorted(row[0] for row in conn.execute("SELECT body FROM memories"))
        finally:
            conn.close()
    finally:
        copy.unlink()


def stored_bodies(path) -> list[str]:
    """Every memory's text in the store at ``path``, sorted, read through its WAL (what it holds now)."""
    conn = sqlite3.connect(str(path))
    try:
        return sorted(row[0] for row in conn.execute("SELECT body FROM memories"))
    finally:
        conn.close()
