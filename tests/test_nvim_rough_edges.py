"""Rough edges a new user met in the editor, each as they met it: a real Neovim, the real remote
plugin host and model, a real git repository."""

from __future__ import annotations

import time

import pytest

from nvim_support import close, child_env, requires_nvim, start_editor
from test_nvim_lookup import shop  # noqa: F401 - the same repository and notes

pytestmark = [requires_nvim, pytest.mark.nvim]
TOKEN = "ghp_" + "a1B2c3D4e5" * 4


@pytest.fixture
def editor(shop, tmp_path):
    ed = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(shop["db"])), cwd=shop["repo"])
    ed.nvim.command(f"edit {shop['repo'] / 'src' / 'billing' / 'price.py'}")
    yield ed
    close(ed)


def lookup_at(editor, line: int, col: int) -> None:
    editor.lua("vim.g.captain_memo_test_results = nil")
    editor.lua("vim.api.nvim_win_set_cursor(0, {...})", line, col)
    editor.nvim.command("CaptainMemo lookup")


def float_title(editor) -> str:
    return editor.lua("return vim.api.nvim_win_get_config(0).title")[0][0]


def test_lookup_takes_the_identifier_on_or_before_the_cursor_and_never_the_next(editor):
    lookup_at(editor, 3, 2)  # `        price = self.get_effective_contract_price(contract)`, in the indentation
    notes = editor.notifications()
    assert [n["msg"] for n in notes] == [
        "Captain Memo: nothing to look up: no identifier under the cursor or right before it"], notes
    assert editor.lua("return vim.g.captain_memo_test_results") is None
    line = editor.lua("return vim.api.nvim_buf_get_lines(0, 2, 3, false)[1]")
    lookup_at(editor, 3, line.index("(contract"))  # on the parenthesis after the call's name
    editor.results()
    assert "get_effective_contract_price" in float_title(editor)


def test_e_does_not_carry_into_the_next_float(editor):
    line = editor.lua("return vim.api.nvim_buf_get_lines(0, 2, 3, false)[1]")
    lookup_at(editor, 3, line.index("effective"))
    editor.results()
    preview = editor.lines_of("captain-memo://preview")
    editor.nvim.command("normal e")
    assert editor.lines_of("captain-memo://preview")[0].startswith("#1  "), "e shows the explanation"
    editor.nvim.command("normal q")
    editor.nvim.command("wincmd p")
    lookup_at(editor, 3, line.index("effective"))
    editor.results()
    assert editor.lines_of("captain-memo://preview") == preview, "the new float starts on the preview"


# Records each prompt in order: the credentials question (answered "save anyway"), then the title.
RECORD_PROMPTS = """
vim.g.test_prompts = {}
local function record(entry)
  local prompts = vim.g.test_prompts
  table.insert(prompts, entry)
  vim.g.test_prompts = prompts
end
vim.ui.select = function(items, opts, cb)
  record({ kind = opts.kind or 'select', prompt = opts.prompt })
  cb(items[1], 1)
end
vim.ui.input = function(opts, cb)
  record({ kind = 'input', prompt = opts.prompt, default = opts.default })
  cb(opts.default or '')
end
"""


def test_credentials_are_checked_before_the_title_is_prefilled(shop, tmp_path):
    repo, db = shop["repo"], shop["db"]
    config = repo / "config.py"
    config.write_text(f'GITHUB_TOKEN = "{TOKEN}"\nTIMEOUT = 30\n')
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), cwd=repo)
    try:
        editor.lua(RECORD_PROMPTS)
        editor.nvim.command(f"edit {config}")
        editor.nvim.input("ggVG:CaptainMemo save<CR>")
        editor.wait_for("(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
                        "if n.msg:find('saved #') then return true end end end)()", what="the save")
        prompts = editor.lua("return vim.g.test_prompts")
        assert [p["kind"] for p in prompts] == ["captain_memo_secrets", "input", "select"], prompts
        title = prompts[1]
        assert TOKEN not in title["default"] and TOKEN[:8] not in title["default"], title
        assert title["default"] == 'GITHUB_TOKEN = "[REDACTED GitHub token]"'
    finally:
        close(editor)


def test_a_long_error_is_one_line_without_a_hit_enter_prompt(tmp_path):
    """With a real UI attached, a message wider than the screen stops Neovim at "Press ENTER"."""
    blocker = tmp_path / ("a-file-where-a-folder-should-be-" * 4)
    blocker.write_text("not a folder")
    db = blocker / "store" / "memo.db"
    editor = start_editor(tmp_path, child_env(tmp_path, CAPTAIN_MEMO_DB=str(db)), observe=False)
    try:
        editor.nvim.ui_attach(80, 20, rgb=True, ext_linegrid=True)
        editor.nvim.input(":CaptainMemo recall rounding<CR>")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            mode = editor.nvim.api.get_mode()
            if mode["blocking"] or "cannot create" in editor.lua("return vim.fn.execute('messages')"):
                break
            time.sleep(0.05)
        assert not editor.nvim.api.get_mode()["blocking"], "a hit-enter prompt waits for the user"
        shown = editor.lua("return vim.fn.execute('messages')").strip().splitlines()[-1]
        assert shown.startswith("Captain Memo: cannot create the database") and shown.endswith("(:CaptainMemo log)")
        assert editor.lua("return vim.fn.strdisplaywidth(...)", shown) < 80
        log = (tmp_path / "xdg_state_home" / "nvim" / "captain-memo.log").read_text(encoding="utf-8")
        whole = next(line for line in log.splitlines() if f"cannot create the database {db}: " in line)
        assert whole.endswith(f"{blocker} is a file, not a folder"), "the log has the whole message"
    finally:
        close(editor)
