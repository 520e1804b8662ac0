"""The layers keep to their rules: SQL only in the store, front ends only through the application
interface, ranking on plain records alone, and nothing below the front ends importing them.

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
FRONT_ENDS = (
    "captain_memo.cli",
    "captain_memo.commands",
    "captain_memo.editor",
    "captain_memo.mcpserver",
    "captain_memo.app",
    "captain_memo.warm",
    "captain_memo.service",
)


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


def test_front_ends_go_through_the_application_interface():
    """A front end sees the interface (memo.py), the records and the result formatting (ranking/result.py)."""
    found = [
        f"{module}:{line} imports {name}"
        for module, _, tree in modules()
        if within(module, FRONT_ENDS)
        for name, line in imports(tree, module)
        if within(name, BELOW_THE_DOOR + ("captain_memo.engine",))
        or within(name, ("captain_memo.ranking",))
        and not within(name, ("captain_memo.ranking.result",))
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
    """The checks above read what they claim to: an import inside a function is found."""
    tree = ast.parse("def f():\n    from captain_memo.store.db import store_error\n")
    assert ("captain_memo.store.db", 2) in set(imports(tree, "captain_memo.commands.x"))
    tree = ast.parse("from . import health\n")
    assert ("captain_memo.store.health", 1) in set(imports(tree, "captain_memo.store.x"))
