"""The team store shared by several members on a real PostgreSQL (tests/team_support.py): what one
member indexes, binds or supersedes, seen from another member's client and from her psql prompt."""

from __future__ import annotations

import pytest
from sources_support import DECISION_PORTS, commit, git, init_repo

from captain_memo.config import TeamConfig
from captain_memo.memo import Memo

PROJECT = "github.com/Acme/Shop"


@pytest.fixture
def shop(tmp_path, monkeypatch):
    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "https://github.com/Acme/Shop.git")
    commit(
        repo,
        "Add the ports and hosting decisions",
        {
            "docs/decisions/0002-ports.md": DECISION_PORTS,
            "docs/decisions/0001-hosting.md": "# Hosting\n\nOn hetzner.\n",
        },
    )
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture
def granted(team_db):
    """The team database migrated by its owner; alice and bob both granted the shop project."""
    from captain_memo.store.postgres import TeamStore

    TeamStore(team_db.dsn()).close()
    team_db.grant("alice", PROJECT)
    team_db.grant("bob", PROJECT)
    return team_db


def _memo(tmp_path, name: str, dsn: str, embedder) -> Memo:
    return Memo(tmp_path / f"{name}.db", embedder, team_config=TeamConfig(dsn, timeout=30.0))


def test_a_member_indexes_around_the_notes_another_member_owns(tmp_path, shop, granted, hash_embedder, monkeypatch):
    """alice indexed the decisions first, so she owns their team memories; one note changes, one is
    deleted and a third appears, and bob indexes before she does: he leaves hers as they are with
    one line each, stores the new note, and still indexes his personal notes."""
    personal = tmp_path / "bob-notes"
    personal.mkdir()
    (personal / "mine.md").write_text("# Mine\n\nbob keeps his ssh config in a dotfiles repository\n")
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as alice:
        first = alice.index(show_progress=False)
    assert first.team is not None and first.team.indexed >= 1
    git(shop, "rm", "-q", "docs/decisions/0001-hosting.md")
    commit(
        shop,
        "Change the ports decision, add one on queues",
        {
            "docs/decisions/0002-ports.md": DECISION_PORTS.replace("9102", "9300"),
            "docs/decisions/0003-queues.md": "# Queues\n\nWe use one queue per tenant for the billing jobs.\n",
        },
    )
    monkeypatch.setenv("CAPTAIN_MEMO_NOTE_DIRS", str(personal))
    with _memo(tmp_path, "bob", granted.dsn("bob"), hash_embedder) as bob:
        outcome = bob.index(show_progress=False)
    assert outcome.notes.indexed == 1  # his personal note
    team = outcome.team
    assert team is not None and team.indexed == 1  # the queues decision
    skipped = dict(team.skipped_files)
    assert sorted(skipped) == ["docs/decisions/0001-hosting.md", "docs/decisions/0002-ports.md"]
    assert all("written by alice" in reason for reason in skipped.values())
    rows = granted.execute("SELECT author, source_path, body FROM memories ORDER BY id")
    assert ("bob", "docs/decisions/0003-queues.md") in [row[:2] for row in rows]
    kept = [(author, body) for author, path, body in rows if path != "docs/decisions/0003-queues.md"]
    assert {author for author, _ in kept} == {"alice"} and not any("9300" in body for _, body in kept)
    # Her next run finds her notes changed (bob recorded no state for them) and brings them up to date.
    with _memo(tmp_path, "alice", granted.dsn("alice"), hash_embedder) as alice:
        again = alice.index(show_progress=False).team
    assert again is not None and again.skipped_files == () and again.removed == 1 and again.updated >= 1
    assert granted.execute("SELECT count(*) FROM memories WHERE body LIKE '%%9300%%'") == [(1,)]
