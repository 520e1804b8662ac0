"""Agents' rules keep where they apply: Cursor's globs and alwaysApply, Copilot's applyTo, Claude
Code's paths. Read from each format's front matter, stored with the memory, shown beside the hit,
and used by the prompt hook to leave out a rule for files the prompt is not about.

The whole path runs in a real git repository through the real commands (`captain-memo index`,
`captain-memo hook` with Claude Code's documented event on stdin, `captain-memo recall`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sources_support import commit, init_repo

from captain_memo.base.rule_scope import applies, event_files, files_in_play, files_named, glob_holds, hits_in_scope
from captain_memo.records import RuleScope, Source, source_json
from captain_memo.sources.agent_rules import globs_of, rule_scope
from captain_memo.sources.indexer import index_folders, repository_folders
from captain_memo.sources.markdown import parse
from captain_memo.sources.settings import source_settings

COMMAND = str(Path(sys.executable).parent / "captain-memo")

# The four formats, each about rounding a price, so a recall of a price question finds them all:
# which reach the prompt is then the scope's doing.
RULES = {
    ".cursor/rules/web.mdc": "---\ndescription: Prices in the web client\nglobs: web/**/*.ts\n"
    "alwaysApply: false\n---\n# Web prices\n\nPrices in the web client are formatted with "
    "Intl.NumberFormat; never round a price in TypeScript, the server rounds the price.\n",
    ".cursor/rules/money.mdc": "---\ndescription: Money\nalwaysApply: true\n---\n# Money\n\nEvery price "
    "is a Decimal in cents; rounding a price is half-even, done once, at the invoice total.\n",
    ".github/instructions/typescript.instructions.md": '---\napplyTo: "**/*.ts,**/*.tsx"\n---\n'
    "# TypeScript prices\n\nPrice components take the rounded price as a string; never round a price "
    "in TypeScript.\n",
    ".claude/rules/frontend.md": '---\npaths:\n  - "web/**/*.{ts,tsx}"\n---\n# Frontend price rules\n\n'
    "A price shown in the web frontend comes from the API already rounded; rounding a price in the "
    "browser is a bug.\n",
    ".claude/rules/python.md": '---\npaths:\n  - "src/**/*.py"\n---\n# Python price rules\n\nPython '
    "price code rounds with Decimal.quantize(ROUND_HALF_EVEN); a price is never a float.\n",
}
TYPESCRIPT_RULES = ("Web prices", "TypeScript prices", "Frontend price rules")


# -- reading each format ---------------------------------------------------------------------------


def scope_of_file(path: str) -> RuleScope | None:
    return rule_scope(path, parse(RULES[path], Path(path).stem).front.data)


def test_each_agents_format_gives_its_rule_a_scope():
    assert scope_of_file(".cursor/rules/web.mdc") == RuleScope(globs=("web/**/*.ts",))
    assert scope_of_file(".cursor/rules/money.mdc") == RuleScope(always=True)
    assert scope_of_file(".github/instructions/typescript.instructions.md") == RuleScope(globs=("**/*.ts", "**/*.tsx"))
    assert scope_of_file(".claude/rules/frontend.md") == RuleScope(globs=("web/**/*.{ts,tsx}",))
    assert scope_of_file(".claude/rules/python.md") == RuleScope(globs=("src/**/*.py",))


@pytest.mark.parametrize(
    "path, front, scope",
    [
        (".claude/rules/style.md", "", RuleScope(always=True)),  # no paths: Claude Code loads it always
        (".cursor/rules/pick.mdc", "description: picked by the agent\n", None),  # no globs, not always
        (".cursor/rules/sql.mdc", "globs: *.sql\nalwaysApply: true\n", RuleScope(always=True)),  # not YAML
        (".cursor/rules/sql.mdc", "globs: *.sql,*.psql\n", RuleScope(globs=("*.sql", "*.psql"))),
        (".github/instructions/all.instructions.md", 'applyTo: "**"\n', RuleScope(always=True)),
        (".github/instructions/none.instructions.md", "description: manual\n", None),
        ("docs/decisions/0001.md", "paths: [src/**]\nglobs: '*.py'\n", None),  # not an agent's rule
    ],
)
def test_a_scope_follows_each_agents_own_rules(path, front, scope):
    text = f"---\n{front}---\n# Rule\n\nText.\n" if front else "# Rule\n\nText.\n"
    assert rule_scope(path, parse(text, "rule").front.data) == scope


def test_globs_keep_their_braces_and_drop_what_is_no_glob():
    assert globs_of("src/**/*.{ts,tsx}, web/*.js") == ("src/**/*.{ts,tsx}", "web/*.js")
    assert globs_of(["a/**", 3, ["nested"], "", "a/**"]) == ("a/**",)


# -- deciding what is in scope ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "glob, path, held",
    [
        ("web/**/*.ts", "web/cart.ts", True),
        ("web/**/*.ts", "web/a/b/cart.ts", True),
        ("web/**/*.ts", "src/price.py", False),
        ("web/**/*.ts", "webapp/cart.ts", False),
        ("*.ts", "web/a/cart.ts", True),  # no folder in the glob: a file's name at any depth
        ("*.ts", "cart.tsx", False),
        ("**/*.{ts,tsx}", "web/cart.tsx", True),
        ("src/**/*.py", "src/price.py", True),
        ("src/**", "src/billing/price.py", True),
        ("src/", "src/billing/price.py", True),
        ("/src/*.py", "src/price.py", True),
        ("src/*.py", "src/billing/price.py", False),  # * stops at /
        ("src/price.p?", "src/price.py", True),
        ("src/[pq]rice.py", "src/price.py", True),
        ("src/[!p]rice.py", "src/price.py", False),
        ("web/**/*.ts", "cart.ts", True),  # a bare name named alone: its folder is unknown
        ("web/**/*.ts", "price.py", False),
        ("src/(a|b).py", "src/a.py", False),  # regex characters are literal
        ("**/*.{ts,{js,jsx}}", "web/a.jsx", True),
        ("**/**/**/*.py", "src/price.py", True),
        # Matched without backtracking: as a regular expression this ran for minutes.
        ("*a*a*a*a*a*a*a*a*a*b", "a" * 200 + ".py", False),
    ],
)
def test_globs_match_as_the_agents_document_them(glob, path, held):
    assert glob_holds(glob, path) is held


def test_the_files_in_play_come_from_the_prompt_and_the_event(tmp_path):
    prompt = "Fix the rounding in `src/price.py` (see web/cart.ts, Node.js and e.g. version 1.2)."
    assert files_named(prompt) == ["src/price.py", "web/cart.ts", "Node.js"]
    event = {
        "file_path": str(tmp_path / "src" / "tax.py"),
        "tool_input": {"file_path": "README.md"},
        "attachments": [{"type": "file", "file_path": str(tmp_path / "web" / "x.tsx")}, "junk", {"path": 3}],
    }
    assert event_files(event) == [str(tmp_path / "src" / "tax.py"), "README.md", str(tmp_path / "web" / "x.tsx")]
    assert files_in_play("look at ./src/a.py", event, str(tmp_path)) == (
        "src/a.py",
        "src/tax.py",
        "README.md",
        "web/x.tsx",
    )


def test_a_rule_applies_when_a_file_in_play_is_inside_it():
    typescript = RuleScope(globs=("web/**/*.ts",))
    assert applies(None, []) and applies(RuleScope(always=True), [])
    assert not applies(typescript, []) and not applies(typescript, ["src/price.py"])
    assert applies(typescript, ["src/price.py", "web/cart.ts"])


def test_the_hook_keeps_the_hits_in_scope(tmp_path):
    (tmp_path / ".git").mkdir()
    hits = [
        {"id": 1, "source": source_json(Source(".cursor/rules/web.mdc", rule_scope=RuleScope(globs=("web/**",))))},
        {"id": 2, "source": source_json(Source(".cursor/rules/money.mdc", rule_scope=RuleScope(always=True)))},
        {"id": 3, "source": source_json(Source("docs/decisions/0001.md"))},
        {"id": 4, "source": {"path": None}},
    ]
    kept = hits_in_scope(hits, "why does src/price.py round twice", {}, str(tmp_path / "src"))
    assert [hit["id"] for hit in kept] == [2, 3, 4]
    event = {"file_path": str(tmp_path / "web" / "cart.ts")}  # an absolute path, the session in a subfolder
    assert [hit["id"] for hit in hits_in_scope(hits, "why", event, str(tmp_path / "src"))] == [1, 2, 3, 4]


def test_a_scope_is_shown_and_sent_with_its_source():
    scoped = Source(".cursor/rules/web.mdc", 5, 7, origin="file", rule_scope=RuleScope(globs=("web/**/*.ts", "*.tsx")))
    assert scoped.describe() == ".cursor/rules/web.mdc:5-7 · applies to web/**/*.ts, *.tsx"
    assert Source("a.mdc", rule_scope=RuleScope(always=True)).describe() == "a.mdc · always applies"
    assert source_json(scoped)["rule_scope"] == {"always": False, "globs": ["web/**/*.ts", "*.tsx"]}
    assert "rule_scope" not in source_json(Source("notes.md"))  # every other source's JSON is as before
    assert RuleScope.from_stored(scoped.rule_scope.stored()) == scoped.rule_scope
    assert RuleScope.from_stored(RuleScope(always=True).stored()) == RuleScope(always=True)


# -- stored with the memory ------------------------------------------------------------------------


def test_the_scope_is_stored_and_follows_the_files_changes(engine, tmp_path):
    from sources_support import write

    repo = init_repo(tmp_path / "repo")
    for path, text in RULES.items():
        write(repo, path, text)
    settings = source_settings({})
    folders = repository_folders(repo, str(repo), "main", settings)
    assert index_folders(engine, folders, settings).indexed == len(RULES)
    scopes = {m.source.path: m.source.rule_scope for m in engine.store.list_memories()}
    assert scopes[".cursor/rules/web.mdc"] == RuleScope(globs=("web/**/*.ts",))
    assert scopes[".cursor/rules/money.mdc"] == RuleScope(always=True)
    # Only the globs change: the text is the same, the scope is rewritten in place.
    write(repo, ".cursor/rules/web.mdc", RULES[".cursor/rules/web.mdc"].replace("web/**/*.ts", "app/**/*.ts"))
    report = index_folders(engine, folders, settings)
    assert (report.indexed, report.updated, report.unchanged) == (0, 0, len(RULES))
    [web] = [m for m in engine.store.list_memories() if m.source.path == ".cursor/rules/web.mdc"]
    assert web.source.rule_scope == RuleScope(globs=("app/**/*.ts",))


def test_rules_indexed_before_get_their_scope_at_the_next_index(db_file, hash_embedder, tmp_path):
    """A store made before migration 8 has no rule_scope column, and its file states say every
    file is unchanged: the migration adds the column, the new file state version makes the next
    run read each file again, and each rule's scope is written in place (nothing is embedded)."""
    import sqlean
    from sources_support import write

    from captain_memo.base.chunking import MAX_CHUNK_CHARS, content_hash
    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    repo = init_repo(tmp_path / "repo")
    for path, text in RULES.items():
        write(repo, path, text)
    settings = source_settings({})
    folders = repository_folders(repo, str(repo), "main", settings)
    engine = Engine(Store(db_file), hash_embedder)
    index_folders(engine, folders, settings)
    engine.close()
    with sqlean.connect(str(db_file)) as conn:  # as the version before left it
        conn.execute("ALTER TABLE memories DROP COLUMN rule_scope")
        conn.execute("DELETE FROM schema_migrations WHERE version = 8")
        for path, text in RULES.items():
            digest = content_hash("1", "memory", str(MAX_CHUNK_CHARS), "False", text)
            conn.execute("UPDATE source_files SET digest = ? WHERE path = ?", (digest, path))
    engine = Engine(Store(db_file), hash_embedder)
    try:
        assert all(m.source.rule_scope is None for m in engine.store.list_memories())
        report = index_folders(engine, folders, settings)
        assert (report.unchanged, report.updated, report.chunks_embedded) == (len(RULES), 0, 0)
        scopes = {m.source.path: m.source.rule_scope for m in engine.store.list_memories()}
    finally:
        engine.close()
    assert scopes[".claude/rules/python.md"] == RuleScope(globs=("src/**/*.py",))


# -- the whole path, through the real commands -----------------------------------------------------


@pytest.fixture(scope="module")
def rules_repo(tmp_path_factory):
    """A repository with the four rule formats, indexed by `captain-memo index` (the real model)."""
    root = tmp_path_factory.mktemp("rules")
    repo = init_repo(root / "shop")
    commit(repo, "Rules", {**RULES, "src/price.py": "TOTAL = 0\n", "web/cart.ts": "export {}\n"})
    env = {**os.environ, "CAPTAIN_MEMO_DB": str(root / "memo.db"), "CAPTAIN_MEMO_SERVICE": "0"}
    env["CAPTAIN_MEMO_HOME"] = str(root / "home")
    done = subprocess.run([COMMAND, "index"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "notes: indexed 5" in done.stdout, done.stdout + done.stderr
    return repo, env


def prompt_block(repo: Path, env: dict, prompt: str | None) -> str:
    """What Claude Code adds to the model's context for ``prompt`` (its documented event on stdin),
    or at a session's start when ``prompt`` is None."""
    event = {
        "session_id": "s-1",
        "transcript_path": str(repo / "transcript.jsonl"),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit" if prompt is not None else "SessionStart",
        **({"prompt": prompt} if prompt is not None else {"source": "startup"}),
    }
    done = subprocess.run(
        ["sh", "-c", f"{COMMAND} hook --budget 4000"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=repo,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_prompt_about_a_python_file_gets_no_typescript_rule_and_the_always_rule(rules_repo):
    repo, env = rules_repo
    block = prompt_block(repo, env, "Fix the rounding of the price total in src/price.py")
    assert not [title for title in TYPESCRIPT_RULES if title in block], block
    assert "[memory] Money (" in block and "always applies" in block
    assert "[memory] Python price rules (" in block and "applies to src/**/*.py" in block


def test_a_prompt_about_a_typescript_file_gets_its_rules(rules_repo):
    repo, env = rules_repo
    block = prompt_block(repo, env, "The price in web/cart.ts shows a rounding error")
    assert all(title in block for title in TYPESCRIPT_RULES), block
    assert "Python price rules" not in block and "[memory] Money (" in block
    assert "applies to web/**/*.ts" in block


def test_a_session_start_lists_no_scoped_rule(rules_repo):
    repo, env = rules_repo
    block = prompt_block(repo, env, None)
    assert "[memory] Money (" in block, block
    assert not [title for title in (*TYPESCRIPT_RULES, "Python price rules") if title in block], block


def test_a_recall_shows_each_rules_scope(rules_repo):
    repo, env = rules_repo
    done = subprocess.run(
        [COMMAND, "recall", "--json", "rounding a price"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    hits = {hit["source"]["path"]: hit for hit in json.loads(done.stdout)["hits"]}
    assert hits[".claude/rules/frontend.md"]["source"]["rule_scope"] == {
        "always": False,
        "globs": ["web/**/*.{ts,tsx}"],
    }
    assert hits[".cursor/rules/money.mdc"]["source"]["label"].endswith("· always applies")
    shown = subprocess.run(
        [COMMAND, "recall", "rounding a price"], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert "applies to **/*.ts, **/*.tsx" in shown.stdout and "always applies" in shown.stdout, shown.stdout
