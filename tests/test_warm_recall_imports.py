"""A warm `captain-memo recall` imports only what it needs: the parser, the socket client and the
presentation of the answer. Every module the command line does not need costs each call its
import time (`python -X importtime`; doc/benchmarks.md section 10).

A real service answers (conftest.service_env); the command runs in a fresh Python.
"""

from __future__ import annotations

import os
import subprocess
import sys

from embed_support import REPO, cli
from service_support import status

# The request records and their field rules (app.py, fields.py, kinds.py): the service checks the
# request it is sent, so the thin client sends the JSON and builds no record.
NOT_NEEDED = (
    "captain_memo.requests.operations",
    "captain_memo.base.fields",
    "captain_memo.base.kinds",
    "captain_memo.config",
    "logging",
    # A plain command line is read without argparse (cli/plain_args.py); nothing needs typing, and
    # the store and its socket are named by strings (pathlib brings urllib.parse and ipaddress).
    "argparse",
    "typing",
    "pathlib",
    # The socket and json packages: their imports (re, enum, selectors, functools, collections)
    # cost a warm recall as much CPU as the interpreter's start; it talks through _socket and _json.
    "socket",
    "json",
    "re",
    "enum",
    "selectors",
    "functools",
    "collections",
)
PROBE = (
    "import sys\nfrom captain_memo.cli.main import main\ncode = main(['recall', 'zanzibar tenant'])\n"
    f"print('LOADED', sorted(m for m in {NOT_NEEDED!r} if m in sys.modules))\nsys.exit(code)"
)


def test_a_warm_recall_imports_no_request_record_or_settings(service_env):
    assert cli("remember", "The zanzibar cache key includes the tenant id.", env=service_env).returncode == 0
    asked = status(service_env)["requests"]
    done = subprocess.run(
        # -S: without site, whose .pth files are the virtualenv's, not the command's (an editable
        # install's path finder imports pathlib in every interpreter; a wheel's install has none).
        [sys.executable, "-S", "-c", PROBE],
        env={**os.environ, **service_env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "zanzibar" in done.stdout and "LOADED []" in done.stdout, done.stdout
    assert status(service_env)["requests"] > asked, "the service answered the recall"
