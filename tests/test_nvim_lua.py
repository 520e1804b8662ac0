"""Lua unit tests (tests/lua/*_spec.lua) run in a headless Neovim, plus checks that need the
Python side too: the Lua code-shape rule agrees with the ranker's, and start-up stays light."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from nvim_support import NVIM, REPO, child_env, close, requires_nvim, start_editor

pytestmark = [requires_nvim, pytest.mark.nvim]
SPECS = sorted((REPO / "tests" / "lua").glob("*_spec.lua"))


def run_lua(script: Path, tmp_path: Path, *args: str) -> str:
    """The output of ``nvim -l script args`` with the plugin on the runtime path; fails on an error."""
    done = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", f"set rtp^={REPO}", "-l", str(script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(tmp_path),
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_lua_spec(spec, tmp_path):
    output = run_lua(REPO / "tests" / "lua" / "run.lua", tmp_path, str(spec))
    assert "FAIL" not in output and " passed, 0 failed" in output, output


# Lays out the host's answer read from a file, as the results window does, and writes the lines as JSON.
LAYOUT = """
local format = require("captain_memo.format")
local result = vim.json.decode(io.open(arg[1]):read("a"))
local hit = result.hits[1]
local footer, warn = format.footer(result)
local lines = { (format.hit_line(hit, 200)) }
vim.list_extend(lines, format.preview(hit))
vim.list_extend(lines, (format.explanation(hit, result.profile)))
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines) -- raises "String cannot contain newlines"
io.stdout:write(vim.json.encode({ footer = footer, warn = warn, lines = lines }))
"""


def test_the_editor_lays_out_the_hosts_texts_raw_controls_never_reach_it(tmp_path):
    """A hit with line breaks and escape sequences in its title, branch, file and text, as the host
    sends it (presentation/window.py), laid out by format.lua: nothing raw, and the footer is the
    command line's own line."""
    import json
    import re
    import time

    from test_presentation import hostile_recall

    from captain_memo.cli.commands.recall import render
    from captain_memo.presentation.window import shown_recall

    now = time.time()
    data = hostile_recall(now)
    cli_footer = render(data).split("\n")[-2]
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(shown_recall(data, now)))
    script = tmp_path / "layout.lua"
    script.write_text(LAYOUT)
    shown = json.loads(run_lua(script, tmp_path, str(answer)))
    assert shown["footer"] == f" {cli_footer} " and shown["warn"] is True
    control = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
    assert not [line for line in shown["lines"] if control.search(line)]
    text = "\n".join(shown["lines"])
    assert "deploy\\u001b]52;c;aGVsbG8=\\u0007\\nforged line" in text
    assert "second\\u001b[2J line\\rback\tend\\u009bx" in text and "3d" in shown["lines"][0]
    assert "bm25 4.2, scaled among curated text" in text


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
