"""The MCP server's parts without a process: argument checks, the stored origin, the source label
every front end shows, excerpts, and which root names the workspace."""

from __future__ import annotations

import pytest

from captain_memo.errors import InputError
from captain_memo.mcpserver.memory_calls import origin_of
from captain_memo.mcpserver.tools import TOOLS, checked_arguments
from captain_memo.mcpserver.workspace import folder_of_roots
from captain_memo.presentation.text import excerpt
from captain_memo.records import Source


def test_defaults_fill_in_and_null_counts_as_absent():
    assert checked_arguments(TOOLS["recall"], {"query": "price", "limit": None}) == {
        "query": "price",
        "limit": 10,
        "all_projects": False,
        "explain": False,
        "detail": "compact",
    }
    assert checked_arguments(TOOLS["remember"], {"text": "a fact"})["kind"] == "observation"


@pytest.mark.parametrize(
    "arguments, message",
    [
        ("query", "recall: the arguments must be an object, not a string"),
        ({"query": "x", "limit": 1.5}, "recall: limit must be an integer, not a number"),
        ({"query": "x", "limit": 51}, "recall: limit must be a whole number from 1 to 50"),
        ({"query": "x" * 10_001}, "recall: query is 10,001 characters; the limit is 10,000"),
        ({"query": "x", "all_projects": "yes"}, "recall: all_projects must be a boolean, not a string"),
    ],
)
def test_each_wrong_argument_is_named(arguments, message):
    with pytest.raises(InputError) as caught:
        checked_arguments(TOOLS["recall"], arguments)
    assert str(caught.value) == message


def test_the_origin_names_the_client_in_one_short_printable_line():
    assert origin_of("claude-code") == "mcp:claude-code"
    assert origin_of(None) == origin_of("") == origin_of("\x00\n") == "mcp"
    assert origin_of("evil\nname\x00 " + "x" * 200) == "mcp:evilname " + "x" * 55, "64 characters at most"


@pytest.mark.parametrize(
    "source, label",
    [
        (Source(path="src/a.py", line_start=6, line_end=8, origin="mcp:codex"), "src/a.py:6-8 · mcp:codex"),
        (Source(commit="0123456789abcdef", origin="mcp:codex"), "commit 0123456789 · mcp:codex"),
        (Source(origin="mcp:codex"), "mcp:codex"),
        (Source(path="src/a.py", line_start=6, line_end=8, origin="editor"), "src/a.py:6-8"),
    ],
)
def test_the_label_says_an_agent_saved_it(source, label):
    assert source.describe() == label


def test_an_excerpt_drops_the_title_line_and_cuts_at_a_word():
    assert excerpt("Rounding\nKeep every decimal.", "Rounding") == "Keep every decimal."
    long = "word " * 200
    cut = excerpt(long, "", limit=50)
    assert cut.endswith(" …") and len(cut) <= 52 and cut[:-2].split() == ["word"] * len(cut[:-2].split())


def test_the_first_local_folder_root_names_the_workspace(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    assert folder_of_roots(["https://example.com/x", (tmp_path / "gone").as_uri(), tmp_path.as_uri()]) == str(tmp_path)
    assert folder_of_roots([(tmp_path / "file.txt").as_uri()]) == str(tmp_path)
    assert folder_of_roots([]) is None


def test_remember_says_no_vector_yet_even_behind_a_long_backlog(tmp_path):
    """The embedding endpoint refuses (a closed port on 127.0.0.1): a memory saved now has no
    vector, and the result says so even when hundreds of older chunks wait for theirs too."""
    from embed_support import MODEL, free_port

    from captain_memo.base.git_context import NO_REPOSITORY
    from captain_memo.embeddings.http import OllamaEmbedder
    from captain_memo.mcpserver.memory_calls import MemoryService
    from captain_memo.memo import Memo
    from captain_memo.records import NewMemory

    embedder = OllamaEmbedder(f"http://127.0.0.1:{free_port()}", MODEL, timeout=1.0, retries=1, backoff=0.01)
    service = MemoryService(str(tmp_path / "memo.db"), open_memo=lambda db: Memo(db, embedder))
    try:
        service.memo().import_memories([NewMemory(body=f"backlog note {i}") for i in range(300)])
        args = checked_arguments(TOOLS["remember"], {"text": "Saved while the endpoint is down."})
        saved = service.remember(args, NO_REPOSITORY, "test-agent")
    finally:
        service.close()
    assert saved["vector"] is False


def test_a_root_this_user_cannot_enter_is_skipped_with_the_reason(tmp_path, monkeypatch):
    """A fake fault: the tests run as root, whom no folder permission stops, so entering the folder is
    made to fail as it does for another user (os.scandir raising PermissionError)."""
    import os

    from captain_memo.mcpserver.workspace import folder_of_root

    locked, usable = tmp_path / "locked", tmp_path / "usable"
    locked.mkdir()
    usable.mkdir()
    real_scandir = os.scandir

    def scandir(path):
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert folder_of_root(locked.as_uri()) == (None, "Permission denied")
    assert folder_of_roots([locked.as_uri(), usable.as_uri()]) == str(usable)


@pytest.mark.parametrize(
    "line, code, message",
    [
        ("{not json", -32700, "parse error: the line is not JSON"),
        ('{"jsonrpc": "2.0", "id": 99}', -32600, "invalid request: a request needs a method (a string)"),
        ('{"jsonrpc": "1.0", "id": 3, "method": "ping"}', -32600, 'invalid request: jsonrpc must be "2.0"'),
        ('{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1]}', -32600, "params must be an object"),
        ('{"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "x\\ud800"}}', -32602, "uri holds"),
        ("[1, 2]", -32600, "invalid request: a message is a JSON object"),
    ],
)
def test_a_line_the_sdk_would_drop_gets_the_answer_json_rpc_asks_for(line, code, message):
    from captain_memo.mcpserver.wire import answer_to

    answer = answer_to(line)
    assert answer.error.code == code and message in answer.error.message


def test_a_broken_notification_or_a_response_to_nothing_gets_no_answer():
    from captain_memo.mcpserver.wire import answer_to

    assert answer_to('{"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}') is None
    assert answer_to('{"jsonrpc": "2.0", "id": 7, "result": 5}') is None


def test_a_tool_call_with_a_lone_surrogate_is_a_tool_error_naming_the_argument():
    from captain_memo.mcpserver.wire import answer_to

    line = '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "remember", "arguments": {"text": "ab\\udc00"}}}'
    answer = answer_to(line)
    assert answer.id == 8 and answer.result["isError"] is True
    assert answer.result["content"][0]["text"].startswith(
        "remember: text holds an unpaired UTF-16 surrogate at character 2"
    )
