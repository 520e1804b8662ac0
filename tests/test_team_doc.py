"""doc/team.md's set-up, run as written on PostgreSQL 18: each SQL block of "Setting up a
managed PostgreSQL" as the role the text before it names (the administrator or the owner), the
owner's first connection migrating the store, then the developers it made saving and reading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from captain_memo.records import NewMemory

DOC = Path(__file__).resolve().parent.parent / "doc" / "team.md"
SECTION = "## Setting up a managed PostgreSQL"


def setup_blocks() -> list[tuple[str, str]]:
    """(who, sql) for each SQL block of the section, who being 'administrator' or 'owner'."""
    text = DOC.read_text()
    start = text.index(SECTION)
    section = text[start : text.index("\n## ", start + len(SECTION))]
    blocks, before = [], 0
    for found in re.finditer(r"```sql\n(.*?)```", section, re.S):
        lead = section[before : found.start()].lower()
        named = re.findall(r"as the (?:service's |store's )?(administrator|owner)", lead)
        assert named, f"no role named before the block {found.group(1)[:40]!r}"
        blocks.append((named[-1], found.group(1)))
        before = found.end()
    return blocks


def run_as(server, role: str, sql: str, database: str) -> str:
    """Each statement of ``sql`` as ``role`` (psql's ``\\c DB`` switches database); the database last used."""
    for line in sql.splitlines():
        line = line.split("--", 1)[0].strip()
        if not line:
            continue
        if line.startswith("\\c "):
            database = line.split()[1]
            continue
        server.execute(line.rstrip(";"), database=database, role=role)
    return database


@pytest.fixture
def bare_server():
    from team_support import RestartableServer

    server = RestartableServer(members=False)
    yield server.pg
    server.close()


def test_the_documented_set_up_works_as_written(bare_server):
    from captain_memo.store.postgres import TeamStore

    (_, first), *rest = setup_blocks()
    database = run_as(bare_server, "postgres", first, "postgres")
    assert database == "memo"
    TeamStore(bare_server.dsn("memo", "memo_owner")).close()  # the owner's first connection migrates
    for who, sql in rest:
        run_as(bare_server, {"administrator": "postgres", "owner": "memo_owner"}[who], sql, database)

    alice = TeamStore(bare_server.dsn("memo", "alice"))
    memory_id = alice.add(NewMemory(body="ports live in one file", project="github.com/Acme/Shop"), ["ports"], None)
    alice.close()
    bob = TeamStore(bare_server.dsn("memo", "bob"))
    assert bob.get(memory_id).author == "alice"
    bob.delete(memory_id)  # bob curates the project
    bob.close()
