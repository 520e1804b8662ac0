"""Note folders respect .gitignore (as git says inside a work tree, as the folder's own .gitignore
files say outside one), and every git question is asked of the repository the folder is in."""

from __future__ import annotations

from pathlib import Path

import pytest
from sources_support import commit, git, init_repo, write

from captain_memo.base.git_context import git_context
from captain_memo.sources.discovery import unindexed_folders
from captain_memo.sources.folders import Folder, note_files
from captain_memo.sources.indexer import index_file, index_paths

NOTE = "# A note\n\nSome text worth keeping.\n"


def listed(folder: Path, root: Path | None) -> list[str]:
    files = note_files(Folder(folder, "memory", None, None, root)).files
    return sorted(path.relative_to(folder).as_posix() for path in files)


@pytest.fixture
def repo(tmp_path):
    """Sphinx output in docs/_build/ (ignored by docs/.gitignore), generated pages in generated/
    (ignored by the top .gitignore, one of them committed anyway) and a path git's own excludes
    file leaves out."""
    root = init_repo(tmp_path / "shop")
    write(root, ".gitignore", "generated/\n*.draft.md\n")
    write(root, "docs/.gitignore", "_build/\n")
    write(root, ".git/info/exclude", "scratch/\n")
    for rel in ("docs/guide.md", "docs/_build/html/guide.md", "docs/generated/api.md", "docs/plan.draft.md"):
        write(root, rel, NOTE)
    write(root, "docs/scratch/idea.md", NOTE)
    write(root, "docs/generated/kept.md", NOTE)
    git(root, "add", "-f", "docs/generated/kept.md")  # tracked although ignored: git reads it, so do we
    commit(root, "Add the docs")
    return root


def test_a_folder_in_a_work_tree_leaves_out_what_git_ignores(repo):
    assert listed(repo / "docs", repo) == ["generated/kept.md", "guide.md"]


def test_indexing_a_folder_stores_no_memory_from_ignored_build_output(engine, repo):
    index_paths(engine, [repo / "docs"])
    paths = {m.source.path for m in engine.store.list_memories(limit=100)}
    assert paths == {"docs/guide.md", "docs/generated/kept.md"}


def test_a_folder_that_git_ignores_is_read_when_named_itself(repo):
    assert listed(repo / "docs" / "_build", repo) == ["html/guide.md"]


def test_outside_a_work_tree_the_folders_own_gitignore_files_decide(tmp_path):
    notes = tmp_path / "notes"
    write(notes, ".gitignore", "_build/\n*.tmp.md\n!keep.tmp.md\n")
    write(notes, "journal/.gitignore", "private.md\n!_build/\n")
    for rel in ("a.md", "_build/out.md", "x.tmp.md", "keep.tmp.md", "journal/private.md", "journal/day.md"):
        write(notes, rel, NOTE)
    write(notes, "journal/_build/kept.md", NOTE)  # the deeper file re-includes its own _build/
    assert listed(notes, None) == ["a.md", "journal/_build/kept.md", "journal/day.md", "keep.tmp.md"]


def test_git_questions_are_about_the_folders_repository_even_inside_a_git_hook(tmp_path, monkeypatch):
    """A post-commit hook running `captain-memo index` has GIT_DIR set to its own repository."""
    other = init_repo(tmp_path / "other")
    commit(other, "Other's first commit")
    repo = init_repo(tmp_path / "shop")
    write(repo, ".gitignore", "_build/\n")
    write(repo, "docs/_build/out.md", NOTE)
    sha = commit(repo, "Shop's first commit")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    ctx = git_context(repo / "docs")
    assert (ctx.root, ctx.commit, ctx.branch) == (str(repo), sha, "main")
    assert listed(repo / "docs", repo) == []


def test_git_context_of_an_unborn_branch_a_detached_head_and_a_worktree(tmp_path):
    repo = init_repo(tmp_path / "shop")
    git(repo, "checkout", "-q", "-b", "trunk")
    unborn = git_context(repo)
    assert (unborn.project, unborn.branch, unborn.commit, unborn.root) == (str(repo), "trunk", None, str(repo))
    sha = commit(repo, "First")
    git(repo, "checkout", "-q", "--detach")
    assert git_context(repo).branch == sha[:10]
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    shared, own = git_context(tmp_path / "side"), git_context(tmp_path / "side", share_worktrees=False)
    assert (shared.project, shared.branch, shared.root) == (str(repo), "side", str(tmp_path / "side"))
    assert own.project == str(tmp_path / "side")
    assert git_context(tmp_path).project is None


def test_a_top_level_folder_git_ignores_is_not_offered_for_indexing(tmp_path):
    root = init_repo(tmp_path / "shop")
    write(root, ".gitignore", "/wiki/\n")
    write(root, "wiki/Home.md", NOTE)  # a clone of the project's wiki, kept out of this repository
    write(root, "doc/guide.md", NOTE)
    commit(root, "Add the docs")
    write(root, "docs/.gitignore", "*\n")  # a folder that ignores itself
    write(root, "docs/page.md", NOTE)
    assert [found.path for found in unindexed_folders(root, [])] == ["doc/"]


def test_a_saved_note_that_a_walk_leaves_out_is_not_indexed_either(engine, repo):
    """The editor indexes a note on save; what the next plain run's walk leaves out, it would remove."""
    for rel in ("docs/decisions/_build/out.md", "docs/decisions/node_modules/pkg/README.md", "docs/decisions/0001.md"):
        write(repo, rel, NOTE)
    write(repo, "docs/decisions/.gitignore", "_build/\n")
    for rel in ("docs/decisions/_build/out.md", "docs/decisions/node_modules/pkg/README.md", "docs/decisions/0001.md"):
        index_file(engine, repo / rel, "shop", "main")
    assert {m.source.path for m in engine.store.list_memories(limit=100)} == {"docs/decisions/0001.md"}
