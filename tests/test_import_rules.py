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
FRONT_ENDS = ("captain_memo.cli", "captain_memo.editor", "captain_memo.mcpserver", "captain_memo.hook")
# The leaves every layer may use.
LEAVES = {"base", "records", "config", "errors"}
# What each place imports of the project, by its folder under captain_memo/ (a module at the root by
# its name): a new module is held to its folder's rule by where it is. Top to bottom: the front
# ends; the machinery holding one engine per store; the JSON edge; the door; the engine with the
# measuring tools; sources; presentation, embeddings, ranking and the store; the leaves.
MAY_IMPORT: dict[str, set[str]] = {
    # The command line runs the measuring tools (`bench`, `eval`), asks a serving engine through
    # hosting/ (answer, client, embedder) and runs the other front ends' command modules (DISPATCHER).
    "cli": LEAVES | {"memo", "presentation", "requests", "hosting", "bench", "evaluation"},
    # The editor's host holds and serves the engine of each store it uses (hosting/editor_engines).
    "editor": LEAVES | {"memo", "presentation", "requests", "hosting"},
    # `captain-memo mcp` is the relay to the store's engine (hosting/relay, hosting/agent_sessions).
    "mcpserver": LEAVES | {"memo", "presentation", "requests", "hosting"},
    # The hook asks the serving engine as the command line does (hosting/answer).
    "hook": LEAVES | {"memo", "presentation", "requests", "hosting"},
    "hosting": LEAVES | {"memo", "presentation", "requests"},
    "requests": LEAVES | {"memo", "presentation"},
    "memo": LEAVES | {"engine", "sources", "store", "embeddings", "ranking", "presentation"},
    "bench": LEAVES | {"engine", "sources", "store", "embeddings", "ranking", "evaluation"},
    "evaluation": LEAVES | {"engine", "sources", "store", "embeddings", "ranking", "bench"},
    "engine": LEAVES | {"sources", "store", "embeddings", "ranking"},
    "sources": LEAVES | {"store", "embeddings", "ranking"},
    "presentation": LEAVES | {"ranking"},
    "embeddings": LEAVES,
    "ranking": {"records", "config"},
    "store": LEAVES,
    "base": LEAVES,
    "records": LEAVES,
    "config": {"base", "errors"},
    "errors": set(),
    "": {"memo"},  # captain_memo/__init__.py: `Memo`, lazily
}
# The only imports across the table: the executable's dispatcher runs each other front end by its one
# command module; the process serving a store holds agents' MCP sessions (hosting/agent_sessions.py
# runs mcpserver's session over the served engine). The editor's health check reaches the engine's
# probes through the door (memo.health_probes).
CROSSINGS = {
    ("captain_memo.cli.main", "captain_memo.hook.prompt_hook"),
    ("captain_memo.cli.main", "captain_memo.mcpserver.command"),
    ("captain_memo.hosting.agent_sessions", "captain_memo.mcpserver"),
}


def place(module: str) -> str:
    """The folder (or root module) whose rule ``module`` keeps: ``captain_memo.engine.core`` -> engine."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def breaches(module: str, imported: list[tuple[str, int]]) -> list[str]:
    """The imports of ``module`` its folder's rule forbids (the package's own modules only)."""
    found = []
    for name, line in imported:
        if not name.startswith("captain_memo."):
            continue
        if name in ("captain_memo.__version__", "captain_memo.Memo"):
            continue
        here, there = place(module), place(name)
        crossing = any(within(module, (a,)) and within(name, (b,)) for a, b in CROSSINGS)
        if there != here and there not in MAY_IMPORT[here] and not crossing:
            found.append(f"{module}:{line} imports {name} ({here or 'root'} may not import {there or 'root'})")
    return found


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


def test_every_module_is_placed_by_its_folder():
    """The package root holds only the door, the records, the settings and the errors; every other
    module is in a folder the table names."""
    found = [module for module, _, _ in modules() if place(module) not in MAY_IMPORT]
    assert found == []


def test_each_layer_imports_only_what_its_folder_may():
    """A front end never imports another (but through the dispatcher), nor the engine, store,
    sources, embeddings or ranking; no layer imports one above it."""
    found = [use for module, _, tree in modules() for use in breaches(module, list(imports(tree, module)))]
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
        if within(
            name,
            BELOW_THE_DOOR
            + FRONT_ENDS
            + ("captain_memo.engine", "captain_memo.memo", "captain_memo.hosting", "captain_memo.requests"),
        )
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
            name,
            BELOW_THE_DOOR + FRONT_ENDS + ("captain_memo.engine.core", "captain_memo.memo", "captain_memo.ranking"),
        )
    ]
    assert found == []


def test_nothing_below_the_front_ends_imports_the_editor_client():
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if not within(module, FRONT_ENDS)
        for name, line in imports(tree, module)
        if within(name, ("captain_memo_nvim", "pynvim"))
    ]
    assert found == []


def test_the_rules_see_a_breach():
    """The checks above read what they claim to: an import inside a function is found; the MCP
    server borrowing the editor's helpers (as it once did), the store importing the door or the
    hosting, a command importing the engine or the hook's module are breaches; a new module at the
    root belongs to no layer."""
    tree = ast.parse("def f():\n    from captain_memo.editor.editor_requests import opened_json\n")
    borrowed = breaches(
        "captain_memo.mcpserver.memory_calls", list(imports(tree, "captain_memo.mcpserver.memory_calls"))
    )
    assert borrowed and "mcpserver may not import editor" in borrowed[0]
    lower = ast.parse("from captain_memo.hosting.client import call\nfrom captain_memo.memo import Memo\n")
    assert len(breaches("captain_memo.store.db", list(imports(lower, "captain_memo.store.db")))) == 4
    assert breaches("captain_memo.cli.commands.x", [("captain_memo.engine.core", 1)]) != []
    assert breaches("captain_memo.hook.prompt_hook", [("captain_memo.cli.commands._common", 1)]) != []
    assert breaches("captain_memo.cli.main", [("captain_memo.hook.prompt_hook", 1)]) == []
    assert breaches("captain_memo.cli.commands.x", [("captain_memo.hook.prompt_hook", 1)]) != []
    assert place("captain_memo.newthing") == "newthing" and "newthing" not in MAY_IMPORT
    tree = ast.parse("def f():\n    from captain_memo.store.db import store_error\n")
    assert ("captain_memo.store.db", 2) in set(imports(tree, "captain_memo.cli.commands.x"))
    tree = ast.parse("from . import health\n")
    assert ("captain_memo.store.health", 1) in set(imports(tree, "captain_memo.store.x"))
    tree = ast.parse("import sqlean\ndef f(store):\n    with store.write() as conn:\n        return store.conn, conn\n")
    assert connections_used(tree, "captain_memo.engine.doctor") == [
        "captain_memo.engine.doctor:1 imports sqlean",
        "captain_memo.engine.doctor:3 takes a connection from .write()",
        "captain_memo.engine.doctor:4 reads .conn",
    ]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
