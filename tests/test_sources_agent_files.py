"""The agents' documented locations that hold what they are told: Codex's project skills in
`.agents/skills/`, Claude Code's rules in `.claude/rules/` and a developer's own `CLAUDE.local.md`,
which stays in the local store: a team store never gets it, by indexing nor by publishing.

Real git repositories in temporary folders; the team store is a second real SQLite store named by a
sqlite:/// URL (tests/team_client_support.py), since what is checked is refused before any team
store is reached or chosen by the client alone."""

from __future__ import annotations

import pytest
from sources_support import commit, init_repo
from team_client_support import team_memo

from captain_memo.errors import InputError
from captain_memo.records import NewMemory, RuleScope, Source
from captain_memo.sources.indexer import configured_folders, index_folders
from captain_memo.sources.settings import source_settings

FILES = {
    ".agents/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: |\n  Deploy the shop to staging.\n"
    "  Use when asked to ship a branch.\n---\n# Deploy\n\nRun make deploy ENV=staging.\n",
    ".claude/rules/style.md": "# Style\n\nFormat with ruff before every commit.\n",
    ".claude/rules/api/handlers.md": '---\npaths: ["src/api/**/*.py"]\n---\n# Handlers\n\nEvery handler '
    "validates its input first.\n",
    "CLAUDE.local.md": "# Mine\n\nMy sandbox database is on port 5433.\n",
    "AGENTS.md": "# Agents\n\nRun the tests with pytest -x.\n",
}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = init_repo(tmp_path / "repo")
    commit(root, "Agent files", FILES)
    monkeypatch.chdir(root)
    return root


def test_codex_skills_claude_rules_and_claude_local_are_indexed(engine, repo):
    settings = source_settings({})
    report = index_folders(engine, configured_folders(repo, settings), settings)
    assert report.indexed == len(FILES), report
    stored = {m.source.path: m for m in engine.store.list_memories()}
    assert {path: m.kind for path, m in stored.items()} == {
        ".agents/skills/deploy/SKILL.md": "skill",
        ".claude/rules/style.md": "memory",
        ".claude/rules/api/handlers.md": "memory",
        "CLAUDE.local.md": "memory",
        "AGENTS.md": "memory",
    }
    skill = stored[".agents/skills/deploy/SKILL.md"]
    assert skill.body.startswith("Deploy the shop to staging.\nUse when asked to ship a branch.")
    assert stored[".claude/rules/style.md"].source.rule_scope == RuleScope(always=True)  # no paths: always loaded
    assert stored[".claude/rules/api/handlers.md"].source.rule_scope == RuleScope(globs=("src/api/**/*.py",))
    assert stored["AGENTS.md"].source.rule_scope is None


def test_claude_local_stays_local_when_the_repository_is_indexed_to_a_team_store(tmp_path, repo, hash_embedder):
    with team_memo(tmp_path, hash_embedder) as memo:
        outcome = memo.index(show_progress=False)
        assert outcome.notes.indexed == 1 and outcome.team is not None and outcome.team.indexed == len(FILES) - 1
        [mine] = memo.list_memories(str(repo), all_projects=True)
        assert mine.source.path == "CLAUDE.local.md" and mine.store == "local"
        with pytest.raises(InputError, match=r"CLAUDE\.local\.md holds a developer's own instructions"):
            memo.publish(mine.id)
        assert memo.get(mine.id).body == mine.body, "refused: the memory stays where it was"
        with pytest.raises(InputError, match="not saved to the team store"):
            memo.remember_team(NewMemory("copied by hand", source=Source("sub/CLAUDE.local.md", origin="file")))


def test_a_rule_whose_front_matter_yaml_refuses_is_read_anyway_and_named(engine, tmp_path):
    """Cursor writes globs bare (`globs: *.sql`, an alias to YAML): that is its documented form, read
    as a glob without a word. A block YAML refuses for another reason is read by the simple reader,
    and the file is named."""
    from sources_support import write

    from captain_memo.sources.indexer import repository_folders

    repo = init_repo(tmp_path / "repo")
    write(
        repo,
        ".cursor/rules/sql.mdc",
        "---\ndescription: SQL style\nglobs: *.sql\nalwaysApply: false\n---\nQualify names.\n",
    )
    write(
        repo,
        ".cursor/rules/web.mdc",
        "---\ndescription: Web style\nglobs: [web/**/*.ts\nalwaysApply: false\n---\nStrict mode.\n",
    )
    settings = source_settings({})
    report = index_folders(engine, repository_folders(repo, str(repo), "main", settings), settings)
    [(path, message)] = report.warnings
    assert path == ".cursor/rules/web.mdc" and message.startswith("front matter is not YAML (")
    assert "file line" in message and "read with the simple reader" in message
    rules = {rule.source.path: rule for rule in engine.store.list_memories()}
    sql = rules[".cursor/rules/sql.mdc"]
    assert sql.source.rule_scope == RuleScope(globs=("*.sql",)) and sql.body.startswith("SQL style")
