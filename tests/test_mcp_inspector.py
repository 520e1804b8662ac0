"""A conformance run with a client nobody here wrote: the MCP Inspector's CLI
(`npx @modelcontextprotocol/inspector --cli`) against a real `captain-memo mcp` process. It checks
the tool schemas for portability (`--strict`: a union type such as ["integer", "string"] is
reported), and sends every tool argument as it parses it from `key=value` (`id=1` a number,
`id="1"` a string).
Skipped when node is not installed or the package cannot be fetched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nvim_support import make_repo

pytestmark = pytest.mark.mcp
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
SERVER = str(Path(sys.executable).parent / "captain-memo")
NOTE = "get_effective_contract_price applies the contract discount to the list price."


@pytest.fixture(scope="module")
def inspector_cli() -> list[str]:
    found = shutil.which("npx")
    if found is None:
        pytest.skip("node is not installed (no npx): the MCP Inspector runs on node")
    try:
        probe = subprocess.run(
            [found, "-y", INSPECTOR, "--cli", "--version"], capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"{INSPECTOR} could not be fetched within 300 s")
    if probe.returncode != 0:
        pytest.skip(f"{INSPECTOR} could not be run: {probe.stderr.strip().splitlines()[-1:]}")
    # The Inspector's own command, as npx runs it: npx resolving the package again for every call
    # cost ~0.8 s each.
    where = subprocess.run(
        [found, "-y", "-p", INSPECTOR, "-c", "command -v mcp-inspector"], capture_output=True, text=True, timeout=300
    )
    command = where.stdout.strip()
    return [command] if where.returncode == 0 and os.path.isabs(command) else [found, "-y", INSPECTOR]


def inspector(inspector_cli: list[str], tmp_path: Path, repo: Path, *method: str) -> tuple[int, object, str]:
    settings = {
        name: os.environ[name] for name in ("CAPTAIN_MEMO_HOME", "CAPTAIN_MEMO_RUNTIME_DIR", "CAPTAIN_MEMO_SERVICE")
    }
    settings["CAPTAIN_MEMO_DB"] = str(tmp_path / "memo.db")
    env = [part for name, value in settings.items() for part in ("-e", f"{name}={value}")]
    done = subprocess.run(
        [*inspector_cli, "--cli", *env, "--cwd", str(repo), SERVER, "mcp", *method],
        capture_output=True,
        text=True,
        timeout=300,
    )
    # The first JSON document is the answer (a tool error is followed by the Inspector's own line).
    output = json.JSONDecoder().raw_decode(done.stdout.strip())[0] if done.stdout.strip() else None
    return done.returncode, output, done.stderr


def test_the_inspector_finds_the_tools_portable_and_calls_each_one(inspector_cli, tmp_path):
    repo = make_repo(tmp_path)
    rc, listed, stderr = inspector(inspector_cli, tmp_path, repo, "--strict", "--method", "tools/list")
    assert rc == 0 and "Issue:" not in stderr, stderr
    assert [tool["name"] for tool in listed["tools"]] == ["recall", "remember", "show", "supersede", "forget"]

    rc, saved, stderr = inspector(
        inspector_cli, tmp_path, repo, "--method", "tools/call", "--tool-name", "remember", "--tool-arg", f"text={NOTE}"
    )
    assert rc == 0 and not saved.get("isError"), (saved, stderr)
    assert saved["structuredContent"]["id"] == "1"

    # The Inspector reads `id=1` as the number 1; ids are strings, as the schema says, for every
    # tool, so it is refused with a line naming the argument, and `id="1"` is the string.
    rc, number, _ = inspector(
        inspector_cli, tmp_path, repo, "--method", "tools/call", "--tool-name", "show", "--tool-arg", "id=1"
    )
    assert number["isError"] is True and number["content"][0]["text"].startswith("show: id must be a string")
    rc, shown, _ = inspector(
        inspector_cli, tmp_path, repo, "--method", "tools/call", "--tool-name", "show", "--tool-arg", 'id="1"'
    )
    assert not shown.get("isError") and NOTE in shown["content"][0]["text"], shown

    rc, wrong, _ = inspector(
        inspector_cli,
        tmp_path,
        repo,
        "--method",
        "tools/call",
        "--tool-name",
        "recall",
        "--tool-arg",
        'query={"not": "a string"}',
    )
    assert wrong["isError"] is True and wrong["content"][0]["text"] == "recall: query must be a string, not an object"

    rc, read, _ = inspector(
        inspector_cli, tmp_path, repo, "--method", "resources/read", "--uri", "captain-memo://memory/1"
    )
    assert NOTE in read["contents"][0]["text"], read
