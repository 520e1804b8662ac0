"""Installing the plugin as the README says, offline, on a Python marked externally managed (PEP 668):
the build step makes the plugin's own environment, and a real Neovim then runs its remote host from
there, with g:python3_host_prog never set and nothing installed into the system's Python.

Covered here: plain packages (the files under 'packpath', then `nvim -l build.lua`, which is also
rocks.nvim's recipe), a manager's hook inside the editor (packer, mini.deps, vim-plug) and lazy.nvim.
lazy.nvim itself cannot be had offline (it comes from GitHub), so tests/lazy_emulation stands in
for it, following its documented contract: the plugin loaded, then its build.lua run inside a
coroutine resumed by lazy's scheduler. The other managers' recipes call the same build step.
One environment is built per session (about a minute) and shared by both tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from install_support import REPO, marked_python, offline_pip_env, plugin_copy, refuses_pip, wheelhouse
from nvim_support import NVIM, requires_nvim

pytestmark = [
    requires_nvim,
    pytest.mark.nvim,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the marked interpreter is built for Linux"),
]

NOTE = ("Rounding money", "Round to two decimal places only when an amount is shown or stored.")
LAZY_EMULATION = Path(__file__).resolve().parent / "lazy_emulation"


@dataclass(frozen=True)
class Machine:
    """A user's machine: a system Python marked externally managed, a home, a store with a note."""

    root: Path
    system_bin: Path
    wheels: Path
    db: Path

    @property
    def data(self) -> Path:
        return self.root / "xdg_data_home"

    @property
    def venv(self) -> Path:
        return self.data / "nvim" / "captain-memo" / "venv"

    def env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.root / "home"),
            "PATH": f"{self.system_bin}:/usr/bin:/bin",
            "CAPTAIN_MEMO_DB": str(self.db),
            "CAPTAIN_MEMO_SERVICE": "0",
            **offline_pip_env(self.wheels),
        }
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[name] = str(self.root / name.lower())
        return env


@pytest.fixture(scope="session")
def machine(tmp_path_factory, request, local_embedder) -> Machine:
    from captain_memo.engine.core import Engine
    from captain_memo.store import NewMemory, Store

    root = tmp_path_factory.mktemp("user-machine")
    system_bin = marked_python(root / "system-python")
    said = refuses_pip(system_bin)
    assert "externally-managed-environment" in said, f"the marked Python is not externally managed for pip:\n{said}"
    cache = getattr(request.config, "cache", None)
    wheels = wheelhouse(Path(cache.mkdir("captain-memo-wheels")) if cache else root / "wheels")
    db = root / "memo.db"
    engine = Engine(Store(db), local_embedder)
    engine.remember(NewMemory(title=NOTE[0], body=NOTE[1]))
    engine.close()
    return Machine(root, system_bin, wheels, db)


@pytest.fixture(scope="session")
def packages_install(machine) -> Path:
    """The plain-packages recipe: the plugin's files under 'packpath', then its build step from a shell."""
    plugin = plugin_copy(machine.data / "nvim" / "site" / "pack" / "plugins" / "start" / "captain-memo")
    done = subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in machine.env().items()), NVIM, "-l", str(plugin / "build.lua")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=machine.root,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ready; its Python is {machine.venv}/bin/python" in done.stdout + done.stderr
    return plugin


def start_user_editor(machine: Machine, *cmds: str):
    """Neovim with no configuration but plugins loading, as a fresh user's: nothing on
    'runtimepath' beyond what 'packpath' brings, no g:python3_host_prog."""
    import pynvim

    argv = ["env", "-i", *(f"{k}={v}" for k, v in machine.env().items())]
    argv += [NVIM, "--embed", "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", "set loadplugins"]
    for cmd in cmds:
        argv += ["--cmd", cmd]
    nvim = pynvim.attach("child", argv=argv)
    nvim.exec_lua(
        "vim.api.nvim_create_autocmd('User', { pattern = 'CaptainMemoResults', callback = function() "
        "vim.g.results_shown = true end })"
    )
    return nvim


def wait_for(nvim, probe: str, timeout: float, what: str) -> int:
    """Poll a Lua expression until it is truthy; returns how many polls the editor answered."""
    deadline = time.monotonic() + timeout
    polls = 0
    while not nvim.exec_lua(f"return {probe}"):
        polls += 1
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {nvim.command_output('messages')}")
        time.sleep(0.05)
    return polls


def recall_from_own_environment(nvim, machine: Machine) -> list[str]:
    """Recall the note; the lines shown, after checking which Python answered."""
    nvim.command("CaptainMemo recall when do we round money")
    wait_for(nvim, "vim.g.results_shown", 120, "the results window")
    lines = nvim.exec_lua(
        "for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.api.nvim_buf_get_name(b) == 'captain-memo://results' "
        "then return vim.api.nvim_buf_get_lines(b, 0, -1, false) end end"
    )
    pid = nvim.exec_lua("return vim.fn.jobpid(require('captain_memo.host').job())")
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0].decode() == f"{machine.venv}/bin/python", argv
    assert os.path.realpath(f"/proc/{pid}/exe").startswith(str(machine.system_bin.parent)), "the marked Python runs it"
    assert nvim.exec_lua("return vim.g.python3_host_prog") is None
    return lines


def test_plain_packages_build_their_own_environment_and_run_from_it(machine, packages_install):
    nvim = start_user_editor(machine, f"cd {REPO}")  # a folder with another captain_memo package in it
    try:
        lines = recall_from_own_environment(nvim, machine)
        nvim.command("checkhealth captain-memo")
        report = "\n".join(nvim.exec_lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    finally:
        nvim.close()
    assert any(NOTE[0] in line for line in lines), lines
    assert f"OK python host: {machine.venv}/bin/python (the plugin's own environment)" in report, report
    assert "ERROR" not in report, report
    assert f"OK package: captain_memo 0.1.0 ({machine.data}/" in report, "the installed package, not the one in cwd"
    system_site = machine.system_bin.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert list((system_site / "site-packages").iterdir()) == [], "nothing was installed into the system's Python"
    assert f"home = {machine.system_bin}" in (machine.venv / "pyvenv.cfg").read_text()


def test_lazy_nvim_runs_build_lua_without_blocking_and_the_plugin_runs_from_its_environment(machine, packages_install):
    plugin = plugin_copy(machine.data / "nvim" / "lazy" / "captain-memo")  # where lazy.nvim clones it
    nvim = start_user_editor(machine, f"set runtimepath^={LAZY_EMULATION}")
    try:
        nvim.exec_lua("require('lazy').setup({ { 'you/captain-memo', cmd = 'CaptainMemo' } })")
        polls = wait_for(nvim, "vim.g.lazy_built", 600, "the build")
        built, progress = nvim.exec_lua("return { vim.g.lazy_built, vim.g.lazy_progress }")
        assert built is True, built
        assert polls > 3, "the editor answered while the build ran"
        assert "installing captain-memo and its dependencies" in progress, progress
        lines = recall_from_own_environment(nvim, machine)
    finally:
        nvim.close()
    assert any(NOTE[0] in line for line in lines), lines
    where = subprocess.run(
        [f"{machine.venv}/bin/python", "-c", "import captain_memo; print(captain_memo.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=machine.root,  # not this repository, whose captain_memo would shadow the installed one
    ).stdout.strip()
    assert where == str(plugin / "captain_memo" / "__init__.py"), "the environment follows lazy's copy of the plugin"


def test_a_managers_hook_runs_the_build_inside_the_editor_to_its_end(machine, packages_install):
    """packer's `run` and mini.deps' hooks call build.lua from inside Neovim, where lazy.nvim is
    not loaded: the build runs to its end before the hook returns (vim-plug's `do` calls the same
    function through require; rocks.nvim runs `nvim -l build.lua`, the plain packages' way)."""
    nvim = start_user_editor(machine)
    try:
        nvim.exec_lua(
            "dofile(...); vim.g.hook_returned = true",
            str(packages_install / "build.lua"),
        )
        assert nvim.exec_lua("return vim.g.hook_returned") is True
        python, how = nvim.exec_lua("return { require('captain_memo.host').python() }")
    finally:
        nvim.close()
    assert (python, how) == (f"{machine.venv}/bin/python", "the plugin's own environment")
    log = machine.root / "xdg_state_home" / "nvim" / "captain-memo-build.log"
    installs = log.read_text().count(f"--editable {packages_install} (exit 0)")
    assert installs == 2, "the shell's build and the hook's each installed the plugin"
