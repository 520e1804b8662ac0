"""Saving from Neovim, end to end: a visual selection and a note buffer, with the repository,
branch and commit of the buffer's file (a real git repository, not Neovim's working folder)."""

from __future__ import annotations

import re

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, saved_id, start_editor
from sources_support import git

pytestmark = [requires_nvim, pytest.mark.nvim]


def hit_row(lines, title):
    for line in lines:
        if title in line:
            m = re.match(r"^\s*(\d+)\s+([\d.]+)\s", line)
            return int(m[1]), float(m[2])
    raise AssertionError(f"{title!r} is not among {lines}")


def explain_row(editor, rank):
    editor.lua("vim.api.nvim_win_set_cursor(0, {..., 0})", rank)
    return "\n".join(editor.lines_of("captain-memo://preview"))


def recall(editor, path, query):
    editor.lua("vim.g.captain_memo_test_results = nil")
    editor.nvim.command(f"edit {path}")
    editor.nvim.command(f"CaptainMemo recall {query}")
    return editor.results()


def test_saved_selection_carries_file_lines_repository_and_branch(tmp_path, local_embedder):
    """#2: the saved selection, and its branch boost only when recalled from its own branch."""
    from captain_memo.base.git_context import git_context
    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    repo = make_repo(tmp_path)
    git(repo, "checkout", "-q", "-b", "feature/rounding")
    project = git_context(repo).project
    db = tmp_path / "memo.db"
    engine = Engine(Store(db), local_embedder)
    engine.remember(
        NewMemory(body="Totals are rounded once, at the end, to two decimals.", title="Totals", project=project)
    )
    engine.close()
    # Neovim runs from another folder: the repository must come from the buffer's file.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=elsewhere)
    try:
        path = repo / "src" / "billing" / "price.py"
        editor.nvim.command(f"edit {path}")
        editor.nvim.input("3GVj:CaptainMemo save<CR>")
        memory_id = saved_id(editor)
        store = Store(db)
        memory = store.get(memory_id)
        store.close()
        assert memory.source.path == "src/billing/price.py"
        assert (memory.source.line_start, memory.source.line_end) == (3, 4)
        assert memory.project == project and memory.branch == "feature/rounding"
        assert memory.source.commit == git(repo, "rev-parse", "HEAD")
        assert (memory.source.origin, memory.source.filetype, memory.kind) == ("editor", "python", "memory")
        assert memory.title == "price = self.get_effective_contract_price(contract)", "prefilled from line 1"
        assert memory.body == (
            "        price = self.get_effective_contract_price(contract)\n"
            "        return round(price * contract.quantity, 2)"
        )

        query = "round price times quantity"
        lines = recall(editor, path, query)
        rank_on, score_on = hit_row(lines, memory.title)
        editor.nvim.command("normal e")
        assert re.search(r"^× branch\s+1\.1000\s+feature/rounding", explain_row(editor, rank_on), re.M)

        git(repo, "checkout", "-q", "main")
        lines = recall(editor, path, query)
        rank_off, score_off = hit_row(lines, memory.title)
        editor.nvim.command("normal e")  # a new list starts on the preview
        assert re.search(r"^× branch\s+1\s+not applied", explain_row(editor, rank_off), re.M)
        assert score_off < score_on and rank_off >= rank_on
        assert score_on / score_off == pytest.approx(1.1, abs=0.01)
    finally:
        close(editor)


def test_note_buffer_is_saved_on_write(tmp_path, local_embedder):
    """`:CaptainMemo note skill` opens a scratch buffer; `:w` stores it, titled by its first line."""
    from captain_memo.base.git_context import git_context
    from captain_memo.store import Store

    repo = make_repo(tmp_path)
    db = tmp_path / "memo.db"
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=tmp_path)
    try:
        editor.nvim.command(f"edit {repo / 'src' / 'billing' / 'price.py'}")
        editor.nvim.command("CaptainMemo note skill")
        editor.lua(
            "vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)",
            ["# Release a hotfix", "", "Branch from the tag, cherry-pick, tag again."],
        )
        editor.nvim.command("write")
        memory_id = saved_id(editor)
        assert editor.lua("return vim.bo.modified") is False
        assert editor.lua("return vim.api.nvim_buf_get_name(0)") == f"captain-memo://memory/{memory_id}"
        store = Store(db)
        memory = store.get(memory_id)
        store.close()
        assert (memory.kind, memory.title) == ("skill", "Release a hotfix")
        assert memory.body == "Branch from the tag, cherry-pick, tag again."
        assert memory.project == git_context(repo).project and memory.branch == "main"
        assert memory.source.path is None and memory.source.origin == "editor"
    finally:
        close(editor)
