"""`captain-memo mcp` as an agent meets it: a real child process, the MCP SDK's own stdio client,
a real git repository, a real store and the real local model."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from mcp_support import children_named, connect, maps_of, run
from nvim_support import git, make_repo

pytestmark = pytest.mark.mcp

PRICE_NOTE = (
    "get_effective_contract_price applies the contract's discount to the list price; every invoice "
    "line goes through it."
)


def project_of(path):
    from captain_memo.base.git_context import git_context

    return git_context(path).project


def stored(db, memory_id):
    from captain_memo.store import Store

    store = Store(db)
    try:
        return store.get(int(memory_id))  # ids are strings in MCP results
    finally:
        store.close()


def test_tools_and_the_memory_template_are_listed_and_the_model_loads_on_the_first_recall(tmp_path):
    repo = make_repo(tmp_path)

    async def body():
        async with connect(tmp_path / "memo.db", repo) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert (await client.list_resources()).resources == []
            assert not (tmp_path / "memo.db").exists(), "listing creates no store"
            [server] = children_named("captain-memo")
            assert "onnxruntime" not in maps_of(server), "the model must not load before a tool needs it"
            templates = (await client.list_resource_templates()).resource_templates
            missing = await client.call_tool("recall", {"query": "anything at all"})
            assert missing.is_error and f"no memory store at {tmp_path / 'memo.db'}" in missing.content[0].text
            assert not (tmp_path / "memo.db").exists(), "a recall creates no store"
            await client.call_tool("remember", {"text": "the first note, which creates the store"})
            assert "onnxruntime" in maps_of(server), "the first tool that embeds loads the model"
            return tools, templates

    tools, templates = run(body)
    assert set(tools) == {"recall", "remember", "show", "supersede", "forget"}
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False
        assert len(tool.description) > 100, f"{tool.name} needs a description a model can choose by"
    assert tools["recall"].input_schema["required"] == ["query"]
    assert set(tools["recall"].input_schema["properties"]) == {"query", "limit", "all_projects", "explain", "detail"}
    assert tools["remember"].input_schema["properties"]["kind"]["default"] == "observation"
    hints = {name: (t.annotations.read_only_hint, t.annotations.destructive_hint) for name, t in tools.items()}
    assert hints == {
        "recall": (True, False),
        "show": (True, False),
        "remember": (False, False),
        "supersede": (False, False),
        "forget": (False, True),
    }
    assert [t.uri_template for t in templates] == ["captain-memo://memory/{id}"]


def test_remember_then_recall_show_supersede_and_forget(tmp_path):
    from mcp.shared.exceptions import MCPError

    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    head = git(repo, "rev-parse", "HEAD")

    async def body():
        out = {}
        async with connect(db, repo) as client:
            saved = await client.call_tool(
                "remember",
                {
                    "text": PRICE_NOTE,
                    "title": "Contract price entry point",
                    "file": "src/billing/price.py",
                    "line_start": 6,
                    "line_end": 8,
                },
            )
            out["saved"] = saved.structured_content
            newer = await client.call_tool(
                "remember",
                {"text": PRICE_NOTE + " Discounts stack since 2.0.", "kind": "memory", "title": "Contract price, 2.0"},
            )
            out["newer"] = newer.structured_content["id"]
            first = out["saved"]["id"]
            out["recall"] = await client.call_tool(
                "recall", {"query": "get_effective_contract_price", "explain": True, "detail": "full"}
            )
            out["show"] = await client.call_tool("show", {"id": first})
            await client.call_tool("supersede", {"old": first, "new": out["newer"]})
            after = await client.call_tool("recall", {"query": "contract discount"})
            out["after_supersede"] = after.structured_content
            out["undo"] = await client.call_tool("supersede", {"old": first, "undo": True})
            out["resource"] = await client.read_resource(f"captain-memo://memory/{first}")
            out["listed"] = [str(r.uri) for r in (await client.list_resources()).resources]
            out["forget"] = await client.call_tool("forget", {"id": out["newer"]})
            out["gone"] = await client.call_tool("show", {"id": out["newer"]})
            with pytest.raises(MCPError) as missing:
                await client.read_resource(f"captain-memo://memory/{out['newer']}")
            out["missing"] = missing.value.error
        return out

    out = run(body)
    saved = out["saved"]
    assert saved["kind"] == "observation" and saved["project"] == project_of(repo) and saved["branch"] == "main"
    assert saved["source"] | {"file": None} == {
        "path": "src/billing/price.py",
        "line_start": 6,
        "line_end": 8,
        "commit": head,
        "origin": "mcp:test-agent",
        "filetype": None,
        "label": "src/billing/price.py:6-8 · mcp:test-agent",
        "file": None,
    }
    assert saved["vector"] is True and saved["redacted"] == []

    recall = out["recall"].structured_content
    assert recall["legs"] == ["vector", "keyword"] and recall["failed_legs"] == {} and recall["stores"] == ["local"]
    assert saved["id"] == "1" and out["newer"] == "2", "ids are strings, as the tools take them"
    # Both notes name the identifier; under v3 (the default) the near-copy saved second can lead.
    top = next(hit for hit in recall["hits"][:2] if hit["id"] == saved["id"])
    assert top["excerpt"] == PRICE_NOTE and top["source"]["line_start"] == 6
    assert top["source"]["file"] == str(repo / "src" / "billing" / "price.py")
    assert top["explain"][-1].startswith("= ") and float(top["explain"][-1].rsplit("= ", 1)[1]) == pytest.approx(
        top["score"], abs=1e-3
    ), "the trace multiplies out to the score"
    text = out["recall"].content[0].text
    assert f"#{saved['id']} [observation] Contract price entry point" in text and "mcp:test-agent" in text

    assert PRICE_NOTE in out["show"].content[0].text and out["show"].structured_content["body"] == PRICE_NOTE
    superseded = {hit["id"]: hit.get("superseded_by") for hit in out["after_supersede"]["hits"]}
    assert superseded[saved["id"]] == out["newer"]
    assert out["undo"].structured_content == {"old": saved["id"], "superseded_by": None}
    [contents] = out["resource"].contents
    assert contents.mime_type == "text/markdown" and PRICE_NOTE in contents.text
    assert f"captain-memo://memory/{saved['id']}" in out["listed"]
    assert out["forget"].content[0].text == f"Forgot #{out['newer']}."
    assert out["gone"].is_error and f"no memory with id {out['newer']}" in out["gone"].content[0].text
    assert out["missing"].code == -32002

    memory = stored(db, saved["id"])
    assert memory.opened_in_full, "show counts as opening the memory (Tide)"
    assert memory.superseded_by is None


def test_a_credential_is_redacted_and_the_result_says_so(tmp_path):
    """Through the 2026-07-28 per-request envelopes this time (the SDK client's default): the
    client's name still reaches the stored origin."""
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    key = "AKIA" + "QWERTYUIOPASDFGH"
    text = (
        f"The deploy script reads the AWS key {key} from the environment.\n"
        "<private>the staging pin is 4471</private>Rotate it every 90 days."
    )

    async def body():
        async with connect(db, repo, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            return await client.call_tool("remember", {"text": text, "kind": "memory"})

    result = run(body)
    data = result.structured_content
    assert data["redacted"] == ["line 1: AWS access key id (AKIA…)"]
    assert "Redacted before saving, as it looked like a credential: line 1: AWS access key id" in result.content[0].text
    assert data["private_left_out"] is True and "<private>" in result.content[0].text
    assert data["source"]["origin"] == "mcp:test-agent" and data["project"] == project_of(repo)
    body_stored = stored(db, data["id"]).body
    assert key not in body_stored and "[REDACTED" in body_stored
    assert "4471" not in body_stored and "Rotate it every 90 days." in body_stored


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")  # the clients in use still declare roots
def test_the_client_roots_select_the_project(tmp_path):
    """The project comes from the roots the client declares (and declares again), else the folder
    the server was told (--folder) or started in."""
    alpha, beta = make_repo(tmp_path / "a"), make_repo(tmp_path / "b")
    plain = tmp_path / "plain"
    plain.mkdir()
    db = tmp_path / "memo.db"
    note = "The quarterly ledger export skips archived tenants."

    async def body():
        roots = [alpha]
        out = {}
        async with connect(db, plain, roots=roots) as client:
            out["saved"] = (await client.call_tool("remember", {"text": note})).structured_content
            roots[:] = [beta]
            await client.send_roots_list_changed()
            out["in_beta"] = (await client.call_tool("recall", {"query": "ledger export"})).structured_content
            out["everywhere"] = (
                await client.call_tool("recall", {"query": "ledger export", "all_projects": True})
            ).structured_content
        async with connect(db, plain, options=("--folder", str(alpha))) as client:
            out["cwd_alpha"] = (await client.call_tool("recall", {"query": "ledger export"})).structured_content
        return out

    out = run(body)
    assert out["saved"]["project"] == project_of(alpha) != project_of(beta)
    memory_id = out["saved"]["id"]
    assert out["in_beta"]["project"] == project_of(beta)
    assert memory_id not in [h["id"] for h in out["in_beta"]["hits"]], "another repository's memory stays out"
    assert memory_id in [h["id"] for h in out["everywhere"]["hits"]]
    assert out["cwd_alpha"]["project"] == project_of(alpha)
    assert out["cwd_alpha"]["hits"][0]["id"] == memory_id


def test_a_memory_the_cli_saves_mid_session_is_found_by_the_warm_engine(tmp_path):
    """The server keeps one engine (and its in-memory vector index) for the session; a memory
    another process writes meanwhile is found by the next recall, by meaning as well as by word."""
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    # SERVICE 0: the command does its own work (no warm service left running after the test).
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CAPTAIN_MEMO_DB": str(db), "CAPTAIN_MEMO_SERVICE": "0"}

    async def body():
        async with connect(db, repo) as client:
            await client.call_tool("remember", {"text": "Invoices are numbered per tenant and per year."})
            await client.call_tool("recall", {"query": "invoice numbering"})
            await anyio.sleep(1.0)  # the in-memory index builds in the background meanwhile
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "captain_memo.cli.main",
                    "remember",
                    "--title",
                    "Webhook retries",
                    "Webhook deliveries are retried three times with exponential backoff.",
                ],
                cwd=repo,
                env=env,
                check=True,
                capture_output=True,
                timeout=120,
            )
            return (
                await client.call_tool(
                    "recall", {"query": "how often do we resend a failed callback", "explain": True, "detail": "full"}
                )
            ).structured_content

    found = run(body)
    top = found["hits"][0]
    assert top["title"] == "Webhook retries" and top["source"]["origin"] == "cli"
    assert not top["explain"][0].startswith("vector absent"), "found by the vector leg, not only by words"


def test_remember_with_team_saves_to_the_team_store_and_recall_finds_it_there(tmp_path):
    """The team store here is a shared SQLite file (sqlite:///): the same client code as PostgreSQL's.
    A team memory is a resource too (resources/read and resources/list), as it is for `show`."""
    from mcp.shared.exceptions import MCPError

    repo = make_repo(tmp_path)
    team = {"CAPTAIN_MEMO_TEAM_DB": f"sqlite:///{tmp_path / 'team.db'}"}

    async def body():
        out = {}
        async with connect(tmp_path / "memo.db", repo, env=team) as client:
            saved = await client.call_tool("remember", {"text": PRICE_NOTE, "kind": "memory", "team": True})
            out["saved"] = saved
            out["recall"] = (
                await client.call_tool("recall", {"query": "get_effective_contract_price"})
            ).structured_content
            out["show"] = (await client.call_tool("show", {"id": saved.structured_content["id"]})).structured_content
            out["resource"] = (await client.read_resource("captain-memo://memory/t1")).contents[0]
            out["listed"] = [str(r.uri) for r in (await client.list_resources()).resources]
            with pytest.raises(MCPError) as missing:
                await client.read_resource("captain-memo://memory/t2")
            out["missing"] = missing.value.error
        async with connect(tmp_path / "alone.db", repo) as client:
            out["refused"] = await client.call_tool("remember", {"text": PRICE_NOTE, "team": True})
        return out

    out = run(body)
    saved = out["saved"].structured_content
    assert saved["id"] == "t1" and saved["team"] is True and saved["vector"] is True
    assert "in the team store" in out["saved"].content[0].text
    assert [hit["id"] for hit in out["recall"]["hits"]] == ["t1"] and out["recall"]["stores"] == ["local", "team"]
    assert out["show"]["body"] == PRICE_NOTE
    assert out["resource"].mime_type == "text/markdown" and PRICE_NOTE in out["resource"].text, (
        "a team memory is a resource"
    )
    assert "captain-memo://memory/t1" in out["listed"]
    assert out["missing"].code == -32002
    assert out["refused"].is_error and "CAPTAIN_MEMO_TEAM_DB" in out["refused"].content[0].text
    from captain_memo.store import Store

    local = Store(tmp_path / "memo.db")
    try:
        assert local.counts()["memories"] == 0, "a team save leaves the developer's own store as it was"
    finally:
        local.close()


def test_with_the_team_store_down_the_result_says_local_only(tmp_path):
    """Nothing listens on the team store's port: the result names the stores searched and says the
    hits are local only (it said "vector + keyword-only", which reads as a failed search leg)."""
    repo = make_repo(tmp_path)
    down = {"CAPTAIN_MEMO_TEAM_DB": "postgresql://memo@127.0.0.1:9/team", "CAPTAIN_MEMO_TEAM_TIMEOUT": "3"}

    async def body():
        async with connect(tmp_path / "memo.db", repo, env=down) as client:
            await client.call_tool("remember", {"text": PRICE_NOTE})
            return await client.call_tool("recall", {"query": "get_effective_contract_price"})

    result = run(body)
    data, text = result.structured_content, result.content[0].text
    assert not result.is_error and data["stores"] == ["local"] and "team" in data["failed_legs"]
    assert "stores searched: local (team store down)" in text.splitlines()[0]
    assert "WARNING: the team store did not answer, so these results are local only:" in text
    assert "keyword-only" not in text


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")
def test_an_unusable_root_is_skipped_and_said_once(tmp_path):
    """A root whose path is too long for the file system (and, run as a user other than root, one in
    a folder the user cannot enter) made every call fail with -32603 for the whole session."""
    repo = make_repo(tmp_path)
    too_long = "file://" + "/" + "/".join(["d" * 200] * 30)
    roots: list = [too_long, repo]
    if os.geteuid() != 0:  # root enters any folder
        locked = tmp_path / "locked"
        (locked / "inner").mkdir(parents=True)
        locked.chmod(0)
        roots.insert(1, locked / "inner")
    stderr = tmp_path / "stderr.log"

    async def body():
        async with connect(tmp_path / "memo.db", repo, roots=roots, stderr=stderr) as client:
            saved = await client.call_tool("remember", {"text": PRICE_NOTE})
            found = await client.call_tool("recall", {"query": "get_effective_contract_price"})
            return saved, found

    try:
        saved, found = run(body)
    finally:
        if os.geteuid() != 0:
            (tmp_path / "locked").chmod(0o700)
    assert not saved.is_error and not found.is_error
    assert saved.structured_content["project"] == project_of(repo), "the first usable root is the workspace"
    notices = [c.text for c in saved.content[1:]]
    assert len(notices) == len(roots) - 1 and all("skipped" in n and str(repo) in n for n in notices)
    assert "File name too long" in notices[0]
    assert len(found.content) == 1, "said once, not at every call"
    assert stderr.read_text().count("skipped (") == len(roots) - 1


def test_ids_are_strings_everywhere_and_a_client_sending_strings_can_show_supersede_and_forget(tmp_path):
    """Clients that send every argument as a string (Inspector 0.15's --tool-arg id=3737) were
    refused; and a union type ["integer", "string"] is not portable to every model provider."""
    repo = make_repo(tmp_path)

    async def body():
        async with connect(tmp_path / "memo.db", repo) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            old = (await client.call_tool("remember", {"text": PRICE_NOTE})).structured_content["id"]
            new = (await client.call_tool("remember", {"text": PRICE_NOTE + " Since 2.0."})).structured_content["id"]
            shown = await client.call_tool("show", {"id": old})
            superseded = await client.call_tool("supersede", {"old": old, "new": new})
            listed = (await client.list_resources()).resources
            forgotten = await client.call_tool("forget", {"id": new})
            return tools, old, new, shown, superseded, listed, forgotten

    tools, old, new, shown, superseded, listed, forgotten = run(body)
    id_specs = [
        spec
        for tool in tools.values()
        for name, spec in tool.input_schema["properties"].items()
        if name in ("id", "old", "new")
    ]
    assert len(id_specs) == 4 and all(spec["type"] == "string" for spec in id_specs)
    assert (old, new) == ("1", "2")
    assert shown.structured_content["id"] == "1" and not shown.is_error
    assert superseded.structured_content == {"old": "1", "superseded_by": "2"}
    assert {r.name for r in listed} == {"memory 1", "memory 2"}
    assert forgotten.structured_content == {"forgotten": "2"}


def test_what_the_result_says_was_redacted_is_redacted_in_the_stored_memory(tmp_path):
    """A private span inside a token: the token was scanned without the span but replaced in the text
    with it, so the result said "redacted" and the store held the token. An AWS secret access key in
    prose beside its key id was stored as it was."""
    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    key_id, secret = "AKIA" + "IOSFODNN7EXAMPLE", "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCYEXAMPLEKEY"
    github = "ghp_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCabcd"
    split = f"{key_id[:8]}<private>(rotated)</private>{key_id[8:]} and {github}"
    prose = f"AWS key {key_id} with secret {secret} for the uploads bucket"

    async def body():
        async with connect(db, repo) as client:
            return [await client.call_tool("remember", {"text": text}) for text in (split, prose)]

    results = run(body)
    for result, kinds in zip(
        results, (["AWS access key id", "GitHub token"], ["AWS access key id", "AWS secret access key"])
    ):
        data = result.structured_content
        assert [finding.split(": ", 1)[1].split(" (")[0] for finding in data["redacted"]] == kinds
        body_stored = stored(db, data["id"]).body
        assert key_id not in body_stored and github not in body_stored and secret not in body_stored
        assert body_stored.count("[REDACTED ") == 2
