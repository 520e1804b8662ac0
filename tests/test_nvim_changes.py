"""What changed in this file lately, from the editor: `:CaptainMemo changes` and
<Plug>(CaptainMemoChanges) on a buffer's file list the newest commits touching it, newest first,
with the notes after them. A real Neovim, the real remote plugin host, the real local model and a
real git repository whose history is indexed with ``index --git``."""

from __future__ import annotations

import re

import pytest
from nvim_support import child_env, close, make_repo, requires_nvim, start_editor
from sources_support import git, write

pytestmark = [requires_nvim, pytest.mark.nvim]

DAY = 86400.0
START = 1_750_000_000.0
LINE = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+(\w+)\s+(.*?)\s*$")


@pytest.fixture
def shop(tmp_path, local_embedder):
    """price.py changed by "billing", then by a formatting sweep whose subject names no file; the
    newest commit of all touches only the deploy notes; a note talks about prices."""
    from captain_memo.base.git_context import git_context
    from captain_memo.engine.core import Engine
    from captain_memo.sources.git_history import index_history
    from captain_memo.store import NewMemory, Store

    repo = make_repo(tmp_path)
    git(repo, "commit", "--amend", "-q", "--no-edit", when=START)  # "billing", the oldest
    steps = [
        ("src/billing/tax.py", "Add the tax table"),
        ("src/billing/price.py", "Apply the formatter everywhere"),
        ("docs/deploy.md", "Document deploys"),
    ]
    for n, (path, subject) in enumerate(steps, start=1):
        write(repo, path, f"# {subject}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", subject, when=START + n * DAY)
    db = tmp_path / "memo.db"
    engine = Engine(Store(db), local_embedder)
    index_history(engine, repo)
    engine.remember(
        NewMemory(
            body="Prices are computed in price.py; never round there.",
            title="Where prices live",
            project=git_context(repo).project,
        )
    )
    engine.close()
    return {"repo": repo, "db": db, "tmp": tmp_path}


@pytest.fixture
def editor(shop):
    ed = start_editor(shop["tmp"], child_env(shop["tmp"], CAPTAIN_MEMO_DB=str(shop["db"])), cwd=shop["tmp"])
    yield ed
    close(ed)


def titles(lines):
    rows = [LINE.match(line) for line in lines]
    assert all(rows), lines
    return [(m[3], m[4]) for m in rows if m]


def test_changes_of_the_buffer_list_the_newest_commit_touching_it_first(editor, shop):
    editor.nvim.command(f"edit {shop['repo'] / 'src' / 'billing' / 'price.py'}")
    editor.nvim.command("CaptainMemo changes")
    rows = titles(editor.results())
    kinds = [kind for kind, _ in rows]
    assert rows[0][0] == "obs" and "Apply the formatter everywhere" in rows[0][1], rows
    assert "billing" in rows[1][1], rows  # the older commit touching it, second
    assert not any("Document deploys" in rest or "Add the tax table" in rest for _, rest in rows[:2]), rows
    assert kinds.index("mem") > 1, "the note follows the changes"
    title = editor.lua("return vim.api.nvim_win_get_config(0).title")
    assert "latest change to src/billing/price.py" in title[0][0]


def test_the_plug_mapping_asks_the_same(editor, shop):
    editor.nvim.command(f"edit {shop['repo'] / 'src' / 'billing' / 'tax.py'}")
    editor.lua('vim.api.nvim_feedkeys(vim.keycode("<Plug>(CaptainMemoChanges)"), "x", false)')
    rows = titles(editor.results())
    assert "Add the tax table" in rows[0][1], rows


def test_a_buffer_without_a_file_says_so(editor):
    editor.nvim.command("enew")
    editor.nvim.command("CaptainMemo changes")
    notes = editor.notifications()
    assert any("no file" in n["msg"] for n in notes), notes
