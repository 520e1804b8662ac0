"""Lua unit tests (tests/lua/*_spec.lua) run in a headless Neovim, plus checks that need the
Python side too: the Lua code-shape rule agrees with the ranker's, and start-up stays light."""

from __future__ import annotations

import subprocess

import pytest
from nvim_support import NVIM, REPO, child_env, close, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]
SPECS = sorted((REPO / "tests" / "lua").glob("*_spec.lua"))


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_lua_spec(spec, tmp_path):
    env = child_env(tmp_path)
    done = subprocess.run(
        [
            NVIM,
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "--cmd",
            f"set rtp^={REPO}",
            "-l",
            str(REPO / "tests" / "lua" / "run.lua"),
            str(spec),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "FAIL" not in output and " passed, 0 failed" in output, output


def test_lua_code_shape_rule_matches_the_rankers(tmp_path):
    from captain_memo.ranking.query import is_code_shaped

    tokens = [
        "get_effective_contract_price",
        "self.x",
        "src/billing/price.py",
        "useEffect",
        "getX",
        "x2Y",
        "HTTP",
        "TODO",
        "Price",
        "plain",
        "_",
        "__",
        ".",
        "/",
        "a.b.",
        "std::vector",
        "node->next",
        "v1.2",
        "IOError",
        "iPhone",
        "ABCdef",
    ]
    editor = start_editor(tmp_path, observe=False)
    try:
        lua = editor.lua(
            "local t = require('captain_memo.token') local out = {} "
            "for i, s in ipairs(...) do out[i] = t.is_code_shaped(s) end return out",
            tokens,
        )
    finally:
        close(editor)
    assert dict(zip(tokens, lua)) == {t: is_code_shaped(t) for t in tokens}


def test_startup_loads_nothing_until_first_use(tmp_path):
    """With the plugin installed, start-up defines the command only: no module, no Python host."""
    editor = start_editor(tmp_path, observe=False)
    try:
        assert editor.lua("return vim.fn.exists(':CaptainMemo')") == 2
        assert editor.lua("return vim.fn.exists('#FuncUndefined#CaptainMemoRequest')") == 1
        loaded = editor.lua(
            "local out = {} for name in pairs(package.loaded) do "
            "if name:find('^captain_memo') then out[#out + 1] = name end end return out"
        )
        assert loaded == []
        channels = editor.lua(
            "local out = {} for _, c in ipairs(vim.api.nvim_list_chans()) do "
            "if c.mode == 'rpc' and c.stream == 'job' then out[#out + 1] = c.id end end return out"
        )
        assert channels == []
        completion = editor.lua("return vim.fn.getcompletion('CaptainMemo ', 'cmdline')")
        assert completion == ["ambient", "build", "changes", "explain", "log", "lookup", "note", "recall", "save"]
        assert editor.lua("return vim.fn.getcompletion('CaptainMemo note s', 'cmdline')") == ["skill"]
    finally:
        close(editor)


def test_help_file_tags_every_command_option_mapping_and_highlight(tmp_path):
    import re
    import shutil

    doc = tmp_path / "doc"
    doc.mkdir()
    shutil.copy(REPO / "doc" / "captain-memo.txt", doc)
    editor = start_editor(tmp_path, observe=False)
    try:
        # :helptags refuses duplicate tags (E154) and a file without any.
        editor.nvim.command(f"helptags {doc}")
        inventory = editor.lua("""
            local memo = require('captain_memo')
            local out = { options = {}, subcommands = {}, plugs = {}, highlights = {} }
            local function walk(prefix, t)
              for k, v in pairs(t) do
                out.options[#out.options + 1] = prefix .. k
                if type(v) == 'table' and k ~= 'keymaps' then walk(prefix .. k .. '.', v) end
              end
            end
            walk('', memo.defaults)
            for _, name in ipairs({ 'profile', 'db', 'log_file', 'python' }) do out.options[#out.options + 1] = name end
            for name in pairs(require('captain_memo.commands').subcommands) do
              out.subcommands[#out.subcommands + 1] = name
            end
            for _, spec in pairs(require('captain_memo.keymaps').actions) do out.plugs[#out.plugs + 1] = spec.plug end
            for name in pairs(require('captain_memo.highlights').groups) do
              out.highlights[#out.highlights + 1] = name
            end
            return out""")
    finally:
        close(editor)
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    assert "captain-memo.txt" in tags
    expected = {":CaptainMemo"}
    expected |= {f"captain-memo.{o}" for o in inventory["options"]}
    expected |= {f":CaptainMemo-{s}" for s in inventory["subcommands"]}
    expected |= set(inventory["plugs"])
    expected |= {f"hl-{h}" for h in inventory["highlights"]}
    expected |= {f"captain-memo-results-{k}" for k in ("<CR>", "e", "s", "d", "q")}
    assert expected - tags == set()
    assert not [
        line
        for line in (doc / "captain-memo.txt").read_text().splitlines()
        if len(line) > 78 and not re.match(r"^\s*\S+\s*$", line)
    ], "lines fit in 78 columns"
