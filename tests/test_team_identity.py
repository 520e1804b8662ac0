"""A project's portable identity, on real git repositories in temporary folders: two clones agree,
ssh and https origins agree, a repository without origin is named by its root commit, and stores
made before the identity existed learn it by their migration."""

from __future__ import annotations

import pytest
from sources_support import commit, git, init_repo

from captain_memo.base.project_identity import normalised_remote, portable_id


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Shop.git",
        "https://github.com/Acme/Shop.git",
        "https://alice:secret@GitHub.com/Acme/Shop/",
        "ssh://git@github.com:22/Acme/Shop.git",
        "git://github.com/Acme/Shop",
        "HTTPS://GITHUB.COM/Acme/Shop",
    ],
)
def test_every_form_of_one_remote_is_one_name(url):
    assert normalised_remote(url) == "github.com/Acme/Shop"


def test_the_path_keeps_its_case_and_other_repositories_differ():
    assert normalised_remote("git@github.com:acme/shop.git") != normalised_remote("git@github.com:Acme/Shop.git")
    assert normalised_remote("git@gitlab.com:Acme/Shop.git") != normalised_remote("git@github.com:Acme/Shop.git")


def test_a_local_remote_stays_a_path():
    assert normalised_remote("/srv/git/shop.git") == "/srv/git/shop"
    assert normalised_remote("file:///srv/git/shop.git/") == "/srv/git/shop"


def test_two_clones_in_two_folders_are_one_project(tmp_path):
    upstream = init_repo(tmp_path / "upstream")
    commit(upstream, "first", {"a.txt": "a"})
    for name in ("one", "two"):
        git(tmp_path, "clone", "-q", str(upstream), name)
    first, second = portable_id(tmp_path / "one"), portable_id(tmp_path / "two" / ".")
    assert first == second == str(upstream)
    assert portable_id(tmp_path / "one") != str((tmp_path / "one").resolve())


def test_an_ssh_clone_and_an_https_clone_agree(tmp_path):
    ids = []
    for name, url in (("ssh", "git@github.com:Acme/Shop.git"), ("https", "https://github.com/Acme/Shop")):
        repo = init_repo(tmp_path / name)
        git(repo, "remote", "add", "origin", url)
        ids.append(portable_id(repo))
    assert ids == ["github.com/Acme/Shop", "github.com/Acme/Shop"]


def test_without_origin_the_root_commit_names_it_even_on_a_detached_head(tmp_path):
    repo = init_repo(tmp_path / "solo")
    root = commit(repo, "first", {"a.txt": "a"})
    commit(repo, "second", {"a.txt": "b"})
    git(repo, "checkout", "-q", "--detach", "HEAD")
    assert portable_id(repo) == f"root:{root}"
    copy = tmp_path / "copy"
    git(tmp_path, "clone", "-q", str(repo), "copy")
    git(copy, "remote", "remove", "origin")
    assert portable_id(copy) == f"root:{root}"


def test_a_repository_without_commits_and_a_plain_folder_are_their_paths(tmp_path):
    empty = init_repo(tmp_path / "empty")
    assert portable_id(empty) == str(empty.resolve())
    plain = tmp_path / "plain"
    plain.mkdir()
    assert portable_id(plain) == str(plain.resolve())


def test_an_existing_store_learns_the_portable_id_of_its_projects(tmp_path, hash_embedder):
    """A store made before migration 6 (its row removed, the table dropped) gets the table filled
    from the projects its memories name; a project whose folder is gone keeps none."""
    from captain_memo.engine.core import Engine
    from captain_memo.records import NewMemory
    from captain_memo.store import Store

    repo = init_repo(tmp_path / "shop")
    git(repo, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    db = tmp_path / "memo.db"
    engine = Engine(Store(db), hash_embedder)
    engine.remember(NewMemory("retries back off", project=str(repo.resolve())))
    engine.remember(NewMemory("a project long gone", project=str(tmp_path / "gone")))
    engine.remember(NewMemory("a personal note"))
    with engine.store.write() as conn:  # as a store made before the table existed
        conn.execute("DROP TABLE projects")
        conn.execute("ALTER TABLE memories DROP COLUMN superseded_by_team")
        conn.execute("DELETE FROM schema_migrations WHERE version = 6")
    engine.close()

    store = Store(db)
    assert store.project_identities() == {str(repo.resolve()): "github.com/Acme/Shop"}
    store.close()
