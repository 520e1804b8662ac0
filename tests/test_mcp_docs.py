"""doc/mcp.md shows each tool's input schema and annotations exactly as the server sends them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from captain_memo.mcpserver.tools import TOOLS

DOC = Path(__file__).resolve().parent.parent / "doc" / "mcp.md"


@pytest.mark.parametrize("name", list(TOOLS))
def test_the_documented_schema_is_the_served_one(name):
    tool = TOOLS[name]
    section = re.search(rf"^### `{name}`\n(.*?)(?=^### |\Z)", DOC.read_text(encoding="utf-8"), re.S | re.M)
    assert section, f"doc/mcp.md has no section for {name}"
    schema = re.search(r"```json\n(.*?)\n```", section[1], re.S)
    assert json.loads(schema[1]) == tool.input_schema
    for hint, value in tool.annotations.items():
        if hint != "title":
            assert f"`{hint}: {json.dumps(value)}`" in section[1]
