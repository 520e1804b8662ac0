"""A recall answer an agent can afford: compact by default (id, kind, the matching section's heading,
age, store, its lines and the matching lines), at most ~2,500 characters of text for 10 hits and
structured content holding the same (Claude Code hands the model that alone) in at most 3,500;
`detail: "full"` for more. Through the MCP SDK's stdio
client against a real server process, over this project's own documentation indexed as notes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mcp_support import connect, run
from nvim_support import make_repo

pytestmark = pytest.mark.mcp

DOCS = Path(__file__).resolve().parent.parent / "doc"
COMPACT_BUDGET = 2_500  # characters of text for 10 hits (doc/mcp.md)
STRUCTURED_BUDGET = 3_500  # the same as JSON: each hit's field names on top of the text


@pytest.fixture
def documented(tmp_path, local_embedder):
    """A repository holding three of this project's long documents, indexed as its notes."""
    from captain_memo.memo import Memo

    repo = make_repo(tmp_path)
    for name in ("team.md", "benchmarks.md", "mcp.md"):
        shutil.copy(DOCS / name, repo / name)
    db = tmp_path / "memo.db"
    with Memo(db, local_embedder) as memo:
        memo.index([str(repo / name) for name in ("team.md", "benchmarks.md", "mcp.md")], show_progress=False)
    return repo, db


def test_recall_is_compact_by_default_and_full_on_request(documented):
    repo, db = documented
    query = "what happens when the team store is down"

    async def body():
        async with connect(db, repo) as client:
            compact = await client.call_tool("recall", {"query": query})
            full = await client.call_tool("recall", {"query": query, "detail": "full"})
            return compact, full

    compact, full = run(body)
    text, data = compact.content[0].text, compact.structured_content
    assert len(data["hits"]) == 10 and data["detail"] == "compact"
    assert len(text) <= COMPACT_BUDGET, (len(text), text)
    structured = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    assert len(structured) <= STRUCTURED_BUDGET, (len(structured), len(text))
    top = data["hits"][0]
    assert {"id", "kind", "title", "age", "store", "where", "lines"} <= set(top)
    assert f"  > {top['lines']}" in text, "the matching lines, in the structured result as in the text"
    assert " > " in top["title"] and ":" in top["where"], top
    assert f"#{top.get('part') or top['id']} [{top['kind']}] {top['title']}" in text
    assert "team store" in text.split(top["title"], 1)[1].split("\n#", 1)[0].lower(), "the matching lines follow"

    full_data = full.structured_content
    assert full_data["detail"] == "full" and full_data["hits"][0]["excerpt"]
    assert full_data["hits"][0]["source"]["path"] and "score" in full_data["hits"][0]
    assert len(full.content[0].text) > len(text)
