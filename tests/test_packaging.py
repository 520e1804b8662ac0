"""What the package imports is what it declares: every third-party module imported in captain_memo/
comes from a dependency in pyproject.toml, and one that only an optional extra brings is imported
inside a function, so the base install imports every module."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "captain_memo"


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """The base dependencies' names, and each extra's."""
    import tomllib  # here: the linter's target, Python 3.10, has no tomllib in its standard library

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: list[str]) -> set[str]:
        return {normalized(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in requirements}

    extras = {extra: names(reqs) for extra, reqs in project.get("optional-dependencies", {}).items()}
    return names(project["dependencies"]), extras


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def third_party_imports() -> list[tuple[str, str, bool]]:
    """(top-level module, file:line, imported at module level) for every import run at run time."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            if _type_checking_only(node, parents):
                continue
            at_top = parents.get(node) is tree
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top != "captain_memo":
                    found.append((top, f"{path.relative_to(ROOT)}:{node.lineno}", at_top))
    return found


def test_every_third_party_import_is_a_declared_dependency():
    base, extras = declared()
    optional = set().union(*extras.values()) - base
    owners = packages_distributions()
    undeclared, eager = [], []
    for module, where, at_top in third_party_imports():
        distributions = {normalized(d) for d in owners.get(module, [module])}
        if distributions & base:
            continue
        if distributions & optional:
            if at_top:
                eager.append(f"{where}: {module} (an optional extra's) imported at module level")
            continue
        undeclared.append(f"{where}: {module} (from {sorted(distributions)})")
    assert undeclared == [], "imported but not declared in pyproject.toml"
    assert eager == [], "the base install could not import these modules"
