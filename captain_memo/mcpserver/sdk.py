"""The MCP SDK's server parts, imported without the SDK's package-wide imports.

Every ``mcp.server.*`` import first runs ``mcp/__init__.py`` and ``mcp/server/__init__.py``, and
those import the whole SDK: its client, its high-level server, their HTTP transports and OAuth
(httpx, uvicorn, sse-starlette, cryptography). A stdio server on the low-level ``Server`` runs none
of it, and it was 14 MB of each 70 MB `captain-memo mcp` process (doc/benchmarks.md, section 14).
Here those two packages' own ``__init__`` runs only when a name it binds is asked for (``mcp.Client``,
``from mcp.server import MCPServer``), so the server loads the modules it uses and what they import.
A process that imported ``mcp`` before this module keeps the package as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any

# Parents first: a package's stand-in is bound on its parent, as the import system binds it.
EAGER_PACKAGES = ("mcp", "mcp.server")
_init_lock = threading.RLock()  # one package's __init__ may ask the other for a name


def _defer_init(name: str) -> None:
    """Put package ``name`` in ``sys.modules`` with its ``__init__`` not yet run: its submodules
    import as usual, and asking it for any other name runs the ``__init__`` first."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not a package found on disk: import it the usual way
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attr: str) -> Any:  # PEP 562: called only for names the module lacks
        if attr.startswith("__") and attr != "__all__":
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")
        with _init_lock:
            if package.__dict__.pop("__getattr__", None) is not None:
                loader.exec_module(package)  # the package's __init__, in the module it would have made
        return getattr(package, attr)

    package.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, package)


for _package in EAGER_PACKAGES:
    _defer_init(_package)

from mcp.server.lowlevel import Server  # noqa: E402 - after the packages' stand-ins
from mcp.server.stdio import stdio_server  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp.shared.message import SessionMessage  # noqa: E402

__all__ = ["MCPError", "Server", "SessionMessage", "stdio_server"]
