"""One memory for the developer and the agent: what an agent saves through `captain-memo mcp` is
found by a lookup in a real headless Neovim in the same repository, and a selection saved in that
Neovim is found by the agent's recall."""

from __future__ import annotations

import pytest
from mcp_support import CLIENT, connect, run
from nvim_support import child_env, close, make_repo, requires_nvim, saved_id, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim, pytest.mark.mcp, pytest.mark.slow]
AGENT_NOTE = "get_effective_contract_price must stay the only place a price is computed: the tax report calls it too."


def test_agent_and_editor_share_one_memory(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    price = repo / "src" / "billing" / "price.py"

    async def agent_saves():
        async with connect(db, repo) as client:
            result = await client.call_tool(
                "remember",
                {
                    "text": AGENT_NOTE,
                    "title": "Single price entry point",
                    "kind": "memory",
                    "file": "src/billing/price.py",
                    "line_start": 6,
                    "line_end": 8,
                },
            )
            return result.structured_content["id"]

    agent_id = run(agent_saves)
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=tmp_path)
    try:
        editor.nvim.command(f"edit {price}")
        line = price.read_text().splitlines()[2]
        editor.lua("vim.api.nvim_win_set_cursor(0, {3, ...})", line.index("effective") + 2)
        editor.nvim.command("CaptainMemo lookup")
        rows = editor.results()
        assert "Single price entry point" in rows[0], rows
        assert f"src/billing/price.py:6-8 · mcp:{CLIENT}" in rows[0], "the float says an agent saved it"
        preview = "\n".join(editor.lines_of("captain-memo://preview"))
        assert f"#{agent_id}" in preview and f"mcp:{CLIENT}" in preview and AGENT_NOTE in preview

        editor.nvim.command("close")
        editor.nvim.command(f"edit {price}")
        editor.nvim.input("3GVj:CaptainMemo save<CR>")
        editor_id = saved_id(editor)
    finally:
        close(editor)

    async def agent_recalls():
        async with connect(db, repo) as client:
            result = await client.call_tool("recall", {"query": "round the price times the quantity", "detail": "full"})
            return result.structured_content

    found = run(agent_recalls)
    hit = next(h for h in found["hits"] if h["id"] == str(editor_id))  # ids are strings in MCP results
    assert hit is found["hits"][0], found["hits"]
    source = hit["source"]
    assert (source["path"], source["line_start"], source["line_end"]) == ("src/billing/price.py", 3, 4)
    assert hit["source"]["origin"] == "editor" and "round(price * contract.quantity, 2)" in hit["excerpt"]
