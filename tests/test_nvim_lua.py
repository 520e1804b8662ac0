"""Lua unit tests (tests/lua/*_spec.lua) run in a headless Neovim, plus checks that need the
Python side too: the Lua code-shape rule agrees with the ranker's, and start-up stays light."""

from __future__ import annotations

import subprocess

import pytest

from nvim_support import NVIM, REPO, close, isolated_env, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]
SPECS = sorted((REPO / "tests" / "lua").glob("*_spec.lua"))


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_lua_spec(spec, tmp_path):
    env = isolated_env(tmp_path)
    done = subprocess.run([NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", f"set rtp^={REPO}",
                           "-l", str(REPO / "tests" / "lua" / "run.lua"), str(spec)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "FAIL" not in output and " passed, 0 failed" in output, output


def test_lua_code_shape_rule_matches_the_rankers(tmp_path):
    from captain_memo.ranking.query import is_code_shaped

    tokens = ["get_effective_contract_price", "self.x", "src/billing/price.py", "useEffect", "getX", "x2Y",
              "HTTP", "TODO", "Price", "plain", "_", "__", ".", "/", "a.b.", "std::vector", "node->next", "v1.2",
              "IOError", "iPhone", "ABCdef"]
    editor = start_editor(tmp_path, observe=False)
    try:
        lua = editor.lua("local t = require('captain_memo.token') local out = {} "
                         "for i, s in ipairs(...) do out[i] = t.is_code_shaped(s) end return out", tokens)
    finally:
        close(editor)
    assert dict(zip(tokens, lua)) == {t: is_code_shaped(t) for t in tokens}


def test_startup_loads_nothing_until_first_use(tmp_path):
    """With the plugin installed, start-up defines the command only: no module, no Python host."""
    editor = start_editor(tmp_path, observe=False)
    try:
        assert editor.lua("return vim.fn.exists(':CaptainMemo')") == 2
        assert editor.lua("return vim.fn.exists('#FuncUndefined#CaptainMemoRequest')") == 1
        loaded = editor.lua("local out = {} for name in pairs(package.loaded) do "
                            "if name:find('^captain_memo') then out[#out + 1] = name end end return out")
        assert loaded == []
        channels = editor.lua("local out = {} for _, c in ipairs(vim.api.nvim_list_chans()) do "
                              "if c.mode == 'rpc' and c.stream == 'job' then out[#out + 1] = c.id end end return out")
        assert channels == []
        completion = editor.lua("return vim.fn.getcompletion('CaptainMemo ', 'cmdline')")
        assert completion == ["ambient", "explain", "log", "lookup", "note", "recall", "save"]
        assert editor.lua("return vim.fn.getcompletion('CaptainMemo note s', 'cmdline')") == ["skill"]
    finally:
        close(editor)
