"""The store file is the truth while the warm service runs: a store moved away, restored from a
backup (by `backup --restore` or by hand) or replaced by another store's copy is what the next
request sees, and no write lands in a file that is no longer at the store's path.

Real processes: `captain-memo` commands, the service they start, the model over HTTP on 127.0.0.1.
Every store is read back cold (a fresh SQLite connection in this process, nothing beside the file)."""

from __future__ import annotations

import shutil
from pathlib import Path

from embed_support import cli
from service_support import bodies, status


def remember(env: dict, text: str) -> None:
    done = cli("remember", text, env=env)
    assert done.returncode == 0 and "running without" not in done.stderr, done.stderr


def recalled(env: dict, query: str) -> str:
    done = cli("recall", "-n", "20", query, env=env)
    assert done.returncode == 0 and "running without" not in done.stderr, done.stderr
    return done.stdout


def test_a_store_moved_away_keeps_every_memory_written_before_the_move(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    remember(service_env, "alpha: the invoice total is rounded once")
    remember(service_env, "beta: the ledger closes at midnight UTC")
    db.rename(tmp_path / "moved.db")  # as `mv` does: the -wal and -shm stay behind
    remember(service_env, "gamma: written after the move")
    assert bodies(tmp_path / "moved.db") == [
        "alpha: the invoice total is rounded once",
        "beta: the ledger closes at midnight UTC",
    ]
    assert bodies(db) == ["gamma: written after the move"]  # a new store at the store's path
    assert "alpha" not in recalled(service_env, "invoice ledger written")


def test_a_backup_restored_by_hand_is_what_the_next_request_sees(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    remember(service_env, "alpha: the invoice total is rounded once")
    remember(service_env, "beta: the ledger closes at midnight UTC")
    assert cli("backup", str(tmp_path / "backup.db"), env=service_env).returncode == 0
    remember(service_env, "gamma: saved after the backup")
    (tmp_path / "backup.db").rename(db)
    answer = recalled(service_env, "gamma saved after the backup invoice")
    assert "gamma" not in answer and "alpha" in answer
    remember(service_env, "delta: saved after the restore")
    assert bodies(db) == [
        "alpha: the invoice total is rounded once",
        "beta: the ledger closes at midnight UTC",
        "delta: saved after the restore",
    ]


def test_another_stores_backup_put_in_place_is_served_whole(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    other = {**service_env, "CAPTAIN_MEMO_DB": str(tmp_path / "other.db")}
    remember(other, "omega: the other store's only note about queues")
    assert cli("backup", str(tmp_path / "other-backup.db"), env=other).returncode == 0
    remember(service_env, "alpha: the invoice total is rounded once")
    remember(service_env, "beta: the ledger closes at midnight UTC")
    shutil.copyfile(tmp_path / "other-backup.db", tmp_path / "kept.db")
    (tmp_path / "other-backup.db").rename(db)
    answer = recalled(service_env, "queues invoice ledger")
    assert "omega" in answer and "alpha" not in answer and "beta" not in answer
    remember(service_env, "delta: saved into the replaced store")
    assert bodies(db) == ["delta: saved into the replaced store", "omega: the other store's only note about queues"]
    assert bodies(tmp_path / "kept.db") == ["omega: the other store's only note about queues"]


def test_backup_restore_replaces_the_store_the_service_holds(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    remember(service_env, "alpha: the invoice total is rounded once")
    assert cli("backup", str(tmp_path / "backup.db"), env=service_env).returncode == 0
    remember(service_env, "gamma: saved after the backup")
    pid = status(service_env)["pid"]
    restored = cli("backup", "--restore", str(tmp_path / "backup.db"), env=service_env)
    assert restored.returncode == 0, restored.stderr
    assert "restored" in restored.stdout
    answer = recalled(service_env, "gamma saved after the backup invoice")
    assert "gamma" not in answer and "alpha" in answer
    assert status(service_env)["pid"] == pid  # the same service, holding the restored store
    remember(service_env, "delta: saved after the restore")
    assert bodies(db) == ["alpha: the invoice total is rounded once", "delta: saved after the restore"]
    assert bodies(tmp_path / "backup.db") == ["alpha: the invoice total is rounded once"]


def test_a_deleted_store_is_noticed_before_the_next_write(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    remember(service_env, "alpha: the invoice total is rounded once")
    db.unlink()
    remember(service_env, "beta: after the delete")
    assert bodies(db) == ["beta: after the delete"]


def test_a_write_into_the_restored_store_before_the_service_notices_is_kept(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    remember(service_env, "alpha: the invoice total is rounded once")
    assert cli("backup", str(tmp_path / "backup.db"), env=service_env).returncode == 0
    remember(service_env, "gamma: saved after the backup")
    assert cli("backup", "--restore", str(tmp_path / "backup.db"), env=service_env).returncode == 0
    cold = cli("--no-service", "remember", "delta: saved by another process after the restore", env=service_env)
    assert cold.returncode == 0, cold.stderr
    answer = recalled(service_env, "delta saved by another process invoice")  # the service notices now
    assert "delta" in answer and "alpha" in answer and "gamma" not in answer
    remember(service_env, "epsilon: saved through the service")
    assert bodies(db) == [
        "alpha: the invoice total is rounded once",
        "delta: saved by another process after the restore",
        "epsilon: saved through the service",
    ]


def test_a_write_into_a_store_put_back_by_hand_before_the_service_notices_is_kept(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    remember(service_env, "alpha: the invoice total is rounded once")
    assert cli("backup", str(tmp_path / "backup.db"), env=service_env).returncode == 0
    remember(service_env, "gamma: saved after the backup")
    (tmp_path / "backup.db").rename(db)
    cold = cli("--no-service", "remember", "delta: saved by another process after the restore", env=service_env)
    assert cold.returncode == 0, cold.stderr
    answer = recalled(service_env, "delta saved by another process invoice")  # the service notices now
    assert "delta" in answer and "gamma" not in answer
    assert bodies(db) == [
        "alpha: the invoice total is rounded once",
        "delta: saved by another process after the restore",
    ]


def integrity_of(path: Path) -> str:
    """``PRAGMA integrity_check`` of the file at ``path`` alone, read cold."""
    import sqlite3

    copy = path.with_name(f"checked-{path.name}")
    shutil.copyfile(path, copy)
    try:
        conn = sqlite3.connect(copy)
        try:
            return conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()
    finally:
        copy.unlink()


def test_a_backup_copied_over_the_store_with_cp_is_what_the_next_request_sees(service_env, tmp_path):
    # cp writes into the file the service holds (same inode): only its size, time and header say so.
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    for name in ("alpha", "beta", "gamma"):
        remember(service_env, f"{name}: saved before the backup " + "x" * 3000)
    assert cli("backup", str(tmp_path / "b.db"), env=service_env).returncode == 0
    for name in ("delta", "epsilon", "zeta"):
        remember(service_env, f"{name}: saved after the backup " + "y" * 3000)
    shutil.copyfile(tmp_path / "b.db", db)  # as `cp b.db memo.db` does: the same file, new content
    remember(service_env, "eta: saved after the restore " + "z" * 3000)
    answer = recalled(service_env, "saved after the backup restore")
    assert "delta" not in answer and "eta" in answer
    assert [b.split(":")[0] for b in bodies(db)] == ["alpha", "beta", "eta", "gamma"]
    assert integrity_of(db) == "ok"


def test_a_small_save_after_a_cp_restore_does_not_undo_it(service_env, tmp_path):
    db = Path(service_env["CAPTAIN_MEMO_DB"])
    for name in ("alpha", "beta", "gamma"):
        remember(service_env, f"{name}: before the backup")
    assert cli("backup", str(tmp_path / "b.db"), env=service_env).returncode == 0
    for name in ("delta", "epsilon", "zeta"):
        remember(service_env, f"{name}: after the backup")
    assert "delta" in recalled(service_env, "after the backup")  # its Tide record waits in the WAL
    shutil.copyfile(tmp_path / "b.db", db)
    remember(service_env, "eta: after the restore")
    assert "eta" in recalled(service_env, "after the restore")
    assert [b.split(":")[0] for b in bodies(db)] == ["alpha", "beta", "eta", "gamma"]
    assert integrity_of(db) == "ok"
