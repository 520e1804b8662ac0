"""Real git repositories and note folders for the sources tests, built with the git command."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

GIT_CONFIG = (
    "-c",
    "user.name=Test Dev",
    "-c",
    "user.email=dev@example.com",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "init.defaultBranch=main",
    "-c",
    "core.hooksPath=/dev/null",
)
BASE_DAY = datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc).timestamp()

DECISION_SQLITE = """---
title: Store memories in SQLite
date: 2024-02-10
tags: [storage, sqlite]
---
# Store memories in SQLite

Status: accepted.

## Context

We need one local file per user that survives crashes and needs no server.

## Decision

Use SQLite in WAL mode with sqlite-vec for vectors and FTS5 for keywords.

```sql
## not a heading: a comment line in a code block
PRAGMA journal_mode = WAL;
```

## Consequences

Backups are a file copy. Two writers wait on the busy timeout instead of failing.
"""

DECISION_PORTS = """# Service ports

## Allocation

The API listens on 8080 and the metrics exporter on 9102; nothing else binds below 10000.

## Exceptions

The debug proxy may use 8081 on a developer machine only.
"""

SKILL_RELEASE = """---
name: cut-a-release
description: How to cut and publish a release of the service.
---
# Cut a release

## Steps

1. Bump the version in pyproject.toml.
2. Tag the commit `vX.Y.Z` and push the tag.

## Rollback

Delete the tag and yank the package; never reuse a version number.
"""

SKILL_ROLLBACK = """# Roll back a deploy

Run `deploy rollback --to PREVIOUS` and watch the error rate for ten minutes.
"""


def git(root: Path, *args: str, when: float | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    if when is not None:
        stamp = f"@{int(when)} +0000"
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    done = subprocess.run(["git", *GIT_CONFIG, *args], cwd=root, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def commit(root: Path, message: str, files: dict[str, str] | None = None, when: float | None = None) -> str:
    for rel, text in (files or {}).items():
        write(root, rel, text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", message, when=when)
    return git(root, "rev-parse", "HEAD")


def init_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    return root


def make_project(root: Path, commits: int = 30) -> list[str]:
    """A repository with two decisions, two skills and ``commits`` commits, one a day from 2024-01-01;
    returns the commit ids, oldest first. The first commit adds the notes."""
    init_repo(root)
    shas = [
        commit(
            root,
            "Add decisions and skills\n\nThe first notes of the project.",
            {
                "docs/decisions/0001-sqlite.md": DECISION_SQLITE,
                "docs/decisions/0002-ports.md": DECISION_PORTS,
                ".captain-memo/skills/release/SKILL.md": SKILL_RELEASE,
                ".captain-memo/skills/rollback.md": SKILL_ROLLBACK,
                "README.md": "# Demo service\n",
            },
            when=BASE_DAY,
        )
    ]
    for n in range(1, commits):
        shas.append(
            commit(
                root,
                f"Tune worker pool step {n}\n\nRaise the pool size to {n + 4} workers.",
                {f"src/worker_{n % 5}.py": f"POOL = {n + 4}\n"},
                when=BASE_DAY + n * 86400,
            )
        )
    return shas
