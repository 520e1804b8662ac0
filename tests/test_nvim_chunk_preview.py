"""A hit from a long section, in a real Neovim: the results line names the matching chunk's own
heading path and lines (not the section's), the preview opens at the lines holding the query's
words, and <CR> jumps to them in the file."""

from __future__ import annotations

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]

FILLER = (
    "Paragraph {n} of the removals: an older interface was dropped in this release, and the text that "
    "explains it runs on for a while so that the section needs several chunks to hold it."
)
DEEP = (
    "Zebrafish ledgers are reconciled by the nightly fixture, which compares every ledger line with the "
    "bank's statement and flags a difference."
)


def long_section() -> str:
    """A Markdown file whose one section is ~120 lines: the matching subsection sits deep inside."""
    lines = ["# Guide", "", "## Deprecations and removals", ""]
    for n in range(1, 19):
        lines += [FILLER.format(n=n), ""]
    lines += ["### Ledger fixtures", ""]
    lines += [FILLER.format(n=n) + "\n" for n in range(19, 23)]
    lines += [DEEP, ""]
    lines += [FILLER.format(n=n) + "\n" for n in range(23, 30)]
    return "\n".join(lines)


@pytest.fixture
def indexed(tmp_path, local_embedder):
    from captain_memo.memo import Memo

    repo = make_repo(tmp_path)
    doc = repo / "doc" / "guide.md"
    doc.parent.mkdir()
    doc.write_text(long_section(), encoding="utf-8")
    db = tmp_path / "memo.db"
    with Memo(db, local_embedder) as memo:
        memo.index([str(doc)], show_progress=False)
    deep_line = doc.read_text(encoding="utf-8").splitlines().index(DEEP) + 1
    return {"repo": repo, "doc": doc, "db": db, "tmp": tmp_path, "deep_line": deep_line}


@pytest.fixture
def editor(indexed):
    env = child_env(indexed["tmp"], CAPTAIN_MEMO_DB=str(indexed["db"]))
    ed = start_editor(indexed["tmp"], env, cwd=indexed["repo"])
    yield ed
    close(ed)


def test_the_preview_opens_at_the_matching_lines_and_enter_jumps_to_them(editor, indexed):
    editor.nvim.command(f"edit {indexed['repo'] / 'src' / 'billing' / 'price.py'}")
    editor.nvim.command("CaptainMemo recall zebrafish ledgers reconciled")
    first = editor.results()[0]
    assert "Guide > Deprecations and removals > Ledger fixtures" in first, first
    assert "doc/guide.md:" in first and "doc/guide.md:3-" not in first, "the chunk's own lines, not the section's"
    preview_win = editor.lua(
        "for _, w in ipairs(vim.api.nvim_list_wins()) do "
        "if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) == 'captain-memo://preview' then return w end end"
    )
    top = editor.lua("return vim.api.nvim_win_call(..., function() return vim.fn.line('w0') end)", preview_win)
    height = editor.lua("return vim.api.nvim_win_get_height(...)", preview_win)
    preview = editor.lines_of("captain-memo://preview")
    shown = preview[top - 1 : top - 1 + height]
    assert any(line.startswith("Zebrafish ledgers are reconciled") for line in shown), (top, shown)
    assert preview[0] == "Guide > Deprecations and removals > Ledger fixtures"

    editor.nvim.input("<CR>")
    editor.wait_for(
        f"vim.api.nvim_buf_get_name(0) == '{indexed['doc']}' and vim.api.nvim_win_get_cursor(0)[1] == "
        f"{indexed['deep_line']}",
        what=f"the jump to guide.md:{indexed['deep_line']}",
    )
