"""Hostile calls to `captain-memo mcp`: arguments that do not fit are tool results with isError
(SEP-1303: the model reads them and corrects the call), an unknown tool and a malformed request are
JSON-RPC errors, every request gets an answer, the server keeps serving, no error echoes the value
it refused, and stdout carries nothing but protocol (no traceback, no stray print)."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from mcp_support import connect, run, server_command
from nvim_support import make_repo

pytestmark = pytest.mark.mcp
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
TEN_MB = "x" * 10_000_000
SECRET = "password=hunter2"

CALLS = [
    ("recall", {"query": 42}, "recall: query must be a string, not a number"),
    ("recall", {"query": {"not": "a string"}}, "recall: query must be a string, not an object"),
    ("recall", {"query": "price", "limit": "ten"}, "recall: limit must be an integer, not a string"),
    ("recall", {"query": "price", "limit": True}, "recall: limit must be an integer, not a boolean"),
    ("recall", {"query": "price", "limit": 0}, "recall: limit must be a whole number from 1 to 50"),
    ("recall", {"query": "price", "verbose": True}, "recall: unknown argument 'verbose'"),
    ("recall", {}, "recall: query is required"),
    ("recall", {"query": "   "}, "recall: query is empty"),
    ("recall", {"query": "pri\x00ce"}, "query contains a NUL character at position 3"),
    ("remember", {"text": TEN_MB}, "remember: text is 10,000,000 characters; the limit is 1,000,000"),
    ("remember", {"text": "a fact\x00"}, "text contains a NUL character at position 6"),
    ("remember", {"text": "a fact", "title": "\x00"}, "title contains a NUL character at position 0"),
    ("remember", {"text": "a fact", "kind": SECRET}, "remember: kind must be one of memory, skill, observation"),
    ("remember", {"text": "a fact", "line_start": 3}, "remember: line_start needs file"),
    ("remember", {"text": "a fact", "file": "a.py", "line_start": 9, "line_end": 2}, "line_end (2) comes before"),
    ("remember", {"text": ["a", "list"]}, "remember: text must be a string, not an array"),
    ("show", {"id": "1"}, "no memory store at"),  # nothing saved yet: the store is named, not made
    ("show", {"id": 1.5}, 'show: id must be a string such as "12", "t12" or "12:310" (memory 12 at'),
    ("show", {"id": "9" * 19}, "show: id is not a memory id"),
    ("forget", {"id": SECRET}, "forget: id is not a memory id"),
    ("forget", {"id": -1}, 'forget: id must be a string such as "12" or "t12", not a number'),
    ("forget", {"id": 9.0}, 'forget: id must be a string such as "12" or "t12", not a number'),
    ("show", {"id": 9}, 'show: id must be a string such as "12", "t12" or "12:310"'),
    ("supersede", {"old": "1", "new": 2}, 'supersede: new must be a string such as "12" or "t12", not a number'),
    ("supersede", {"old": "1"}, "supersede: new is required"),
]


def test_wrong_arguments_are_tool_errors_the_model_reads_and_the_server_keeps_serving(tmp_path):
    from mcp.shared.exceptions import MCPError

    repo = make_repo(tmp_path)
    stderr = tmp_path / "stderr.log"

    async def body():
        async with connect(tmp_path / "memo.db", repo, stderr=stderr) as client:
            results = [await client.call_tool(name, args) for name, args, _ in CALLS]
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
            saved = await client.call_tool("remember", {"text": "The price cache is cleared at midnight."})
            found = await client.call_tool("recall", {"query": "price cache"})
        return results, unknown.value.error, saved, found

    results, unknown, saved, found = run(body)
    for (name, args, expected), result in zip(CALLS, results):
        assert result.is_error and result.structured_content is None, (name, args, result)
        [message] = [c.text for c in result.content]
        assert expected in message, (expected, message)
        assert len(message) < 300 and "hunter2" not in message, "an error never echoes the value it refused"
    assert unknown.code == INVALID_PARAMS
    assert "unknown tool 'no_such_tool'; the tools are recall, remember, show, supersede, forget" in unknown.message
    assert found.structured_content["hits"][0]["id"] == saved.structured_content["id"], "still serving"
    assert "Traceback" not in stderr.read_text(), "argument errors are expected, not crashes"


def test_every_request_is_answered_and_stdout_carries_only_protocol_even_for_broken_messages(tmp_path):
    """Raw JSON-RPC lines, including ones no SDK client would send: every request gets an answer
    (a lone surrogate and a request without a method got none: the client waited for its timeout),
    and every line back is JSON-RPC."""
    repo = make_repo(tmp_path)
    command, args = server_command()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db"),
        "CAPTAIN_MEMO_SERVICE": "0",  # in its own process, as the test's other front ends (conftest.py)
    }
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "{this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": ["a", "list"]}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall", "arguments": "text"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}},
        {"jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": {}},
        {"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "captain-memo://memory/abc"}},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "show", "arguments": {"id": 1}}},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "recall", "arguments": '
        '{"query": "price \\ud800"}}}',
        {"jsonrpc": "2.0", "id": 10},
        '{"jsonrpc": "2.0", "id": 11, "method": "resources/read", "params": {"uri": "captain-memo://\\udfff"}}',
        {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "show", "arguments": {"id": "1"}}},
    ]
    proc = subprocess.Popen(
        [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=repo, env=env
    )
    stderr = []
    threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True).start()
    for line in lines:
        proc.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
    proc.stdin.flush()
    answers, unaddressed = {}, []
    try:
        while len(answers) < 12:
            raw = proc.stdout.readline()
            assert raw, f"the server closed stdout early; stderr: {stderr}"
            message = json.loads(raw)  # every stdout line is JSON ...
            assert message["jsonrpc"] == "2.0"  # ... and JSON-RPC
            if message.get("id") is not None:
                answers[message["id"]] = message
            else:
                unaddressed.append(message)
    finally:
        proc.stdin.close()
        rc = proc.wait(timeout=30)
    rest = proc.stdout.read()
    assert rc == 0 and all(json.loads(line) for line in rest.splitlines()), rest
    assert "result" in answers[1] and answers[8]["result"]["tools"]
    for request_id, code in (
        (2, INVALID_PARAMS),
        (3, INVALID_PARAMS),
        (4, INVALID_PARAMS),
        (5, -32601),
        (6, -32002),
        (10, INVALID_REQUEST),
        (11, INVALID_PARAMS),
    ):
        assert answers[request_id]["error"]["code"] == code, answers[request_id]
    assert [m["error"]["code"] for m in unaddressed] == [-32700], "a line that is not JSON: a parse error"
    assert "a request needs a method" in answers[10]["error"]["message"]
    assert (
        "abc" not in answers[6]["error"]["message"] and "captain-memo://memory/{id}" in answers[6]["error"]["message"]
    )
    assert "uri holds an unpaired UTF-16 surrogate at character 15" in answers[11]["error"]["message"]
    surrogate = answers[9]["result"]
    assert surrogate["isError"] and surrogate["content"][0]["text"] == (
        "recall: query holds an unpaired UTF-16 surrogate at character 6, which is not text; send it as valid Unicode"
    )
    # An id is a string, as the schema says, for every tool: a number is a tool error naming it.
    assert answers[7]["result"]["isError"] and answers[7]["result"]["content"][0]["text"].startswith(
        "show: id must be a string such as"
    )
    assert answers[12]["result"]["isError"], "no memory by that id: a tool error the model reads"
    assert "no memory store at" in answers[12]["result"]["content"][0]["text"], "nothing saved yet: named, not made"


def test_an_unreadable_store_is_a_tool_error_naming_the_file_and_the_server_recovers(tmp_path):
    """Not a database at all: each call says which file and what to do (isError, not a protocol
    error: the call was right, the store is not); once the file is moved away, a new store opens."""
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    db.write_bytes(b"these bytes are not a SQLite database " * 200)
    stderr = tmp_path / "stderr.log"

    async def body():
        async with connect(db, repo, stderr=stderr) as client:
            failed = await client.call_tool("recall", {"query": "price"})
            db.rename(tmp_path / "moved-away.db")
            saved = await client.call_tool("remember", {"text": "A fresh store after the damaged one."})
        return failed, saved

    failed, saved = run(body)
    assert failed.is_error and failed.structured_content is None
    [text] = [c.text for c in failed.content]
    assert str(db) in text and "captain-memo doctor" in text and "\n" not in text
    assert not saved.is_error and saved.structured_content["id"] == "1"
    assert "Traceback" not in stderr.read_text()
