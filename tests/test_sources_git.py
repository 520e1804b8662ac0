"""Commit messages as observations, from real repositories made with the git command."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing

import pytest
from sources_support import BASE_DAY, commit, git, init_repo

from captain_memo.base.git_context import git_context
from captain_memo.errors import InputError
from captain_memo.hosting import wire
from captain_memo.sources.git_history import index_history, meta_key

DAY = 86400


@pytest.fixture
def repo(tmp_path):
    root = init_repo(tmp_path / "repo")
    commit(root, "Start the service", {"app.py": "print('hi')\n"}, when=BASE_DAY)
    return root


def observations(engine) -> dict[str, object]:
    return {m.title: m for m in engine.store.list_memories(kind="observation", limit=1000)}


def test_merge_commits_and_empty_messages_are_skipped(engine, repo):
    git(repo, "checkout", "-q", "-b", "topic")
    commit(repo, "Add the topic module", {"topic.py": "X = 1\n"}, when=BASE_DAY + DAY)
    git(repo, "checkout", "-q", "main")
    commit(repo, "", {"app.py": "print('hello')\n"}, when=BASE_DAY + 2 * DAY)
    commit(repo, "   \n\n  ", {"app.py": "print('hey')\n"}, when=BASE_DAY + 3 * DAY)
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch 'topic'", "topic", when=BASE_DAY + 4 * DAY)
    report = index_history(engine, repo)
    assert set(observations(engine)) == {"Start the service", "Add the topic module"}
    assert sorted(reason for _, reason in report.skipped_files) == ["empty message", "empty message", "merge commit"]
    assert report.indexed == 2


def test_a_long_message_is_cut_at_the_cap(engine, repo, monkeypatch):
    monkeypatch.setenv("CAPTAIN_MEMO_GIT_MAX_MESSAGE_CHARS", "500")
    commit(repo, "Regenerate the changelog\n\n" + "- entry\n" * 2000, {"CHANGELOG": "x\n"}, when=BASE_DAY + DAY)
    index_history(engine, repo)
    memory = observations(engine)["Regenerate the changelog"]
    assert len(memory.body) < 700 and "more characters]" in memory.body
    assert memory.body.endswith("Files: CHANGELOG") and memory.source.path == "CHANGELOG"


def test_a_rerun_reads_only_new_commits_and_embeds_nothing_without_them(engine, repo, hash_embedder):
    index_history(engine, repo)
    calls = hash_embedder.calls
    again = index_history(engine, repo)
    assert hash_embedder.calls == calls and again.indexed == again.unchanged == 0
    head = commit(repo, "Add retries", {"app.py": "RETRIES = 3\n"}, when=BASE_DAY + DAY)
    third = index_history(engine, repo)
    assert third.indexed == 1 and third.unchanged == 0 and hash_embedder.calls == calls + 1
    project = engine.store.list_memories()[0].project
    assert engine.store.meta(meta_key(project, "main")) == head


def test_rewritten_history_is_read_again_without_storing_twice(engine, repo, hash_embedder):
    commit(repo, "Add caching", {"cache.py": "TTL = 1\n"}, when=BASE_DAY + DAY)
    index_history(engine, repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    commit(repo, "Add caching with a TTL of five", {"cache.py": "TTL = 5\n"}, when=BASE_DAY + 2 * DAY)
    texts = hash_embedder.texts_embedded
    report = index_history(engine, repo)
    assert report.indexed == 1 and report.unchanged == 1 and hash_embedder.texts_embedded == texts + 1
    assert set(observations(engine)) == {"Start the service", "Add caching", "Add caching with a TTL of five"}


def test_first_run_takes_the_newest_commits_up_to_the_cap(engine, repo, monkeypatch):
    for n in range(1, 6):
        commit(repo, f"Step {n}", {"app.py": f"STEP = {n}\n"}, when=BASE_DAY + n * DAY)
    monkeypatch.setenv("CAPTAIN_MEMO_GIT_MAX_COMMITS", "3")
    index_history(engine, repo)
    assert set(observations(engine)) == {"Step 3", "Step 4", "Step 5"}


def test_outside_a_repository_is_a_clear_error(engine, tmp_path):
    with pytest.raises(InputError, match="not inside a git repository"):
        index_history(engine, tmp_path)


def test_a_repository_without_commits_stores_nothing(engine, tmp_path):
    report = index_history(engine, init_repo(tmp_path / "empty"))
    assert report.indexed == 0 and engine.store.counts()["memories"] == 0


def test_detached_head_uses_the_short_commit_as_branch(engine, repo):
    sha = commit(repo, "Pin dependencies", {"req.txt": "x==1\n"}, when=BASE_DAY + DAY)
    git(repo, "checkout", "-q", "--detach", sha)
    index_history(engine, repo)
    assert observations(engine)["Pin dependencies"].branch == sha[:10]


def test_a_credential_in_a_commit_message_is_reported(engine, repo):
    token = "ghp_" + "a1B2c3D4e5" * 4
    sha = commit(repo, f"Rotate the bot token\n\nOld one was {token}", {"bot.cfg": "x\n"}, when=BASE_DAY + DAY)
    report = index_history(engine, repo)
    assert report.warnings[0][0] == sha[:10] and "GitHub token" in report.warnings[0][1]
    assert token not in report.warnings[0][1]


def test_an_embedder_that_is_down_still_stores_commits(engine, repo, hash_embedder):
    from fakes import failing

    hash_embedder.fail = failing()
    report = index_history(engine, repo)
    assert report.indexed == 1 and report.warnings[0][0] == "embedder"
    assert engine.store.counts()["pending_vectors"] == 1


def touched_paths(db_file, engine, title: str) -> set[str]:
    """The paths stored for the observation of the commit titled ``title`` (what change questions search)."""
    memory = observations(engine)[title]
    with closing(sqlite3.connect(db_file)) as conn:
        return {row[0] for row in conn.execute("SELECT path FROM touched_paths WHERE memory_id = ?", (memory.id,))}


def test_a_record_separator_in_a_message_is_read_as_text(db_file, engine, repo):
    commit(repo, "Split the\x1erecords", {"split.py": "X = 1\n"}, when=BASE_DAY + DAY)
    commit(repo, "Add a later change", {"later.py": "Y = 2\n"}, when=BASE_DAY + 2 * DAY)
    report = index_history(engine, repo)
    assert report.indexed == 3
    assert touched_paths(db_file, engine, "Split the\x1erecords") == {"split.py"}


def test_a_field_separator_in_a_message_forges_no_touched_path(db_file, engine, repo):
    commit(repo, "fix parser\x1f\nsecret/evil.py", {"parser.py": "P = 1\n"}, when=BASE_DAY + DAY)
    index_history(engine, repo)
    assert touched_paths(db_file, engine, "fix parser") == {"parser.py"}


def test_paths_with_quotes_tabs_newlines_and_backslashes_are_stored_as_named(db_file, engine, repo):
    names = ['say "hi".md', "tab\there.txt", "new\nline.txt", "back\\slash.txt", "café.txt"]
    commit(repo, "Add awkward names", {name: "x\n" for name in names}, when=BASE_DAY + DAY)
    index_history(engine, repo)
    assert touched_paths(db_file, engine, "Add awkward names") == set(names)


def test_a_name_that_is_not_utf8_is_stored_as_its_escaped_bytes_not_a_replacement_mark(db_file, engine, repo):
    raw = b"caf\xe9.txt"
    (repo / os.fsdecode(raw)).write_bytes(b"x\n")
    commit(repo, "Add a Latin-1 name", when=BASE_DAY + DAY)
    index_history(engine, repo)
    assert touched_paths(db_file, engine, "Add a Latin-1 name") == {"caf\\xe9.txt"}
    # asked with the name as the file system gives it (os.listdir, a shell's argument): found,
    # and the question crosses the service's socket (JSON lines) without breaking it
    asked = f"latest change to {os.fsdecode(raw)}"
    found = engine.recall(asked, project=git_context(repo).project).hits
    assert found and found[0].memory.title == "Add a Latin-1 name", [hit.memory.title for hit in found]
    assert json.loads(wire.encoded({"query": asked}))["query"] == asked


def write_commit(repo, message: bytes, stamp: str) -> str:
    """A commit object written as is (git commit refuses some of these dates), made HEAD."""
    tree = git(repo, "write-tree")
    head = git(repo, "rev-parse", "HEAD")
    who = f"Test Dev <dev@example.com> {stamp} +0000"
    body = f"tree {tree}\nparent {head}\nauthor {who}\ncommitter {who}\n\n".encode() + message
    done = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        cwd=repo,
        input=body,
        capture_output=True,
        check=True,
    )
    sha = done.stdout.decode().strip()
    git(repo, "update-ref", "HEAD", sha)
    return sha


def test_a_commit_dated_past_year_9999_is_skipped_with_one_line_and_the_rest_indexed(engine, repo):
    far = write_commit(repo, b"Set the clock far ahead\n", str(int(BASE_DAY) * 200))
    commit(repo, "A change after it", {"after.py": "A = 1\n"}, when=BASE_DAY + 2 * DAY)
    report = index_history(engine, repo)
    assert set(observations(engine)) == {"Start the service", "A change after it"}
    assert [sha for sha, _ in report.skipped_files] == [far[:10]]
    assert "past the year 9999" in report.skipped_files[0][1]
    commit(repo, "A later change", {"later.py": "L = 1\n"}, when=BASE_DAY + 3 * DAY)
    assert index_history(engine, repo).indexed == 1  # and the next run goes on from there


def test_a_commit_whose_date_cannot_be_read_is_skipped_naming_it(engine, repo):
    odd = write_commit(repo, b"A date git cannot parse\n", "not-a-date")
    report = index_history(engine, repo)
    assert set(observations(engine)) == {"Start the service"}
    assert [sha for sha, _ in report.skipped_files] == [odd[:10]]
