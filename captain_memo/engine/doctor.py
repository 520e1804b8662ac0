"""`captain-memo doctor`: whether everything Captain Memo needs works, item by item."""

from __future__ import annotations

from pathlib import Path

from captain_memo.config import embed_config

DAMAGED = (
    "the file is damaged: restore a backup (`captain-memo backup PATH` makes one), or move the file "
    "away to start a new store"
)


def permissions(path: Path) -> tuple[str, bool, str]:
    """The database must be readable by its owner only (it is created 0600 in a 0700 folder)."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        return "permissions", False, f"{path} is {mode:04o}, readable by others; run chmod 600 {path}"
    return "permissions", True, f"{mode:04o}"


def checks(path: Path) -> list[tuple[str, bool, str]]:
    """(item, ok, detail) for each thing Captain Memo depends on."""
    from captain_memo.store import Store, health

    out = [("sqlite", True, health.sqlite_version())]
    try:
        store = Store(path)
    except Exception as exc:
        return out + [("database", False, f"{path}: {exc}")]
    try:
        out.append(
            (
                "sqlite-vec",
                store.vec_available,
                store.sqlite_vec_version() if store.vec_available else str(store.vec_error),
            )
        )
        fts = store.fts5_compiled()
        out.append(("fts5", fts, "compiled in" if fts else "missing"))
        integrity = store.integrity()
        out.append(("integrity", integrity == "ok", integrity if integrity == "ok" else f"{integrity}; {DAMAGED}"))
        out.append(permissions(path))
        if store.read_only:
            out.append(
                (
                    "writable",
                    False,
                    f"read-only for this user ({store.read_only_reason}): recall works; "
                    "saving, indexing and Tide's record of recalls do not",
                )
            )
        size = path.stat().st_size if path.exists() else 0
        out.append(("database", True, f"{path} ({size / 1e6:.1f} MB)"))
        out.append(
            ("model", True, f"stored {store.meta('embed_model', 'none yet')}, configured {embed_config().provider}")
        )
        out.append(reindex_state(store))
        out.append(provider_state())
        counts = store.counts()
        consistent = counts["chunks"] == counts["fts_rows"] == counts["vectors"] + counts["pending_vectors"]
        consistent = consistent and counts.get("curated_chunks") == counts.get("curated_fts_rows")
        out.append(("counts", consistent, ", ".join(f"{k} {v}" for k, v in counts.items())))
        out.append(field_types(store))
        out.append(vector_models(store))
    except Exception as exc:  # a damaged file fails mid-check: report it, never a traceback
        out.append(("database", False, f"{path}: {exc}; {DAMAGED}"))
    finally:
        store.close()
    return out


def field_types(store) -> tuple[str, bool, str]:
    """Memories whose fields hold a value of the wrong type: every recall ranking one fails."""
    from captain_memo.store.field_types import described

    found = store.fields_of_wrong_type()
    if not found:
        return "fields", True, "every memory's fields hold values of their type"
    return "fields", False, f"{described(found)}: recalls that meet them fail; run `captain-memo doctor --repair`"


def provider_state() -> tuple[str, bool, str]:
    """A real request to the configured embedding provider: its latency, or what failed."""
    from captain_memo.embeddings import probe_provider
    from captain_memo.errors import CaptainMemoError

    try:
        return ("embedding", True, probe_provider(embed_config()))
    except CaptainMemoError as exc:
        return ("embedding", False, f"{exc}; recall answers from the keyword leg meanwhile")


def reindex_state(store) -> tuple[str, bool, str]:
    from captain_memo.store.lock import running_reindex
    from captain_memo.store.reindex import pending_target

    target = pending_target(store)
    owner = running_reindex(store.path)
    if owner is not None:
        to = f" to {target[1]}" if target else ""
        return ("reindex", True, f"a reindex{to} is running{owner}; recall uses the current vectors meanwhile")
    if target is None:
        return ("reindex", True, "none pending")
    return (
        "reindex",
        False,
        f"an interrupted reindex to {target[1]} is pending; run `captain-memo reindex` "
        "to finish it (recall keeps using the current vectors meanwhile)",
    )


def vector_models(store) -> tuple[str, bool, str]:
    """Whether every stored vector is the recorded model's (a sample embedded again)."""
    from captain_memo.embeddings import make_embedder
    from captain_memo.engine.vector_audit import audit_vectors
    from captain_memo.errors import CaptainMemoError

    try:
        audit = audit_vectors(store, make_embedder(embed_config()))
    except CaptainMemoError as exc:
        return ("vectors", False, f"not checked: the embedder failed ({exc})")
    return ("vectors", audit.ok, audit.detail)
