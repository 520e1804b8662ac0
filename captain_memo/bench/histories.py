"""A git repository rebuilt from a recorded history (../shared/histories/*.jsonl), for tests and
benchmarks on the shape of a real project's history.

Each line holds a commit (sha, parents, dates, message, touched files with git's name-status
letter), oldest first. ``rebuild`` feeds them to ``git fast-import`` with a placeholder blob per
touched file (the path and the commit's id), keeping dates and parents, so ``git log -- <path>``
answers as in the original. Release commits ("release version 3.0.1") get their tag.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from captain_memo.base.git_commands import fast_import

RELEASE = re.compile(r"^release version (\d+(?:\.\d+)+)\s*$", re.IGNORECASE)


def read_history(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _data(text: str) -> str:
    return f"data {len(text.encode())}\n{text}\n"


def _commit(n: int, commit: dict, marks: dict[str, int]) -> str:
    parents = [marks[p] for p in commit["parents"] if p in marks]
    head = "reset refs/heads/main\n" if not parents else ""
    lines = [
        f"{head}commit refs/heads/main\nmark :{n}\n",
        f"author Dev <dev@example.invalid> {commit['authored_at']} +0000\n",
        f"committer Dev <dev@example.invalid> {commit['committed_at']} +0000\n",
        _data(commit["message"]),
    ]
    if parents:
        lines.append(f"from :{parents[0]}\n")
        lines.extend(f"merge :{p}\n" for p in parents[1:])
    for status, path in commit["files"]:
        if status == "D":
            lines.append(f"D {path}\n")
        else:
            lines.append(f"M 100644 inline {path}\n" + _data(f"{path} at {commit['sha']}"))
    lines.append("\n")
    subject = commit["message"].strip().splitlines()[0] if commit["message"].strip() else ""
    if len(commit["parents"]) < 2 and (release := RELEASE.match(subject)):
        lines.append(f"reset refs/tags/{release.group(1)}\nfrom :{n}\n\n")
    return "".join(lines)


def rebuild(history: Path, root: Path, exported: Path | None = None) -> int:
    """Write the repository at ``root`` (a new folder); returns the number of commits. With
    ``exported``, each commit's mark (its line number in the history) and rebuilt sha go there."""
    commits = read_history(history)
    marks: dict[str, int] = {}
    stream = []
    for n, commit in enumerate(commits, start=1):
        stream.append(_commit(n, commit, marks))
        marks[commit["sha"]] = n
    fast_import(root, "".join(stream), marks=exported)
    return len(commits)


def rebuild_mapped(history: Path, root: Path, scratch: Path) -> dict[str, str]:
    """Write the repository at ``root``; returns each recorded commit's sha -> its sha in the
    rebuilt repository (author and blobs differ, so every sha does). ``scratch``: a folder for the
    marks file, outside the repository."""
    exported = scratch / "rebuilt-marks"
    rebuild(history, root, exported)
    rebuilt = dict(line.split() for line in exported.read_text().splitlines() if line.strip())
    return {commit["sha"]: rebuilt[f":{n}"] for n, commit in enumerate(read_history(history), start=1)}
