"""Commit messages as observations, from real repositories made with the git command."""

from __future__ import annotations

import pytest
from sources_support import BASE_DAY, commit, git, init_repo

from captain_memo.errors import InputError
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
