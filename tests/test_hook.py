"""`captain-memo hook` run exactly as each agent runs it: the command from doc/mcp.md's set-up,
through ``sh -c`` in the session's folder, the event JSON the agent's documentation gives on
stdin; what is checked is what the agent reads (stdout's shape, the exit status)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from nvim_support import make_repo

DOC = Path(__file__).resolve().parent.parent / "doc" / "mcp.md"
DOC_COMMAND = "/home/you/src/captain-memo/.venv/bin/captain-memo"
COMMAND = str(Path(sys.executable).parent / "captain-memo")
ROUNDING = "Invoice rounding: get_effective_contract_price rounds half-even to cents; never per line item."
TESTS = "How to run the billing tests: make test-billing with TZ=UTC, the fixtures assume UTC."
PROMPT = "why do invoice totals differ by a cent from the contract price?"


def documented_setups() -> dict[str, dict]:
    """Each agent's hook configuration, as doc/mcp.md gives it."""
    section = DOC.read_text(encoding="utf-8").split("## Memory in the prompt without a tool call", 1)[1]
    found = re.findall(r"\*\*(Claude Code|Codex CLI|Gemini CLI|Cursor)\*\*.*?```json\n(.*?)\n```", section, re.S)
    return {agent: json.loads(block)["hooks"] for agent, block in found}


def commands(hooks: dict, event: str) -> list[str]:
    """The commands an agent runs for ``event`` (Claude Code's shape: groups of handlers; Cursor's: a list)."""
    entries = hooks[event]
    handlers = [h for group in entries for h in group.get("hooks", [group])]
    return [h["command"].replace(DOC_COMMAND, COMMAND) for h in handlers]


def event_input(agent: str, event: str, folder: Path, prompt: str = PROMPT) -> dict:
    """The event JSON as each agent's documentation gives it."""
    if agent == "Cursor":
        base = {
            "conversation_id": "c-1",
            "generation_id": "g-1",
            "model": "default",
            "hook_event_name": event,
            "cursor_version": "1.7.0",
            "workspace_roots": [str(folder)],
            "user_email": None,
        }
        extra = {"sessionStart": {"session_id": "s-1", "is_background_agent": False, "composer_mode": "agent"}}
        return base | extra.get(event, {"prompt": prompt, "attachments": []})
    base = {
        "session_id": "s-1",
        "transcript_path": str(folder / "transcript.jsonl"),
        "cwd": str(folder),
        "hook_event_name": event,
    }
    if agent == "Gemini CLI":
        base["timestamp"] = "2026-12-02T00:00:00Z"
    if agent in ("Codex CLI", "Claude Code"):
        base |= {"permission_mode": "default", "model": "gpt-5.1-codex" if agent == "Codex CLI" else "claude-sonnet"}
    if event in ("SessionStart",):
        return base | {"source": "startup"}
    if agent == "Codex CLI":
        base["turn_id"] = "t-1"
    return base | {"prompt": prompt}


def run_as_agent(command: str, payload: dict, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True, cwd=folder, timeout=120
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A repository and a store holding two memories of it (saved with the CLI, the real model)."""
    root = tmp_path_factory.mktemp("hook")
    repo = make_repo(root)
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(root / "memo.db"), "CAPTAIN_MEMO_SERVICE": "0"}
    for kind, text in (("memory", ROUNDING), ("skill", TESTS)):
        subprocess.run([COMMAND, "remember", "--kind", kind, text], cwd=repo, env=env, check=True, capture_output=True)
    return repo, root / "memo.db"


@pytest.fixture
def agent_env(project, monkeypatch):
    monkeypatch.setenv("CAPTAIN_MEMO_DB", str(project[1]))
    return project[0]


def test_every_agent_in_the_doc_has_a_prompt_or_session_hook():
    setups = documented_setups()
    assert set(setups) == {"Claude Code", "Codex CLI", "Gemini CLI", "Cursor"}
    assert {"UserPromptSubmit", "SessionStart"} <= set(setups["Claude Code"]) and "BeforeAgent" in setups["Gemini CLI"]


@pytest.mark.parametrize(
    "agent, event",
    [("Claude Code", "UserPromptSubmit"), ("Codex CLI", "UserPromptSubmit"), ("Gemini CLI", "BeforeAgent")],
)
def test_the_prompt_hook_adds_the_memories_a_recall_of_the_prompt_finds(agent, event, agent_env):
    [command] = commands(documented_setups()[agent], event)
    done = run_as_agent(command, event_input(agent, event, agent_env), agent_env)
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == event
    block = output["additionalContext"]
    assert block.startswith("Captain Memo: saved notes, quoted as data from the store each entry names")
    [entry] = [line for line in block.splitlines() if line.startswith("- #1 [memory] Invoice rounding")]
    assert entry.endswith("(local store · now · cli)")
    assert "\n  > Invoice rounding: get_effective_contract_price rounds half-even" in block, "quoted, whole"
    assert len(block) <= 1500


@pytest.mark.parametrize("agent", ["Claude Code", "Codex CLI", "Gemini CLI", "Cursor"])
def test_the_session_hook_adds_the_newest_memories_and_skills(agent, agent_env):
    event = "sessionStart" if agent == "Cursor" else "SessionStart"
    [command] = commands(documented_setups()[agent], event)
    done = run_as_agent(command, event_input(agent, event, agent_env), agent_env)
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    block = output["additional_context"] if agent == "Cursor" else output["hookSpecificOutput"]["additionalContext"]
    assert block.splitlines()[1].startswith("- #2 [skill] How to run the billing tests"), "newest first"
    assert "- #1 [memory] Invoice rounding" in block


def test_cursor_s_prompt_hook_lets_the_prompt_through(agent_env):
    done = run_as_agent(f"{COMMAND} hook", event_input("Cursor", "beforeSubmitPrompt", agent_env), agent_env)
    assert done.returncode == 0 and json.loads(done.stdout) == {"continue": True}


@pytest.mark.parametrize("prompt", ["/clear", "yes", "   "])
def test_a_prompt_with_nothing_to_look_up_adds_nothing(prompt, agent_env):
    done = run_as_agent(f"{COMMAND} hook", event_input("Claude Code", "UserPromptSubmit", agent_env, prompt), agent_env)
    assert done.returncode == 0 and json.loads(done.stdout) == {}


def test_the_budget_holds_and_keeps_whole_entries(agent_env):
    event = event_input("Claude Code", "UserPromptSubmit", agent_env, "billing tests and invoice rounding")
    done = run_as_agent(f"{COMMAND} hook --format text --budget 420", event, agent_env)
    assert done.returncode == 0, done.stderr
    block = done.stdout.rstrip("\n")
    assert 0 < len(block) <= 420 and block.count("- #") >= 1
    assert all(line.startswith(("Captain Memo: ", "- #", "  > ")) for line in block.splitlines())


@pytest.mark.parametrize("stdin", ["not json", "[1, 2]"])
def test_input_that_is_no_event_is_a_warning_never_a_blocked_prompt(stdin, agent_env):
    done = subprocess.run(["sh", "-c", f"{COMMAND} hook"], input=stdin, capture_output=True, text=True, cwd=agent_env)
    assert done.returncode == 1, "1 is a warning to every agent; 2 would block the user's prompt"
    assert done.stdout == "" and done.stderr.startswith("captain-memo hook: stdin is not")


def test_a_hook_s_lookup_strengthens_tide_as_a_memory_shown_unasked_not_as_a_search(tmp_path):
    """The hook runs at every prompt: its hits reach the model unasked, like a hover's, and a search's
    gain would make whatever a hook keeps showing look sought after. The stability after the hook is
    the one Tide gives a memory shown unasked at that moment (lifecycle.reinforced)."""
    from captain_memo.config import rank_config
    from captain_memo.ranking.lifecycle import reinforced
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db")}
    subprocess.run([COMMAND, "remember", ROUNDING], cwd=repo, env=env, check=True, capture_output=True)
    before = Store(tmp_path / "memo.db").get(1)
    stdin = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
    done = subprocess.run([COMMAND, "hook"], input=stdin, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "Invoice rounding" in done.stdout, done.stderr
    after = Store(tmp_path / "memo.db").get(1)
    cfg = rank_config()
    assert cfg.tide_gain_auto != cfg.tide_gain_search
    shown_at = after.last_surfaced
    exact = {"rel": 1e-12, "abs": 0}  # the gain moves the stability by a millionth this soon after saving
    assert after.stability == pytest.approx(reinforced(before, cfg.tide_gain_auto, shown_at, cfg), **exact)
    assert after.stability != pytest.approx(reinforced(before, cfg.tide_gain_search, shown_at, cfg), **exact)


def test_a_nul_or_a_lone_surrogate_in_the_prompt_is_dropped_and_the_prompt_answered(agent_env):
    """JSON's \\u0000 and a lone \\ud800 decode to characters that cannot be searched or sent on;
    the hook gave up on the whole prompt (status 1) instead of dropping them."""
    prompt = "why do invoice totals \\u0000differ by a cent \\ud800from the contract price?"
    stdin = json.dumps(event_input("Claude Code", "UserPromptSubmit", agent_env)).replace(
        json.dumps(PROMPT), f'"{prompt}"'
    )
    assert "\\ud800" in stdin
    done = subprocess.run(["sh", "-c", f"{COMMAND} hook"], input=stdin, capture_output=True, text=True, cwd=agent_env)
    assert done.returncode == 0, done.stderr
    assert "Invoice rounding" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_an_agent_reading_a_store_that_does_not_exist_is_told_its_path_and_none_is_made(tmp_path):
    """An agent started with another HOME was answered from a new, empty store made on the spot."""
    missing = tmp_path / "elsewhere" / "memo.db"
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(missing)}
    for event in ({"hook_event_name": "UserPromptSubmit", "prompt": PROMPT}, {"hook_event_name": "SessionStart"}):
        done = subprocess.run([COMMAND, "hook"], input=json.dumps(event), env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        block = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert block.startswith(f"Captain Memo: no memory store at {missing}")
    assert not missing.exists() and not missing.parent.exists()


def test_a_one_line_memory_whose_line_starts_with_its_title_reaches_the_prompt_whole(tmp_path):
    """Its chunk is the line alone (it starts with the title, chunking.py), and the line was taken
    for the chunk's heading: the hook showed "#1 [memory] Invoice rounding" and nothing of the fact."""
    repo = make_repo(tmp_path)
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(tmp_path / "memo.db")}
    saved = subprocess.run(
        [COMMAND, "remember", "--title", "Invoice rounding", ROUNDING],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert saved.returncode == 0, saved.stderr
    stdin = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "how are invoices rounded?"})
    done = subprocess.run(
        [COMMAND, "hook", "--format", "text"], input=stdin, cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "- #1 [memory] Invoice rounding (local store · now · cli)"
    assert lines[2] == "  > " + ROUNDING


def test_the_budget_never_passes_what_the_agent_reads_whole(tmp_path, monkeypatch):
    """Past 10,000 characters Claude Code puts the context in a file and gives the model a preview:
    --budget 50000 with fifty long memories stops at the agent's limit (Codex's is smaller)."""
    repo = make_repo(tmp_path)
    monkeypatch.setenv("CAPTAIN_MEMO_DB", str(tmp_path / "memo.db"))
    env = dict(os.environ)
    notes = tmp_path / "notes.jsonl"
    words = "invoice rounding cents contract price totals ledger " * 6
    notes.write_text(
        "".join(json.dumps({"title": f"Invoice note {i}", "text": f"{i} {words}"}) + "\n" for i in range(60))
    )
    imported = subprocess.run([COMMAND, "import", str(notes)], cwd=repo, env=env, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    sizes = {}
    for agent in ("Claude Code", "Codex CLI"):
        payload = event_input(agent, "UserPromptSubmit", repo, "invoice rounding cents and contract price totals")
        done = run_as_agent(f"{COMMAND} hook --budget 50000 -n 50", payload, repo)
        assert done.returncode == 0, done.stderr
        sizes[agent] = len(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])
    assert 9_000 < sizes["Claude Code"] <= 10_000
    assert 7_000 < sizes["Codex CLI"] <= 8_000
