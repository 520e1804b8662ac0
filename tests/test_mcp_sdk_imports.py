"""mcpserver/sdk.py: the MCP server imports the SDK's server parts alone, and the rest of the SDK is
still there for whoever asks for it in the same process.

Each check runs in a fresh Python (this test process imported the whole SDK long ago).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SERVER = "import sys; import captain_memo.mcpserver.mcp_server\n"
UNUSED = ("mcp.client", "mcp.server.mcpserver", "httpx", "httpx2", "cryptography")


def run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_server_imports_none_of_the_sdk_it_does_not_run():
    code = (
        SERVER + f"print(sorted(m for m in sys.modules if m.split('.')[0] in {UNUSED!r} or m.startswith({UNUSED!r})))"
    )
    assert run_python(code).strip() == "[]"


@pytest.mark.parametrize(
    "asked",
    [
        "from mcp import Client, ClientSession, stdio_client",
        "import mcp; mcp.Client; mcp.types.Tool",
        "from mcp.server import MCPServer, NotificationOptions",
        "import mcp.server; mcp.server.MCPServer; mcp.Client",
        "from mcp import *; Client",
    ],
)
def test_a_name_the_sdk_packages_bind_is_there_when_asked_for(asked):
    """Asking for one runs the package's own __init__ then, once, as a plain import would have."""
    code = SERVER + asked + "\nimport mcp, mcp.server\nprint(mcp.Client.__module__, mcp.server.MCPServer.__module__)"
    assert run_python(code).split() == ["mcp.client.client", "mcp.server.mcpserver.server"]


def test_a_missing_name_is_an_attribute_error_naming_it():
    code = SERVER + "import mcp\ntry:\n    mcp.no_such_name\nexcept AttributeError as exc:\n    print(exc)"
    assert "no_such_name" in run_python(code)


def test_a_process_that_imported_the_sdk_first_keeps_it_as_it_is():
    code = "import mcp\nfirst = mcp\n" + SERVER + "print(sys.modules['mcp'] is first, 'mcp.client' in sys.modules)"
    assert run_python(code).split() == ["True", "True"]
