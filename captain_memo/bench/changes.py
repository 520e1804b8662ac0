"""Change questions on a real history: is the newest commit touching a module in the top 3?

For every module (a ``.py`` file other than a package's ``__init__``) touched by ``min_commits`` or
more of the indexed commits, three questions: "latest change to <stem>", "what changed most
recently in <stem>" and "latest change to <path>"; the answer is the newest non-merge commit
touching that path among those indexed. ``write_notes`` writes a folder of notes that talk about
the same modules (how-tos, decisions, changelog sections), indexed beside the history so that the
commits compete with prose about their modules, as docs and changelogs do in a real repository.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from captain_memo.sources.git_history import read_commits

FORMS = ("latest change to {stem}", "what changed most recently in {stem}", "latest change to {path}")
# As a new user phrased them (scripts/bench_changes.py --phrasings): "what's new", and a file's name
# where files of other folders end with it (test_<name>.py).
PHRASINGS = ("what's new in {stem}", "what changed recently in {name}")
PACKAGE_FORM = "latest change to {stem}"  # a package's name: the newest change to any file under it


@dataclass(frozen=True)
class Case:
    question: str
    path: str
    sha: str


@dataclass(frozen=True)
class ChangeResult:
    cases: int
    found: dict[str, int]  # form -> questions whose answer was in the top k
    asked: dict[str, int]  # form -> questions asked
    misses: tuple[tuple[str, int | None], ...]  # (question, rank of the answer or None)

    def share(self, form: str | None = None) -> float:
        found = sum(self.found.values()) if form is None else self.found[form]
        asked = sum(self.asked.values()) if form is None else self.asked[form]
        return found / asked if asked else 0.0


def modules_touched(root: Path, max_commits: int, min_commits: int = 3) -> dict[str, str]:
    """path -> the newest non-merge commit touching it, for every module touched ``min_commits``+
    times by the newest ``max_commits`` commits (as ``index --git`` reads them)."""
    commits = [c for c in read_commits(root, None, max_commits) if c.parents < 2]
    touched = Counter(path for c in commits for path in set(c.files))
    newest: dict[str, str] = {}
    for commit in reversed(commits):  # newest first
        for path in commit.files:
            newest.setdefault(path, commit.sha)
    return {
        path: newest[path]
        for path, count in sorted(touched.items())
        if count >= min_commits and path.endswith(".py") and PurePosixPath(path).name != "__init__.py"
    }


def packages_touched(root: Path, max_commits: int, min_commits: int = 3) -> dict[str, str]:
    """package folder -> the newest non-merge commit touching a .py file under it, for every
    package (a folder whose ``__init__.py`` was touched) whose name no other package has, touched
    ``min_commits``+ times."""
    commits = [c for c in read_commits(root, None, max_commits) if c.parents < 2]
    folders = {str(PurePosixPath(p).parent) for c in commits for p in c.files if PurePosixPath(p).name == "__init__.py"}
    names = Counter(PurePosixPath(f).name for f in folders)
    out = {}
    for folder in sorted(f for f in folders if names[PurePosixPath(f).name] == 1 and f != "."):
        under = [c for c in commits if any(p.startswith(folder + "/") and p.endswith(".py") for p in c.files)]
        if len(under) >= min_commits:
            out[folder] = under[-1].sha  # oldest first: the last is the newest
    return out


def cases_for(modules: dict[str, str], forms: tuple[str, ...] = FORMS) -> list[tuple[str, Case]]:
    return [
        (form, Case(form.format(stem=PurePosixPath(path).stem, path=path, name=PurePosixPath(path).name), path, sha))
        for path, sha in modules.items()
        for form in forms
    ]


def measure(
    engine, project: str | None, cases: list[tuple[str, Case]], k: int = 3, profile: str | None = None
) -> ChangeResult:
    found: Counter = Counter()
    asked: Counter = Counter()
    misses = []
    for form, case in cases:
        hits = engine.recall(case.question, project=project, limit=10, record=False, profile=profile).hits
        commits = [hit.memory.source.commit for hit in hits]
        rank = commits.index(case.sha) + 1 if case.sha in commits else None
        asked[form] += 1
        if rank is not None and rank <= k:
            found[form] += 1
        else:
            misses.append((case.question, rank))
    return ChangeResult(len(cases), {f: found[f] for f in asked}, dict(asked), tuple(misses))


HOWTOS = [
    "How {stem} works\n\nThe {stem} module ({path}) is where {topic} lives. Read it before changing {topic}:"
    " most bugs there come from {topic} being shared between requests.",
    "Decision: keep {topic} in {stem}\n\nWe decided to keep {topic} inside {path} rather than split it out."
    " The latest change to the layout was discussed and rejected: it made {topic} harder to follow.",
    "Changelog: changes to {stem}\n\n- {topic} in {stem} now raises a clearer error.\n- Deprecated the old"
    " {topic} option; it will be removed in the next release.\n- The most recent fix changed how {topic} is reset.",
    "Deprecations and removals ({stem})\n\n" + "The {topic} helper of {stem} changed its signature. " * 12,
    "Troubleshooting {stem}\n\nWhen {topic} misbehaves, set a breakpoint in {path}. Recent versions log"
    " every {topic} change at debug level.",
]
TOPICS = [
    "request context",
    "configuration loading",
    "JSON encoding",
    "error handlers",
    "URL routing",
    "session cookies",
    "template rendering",
    "blueprint registration",
    "command line options",
    "test client",
    "signals",
    "static files",
]


def write_notes(folder: Path, paths: list[str], count: int = 300, seed: int = 20) -> int:
    """``count`` markdown notes about the modules at ``paths`` (how-tos, decisions, changelog
    sections), each naming its module's stem and path; returns how many were written."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        path = paths[n % len(paths)]
        text = rng.choice(HOWTOS).format(stem=PurePosixPath(path).stem, path=path, topic=rng.choice(TOPICS))
        (folder / f"note-{n:03d}.md").write_text(f"# {text}\n", encoding="utf-8")
    return count
