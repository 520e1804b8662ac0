"""Writing a note in Neovim re-indexes it in the background: a real git repository with a
docs/decisions/ folder, the real remote plugin host and the local model. A file outside the
note folders is left alone."""

from __future__ import annotations

import time

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor
from sources_support import git

pytestmark = [requires_nvim, pytest.mark.nvim]

RECORD_INDEXED = """
vim.g.test_indexed = {}
vim.api.nvim_create_autocmd('User', { pattern = 'CaptainMemoIndexed', callback = function(ev)
  local seen = vim.g.test_indexed
  table.insert(seen, ev.data)
  vim.g.test_indexed = seen
end })
"""


def indexed(editor, count: int) -> list[dict]:
    editor.wait_for(f"#vim.g.test_indexed >= {count}", what=f"re-index number {count}")
    return editor.lua("return vim.g.test_indexed")


def stored_paths(db) -> list[str]:
    from captain_memo.store import Store

    store = Store(db)
    try:
        return sorted(m.source.path for m in store.list_memories())
    finally:
        store.close()


def test_a_written_decision_is_found_by_recall_and_other_files_are_not_indexed(tmp_path, local_embedder):
    from captain_memo.engine.core import Engine
    from captain_memo.sources.indexer import index_configured
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    decision = repo / "docs" / "decisions" / "0001-queue.md"
    decision.parent.mkdir(parents=True)
    decision.write_text("# Job queue\n\n## Choice\n\nJobs go through a table in the main database.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "queue decision")
    db = tmp_path / "memo.db"
    engine = Engine(Store(db), local_embedder)
    assert index_configured(engine, cwd=repo).indexed == 1  # as `captain-memo index` left it
    engine.close()

    # Not followed by the engine's watcher here: it would index the same write beside index-on-write,
    # and which one stores the new section first (the other then finds it) changes the counts pinned below.
    env = child_env(tmp_path, CAPTAIN_MEMO_DB=str(db), CAPTAIN_MEMO_WATCH="0")
    editor = start_editor(tmp_path, env, cwd=repo)
    try:
        editor.lua(RECORD_INDEXED)
        editor.nvim.command(f"edit {decision}")
        editor.lua(
            "vim.api.nvim_buf_set_lines(0, -1, -1, false, ...)",
            ["", "## Why not Redis", "", "Postgres SKIP LOCKED runs the job queue without another server."],
        )
        editor.nvim.command("write | write | write")
        assert editor.lua("return require('captain_memo.index_on_write').waiting()") == [str(decision)], (
            "the write only starts the debounce timer"
        )
        [report] = indexed(editor, 1)
        assert report["path"] == str(decision)
        assert (report["indexed"], report["unchanged"], report["updated"], report["removed"]) == (1, 1, 0, 0)
        assert report["chunks_embedded"] == 1, "only the new section is embedded"
        time.sleep(0.6)  # past the debounce delay: the three writes were one re-index
        assert len(editor.lua("return vim.g.test_indexed")) == 1

        editor.nvim.command("CaptainMemo recall which server runs the job queue, redis or postgres")
        lines = editor.results()
        assert "Why not Redis" in lines[0], lines

        scratch = repo / "notes.md"
        editor.nvim.command(f"edit {scratch}")
        editor.lua(
            "vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)",
            ["# Scratch", "", "## Idea", "", "Maybe Redis streams for the job queue after all."],
        )
        editor.nvim.command("write")
        outside = indexed(editor, 2)[1]
        assert outside["path"] == str(scratch) and outside["files"] == 0 and outside["indexed"] == 0
        assert not [n for n in editor.notifications() if n["level"] >= 3], editor.notifications()
    finally:
        close(editor)
    assert stored_paths(db) == ["docs/decisions/0001-queue.md"] * 2


def test_only_note_suffixes_wake_the_plugin_on_write(tmp_path):
    """The write autocommand's patterns are the library's note suffixes; writing code loads nothing."""
    from captain_memo.sources.settings import NOTE_SUFFIXES

    editor = start_editor(tmp_path, observe=False)
    try:
        patterns = editor.lua(
            "local out = {} for _, a in ipairs(vim.api.nvim_get_autocmds("
            "{ group = 'CaptainMemoIndexOnWrite', event = 'BufWritePost' })) do "
            "out[#out + 1] = a.pattern end return out"
        )
        assert {p.lower() for p in patterns} == {f"*{suffix}" for suffix in NOTE_SUFFIXES}
        editor.nvim.command(f"edit {tmp_path / 'code.py'}")
        editor.nvim.command("write")
        assert editor.lua(
            "return package.loaded['captain_memo.index_on_write'] == nil and package.loaded['captain_memo'] == nil"
        )
    finally:
        close(editor)


def test_a_cursor_rule_and_a_page_of_a_folder_named_once_are_re_indexed_on_write(tmp_path, local_embedder):
    """The agents' files (a Cursor rule is a .mdc) and the folders `captain-memo index doc/` remembered
    are note folders for the editor too."""
    from captain_memo.engine.core import Engine
    from captain_memo.memo import Memo
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    page = repo / "doc" / "fixtures.rst"
    page.parent.mkdir()
    page.write_text("Fixtures\n========\n\nUse tmp_path for a temporary folder.\n")
    rule = repo / ".cursor" / "rules" / "sql.mdc"
    rule.parent.mkdir(parents=True)
    db = tmp_path / "memo.db"
    memo = Memo.over(Engine(Store(db), local_embedder))
    try:
        assert memo.index([str(repo / "doc")]).remembered == ("doc",)  # as `captain-memo index doc/` left it
    finally:
        memo.close()

    # Without the engine's watcher, which indexes the same writes beside index-on-write (see above).
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db), CAPTAIN_MEMO_WATCH="0"), cwd=repo)
    try:
        editor.lua(RECORD_INDEXED)
        editor.nvim.command(f"edit {rule}")
        editor.lua(
            "vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)",
            ["---", "description: SQL style", "globs: *.sql", "---", "", "Qualify every table name."],
        )
        editor.nvim.command("write")
        [first] = indexed(editor, 1)
        assert (first["path"], first["files"], first["indexed"]) == (str(rule), 1, 1)
        editor.nvim.command(f"edit {page}")
        editor.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, ...)", ["", "Factories", "---------", "", "More."])
        editor.nvim.command("write")
        second = indexed(editor, 2)[1]
        assert (second["path"], second["files"], second["indexed"], second["unchanged"]) == (str(page), 1, 1, 1)
    finally:
        close(editor)
    assert sorted(set(stored_paths(db))) == [".cursor/rules/sql.mdc", "doc/fixtures.rst"]
