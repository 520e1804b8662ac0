"""`stats` and `doctor`: what is stored, and whether everything it needs works."""

from __future__ import annotations

import time
from pathlib import Path

from captain_memo.commands._common import open_store, print_json
from captain_memo.config import db_path, embed_config, rank_config
from captain_memo.ranking import lifecycle
from captain_memo.store.models import KINDS


def register(sub) -> None:
    p = sub.add_parser("stats", help="counts by kind and the Tide lifecycle of observations")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=stats)
    p = sub.add_parser("doctor", help="check SQLite, sqlite-vec, FTS5, the model and the database")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=doctor)


STRENGTHENING = 1.01


def tide_counts(store, now: float | None = None) -> dict[str, int]:
    """Observations strengthening (S at least 1% above its initial value: under spaced repetition a
    lookup seconds after the last adds a few millionths, which is no strengthening), active, and
    dormant (buoyancy below the dormant line and unused for longer than the dormant age, by the
    ranking's own rule)."""
    cfg = rank_config()
    now = time.time() if now is None else now
    counts = {"strengthening": 0, "active": 0, "dormant": 0}
    for memory in store.list_memories(kind="observation", limit=-1):
        if memory.stability >= STRENGTHENING * cfg.tide_initial_stability:
            counts["strengthening"] += 1
        counts["dormant" if lifecycle.is_dormant(memory, now, cfg) else "active"] += 1
    return counts


def stats(args) -> int:
    store = open_store(args)
    try:
        counts = store.counts()
        # Every kind is named, with 0 when there is none, so the JSON keys do not depend on the data.
        data = {"database": str(store.path), **counts, **{kind: counts.get(kind, 0) for kind in KINDS},
                "tide": tide_counts(store)}
    finally:
        store.close()
    if args.json:
        print_json(data)
        return 0
    print(f"database   {data['database']}")
    print(f"memories   {data['memories']}  (memory {data.get('memory', 0)}, skill {data.get('skill', 0)}, "
          f"observation {data.get('observation', 0)})")
    print(f"chunks     {data['chunks']}  (vectors {data['vectors']}, waiting for a vector {data['pending_vectors']})")
    tide = data["tide"]
    print(f"tide       {tide['strengthening']} strengthening, {tide['active']} active, {tide['dormant']} dormant")
    return 0


DAMAGED = ("the file is damaged: restore a backup (`captain-memo backup PATH` makes one), or move the file "
           "away to start a new store")


def permissions(path: Path) -> tuple[str, bool, str]:
    """The database must be readable by its owner only (it is created 0600 in a 0700 folder)."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        return "permissions", False, f"{path} is {mode:04o}, readable by others; run chmod 600 {path}"
    return "permissions", True, f"{mode:04o}"


def checks(args) -> list[tuple[str, bool, str]]:
    """(item, ok, detail) for each thing Captain Memo depends on."""
    import sqlean

    from captain_memo.commands.backup import integrity as integrity_check

    path = Path(args.db or db_path())
    out = [("sqlite", True, sqlean.sqlite_version)]
    try:
        store = open_store(args)
    except Exception as exc:
        return out + [("database", False, f"{path}: {exc}")]
    try:
        conn = store.conn
        out.append(("sqlite-vec", store.vec_available,
                    conn.execute("SELECT vec_version()").fetchone()[0] if store.vec_available else store.vec_error))
        fts = conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0]
        out.append(("fts5", bool(fts), "compiled in" if fts else "missing"))
        integrity = integrity_check(conn)
        out.append(("integrity", integrity == "ok", integrity if integrity == "ok" else f"{integrity}; {DAMAGED}"))
        out.append(permissions(path))
        if store.read_only:
            out.append(("writable", False, f"read-only for this user ({store.read_only_reason}): recall works; "
                                           "saving, indexing and Tide's record of recalls do not"))
        size = path.stat().st_size if path.exists() else 0
        out.append(("database", True, f"{path} ({size / 1e6:.1f} MB)"))
        out.append(("model", True, f"stored {store.meta('embed_model', 'none yet')}, configured "
                                   f"{embed_config().provider}"))
        out.append(reindex_state(store))
        out.append(provider_state())
        counts = store.counts()
        consistent = counts["chunks"] == counts["fts_rows"] == counts["vectors"] + counts["pending_vectors"]
        out.append(("counts", consistent, ", ".join(f"{k} {v}" for k, v in counts.items())))
        out.append(vector_models(store))
    except Exception as exc:  # a damaged file fails mid-check: report it, never a traceback
        out.append(("database", False, f"{path}: {exc}; {DAMAGED}"))
    finally:
        store.close()
    return out


def provider_state() -> tuple[str, bool, str]:
    """A real request to the configured embedding provider: its latency, or what failed."""
    from captain_memo.embeddings import probe_provider
    from captain_memo.errors import CaptainMemoError

    try:
        return ("embedding", True, probe_provider(embed_config()))
    except CaptainMemoError as exc:
        return ("embedding", False, f"{exc}; recall answers from the keyword leg meanwhile")


def reindex_state(store) -> tuple[str, bool, str]:
    from captain_memo.reindex import pending_target
    from captain_memo.store.lock import running_reindex

    target = pending_target(store)
    owner = running_reindex(store.path)
    if owner is not None:
        to = f" to {target[1]}" if target else ""
        return ("reindex", True, f"a reindex{to} is running{owner}; recall uses the current vectors meanwhile")
    if target is None:
        return ("reindex", True, "none pending")
    return ("reindex", False, f"an interrupted reindex to {target[1]} is pending; run `captain-memo reindex` "
                              "to finish it (recall keeps using the current vectors meanwhile)")


def vector_models(store) -> tuple[str, bool, str]:
    """Whether every stored vector is the recorded model's (a sample embedded again)."""
    from captain_memo.embeddings import make_embedder
    from captain_memo.errors import CaptainMemoError
    from captain_memo.vector_audit import audit_vectors

    try:
        audit = audit_vectors(store, make_embedder(embed_config()))
    except CaptainMemoError as exc:
        return ("vectors", False, f"not checked: the embedder failed ({exc})")
    return ("vectors", audit.ok, audit.detail)


def doctor(args) -> int:
    results = checks(args)
    if args.json:
        print_json([{"item": item, "ok": ok, "detail": detail} for item, ok, detail in results])
    else:
        for item, ok, detail in results:
            print(f"{'ok  ' if ok else 'FAIL'} {item:<11} {detail}")
    return 0 if all(ok for _, ok, _ in results) else 1
