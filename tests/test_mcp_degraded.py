"""The vector leg down under `captain-memo mcp`: the embedding endpoint is a real HTTP server on
127.0.0.1 that stops listening, then answers 500; recall answers from the keyword leg and the
result names the failed leg, in its data and in the text a model reads."""

from __future__ import annotations

import pytest
from embed_support import provider_env
from mcp_support import connect, run
from nvim_support import make_repo

pytestmark = pytest.mark.mcp


def test_a_failed_vector_leg_gives_keyword_results_that_say_so(tmp_path, fault_server):  # noqa: F811
    repo = make_repo(tmp_path)
    # backoff 0: each recall asks the endpoint, so each fault is seen (tests/test_backoff.py covers skipping).
    env = provider_env("ollama", fault_server.url, timeout="3", backoff="0")

    async def body():
        out = {}
        async with connect(tmp_path / "memo.db", repo, env=env) as client:
            saved = await client.call_tool("remember", {"text": "The zanzibar cache key includes the tenant id."})
            out["id"] = saved.structured_content["id"]
            fault_server.down()  # connection refused
            out["down"] = await client.call_tool("recall", {"query": "zanzibar tenant"})
            out["saved_down"] = await client.call_tool("remember", {"text": "Quokka jobs retry twice."})
            fault_server.up()
            fault_server.mode = "http500"
            out["http500"] = await client.call_tool("recall", {"query": "zanzibar cache key"})
        return out

    out = run(body)
    for case, fault in (("down", "cannot connect"), ("http500", "answered 500")):
        result = out[case]
        data = result.structured_content
        assert not result.is_error
        assert data["legs"] == ["keyword"] and fault in data["failed_legs"]["vector"], data
        assert [hit["id"] for hit in data["hits"]] == [out["id"]], "the keyword leg still finds it"
        text = result.content[0].text
        assert (
            "(stores searched: local; legs: keyword;" in text
            and "WARNING: the vector leg failed" in text
            and fault in text
        )
    saved_down = out["saved_down"]
    assert saved_down.structured_content["vector"] is False
    assert "No vector yet" in saved_down.content[0].text
