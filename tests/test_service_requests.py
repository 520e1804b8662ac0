"""Every request the warm service reads from its socket is checked field by field, with the rules
the CLI and the MCP tools use (captain_memo/base/fields.py): nothing malformed is stored, and `doctor`
finds (and `doctor --repair` mends) a memory whose fields hold a value of the wrong type.

Real processes: the service a `captain-memo` command starts, spoken to over its real socket."""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import time
from pathlib import Path

from embed_support import cli

from captain_memo.base import runtime_folder

MODEL = "openai:all-MiniLM-L6-v2-int8"  # what the service of service_env embeds with
POISONED = [
    ("remember", {"text": "dated as text", "cwd": "/", "created_at": "2024-05-01"}, "created_at must be a number"),
    ("remember", {"text": "lines as text", "cwd": "/", "file": "a.py", "line_start": "abc"}, "line_start must be"),
    ("remember", {"text": "lines backwards", "cwd": "/", "file": "a.py", "line_start": 9, "line_end": 2}, "line_end"),
    ("remember", {"text": "a far future", "cwd": "/", "created_at": 1e300}, "created_at must be a number from 0"),
    ("remember", {"text": "not a number", "cwd": "/", "created_at": math.nan}, "created_at must be a finite"),
    ("remember", {"text": {"not": "text"}, "cwd": "/"}, "text must be a string, not an object"),
    ("remember", {"text": "a kind unknown", "cwd": "/", "kind": "secret"}, "kind must be one of"),
    ("remember", {"text": "a title too long", "cwd": "/", "title": "t" * 1001}, "title is 1,001 characters"),
    ("remember", {"text": "a flag as text", "cwd": "/", "team": "yes"}, "team must be a boolean, not a string"),
    ("remember", {"text": "no folder"}, "cwd is required"),
    ("remember", {"text": "an extra field", "cwd": "/", "author": "mallory"}, "unknown field 'author'"),
    ("remember", ["not", "an", "object"], "must be a JSON object, not an array"),
    ("recall", {"query": "invoice", "cwd": "/", "limit": "10"}, "limit must be an integer, not a string"),
    ("recall", {"query": "invoice", "cwd": "/", "limit": 0}, "limit must be a whole number from 1"),
    ("recall", {"query": "invoice", "cwd": "/", "limit": True}, "limit must be an integer, not a boolean"),
    ("recall", {"query": "invoice", "cwd": "/", "profile": "v9"}, "profile must be one of"),
    ("recall", {"query": 42, "cwd": "/"}, "query must be a string, not a number"),
    ("embed", {"texts": "one text", "model": MODEL}, "texts must be an array, not a string"),
    ("embed", {"texts": ["a text", 7], "model": MODEL}, "texts[1] must be a string, not a number"),
    ("embed", {"texts": [], "model": MODEL}, "texts holds 0 items; it takes 1 to 256"),
    ("embed", {"texts": ["t"] * 257, "model": MODEL}, "texts holds 257 items; it takes 1 to 256"),
    ("embed", {"texts": ["t" * 600_000] * 2, "model": MODEL}, "texts is 1,200,000 characters in all"),
    ("embed", {"texts": ["a text"]}, "model is required"),
    ("embed", {"texts": ["a text"], "model": 384}, "model must be a string, not a number"),
    ("embed", {"texts": ["a text"], "model": "openai:mallory-model"}, f"this engine embeds with {MODEL}, not"),
    ("embed", {"texts": ["a text"], "model": MODEL, "author": "mallory"}, "unknown field 'author'"),
]


def ask(env: dict, op: str, request) -> dict:
    """One request over the service's socket, as any client could send it; the service's answer."""
    path = runtime_folder.socket_path(env["CAPTAIN_MEMO_DB"], {**os.environ, **env})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(json.dumps({"op": op, "request": request}).encode() + b"\n")
        with sock.makefile("rb") as reader:
            assert json.loads(reader.readline()) == {"accepted": True, "host": "service"}
            return json.loads(reader.readline())


def stored(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT body, typeof(created_at), typeof(line_start) FROM memories").fetchall()
    finally:
        conn.close()


def test_poisoned_requests_are_refused_and_nothing_is_stored(service_env):
    saved = cli("remember", "The invoice total is rounded once.", env=service_env)
    assert saved.returncode == 0, saved.stderr
    for op, request, error in POISONED:
        answer = ask(service_env, op, request)
        assert answer["ok"] is False and not answer.get("internal"), (request, answer)
        assert error in answer["error"], (request, answer)
        assert "mallory" not in answer["error"] and "t" * 100 not in answer["error"]
    assert stored(Path(service_env["CAPTAIN_MEMO_DB"])) == [("The invoice total is rounded once.", "real", "null")]
    for flags in ([], ["--no-service"]):  # warm and cold recalls still work
        found = cli(*flags, "recall", "invoice rounded", env=service_env)
        assert found.returncode == 0 and "rounded once" in found.stdout, found.stderr
    checked = cli("doctor", env=service_env).stdout
    assert next(line for line in checked.splitlines() if " fields " in line).startswith("ok"), checked


def test_the_cli_meets_the_same_rules_in_its_own_process(service_env):
    for flags in ([], ["--no-service"]):
        done = cli(*flags, "recall", "-n", "0", "invoice", env=service_env)
        assert done.returncode == 1 and "limit must be a whole number from 1" in done.stderr, done.stderr


def test_doctor_finds_fields_of_the_wrong_type_and_repairs_them(service_env):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    env = {**service_env, "CAPTAIN_MEMO_SERVICE": "0"}
    for text in ("The invoice total is rounded once.", "The ledger closes at midnight UTC."):
        assert cli("remember", text, env=env).returncode == 0
    conn = sqlite3.connect(db)  # as a store written by an older version or another program
    with conn:
        conn.execute("UPDATE memories SET created_at = '2024-05-01' WHERE id = 1")
        conn.execute("UPDATE memories SET line_start = 'abc', last_surfaced = 'never' WHERE id = 2")
    conn.close()
    broken = cli("recall", "invoice ledger", env=env)
    assert broken.returncode != 0  # what the poisoned rows did to every recall

    found = cli("doctor", env=env)
    assert found.returncode == 1
    line = next(line for line in found.stdout.splitlines() if " fields " in line)
    assert line.startswith("FAIL") and "2 memories have a field of the wrong type" in line
    assert "#1 created_at is text" in line and "#2 line_start is text" in line and "--repair" in line

    repaired = cli("doctor", "--repair", env=env)
    assert "repaired #1 created_at: '2024-05-01' -> 1714521600.0" in repaired.stdout
    assert "repaired #2 line_start: 'abc' -> None" in repaired.stdout
    assert next(line for line in repaired.stdout.splitlines() if " fields " in line).startswith("ok")
    found = cli("recall", "invoice ledger", env=env)
    assert found.returncode == 0 and "rounded once" in found.stdout and "midnight" in found.stdout
    assert stored(db)[0][1] == "real" and time.gmtime(1714521600.0)[:3] == (2024, 5, 1)


def test_a_client_whose_clock_is_a_minute_behind_the_service_is_answered(service_env, monkeypatch):
    """Two processes' wall clocks disagree after a resume from suspend or an NTP step; a request's
    time budget must not depend on them agreeing. The test cannot move the machine's clock, so the
    client here (this process, speaking to the real service process) reads a wall clock a minute
    behind: its time.time is replaced."""
    from captain_memo.hosting import client

    assert cli("remember", "The invoice total is rounded once.", env=service_env).returncode == 0
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 60)
    env = {**os.environ, **service_env}
    db = service_env["CAPTAIN_MEMO_DB"]
    said: list[str] = []
    saved = client.call("remember", {"text": "The ledger closes at midnight UTC.", "cwd": "/"}, db, env, said.append)
    assert saved is not None and said == []
    found = client.call("recall", {"query": "ledger midnight", "cwd": "/"}, db, env, said.append)
    assert found is not None and said == [] and "midnight UTC" in json.dumps(found)
    assert [row[0] for row in stored(Path(db))] == [
        "The invoice total is rounded once.",
        "The ledger closes at midnight UTC.",
    ]
