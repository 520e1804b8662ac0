"""A load test of the team store: clients in separate processes, each connected as its own
PostgreSQL role, saving and searching through the team client (team.py) over the engine on
``TeamStore``, as a command does, for a while; then the store's owner checks what they were told
against what the database holds.

The invariants: every acknowledged save is stored exactly once, with the id and project the
client was given (nothing lost, no duplicate); no recall ever returns a memory of a project the
client's role was not granted, and the same holds when the role asks the tables directly in SQL
(row-level security, not our client, is what keeps projects apart).

Clients embed with ``TopicEmbedder`` (vectors drawn from the synthetic corpus's clusters, seeded
by the text), not the model: on one 2-core machine twenty copies of the model would measure the
model, and in a team each developer's own machine embeds before it asks the server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from captain_memo.store.postgres import audit as team_audit

ROLE_PREFIX = "memo_load_"
SECRET_PROJECT = "git.example.com/ops/secrets"  # granted to no client; holds rows like theirs
TOPICS = 200
WORDS = "retry timeout cache invoice rounding migration deploy lock queue parser token schema index".split()
DSN_VARIABLE = "CAPTAIN_MEMO_LOAD_DSN"  # the client's connection string, kept out of argv


@dataclass(frozen=True)
class Plan:
    """How many clients, for how long, over how many projects; every name and grant follows."""

    clients: int = 20
    seconds: float = 60.0
    projects: int = 6
    seed: int = 7
    secret_rows: int = 200
    pause: float = 0.0  # seconds each client waits after a save and a recall: 0 keeps it busy
    restart_at: float = 0.0  # seconds into the run when the server is restarted (0: never)

    def project(self, index: int) -> str:
        return f"git.example.com/team/p{index % self.projects}"

    def role(self, client: int) -> str:
        return f"{ROLE_PREFIX}{client:02d}"

    def granted(self, client: int) -> tuple[str, ...]:
        """Two neighbouring projects per client: each project is shared by several clients and
        every client is refused the rest."""
        return (self.project(client), self.project(client + 1))

    def all_projects(self) -> tuple[str, ...]:
        return tuple(self.project(i) for i in range(self.projects)) + (SECRET_PROJECT,)


class TopicEmbedder:
    """A text naming ``topicN`` becomes a sample of the synthetic corpus's cluster N, seeded by the
    whole text: the same text, the same vector; texts of one topic near one another."""

    model_id = "load:topics"
    dim = 384

    def __init__(self, seed: int = 7):
        from captain_memo.bench.synth import Space, Spec

        self.space = Space(Spec(chunks=1, seed=seed, clusters=TOPICS))

    def embed(self, texts) -> np.ndarray:
        rows = []
        for text in texts:
            found = re.search(r"topic(\d+)", text)
            cluster = int(found.group(1)) % TOPICS if found else 0
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            rows.append(self.space.sample(rng, np.array([cluster]))[0])
        return np.stack(rows)


def note_text(rng: np.random.Generator, topic: int, marker: str = "") -> str:
    words = " ".join(rng.choice(WORDS, size=6))
    return f"topic{topic} {words} {marker}".strip()


# --- the owner's side --------------------------------------------------------------------------


def prepare(admin_dsn: str, plan: Plan) -> None:
    """Migrate, bind the model, create the client roles and their grants, seed the secret project.

    Roles and grants are what doc/team.md tells an administrator to run."""
    from captain_memo.engine.core import Engine
    from captain_memo.records import NewMemory
    from captain_memo.store.postgres.store import TeamStore
    from captain_memo.store.postgres.vectors import PgVectorIndex

    store = TeamStore(admin_dsn)
    engine = Engine(store, TopicEmbedder(plan.seed), PgVectorIndex(store))
    try:
        audit = team_audit.Audit(store)
        for client in range(plan.clients):
            audit.add_member(plan.role(client))
            for project in plan.granted(client):
                audit.grant(plan.role(client), project)
        rng = np.random.default_rng([plan.seed, 9])
        engine.remember_many(
            [
                NewMemory(body=note_text(rng, i % TOPICS, f"secret-{i}"), title=f"secret {i}", project=SECRET_PROJECT)
                for i in range(plan.secret_rows)
            ]
        )
    finally:
        engine.close()


@dataclass(frozen=True)
class ClientResult:
    role: str
    granted: tuple[str, ...]
    acks: list = field(default_factory=list)  # [marker, memory id, project] per acknowledged save
    save_ms: list = field(default_factory=list)
    recall_ms: list = field(default_factory=list)
    recalls: int = 0
    hits_seen: int = 0
    leaks: list = field(default_factory=list)  # a recall hit outside the grants: [memory id, project]
    sql_leaks: dict = field(default_factory=dict)  # project -> rows a direct SELECT returned
    foreign_insert: str = ""  # what happened on an INSERT into a project not granted
    errors: list = field(default_factory=list)
    error_times: list = field(default_factory=list)  # time.time() of each error
    ack_times: list = field(default_factory=list)  # time.time() of each acknowledged save


def run_client(plan: Plan, client: int, dsn: str, ready: Path | None = None) -> ClientResult:
    from captain_memo.config import TeamConfig
    from captain_memo.engine.core import Engine
    from captain_memo.engine.team import TeamClient
    from captain_memo.store.postgres.store import TeamStore
    from captain_memo.store.postgres.vectors import PgVectorIndex

    store = TeamStore(dsn)
    engine = Engine(store, TopicEmbedder(plan.seed), PgVectorIndex(store))
    # Saves go through the client a command uses: its time limits, and its retries after a lost
    # connection (a restart), which must neither lose nor double a save.
    team = TeamClient(TeamConfig(url=dsn, timeout=5.0), lambda: engine.embedder, str, lambda url, _: engine)
    if ready is not None:  # connected; all start at once, when every client got here
        ready.touch()
        while not (ready.parent / "go").exists():
            time.sleep(0.05)
    try:
        work = _work(engine, team, plan, client)
        sql_leaks, foreign_insert = probe_directly(team_audit.Audit(store), plan, plan.granted(client))
    finally:
        team.close()  # closes the engine it was given
    return ClientResult(
        plan.role(client), plan.granted(client), **work, sql_leaks=sql_leaks, foreign_insert=foreign_insert
    )


def _saved(engine, memory) -> int:
    """The new memory's id, or that of the copy an earlier attempt stored (its answer lost)."""
    from captain_memo.base.chunking import content_hash

    (stored,) = engine.remember_many([memory])
    if stored is None:
        clean, _ = engine.prepare(memory)
        stored = engine.store.find_by_hash(content_hash(clean.kind, clean.title, clean.body), clean.project)
    return stored


def _work(engine, team, plan: Plan, client: int) -> dict:
    """Save, then recall, until the time is up; what was acknowledged, seen and timed."""
    from captain_memo.config import rank_config
    from captain_memo.errors import StoreError
    from captain_memo.records import NewMemory, RecallRequest

    role, granted = plan.role(client), plan.granted(client)
    rng = np.random.default_rng([plan.seed, 100 + client])
    work: dict = {
        "acks": [],
        "save_ms": [],
        "recall_ms": [],
        "recalls": 0,
        "hits_seen": 0,
        "leaks": [],
        "errors": [],
        "error_times": [],
        "ack_times": [],
    }

    def failed(what: str) -> None:
        work["errors"].append(what)
        work["error_times"].append(time.time())

    deadline = time.monotonic() + plan.seconds
    seq = 0
    while time.monotonic() < deadline:
        project = str(rng.choice(granted))
        marker = f"{role}-{seq}"
        memory = NewMemory(body=note_text(rng, int(rng.integers(TOPICS)), marker), title=marker, project=project)
        seq += 1
        started = time.perf_counter()
        try:
            memory_id = team.call("saving a memory", _saved, memory)
        except StoreError as exc:
            failed(f"save: {exc}")
            continue
        work["save_ms"].append((time.perf_counter() - started) * 1000)
        work["acks"].append([marker, memory_id, project])
        work["ack_times"].append(time.time())
        # A quarter of the recalls ask over every project: the widest a role can ask. Tide is not
        # recorded on team memories (one developer's lookups do not reorder everyone's).
        request = RecallRequest(
            note_text(rng, int(rng.integers(TOPICS))),
            project=project,
            all_projects=bool(rng.random() < 0.25),
            record=False,
        )
        # Searched as a command searches the team store (its time limit, its reconnection): every
        # candidate both legs return is checked, not only the ten a ranking would keep.
        started = time.perf_counter()
        found, failures = team.collect(team.search(request.query, request, rank_config(), False), started)
        work["recall_ms"].append((time.perf_counter() - started) * 1000)
        work["recalls"] += 1
        rows = found.rows.values() if found is not None else ()
        work["hits_seen"] += len(rows)
        if failures:
            failed(f"recall: {failures}")
        work["leaks"] += [[memory.id, memory.project] for _, memory in rows if memory.project not in granted]
        time.sleep(plan.pause)
    return work


def probe_directly(audit: team_audit.Audit, plan: Plan, granted: tuple[str, ...]) -> tuple[dict, str]:
    """The role's own SQL, past our client: rows of other projects it can see (project -> rows),
    and what happened to its insert into one."""
    seen = {p: n for p in plan.all_projects() if p not in granted and (n := audit.rows_seen(p))}
    return seen, audit.insert_into(SECRET_PROJECT)


@dataclass(frozen=True)
class Report:
    clients: int
    seconds: float
    saves: int
    recalls: int
    hits_seen: int
    lost: list  # acknowledged markers not stored as acknowledged
    duplicates: list  # markers stored more than once
    unacknowledged: list  # stored but never acknowledged (a client that died mid-save)
    leaks: int  # recall hits outside the client's grants
    sql_leaks: int  # rows of other projects a role's own SELECT returned
    foreign_inserts_accepted: int
    errors: list
    recall_p50_ms: float
    recall_p95_ms: float
    save_p50_ms: float
    save_p95_ms: float
    load_average: tuple
    restart: dict = field(default_factory=dict)  # when the server restarted, and how the clients fared

    @property
    def sound(self) -> bool:
        return not (self.lost or self.duplicates or self.leaks or self.sql_leaks or self.foreign_inserts_accepted)


def after_restart(results: list[ClientResult], window: tuple[float, float] | None) -> dict:
    """How the clients fared around a restart (``window``: its start and end, time.time()):
    errors during and after it, and how many clients saved again afterwards without being restarted."""
    if window is None:
        return {}
    began, ended = window
    errors = [t for r in results for t in r.error_times]
    return {
        "restart_s": round(ended - began, 2),
        "errors_during": sum(began <= t <= ended + 1 for t in errors),
        "errors_after": sum(t > ended + 1 for t in errors),
        "clients_saving_after": sum(any(t > ended for t in r.ack_times) for r in results),
        "saves_after": sum(t > ended for r in results for t in r.ack_times),
    }


def verify(
    admin_dsn: str, plan: Plan, results: list[ClientResult], restart: tuple[float, float] | None = None
) -> Report:
    """What the database holds, read as its owner (row-level security does not hide rows from
    the owner), against what every client was told."""
    stored = team_audit.titled_as_owner(admin_dsn, ROLE_PREFIX)
    counts = Counter(title for title, _, _ in stored)
    rows = {(title, memory_id, project) for title, memory_id, project in stored}
    acked = {marker: (memory_id, project) for r in results for marker, memory_id, project in r.acks}
    recall_ms = [ms for r in results for ms in r.recall_ms]
    save_ms = [ms for r in results for ms in r.save_ms]

    def pct(values, q):
        return round(float(np.percentile(values, q)), 1) if values else float("nan")

    return Report(
        clients=len(results),
        seconds=plan.seconds,
        saves=len(acked),
        recalls=sum(r.recalls for r in results),
        hits_seen=sum(r.hits_seen for r in results),
        lost=sorted(m for m, (memory_id, project) in acked.items() if (m, memory_id, project) not in rows),
        duplicates=sorted(m for m, n in counts.items() if n > 1),
        unacknowledged=sorted(set(counts) - set(acked)),
        leaks=sum(len(r.leaks) for r in results),
        sql_leaks=sum(sum(r.sql_leaks.values()) for r in results),
        foreign_inserts_accepted=sum(r.foreign_insert == "accepted" for r in results),
        errors=[e for r in results for e in r.errors][:20],
        recall_p50_ms=pct(recall_ms, 50),
        recall_p95_ms=pct(recall_ms, 95),
        save_p50_ms=pct(save_ms, 50),
        save_p95_ms=pct(save_ms, 95),
        load_average=os.getloadavg(),
        restart=after_restart(results, restart),
    )


def run(plan: Plan, admin_dsn: str, role_dsn, out: Path, restart=None) -> Report:
    """Prepare the store, run ``plan.clients`` client processes at once, verify. ``role_dsn(role)``
    is the connection string of a role; it reaches each client in its environment. ``restart()``
    restarts the server, called ``plan.restart_at`` seconds into the run when both are given."""
    prepare(admin_dsn, plan)
    out.mkdir(parents=True, exist_ok=True)
    procs = {}
    for client in range(plan.clients):
        env = {**os.environ, DSN_VARIABLE: role_dsn(plan.role(client))}
        args = [sys.executable, "-m", "captain_memo.bench.teamload", json.dumps(asdict(plan)), str(client), str(out)]
        procs[plan.role(client)] = subprocess.Popen(args, env=env)
    _wait_ready(out, plan, procs)
    (out / "go").touch()
    window = None
    if restart is not None and plan.restart_at > 0:
        time.sleep(plan.restart_at)
        began = time.time()
        restart()
        window = (began, time.time())
    failed = [role for role, proc in procs.items() if proc.wait() != 0]
    if failed:
        raise RuntimeError(f"load clients {', '.join(failed)} exited with an error (their output is above)")
    results = [ClientResult(**json.loads((out / f"{plan.role(c)}.json").read_text())) for c in range(plan.clients)]
    return verify(admin_dsn, plan, results, window)


def _wait_ready(out: Path, plan: Plan, procs: dict) -> None:
    """Until every client has connected (twenty processes starting at once take a while) or exited."""
    while not all((out / f"{role}.ready").exists() or proc.poll() is not None for role, proc in procs.items()):
        time.sleep(0.1)


def client_main(argv: list[str]) -> int:
    plan = Plan(**json.loads(argv[0]))
    client, out = int(argv[1]), Path(argv[2])
    result = run_client(plan, client, os.environ[DSN_VARIABLE], out / f"{plan.role(client)}.ready")
    (out / f"{plan.role(client)}.json").write_text(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(client_main(sys.argv[1:]))
