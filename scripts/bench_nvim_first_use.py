#!/usr/bin/env python3
"""How long the editor is blocked by the plugin's first request, which starts the Python host.

    python scripts/bench_nvim_first_use.py [--runs 5] [--plugin DIR] [--manifest]

Each run starts a fresh headless Neovim with the plugin in ``--plugin`` (default: this checkout)
and an empty store, and times ``:CaptainMemo recall rounding`` inside Neovim (vim.uv.hrtime):
the command's synchronous part, during which the editor cannot react to a key. The answer itself
arrives later, from the worker thread, and is not counted. ``--manifest`` first writes the rplugin
manifest with :UpdateRemotePlugins, which checkouts whose host Neovim's python3 provider starts
need; g:python3_host_prog is this interpreter (for those; the current plugin uses it only when its
own environment is not built, as here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

TIMED = "local t = vim.uv.hrtime(); vim.cmd('CaptainMemo recall rounding'); return (vim.uv.hrtime() - t) / 1e6"


def one_run(nvim: str, plugin: Path, manifest: bool) -> float:
    import pynvim

    with tempfile.TemporaryDirectory(prefix="captain-memo-first-use-") as tmp:
        env = {
            "HOME": tmp,
            "PATH": os.environ["PATH"],
            "XDG_DATA_HOME": f"{tmp}/data",
            "XDG_STATE_HOME": f"{tmp}/state",
            "CAPTAIN_MEMO_DB": f"{tmp}/memo.db",
            "NVIM_RPLUGIN_MANIFEST": f"{tmp}/rplugin.vim",
        }
        prefix = ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
        args = ["--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", "set loadplugins"]
        args += ["--cmd", f"set rtp^={plugin}", "--cmd", f"let g:python3_host_prog = '{sys.executable}'"]
        if manifest:
            subprocess.run([*prefix, nvim, *args, "+UpdateRemotePlugins", "+qall!"], check=True, capture_output=True)
        editor = pynvim.attach("child", argv=[*prefix, nvim, "--embed", *args])
        try:
            return float(editor.exec_lua(TIMED))
        finally:
            editor.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--plugin", type=Path, default=REPO)
    parser.add_argument("--manifest", action="store_true", help="write the rplugin manifest first")
    args = parser.parse_args()
    from nvim_support import NVIM

    if NVIM is None:
        print("no Neovim found (pip install -e '.[test]')", file=sys.stderr)
        return 1
    times = [one_run(NVIM, args.plugin.resolve(), args.manifest) for _ in range(args.runs)]
    print(
        f"first request blocks the editor: median {statistics.median(times):.0f} ms, "
        f"range {min(times):.0f}-{max(times):.0f} ms over {args.runs} fresh editors ({args.plugin})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
