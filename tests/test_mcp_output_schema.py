"""Every tool declares an outputSchema, and every result it gives validates against it: 20 real calls
(recall compact and full, with and without explain; remember, repeated and with an idempotency key;
show, with and without a part; supersede and its undo; forget) through the MCP SDK's stdio client
against a real `captain-memo mcp` process, with the real local model. The structured result holds
everything its text says (Claude Code hands the model only ``structuredContent``): a compact hit's
matching lines too."""

from __future__ import annotations

import pytest
from mcp_support import connect, run
from nvim_support import make_repo
from recall_support import long_markdown

pytestmark = pytest.mark.mcp

NOTE = "get_effective_contract_price applies the contract discount to the list price on every invoice line."
SECRET_NOTE = 'The staging database: password = "hunter2hunter2" for the billing user.'


@pytest.fixture
def guide_repo(tmp_path, local_embedder):
    """A repository whose long guide is indexed, so a recall hit names a part (``12:310``)."""
    from captain_memo.memo import Memo

    repo = make_repo(tmp_path)
    (repo / "guide.md").write_text(long_markdown(), encoding="utf-8")
    db = tmp_path / "memo.db"
    with Memo(db, local_embedder) as memo:
        memo.index([str(repo / "guide.md")], show_progress=False)
    return repo, db


def twenty_calls(db, repo) -> tuple[dict, list]:
    async def body():
        calls = []

        async def call(name, args):
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, args, result.content[0].text)
            calls.append((name, args, result))
            return result.structured_content

        async with connect(db, repo) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            where = {"file": "src/billing/price.py", "line_start": 1}
            first = await call("remember", {"text": NOTE, **where})
            await call("remember", {"text": NOTE, **where})  # an exact repeat: the same save
            newer = await call("remember", {"text": NOTE + " Discounts stack since 2.0.", "kind": "memory"})
            await call("remember", {"text": SECRET_NOTE, "title": "Staging <private>host db-7</private>"})
            await call("remember", {"text": "Retried saves keep one copy.", "idempotency_key": "save-42"})
            await call("remember", {"text": "Retried saves keep one copy!", "idempotency_key": "save-42"})
            await call("recall", {"query": "get_effective_contract_price"})
            await call("recall", {"query": "contract discount", "explain": True})
            await call("recall", {"query": "contract discount", "detail": "full"})
            await call("recall", {"query": "contract discount", "detail": "full", "explain": True})
            part = (await call("recall", {"query": "TempPathFactory"}))["hits"][0]["part"]
            await call("recall", {"query": "TempPathFactory", "all_projects": True, "limit": 3})
            await call("show", {"id": first["id"]})
            await call("show", {"id": part})
            await call("supersede", {"old": first["id"], "new": newer["id"]})
            await call("recall", {"query": "contract discount list price"})
            await call("show", {"id": first["id"]})
            await call("supersede", {"old": first["id"], "undo": True})
            await call("forget", {"id": newer["id"]})
            await call("recall", {"query": "nothing here matches zyxwvut qqq", "limit": 1})
        return tools, calls

    return run(body)


def test_every_result_validates_against_its_declared_output_schema(guide_repo):
    from jsonschema import Draft202012Validator

    repo, db = guide_repo
    tools, calls = twenty_calls(db, repo)
    assert len(calls) == 20
    for tool in tools.values():
        Draft202012Validator.check_schema(tool.output_schema)
        assert tool.output_schema["type"] == "object"
    assert {name for name, _, _ in calls} == set(tools), "every tool is called"
    for name, args, result in calls:
        errors = [
            e.message for e in Draft202012Validator(tools[name].output_schema).iter_errors(result.structured_content)
        ]
        assert not errors, (name, args, errors)
        assert not undeclared(tools[name].output_schema, result.structured_content), (name, args)

    by_call = [(name, args, result.structured_content, result.content[0].text) for name, args, result in calls]
    # A compact hit's matching lines are in the structured result, and the text shows the same lines.
    compact = by_call[6]
    hit = compact[2]["hits"][0]
    assert "get_effective_contract_price" in hit["lines"], hit
    assert f"  > {hit['lines']}" in compact[3]
    # What the text says of a save is in its structured result too.
    repeat, keyed, retried = by_call[1][2], by_call[4][2], by_call[5][2]
    assert repeat["already_saved"] and repeat["id"] == by_call[0][2]["id"]
    assert "Already saved" in by_call[1][3]
    assert retried["id"] == keyed["id"] and retried["already_saved"] and not keyed["already_saved"]
    secret = by_call[3][2]
    assert secret["redacted"] and secret["private_left_out"] and "hunter2hunter2" not in by_call[3][3]
    part = by_call[13][2]
    assert part["chunk"]["line_start"] and part["chunk"]["text"] in by_call[13][3]
    superseded = by_call[15][2]["hits"]
    assert any(hit.get("superseded_by") for hit in superseded), "the superseded mark is in the structured hit"


def undeclared(schema: dict, value, where: str = "") -> list[str]:
    """The fields of ``value`` its schema does not name: the schema stays open to additions, but
    what the server sends today is declared, so a client reading the schema knows every field."""
    schema = next((s for s in schema.get("anyOf", []) if s.get("type") != "null"), schema)
    if isinstance(value, list):
        return [f for i, item in enumerate(value) for f in undeclared(schema.get("items", {}), item, f"{where}[{i}]")]
    if not isinstance(value, dict) or "properties" not in schema:
        return []
    props = schema["properties"]
    missing = [f"{where}.{key}" for key in value if key not in props]
    return missing + [f for key in value if key in props for f in undeclared(props[key], value[key], f"{where}.{key}")]
