"""Talking to a real `captain-memo mcp` child process with the MCP SDK's own stdio client.

``connect`` spawns the installed ``captain-memo mcp`` in a chosen folder with a chosen store, and
yields the SDK's ``Client`` speaking to it (the initialize handshake, as today's agents do, unless
``mode`` says otherwise). The child's stderr goes to a file the test can read. ``run`` drives an
async test body from a plain pytest test.
"""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

CLIENT = "test-agent"


def run(body, *args):
    return anyio.run(body, *args)


def server_command() -> tuple[str, list[str]]:
    """The console script pip installed next to this Python, else the module."""
    script = Path(sys.executable).parent / "captain-memo"
    if script.exists():
        return str(script), ["mcp"]
    return sys.executable, ["-m", "captain_memo.cli.main", "mcp"]


def file_uri(path: Path) -> str:
    return Path(path).resolve().as_uri()


def root_uri(root: Path | str) -> str:
    """A folder as a file URI; a string that already is a URI stays as it is."""
    return root if isinstance(root, str) and root.startswith("file:") else file_uri(Path(root))


@asynccontextmanager
async def connect(
    db: Path,
    cwd: Path,
    roots: list[Path | str] | None = None,
    env: dict | None = None,
    client: str = CLIENT,
    mode: str = "legacy",
    stderr: Path | None = None,
    options: tuple = (),
):
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, args = server_command()
    # The SDK passes the child only a few of this process's variables: the test's own settings
    # (conftest.py: its home, the warm service off, in the test's folder) are passed on too.
    inherited = {name: value for name, value in os.environ.items() if name.startswith("CAPTAIN_MEMO_")}
    params = StdioServerParameters(
        command=command,
        args=[*args, *options],
        cwd=str(cwd),
        env={"CAPTAIN_MEMO_DB": str(db), **inherited, **(env or {})},
    )
    callback = None
    if roots is not None:

        async def callback(context):
            return types.ListRootsResult(roots=[types.Root(uri=root_uri(p), name="root") for p in roots])

    log = stderr or Path(db).with_suffix(".mcp-stderr.log")
    with open(log, "a", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            mode=mode,
            list_roots_callback=callback,
            client_info=types.Implementation(name=client, version="1.0"),
            read_timeout_seconds=120,
        ) as session:
            yield session


def children_named(fragment: str) -> list[int]:
    """Pids of this process's children whose command line holds ``fragment`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and fragment in cmdline:
            found.append(int(entry.name))
    return found


def maps_of(pid: int) -> str:
    return (Path("/proc") / str(pid) / "maps").read_text()
