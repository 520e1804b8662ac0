"""Does "latest change to <module>" find the newest commit that touched that module?

On a repository indexed with ``index --git``: for every module (a source file's name without its
folder and extension) touched by at least ``min_commits`` of the indexed commits, ask each question
form and check whether the newest commit touching it is in the top ``k``. ``generate_history``
writes a repository with a known answer for tests and benchmarks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from captain_memo.base import git_commands

FORMS = ("latest change to {module}", "what changed most recently in {module}")
DAY = 86400


@dataclass(frozen=True)
class LatestResult:
    modules: int
    found: dict[str, int]  # form -> modules whose newest commit was in the top k
    misses: tuple[tuple[str, str, int | None], ...]  # (form, module, rank of the newest or None)

    def share(self, form: str) -> float:
        return self.found[form] / self.modules if self.modules else 0.0


def newest_per_module(
    root: Path, max_commits: int, suffixes: tuple[str, ...] = (".py",), min_commits: int = 2, under: str = ""
) -> dict[str, str]:
    """module -> id of the newest non-merge commit touching it, among the newest ``max_commits``;
    modules are files with one of ``suffixes`` in the folder ``under`` (or anywhere)."""
    # NUL-separated (-z): each commit is an empty field, its id, then its paths (the first after a
    # newline); a path is never empty, so an empty field always starts a commit.
    output = git_commands.checked(
        root, "log", f"--max-count={max_commits}", "--no-merges", "-z", "--name-only", "--no-renames", "--format=%x00%H"
    )
    records: list[tuple[str, list[str]]] = []  # newest first
    starts = True
    for field in output.decode("utf-8", "replace").split("\0"):
        if not field:
            starts = True
        elif starts:
            records.append((field, []))
            starts = False
        else:
            records[-1][1].append(field.removeprefix("\n"))
    newest: dict[str, str] = {}
    touched: dict[str, int] = {}
    for sha, files in records:
        for module in {
            PurePosixPath(f).stem for f in files if PurePosixPath(f).suffix in suffixes and f.startswith(under)
        }:
            if module.startswith("__"):
                continue
            newest.setdefault(module, sha)
            touched[module] = touched.get(module, 0) + 1
    return {module: sha for module, sha in newest.items() if touched[module] >= min_commits}


def measure(
    engine,
    project: str | None,
    newest: dict[str, str],
    k: int = 3,
    forms: tuple[str, ...] = FORMS,
    profile: str | None = None,
) -> LatestResult:
    found = {form: 0 for form in forms}
    misses = []
    for module, sha in sorted(newest.items()):
        for form in forms:
            hits = engine.recall(
                form.format(module=module), project=project, limit=10, record=False, profile=profile
            ).hits
            commits = [hit.memory.source.commit for hit in hits]
            rank = commits.index(sha) + 1 if sha in commits else None
            if rank is not None and rank <= k:
                found[form] += 1
            else:
                misses.append((form, module, rank))
    return LatestResult(len(newest), found, tuple(misses))


MODULES = (
    "capture fixtures runner config terminal python nodes reports logging monkeypatch tmpdir cacheprovider "
    "junitxml pastebin skipping warnings doctest unittest recwarn pathlib assertion compat outcomes mark "
    "hookspec helpconfig stepwise faulthandler setuponly debugging"
).split()
SUBJECTS = [
    "Fix {m} crash when the {x} is empty",
    "perf({m}): avoid copying the {x} on every call",
    "Refactor {m}: split the {x} handling into a helper",
    "{m}: handle a missing {x} gracefully",
    "Add type hints to the {x} code",
    "Improve the error message for a bad {x}",
    "Deprecate the old {x} option",
    "Support a custom {x} in {m}",
    "Clean up {x} after each test",
]
THINGS = [
    "buffer",
    "path",
    "config value",
    "plugin list",
    "node id",
    "warning filter",
    "temp folder",
    "report",
    "marker",
    "fixture scope",
    "exit code",
    "encoding",
]
CHORES = [
    "Bump the pre-commit hooks",
    "Update the changelog",
    "Fix typos in the docs",
    "Bump setuptools-scm",
    "Run the formatter over the code base",
    "Update the CI matrix",
]


def generate_history(
    root: Path, commits: int = 320, modules: Sequence[str] = MODULES, seed: int = 15, start: float = 1_600_000_000.0
) -> None:
    """A git repository of ``commits`` dated commits (about a day apart, in order) over ``modules``,
    written with ``git fast-import``: module commits whose subject may or may not name the module, a
    few chores over several modules at once, and dependency bumps that touch no module."""
    rng = random.Random(seed)
    stream = []
    when = start
    for n in range(commits):
        when += rng.uniform(0.3, 1.7) * DAY
        roll = rng.random()
        if roll < 0.1:
            files = [f"src/pkg/{m}.py" for m in rng.sample(modules, 3)]
            subject = rng.choice(CHORES)
        elif roll < 0.15:
            files = ["requirements.txt"]
            subject = f"Bump dependency {rng.choice(['attrs', 'pluggy', 'packaging'])} to 1.{n}"
        else:
            module = modules[n % len(modules)] if n < len(modules) else rng.choice(modules)
            files = [f"src/pkg/{module}.py"] + ([f"testing/test_{module}.py"] if rng.random() < 0.5 else [])
            subject = rng.choice(SUBJECTS).format(m=module, x=rng.choice(THINGS))
        message = f"{subject}\n\nChange {n}.\n"
        stream.append(
            f"commit refs/heads/main\nmark :{n + 1}\ncommitter Dev <dev@example.org> {int(when)} +0000\n"
            f"data {len(message.encode())}\n{message}" + ("" if n == 0 else f"from :{n}\n")
        )
        for path in files:
            content = f"# {path} at change {n}\n"
            stream.append(f"M 100644 inline {path}\ndata {len(content.encode())}\n{content}")
        stream.append("\n")
    git_commands.fast_import(root, "".join(stream))
