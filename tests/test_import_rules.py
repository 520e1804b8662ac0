"""The layers keep to their rules: SQL and database connections only in the store, front ends only
through the application interface, ranking on plain records alone, nothing below the front ends
importing them, and no circle of imports through the store.

Read from the source with ``ast`` (imports inside functions count too), so a rule broken anywhere
in the package fails here with the module and the line.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "captain_memo"
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|PRAGMA|BEGIN|COMMIT|ROLLBACK)\b")
BELOW_THE_DOOR = ("captain_memo.store", "captain_memo.embeddings", "captain_memo.sources")
STORE = ("captain_memo.store",)
# The database drivers: only the store connects, so only the store imports them.
DRIVERS = ("sqlean", "sqlite3", "psycopg")
FRONT_ENDS = (
    "captain_memo.cli",
    "captain_memo.commands",
    "captain_memo.editor",
    "captain_memo.mcpserver",
    "captain_memo.app",
    "captain_memo.agent_tools",  # app.py's operations for an agent's tools
    "captain_memo.warm",
    "captain_memo.service",
)
# The front ends that must not borrow from one another, each with its modules.
SEPARATE_FRONT_ENDS = {
    "command line": ("captain_memo.cli", "captain_memo.commands"),
    "editor": ("captain_memo.editor",),
    "MCP server": ("captain_memo.mcpserver",),
    "warm service": ("captain_memo.service",),
}
# A front end's door for the others: the warm service's client (what the command line asks it with,
# and the embedder `index` and `import` ask the serving engine's vectors with), its server and handover, with which the editor's host serves the engine it holds, and the relay
# `captain-memo mcp` runs to have an agent's session held by the store's engine.
FRONT_END_DOORS = (
    "captain_memo.service.client",
    "captain_memo.service.embedder",
    "captain_memo.service.wire",
    "captain_memo.service.server",
    "captain_memo.service.handover",
    "captain_memo.service.relay",
)
# `captain-memo mcp` starts the MCP server: the one command that runs another front end.
# The process serving a store holds agents' MCP sessions for their relays (service/relay.py).
LAUNCHERS = {
    ("captain_memo.commands.mcp", "captain_memo.mcpserver.server"),
    ("captain_memo.commands.mcp", "captain_memo.mcpserver.server.serve"),
    ("captain_memo.commands.mcp", "captain_memo.mcpserver.hosted"),  # the session here, while no engine answers
    ("captain_memo.commands.mcp", "captain_memo.mcpserver.hosted.serve_here"),
    ("captain_memo.service.server", "captain_memo.mcpserver.hosted"),
    ("captain_memo.service.server", "captain_memo.mcpserver.hosted.checked_request"),
    ("captain_memo.service.server", "captain_memo.mcpserver.hosted.serve_session"),
}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def imports(tree: ast.AST, module: str):
    """(imported module, line) for every import statement, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + ([base] if base else []))
            yield base, node.lineno
            for alias in node.names:  # `from captain_memo import store` imports a module too
                yield f"{base}.{alias.name}", node.lineno


def within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_sql_is_written_and_executed_only_inside_the_store():
    found = []
    for module, _, tree in modules():
        if within(module, ("captain_memo.store",)):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
            ):
                found.append(f"{module}:{node.lineno} calls {node.func.attr}()")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
                found.append(f"{module}:{node.lineno} holds SQL {node.value[:40]!r}")
    assert found == []


def connections_used(tree: ast.AST, module: str) -> list[str]:
    """Where a module outside the store touches a database connection: a driver imported, a
    store's ``.conn`` read, or a transaction's connection taken from ``store.write()``."""
    found = [f"{module}:{line} imports {name}" for name, line in imports(tree, module) if within(name, DRIVERS)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "conn":
            found.append(f"{module}:{node.lineno} reads .conn")
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if (
                    item.optional_vars is not None
                    and isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "write"
                ):
                    found.append(f"{module}:{node.lineno} takes a connection from .write()")
    return found


def test_no_connection_leaves_the_store():
    """Outside store/ a store is asked by name (``store.integrity()``, ``store.touched_paths()``);
    no module holds its connection, imports a driver, or catches a driver's exception (the store
    raises the project's own, errors.py)."""
    found = [
        use for module, _, tree in modules() if not within(module, STORE) for use in connections_used(tree, module)
    ]
    assert found == []


def module_imports(tree: ast.AST, module: str, known: set[str]) -> set[str]:
    """The package's modules ``module`` imports (inside functions and type-checking blocks too);
    ``from package import module`` names the module, not the package's ``__init__``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + ([base] if base else []))
            named = {f"{base}.{alias.name}" for alias in node.names} & known
            found |= named or {base}
    return (found & known) - {module}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import graph's circles: each set of modules that import one another, in a ring or
    through others (Tarjan's strongly connected components, with more than one module)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            ring = []
            while (top := stack.pop()) != node:
                ring.append(top)
            if ring:
                found.append(sorted([node, *ring]))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_the_search_legs_do_not_import_the_team_store():
    """store/search.py hands the keyword searches to the store it is given (``MemoryStore``); the
    team store imports what it shares with the search, never the other way round."""
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if module == "captain_memo.store.search"
        for name, line in imports(tree, module)
        if within(name, ("captain_memo.store.postgres",))
    ]
    assert found == []


def test_no_circle_of_imports_passes_through_the_store():
    parsed = list(modules())
    known = {module for module, _, _ in parsed}
    graph = {module: module_imports(tree, module, known) for module, _, tree in parsed}
    assert [ring for ring in circles(graph) if any(within(m, STORE) for m in ring)] == []


def test_front_ends_go_through_the_application_interface():
    """A front end sees the interface (memo.py), the records and the presentation; a hit's JSON comes
    from presentation/views.py, so no front end reads the ranking's own records."""
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if within(module, FRONT_ENDS)
        for name, line in imports(tree, module)
        if within(name, BELOW_THE_DOOR + ("captain_memo.engine", "captain_memo.ranking"))
    ]
    assert found == []


def front_end_of(module: str) -> str | None:
    return next((name for name, parts in SEPARATE_FRONT_ENDS.items() if within(module, parts)), None)


def test_front_ends_do_not_import_each_other():
    """What two front ends share lives in the library; one reaches another only through its door."""
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if front_end_of(module)
        for name, line in imports(tree, module)
        if front_end_of(name) not in (None, front_end_of(module))
        and not within(name, FRONT_END_DOORS)
        and (module, name) not in LAUNCHERS
    ]
    assert found == []


def test_presentation_has_one_home():
    """How a memory or a hit is shown (an age, a count, an explanation, a snippet, a memory's JSON
    with its file found) is written once, in captain_memo/presentation/: no other module defines a
    function of the same name, and the presentation reads nothing below the application interface."""
    shown = {
        node.name
        for module, _, tree in modules()
        if within(module, ("captain_memo.presentation",))
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    }
    assert {"age", "explain_lines", "opened_json", "located", "excerpt", "recall_json", "snippet"} <= shown
    found = [
        f"{module}:{node.lineno} defines {node.name}()"
        for module, _, tree in modules()
        if not within(module, ("captain_memo.presentation",))
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in shown
    ]
    found += [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if within(module, ("captain_memo.presentation",))
        for name, line in imports(tree, module)
        if within(name, BELOW_THE_DOOR + FRONT_ENDS + ("captain_memo.engine", "captain_memo.memo"))
    ]
    assert found == []


def test_ranking_needs_only_the_records_and_the_settings():
    allowed = ("captain_memo.ranking", "captain_memo.records", "captain_memo.config", "numpy")
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if within(module, ("captain_memo.ranking",))
        for name, line in imports(tree, module)
        if not within(name, allowed)
        and name.split(".")[0] not in sys.stdlib_module_names
        and name != "__future__.annotations"
    ]
    assert found == []


def test_the_settings_import_nothing_below_them():
    """config.py is read by every layer: it imports the library's leaves, never a layer below."""
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if module == "captain_memo.config"
        for name, line in imports(tree, module)
        if within(
            name, BELOW_THE_DOOR + FRONT_ENDS + ("captain_memo.engine", "captain_memo.memo", "captain_memo.ranking")
        )
    ]
    assert found == []


def test_nothing_below_the_front_ends_imports_them():
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if not within(module, FRONT_ENDS)
        for name, line in imports(tree, module)
        if within(name, FRONT_ENDS) or within(name, ("captain_memo_nvim", "pynvim"))
    ]
    assert found == []


def test_the_rules_see_a_breach():
    """The checks above read what they claim to: an import inside a function is found, and the MCP
    server borrowing the editor's helpers (as it once did) is a breach."""
    tree = ast.parse("def f():\n    from captain_memo.editor.service import opened_json\n")
    borrowed = {name for name, _ in imports(tree, "captain_memo.mcpserver.service")}
    assert any(front_end_of(name) == "editor" for name in borrowed)
    assert front_end_of("captain_memo.mcpserver.service") == "MCP server"
    tree = ast.parse("def f():\n    from captain_memo.store.db import store_error\n")
    assert ("captain_memo.store.db", 2) in set(imports(tree, "captain_memo.commands.x"))
    tree = ast.parse("from . import health\n")
    assert ("captain_memo.store.health", 1) in set(imports(tree, "captain_memo.store.x"))
    tree = ast.parse("import sqlean\ndef f(store):\n    with store.write() as conn:\n        return store.conn, conn\n")
    assert connections_used(tree, "captain_memo.doctor") == [
        "captain_memo.doctor:1 imports sqlean",
        "captain_memo.doctor:3 takes a connection from .write()",
        "captain_memo.doctor:4 reads .conn",
    ]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
