"""What the command line shows around the plugin's commands: the health check under the
command's own name, and no prompt left behind by a recall (real Neovim, a real UI grid)."""

from __future__ import annotations

import time

import pytest
from nvim_support import child_env, close, requires_nvim, start_editor
from test_nvim_lookup import shop  # noqa: F401 - the same repository and notes

pytestmark = [requires_nvim, pytest.mark.nvim]


def health_buffer(editor, name: str) -> str:
    editor.nvim.command(f"checkhealth {name}")
    return "\n".join(editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))


def test_checkhealth_answers_to_the_plugins_name_and_to_its_module(shop):  # noqa: F811 - the fixture imported above
    tmp = shop["tmp"]
    editor = start_editor(tmp, child_env(tmp, CAPTAIN_MEMO_DB=str(shop["db"])), cwd=shop["repo"], observe=False)
    try:
        by_name = health_buffer(editor, "captain-memo")
        by_module = health_buffer(editor, "captain_memo")
        everything = health_buffer(editor, "captain*")
    finally:
        close(editor)
    for report in (by_name, by_module):
        assert "No healthcheck found" not in report, report
        assert "OK python host: " in report and "OK sqlite-vec: " in report, report
    assert everything.count("OK sqlite-vec: ") == 1, "the checks run once when both names match\n" + everything


def command_line(editor) -> str:
    """The last screen row, as a user sees it."""
    rows = editor.lua("return vim.o.lines")
    cols = editor.lua("return vim.o.columns")
    return editor.lua(
        "local row, cols = ... local s = {} for c = 1, cols do s[#s + 1] = vim.fn.screenstring(row, c) end "
        "return table.concat(s)",
        rows,
        cols,
    ).rstrip()


def test_opening_a_hit_from_a_recall_leaves_no_prompt_on_the_command_line(shop):  # noqa: F811 - the fixture imported above
    tmp = shop["tmp"]
    editor = start_editor(tmp, child_env(tmp, CAPTAIN_MEMO_DB=str(shop["db"])), cwd=shop["repo"], observe=False)
    try:
        editor.nvim.ui_attach(100, 30, rgb=True, ext_linegrid=True)
        editor.lua(
            "vim.api.nvim_create_autocmd('User', { pattern = 'CaptainMemoResults', callback = function() "
            "vim.g.captain_memo_test_results = true end })"
        )
        editor.nvim.command("CaptainMemo recall deploys")  # the host is warm, as it is after the first use
        editor.wait_for("vim.g.captain_memo_test_results", 60, "the first results")
        editor.nvim.input("q")
        editor.lua("vim.g.captain_memo_test_results = nil")
        editor.nvim.command("nmap <F5> <Plug>(CaptainMemoRecall)")
        editor.nvim.input("<F5>")
        editor.wait_for("vim.fn.mode() == 'c'", what="the Recall prompt")
        editor.nvim.input("rounding money<CR>")  # its top hit has no file: <CR> opens the memory itself
        editor.wait_for("vim.g.captain_memo_test_results", 60, "the results window")
        editor.nvim.input("<CR>")
        editor.wait_for("vim.bo.filetype == 'markdown'", what="the memory to open")
        # The grid follows the last redraw, as soon as Neovim gets to it: a busy machine may take
        # longer than any fixed pause; a prompt that stays is still there when the wait gives up.
        deadline = time.monotonic() + 30
        while "Recall:" in (shown := command_line(editor)) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        close(editor)
    assert "Recall:" not in shown, f"the command line still shows {shown!r}"
