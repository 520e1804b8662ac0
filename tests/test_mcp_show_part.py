"""`show` with a part id (``12:310``: memory 12 opened at line 310 of its file, as `recall` names a
hit inside a long section): a real `captain-memo mcp` child spoken to with the MCP SDK's stdio
client, on a document indexed by the real command line, with the engine in the MCP process and in
the warm service."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from mcp_support import connect, run
from nvim_support import make_repo
from recall_support import long_markdown

pytestmark = pytest.mark.mcp


def index_guide(repo, env: dict) -> None:
    (repo / "doc").mkdir()
    (repo / "doc" / "guide.md").write_text(long_markdown(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "captain_memo.cli.main", "index", "doc/guide.md"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=repo,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def show_a_part(db, repo, env: dict) -> dict:
    async def body():
        out = {}
        async with connect(db, repo, env=env) as client:
            out["tools"] = {tool.name: tool for tool in (await client.list_tools()).tools}
            found = await client.call_tool("recall", {"query": "TempPathFactory", "detail": "full"})
            top = found.structured_content["hits"][0]
            out["top"], out["found_text"] = top, found.content[0].text
            compact = await client.call_tool("recall", {"query": "TempPathFactory"})
            out["compact"], out["compact_text"] = compact.structured_content["hits"][0], compact.content[0].text
            out["part"] = await client.call_tool("show", {"id": top["part"]})
            out["whole"] = await client.call_tool("show", {"id": top["part"], "whole": True})
            out["outside"] = await client.call_tool("show", {"id": f"{top['id']}:2"})
            out["not_a_line"] = await client.call_tool("show", {"id": f"{top['id']}:abc"})
            out["plain"] = await client.call_tool("show", {"id": top["id"]})
        return out

    return run(body)


def check_the_part_alone_then_the_whole_when_asked(out: dict) -> None:
    top = out["top"]
    start = top["lines"][0]
    assert top["title"] == "Guide > Deprecations and removals > tmp_path_factory"
    assert start > top["source"]["line_start"], "the hit is a part inside the section, not its start"
    # The hit names the part to open, in its data and in the text the model reads, compact too.
    assert top["part"] == f"{top['id']}:{start}" == out["compact"]["part"]
    assert f"#{top['part']} [" in out["found_text"] and f"#{top['part']} [" in out["compact_text"]

    part = out["part"]
    assert not part.is_error, part.content[0].text
    chunk = part.structured_content["chunk"]
    assert chunk["line_start"] == start and "Return a TempPathFactory instance" in chunk["text"]
    # The part and its place, not the whole section after it: the text and the data say the same.
    assert part.structured_content["id"] == top["id"] and "body" not in part.structured_content
    text = part.content[0].text
    assert f"guide.md:{start}-" in text and "Return a TempPathFactory instance" in text
    assert "Paragraph 1:" not in text and "── the whole memory:" not in text
    assert text.endswith(f"── show {top['id']} (or this id with whole: true) for the whole memory ──")
    # Asked for, the whole memory follows its part, in the text and the data.
    whole = out["whole"]
    assert whole.structured_content["chunk"] == chunk and "Paragraph 1:" in whole.structured_content["body"]
    head, body = whole.content[0].text.split("── the whole memory: doc/guide.md:", 1)
    assert f"guide.md:{start}-" in head and "Return a TempPathFactory instance" in head
    assert "Paragraph 1:" not in head and "Paragraph 1:" in body, "the part first, then the memory"

    assert out["outside"].is_error and "line 2 is not in it" in out["outside"].content[0].text
    assert out["not_a_line"].is_error and "12:310" in out["not_a_line"].content[0].text
    assert not out["plain"].is_error and "chunk" not in out["plain"].structured_content
    assert "Paragraph 29:" in out["plain"].structured_content["body"], "an id without a line opens it whole"

    spec = out["tools"]["show"].input_schema["properties"]["id"]
    assert re.fullmatch(spec["pattern"], "12:310") and re.fullmatch(spec["pattern"], "t12:310")
    assert not re.fullmatch(spec["pattern"], "12:") and not re.fullmatch(spec["pattern"], "12:0")
    assert "12:310" in spec["description"]


def test_show_opens_a_memory_at_the_part_a_recall_hit_names(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    index_guide(repo, {"CAPTAIN_MEMO_DB": str(db)})
    check_the_part_alone_then_the_whole_when_asked(show_a_part(db, repo, {}))


def test_the_warm_service_takes_a_part_id_too(tmp_path, service_env):
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    index_guide(repo, service_env)
    out = show_a_part(db, repo, service_env)
    said = " ".join(block.text for block in out["part"].content)
    assert "own process" not in said, "the service answered, not an engine in the MCP process"
    check_the_part_alone_then_the_whole_when_asked(out)
