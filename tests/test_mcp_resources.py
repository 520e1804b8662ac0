"""Resources as an agent meets them: `resources/list` pages through every memory a recall in the
workspace would search (an opaque cursor, ``nextCursor`` until the last page), a cursor not made by
the server is JSON-RPC error -32602, and a team memory read with no team store set is "not found"
(-32002) saying so, not an internal error. A real `captain-memo mcp` child and the MCP SDK's client."""

from __future__ import annotations

import pytest
from mcp_support import connect, run
from nvim_support import make_repo

pytestmark = pytest.mark.mcp

PERSONAL, IN_REPO, ELSEWHERE = 70, 60, 5
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002


@pytest.fixture
def crowded(tmp_path, local_embedder):
    """A store of 135 memories saved in batches (many share one created_at, so ties must not lose
    any): 70 personal notes and 60 of the repository, which a listing there shows, and 5 of
    another repository, which it does not."""
    from captain_memo.memo import Memo
    from captain_memo.records import NewMemory

    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    batches = [
        [NewMemory(body=f"personal note {n}", title=f"note {n}") for n in range(PERSONAL)],
        [NewMemory(body=f"repository fact {n}", title=f"fact {n}", project=str(repo)) for n in range(IN_REPO)],
        [NewMemory(body=f"other fact {n}", title=f"other {n}", project="/elsewhere") for n in range(ELSEWHERE)],
    ]
    with Memo(db, local_embedder) as memo:
        for batch in batches:
            memo.import_memories(batch, quiet=True)
    return repo, db


def test_resources_list_pages_through_every_memory_and_refuses_a_cursor_it_did_not_make(crowded):
    from mcp.shared.exceptions import MCPError

    repo, db = crowded

    async def body():
        pages, errors = [], []
        async with connect(db, repo) as client:
            cursor = None
            while True:
                page = await client.list_resources(cursor=cursor, cache_mode="bypass")
                pages.append(page)
                cursor = page.next_cursor
                if cursor is None or len(pages) > 10:
                    break
            for bogus in ("bogus", "eyJzdG9yZSI6ICJsb2NhbCJ9", pages[0].next_cursor + "x", "x" * 500):
                with pytest.raises(MCPError) as refused:
                    await client.list_resources(cursor=bogus, cache_mode="bypass")
                errors.append(refused.value.error)
            with pytest.raises(MCPError) as team:
                await client.read_resource("captain-memo://memory/t1")
            errors.append(team.value.error)
        return pages, errors

    pages, errors = run(body)
    assert [len(page.resources) for page in pages] == [50, 50, 30]
    titles = [resource.title for page in pages for resource in page.resources]
    assert len(set(titles)) == len(titles) == PERSONAL + IN_REPO, "every memory once, none twice"
    assert not any(title.startswith("other") for title in titles), "another repository's are not listed"
    for error in errors[:4]:
        assert error.code == INVALID_PARAMS and "invalid cursor" in error.message, error
    assert errors[4].code == RESOURCE_NOT_FOUND and "needs a team store" in errors[4].message, errors[4]
