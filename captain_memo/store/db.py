"""Opening the SQLite file: extensions, pragmas, applying the migrations (store/migrations.py), the
embedding model binding.

sqlean is a drop-in sqlite3 that can load extensions (the stdlib build here cannot); sqlite-vec
supplies the vec0 table. When sqlite-vec cannot be loaded the store still opens and recall falls
back to the keyword leg, with a warning.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from captain_memo.base.chunking import content_hash
from captain_memo.errors import (
    DatabaseDamagedError,
    EmbeddingError,
    ForeignDatabaseError,
    ModelMismatchError,
    ReadOnlyStoreError,
    StoreError,
)
from captain_memo.store import held_file
from captain_memo.store.migrations import MIGRATIONS, WRITERS_ONLY

log = logging.getLogger("captain_memo")
BUSY_TIMEOUT_MS = 10_000
WRITE_RETRIES = 8
IMPATIENT_MS = 1000  # a write done on the side of a read waits this long for the lock, then is skipped


def sqlite_module():
    import sqlean

    return sqlean


def load_vec(conn) -> str | None:
    """Load sqlite-vec; return None when it worked, else the reason it did not."""
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        return None
    except Exception as exc:  # any failure here only costs the vector leg
        return f"{type(exc).__name__}: {exc}"


def write_denied(path: Path) -> str | None:
    """Why this user cannot write the store at ``path``, or None when it can. SQLite writes the file
    and, in WAL mode, creates its -wal and -shm files beside it, so the folder must be writable too."""
    folder = path.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"permission denied: the file system holding {folder} is mounted read-only"
    except OSError:
        pass
    if not os.access(path, os.W_OK):
        return "permission denied: this user may not write the file"
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"permission denied: this user may not write in its folder {folder} "
            "(SQLite keeps the -wal and -shm files there)"
        )
    return None


def connect_read_only(path: Path):
    """A connection that never writes, for a store this user may not write (``write_denied``)."""
    sqlite = sqlite_module()
    uri = "file:" + quote(str(path)) + "?mode=ro"
    options = {"uri": True, "isolation_level": None, "check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}
    conn = sqlite.connect(uri, **options)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite.OperationalError as exc:
        if "readonly" not in str(exc) and "unable to open" not in str(exc):
            raise
        conn.close()
    # A WAL file is read through its -shm index, which SQLite must create beside it: in a folder this
    # user cannot write it cannot, so the file is read as immutable (no locks, no WAL). Only someone
    # allowed to write there can change it meanwhile; a new connection (the next command, or the
    # editor after a restart) sees the change.
    log.info("reading %s as immutable: its folder is not writable", path)
    return sqlite.connect(uri + "&immutable=1", **options)


def read_only_error(path, reason: str) -> ReadOnlyStoreError:
    return ReadOnlyStoreError(
        f"cannot write to {path}: it is read-only for this user ({reason}). Recall still works; to save, give "
        "this user write permission on the file and its folder, or point CAPTAIN_MEMO_DB at a writable copy"
    )


# SQLite's words for a file whose bytes are not what they should be. Anything else (a lock, a full
# disk, a read-only file, a limit of sqlite-vec) leaves a healthy file and gets its own message:
# telling the user to move a healthy store away would be the worst advice possible.
DAMAGE_WORDS = ("malformed", "not a database", "disk image", "corrupt", "encrypted", "unsupported file format")


def store_error(exc: Exception, path) -> StoreError | None:
    """A SQLite error met in the middle of a command (a page found damaged, a lock held too long), as
    a message naming the file and what to do; None for any other exception, which is a bug."""
    sqlite = sqlite_module()
    if type(exc) not in (sqlite.DatabaseError, sqlite.OperationalError, sqlite.InternalError):
        return None
    return classified(str(exc), path)


def classified(text: str, path, opening: bool = False) -> StoreError:
    """The one message for a SQLite failure ``text`` on ``path``, by what it says about the file;
    ``opening``: met while opening it, before any command ran."""
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return StoreError(f"{path} stayed locked by another process ({text}); try again")
    if "readonly" in lowered or "read-only" in lowered:
        return read_only_error(path, write_denied(Path(path)) or text)
    if "disk is full" in lowered:
        return StoreError(f"the disk holding {path} is full ({text}); nothing was saved: free some space")
    if "unable to open" in lowered:
        return StoreError(f"cannot open {path} ({text}): check that its folder exists and is writable")
    if any(word in lowered for word in DAMAGE_WORDS) or ("no such table" in lowered and "vec_chunks" not in lowered):
        if opening:
            return DatabaseDamagedError(
                f"{path} is not a usable database ({text}); run `captain-memo doctor`, "
                "restore a backup, or move the file away to start a new store"
            )
        return DatabaseDamagedError(
            f"{path} failed: {text}; the file may be damaged: run `captain-memo doctor` to check it, restore a "
            "backup, or move the file away to start a new store"
        )
    if "no such table" in lowered:  # the vector table was swapped by a reindex in another process
        return StoreError(
            f"{path} changed while this command read it (a reindex finished meanwhile); run the command again"
        )
    return StoreError(f"cannot use {path}: {text}")


# The SQLite header's application id marks a file as a Captain Memo store ("CMEM"), so `--db` on
# another application's database is refused before a byte of it is changed.
APPLICATION_ID = 0x434D454D
# Stores made before the id was recorded are recognised by these tables, which every store has.
OWN_TABLES = {"schema_migrations", "meta", "memories", "chunks", "chunks_fts"}


def recognise(conn, path) -> None:
    """Refuse a database that is not a Captain Memo store; a new, empty file is welcome."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        return
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if app_id == 0 and (not names or OWN_TABLES <= names):
        return
    if app_id != 0:
        what = f"its application id is {app_id:#010x}"
    else:
        shown = sorted(n for n in names if not n.startswith("sqlite_"))
        what = "it holds " + ", ".join(shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")
    raise ForeignDatabaseError(
        f"{path} is not a Captain Memo store ({what}); it was left untouched: give "
        "--db (or CAPTAIN_MEMO_DB) a Captain Memo store or a new file"
    )


def _not_a_folder(path: Path) -> str | None:
    """Why a database cannot be created under ``path``'s folder when one of its folders is a file
    (CAPTAIN_MEMO_HOME set to a file said only "File exists")."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is a file, not a folder"
    return None


def _fold_wal(conn, path: Path) -> None:
    """Copy the WAL into the file and empty it when nothing reads it, so the file alone holds this
    process's writes: SQLite does so at closing only when no other process has the store open,
    and with the editor or the service holding it `cp` of an idle store after an `import` took
    1 of 21 memories. A failure (a full disk) leaves the writes in the WAL, committed."""
    try:
        conn.execute(f"PRAGMA busy_timeout = {IMPATIENT_MS}")
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # everything no reader still needs, at once
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # and an empty WAL when the readers let it
    except sqlite_module().Error as exc:
        log.warning("could not write the WAL of %s into it (its writes are kept in the WAL): %s", path, exc)


class Database:
    """One database file; a connection per thread, opened on first use in that thread.

    A file this user cannot write (its mode, its folder's, a read-only mount) is opened read-only:
    reads work, every write raises ReadOnlyStoreError naming the permission.
    """

    # Another embedder than the store's is refused when the engine opens it (a team store answers
    # from its keywords instead: store/postgres).
    checks_model_at_open = True

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._local = threading.local()
        self._conns: list = []
        self._conns_lock = threading.Lock()
        self.vec_error: str | None = None
        self.read_only_reason: str | None = None
        self._recognised = False
        self._prepare_file()
        # The file opened, and its -wal and -shm once WAL mode is on (store/held_file.py).
        self.opened_identity = held_file.identity(self.path)
        self._side_identities: dict = {}
        self._commit_conn: Any = None  # reads SQLite's commit count for the watch (_commit_count)
        self._commit_lock = threading.Lock()
        self.watch = held_file.FileWatch(self.path, self._commit_count)  # a rewrite in place (cp over it)
        self._wrote = False  # a write committed: its WAL is folded into the file at closing
        self._migrate()
        self.watch.noted()

    def _prepare_file(self) -> None:
        if str(self.path) == ":memory:":
            raise StoreError("an in-memory database cannot be shared between threads; use a file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        except OSError as exc:
            raise StoreError(
                f"cannot create the database {self.path}: {_not_a_folder(self.path) or exc.strerror}"
            ) from None
        self.read_only_reason = write_denied(self.path)

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def require_writable(self) -> None:
        """Refuse a write before any work is done for it (embedding a text costs more than the check)."""
        if self.read_only:
            raise read_only_error(self.path, str(self.read_only_reason))

    @property
    def conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self):
        sqlite = sqlite_module()
        mode = "wal"
        conn = None
        try:
            if self.read_only:
                conn = connect_read_only(self.path)
            else:
                conn = sqlite.connect(
                    str(self.path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
                )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not self._recognised:
                recognise(conn, self.path)  # reads only: a file not ours is refused before any write
                self._recognised = True
            if not self.read_only:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except (sqlite.DatabaseError, StoreError) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, StoreError):
                raise
            raise classified(str(exc), self.path, opening=True) from None
        if mode.lower() != "wal":
            log.warning("could not switch %s to WAL (journal mode %s)", self.path, mode)
        else:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # WAL mode makes its files on a read
            self._note_side_files()
        self.vec_error = load_vec(conn)
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _commit_count(self) -> int:
        """``PRAGMA data_version`` on a connection of the watch's own: it changes with every commit
        any other connection makes, this process's or another's, and not when a file is copied over."""
        with self._commit_lock:
            if self._commit_conn is None:
                self._commit_conn = self._bare_connection()
            # fetchall: a statement stepped to its end ends its read; one left at its row would
            # hold a WAL snapshot, and no checkpoint could empty the WAL while it stood
            [(version,)] = self._commit_conn.execute("PRAGMA data_version").fetchall()
            return int(version)

    def _bare_connection(self):
        """A connection that only reads SQLite's own state: made without ``_connect``'s checks,
        which ask the watch whether the file moved (the watch asks this one, under its lock)."""
        if self.read_only:
            conn = connect_read_only(self.path)
        else:
            conn = sqlite_module().connect(str(self.path), isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def moved(self) -> bool:
        """The file at the path is not the one this store opened (moved, deleted or replaced), or
        it is but was rewritten in place (a backup copied over it)."""
        return held_file.identity(self.path) != self.opened_identity or self.watch.rewritten()

    def _note_side_files(self) -> None:
        """Record this file's -wal and -shm while it is still at its path."""
        if None in self._side_identities.values() or not self._side_identities:
            if not self.moved():
                self._side_identities = held_file.side_identities(self.path)

    def checkpoint(self) -> None:
        """Copy what the WAL holds into the file now, without waiting for readers: the file alone is
        complete when it is copied or moved (a long-lived holder calls this after its writes)."""
        if not self.read_only and not self.moved():
            with self.watch.changing():
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._note_side_files()

    def close(self) -> None:
        """Close every connection. When the file has left its path meanwhile, its WAL is written into
        it first and the -wal and -shm left at the path are taken away (store/held_file.py)."""
        moved = not self.read_only and self._side_identities and self.moved()
        rewritten = moved and self.watch.rewritten()
        with self._conns_lock:
            conns, self._conns = self._conns, []
        with self._commit_lock:
            self._commit_conn = None  # among conns, closed below
        if rewritten and self.watch.others_attached():
            # Another process uses this WAL and its index: dropping or unlinking them would lose
            # what it committed there and split the store in two, were the copy only seen wrongly.
            # Closing without being the last connection copies nothing into the file.
            log.warning("%s seems copied over while another process has it open; its WAL is left to it", self.path)
            for conn in conns:
                _close_quietly(conn)
            self._local = threading.local()
            return
        if rewritten:  # the old WAL must not reach the new content, by a checkpoint or at closing
            held_file.discard_wal(self.path, self._side_identities)
            for conn in conns:
                _close_quietly(conn)
            held_file.release_leftovers(self.path, self._side_identities, emptied=True)
            self._local = threading.local()
            return
        last = conns.pop() if moved and conns else None
        if self._wrote and not moved and conns:
            _fold_wal(conns[-1], self.path)
        for conn in conns:
            _close_quietly(conn)
        if last is not None:
            emptied = held_file.checkpoint_into_held(last)
            _close_quietly(last)
            held_file.release_leftovers(self.path, self._side_identities, emptied)
        self._local = threading.local()

    @property
    def vec_available(self) -> bool:
        self.conn  # noqa: B018 - connecting is what loads the extension
        return self.vec_error is None

    @contextmanager
    def write(self, patient: bool = True):
        """A write transaction, begun IMMEDIATE and retried while another process holds the lock.
        Not ``patient``: one short try (bookkeeping a read does on the side must not make the read
        wait for, or fail on, a lock another process holds; a stopped one may hold it for ever)."""
        self.require_writable()
        conn = self.conn
        tries = WRITE_RETRIES if patient else 1
        if not patient:
            conn.execute(f"PRAGMA busy_timeout = {IMPATIENT_MS}")
        try:
            for attempt in range(tries):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite_module().OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc) or attempt == tries - 1:
                        raise StoreError(f"cannot write to {self.path}: {exc}") from None
                    self._refuse_if_held_by_a_stopped_process(waited=attempt > 0)
                    time.sleep(0.05 * (attempt + 1))
        finally:
            if not patient:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            with self.watch.changing():  # a commit past the WAL's size checkpoints on its own
                conn.execute("COMMIT")
            self._wrote = True

    def _refuse_if_held_by_a_stopped_process(self, waited: bool) -> None:
        """A process stopped inside a write keeps the lock until it is resumed: say which, at once,
        rather than waiting out every retry (about 80 s) for "database is locked". A running
        holder is waited for, and named once."""
        from captain_memo.store.holders import write_lock_holder

        holder = write_lock_holder(self.path)
        if holder is None or holder.pid == os.getpid():
            return
        if holder.stopped:
            raise StoreError(
                f"cannot write to {self.path}: {holder.describe()} holds its write lock and is stopped; "
                f"resume it (fg, or kill -CONT {holder.pid}) or end it, then try again"
            )
        if not waited:
            log.warning("waiting for %s, which is writing to %s", holder.describe(), self.path)

    def _migrate(self) -> None:
        sqlite = sqlite_module()
        if self.read_only:
            self._check_schema(sqlite)
            return
        if self._up_to_date(sqlite):
            return  # every command opens the store: it must not wait for a lock another process holds
        # A table rebuilt by a migration must not cascade deletes to its children when the old copy
        # is dropped; the keys are checked before the migration commits. The pragma is a no-op
        # inside a transaction, hence here.
        self.conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with self.write() as conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)"
                )
                done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
                pending = [(version, migrate) for version, migrate in MIGRATIONS if version not in done]
                for version, migrate in pending:
                    migrate(conn)
                    conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))
                if pending and conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                    raise StoreError(f"{self.path}: a migration left a dangling reference; nothing was changed")
                # New stores, and stores made before the id was recorded, are marked as ours.
                for pragma, value in (("application_id", APPLICATION_ID), ("user_version", MIGRATIONS[-1][0])):
                    if conn.execute(f"PRAGMA {pragma}").fetchone()[0] != value:
                        conn.execute(f"PRAGMA {pragma} = {value}")
        except sqlite.DatabaseError as exc:
            raise classified(str(exc), self.path, opening=True) from None
        finally:
            self.conn.execute("PRAGMA foreign_keys = ON")

    def _up_to_date(self, sqlite) -> bool:
        """Nothing to migrate and the store already marked as ours, read without the write lock
        (which a long `index`, or a process stopped inside a write, may hold for long)."""
        try:
            if (
                self.conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                ).fetchone()
                is None
            ):
                return False
            done = {row[0] for row in self.conn.execute("SELECT version FROM schema_migrations")}
            marks = (("application_id", APPLICATION_ID), ("user_version", MIGRATIONS[-1][0]))
            return all(version in done for version, _ in MIGRATIONS) and all(
                self.conn.execute(f"PRAGMA {pragma}").fetchone()[0] == value for pragma, value in marks
            )
        except sqlite.DatabaseError:
            return False  # the write path below reports it

    def check_writable(self) -> None:
        """Take the write lock and let it go (BEGIN IMMEDIATE): raises when the file cannot be written."""
        with self.write() as conn:
            conn.execute("SELECT 1")

    def _check_schema(self, sqlite) -> None:
        """A read-only store is read as it is: it must be a Captain Memo store already up to date."""
        try:
            done = (
                {row[0] for row in self.conn.execute("SELECT version FROM schema_migrations")}
                if self.table_exists("schema_migrations")
                else set()
            )
        except sqlite.DatabaseError as exc:
            raise classified(str(exc), self.path, opening=True) from None
        if any(version not in done and version not in WRITERS_ONLY for version, _ in MIGRATIONS):
            raise read_only_error(
                self.path,
                f"{self.read_only_reason}, and its tables must be created or "
                "upgraded for this version before it can be read",
            )

    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_metas(self, values: Mapping[str, str]) -> None:
        """Record these settings in one transaction."""
        with self.write() as conn:
            for key, value in values.items():
                self.set_meta(conn, key, value)

    def set_meta(self, conn, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- the embedding model this store's vectors belong to --------------------------------

    @property
    def vec_table(self) -> str:
        return self.meta("vec_table") or "vec_chunks"

    def check_model(self, model_id: str) -> None:
        """Refuse an embedder other than the one this store's vectors came from."""
        stored = self.meta("embed_model")
        if stored is not None and stored != model_id:
            raise ModelMismatchError(
                f"{self.path} holds vectors of {stored} but the configured embedder is {model_id}; "
                f"run `captain-memo reindex` to re-embed everything with {model_id}, or set "
                f"CAPTAIN_MEMO_EMBED_PROVIDER / CAPTAIN_MEMO_EMBED_MODEL (and the _QUERY_PREFIX / _DOCUMENT_PREFIX) "
                f"back to those of {stored}"
            )

    def bind_model(self, model_id: str, dim: int) -> None:
        """Record the model and dimension with the first vectors; refuse another one afterwards."""
        self.check_model(model_id)
        checked_dim(model_id, dim)
        stored_dim = self.meta("embed_dim")
        if stored_dim is None:
            with self.write() as conn:
                self.set_meta(conn, "embed_model", model_id)
                self.set_meta(conn, "embed_dim", str(dim))
                if self.vec_available:
                    create_vec_table(conn, self.vec_table, dim)
            return
        if int(stored_dim) != dim:
            raise ModelMismatchError(
                f"{model_id} now returns {dim}-d vectors but {self.path} holds {stored_dim}-d ones; "
                "run `captain-memo reindex` to re-embed everything"
            )
        if self.vec_available and not self.table_exists(self.vec_table):
            with self.write() as conn:
                create_vec_table(conn, self.vec_table, dim)

    def insert_chunk(self, conn, memory_id: int, seq: int, text: str, project: str | None, vector) -> int:
        """One chunk's three rows: the chunk, its keyword row and (when given and sqlite-vec is
        loaded) its vector; inside the caller's transaction. Returns the chunk id."""
        table = self.vec_table if vector is not None and self.vec_available else None
        chunk_id = conn.execute(
            "INSERT INTO chunks (memory_id, seq, text, content_hash, has_vector) VALUES (?, ?, ?, ?, ?)",
            (memory_id, seq, text, content_hash(text), int(table is not None)),
        ).lastrowid
        conn.execute("INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (chunk_id, text))
        if table is not None:
            conn.execute(
                f"INSERT INTO {table} (rowid, scope, embedding) VALUES (?, ?, ?)",
                (chunk_id, project or "", vector_blob(vector)),
            )
        return chunk_id

    def delete_chunk(self, conn, chunk_id: int) -> None:
        """One chunk's three rows, inside the caller's transaction."""
        conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
        if self.vec_available and self.table_exists(self.vec_table):
            conn.execute(f"DELETE FROM {self.vec_table} WHERE rowid = ?", (chunk_id,))
        conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))

    def table_exists(self, name: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _close_quietly(conn) -> None:
    try:
        conn.close()
    except Exception:  # a damaged file's connection may fail to close; it is dropped either way
        pass


def vector_blob(vector) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


# sqlite-vec's largest vector column (SQLITE_VEC_VEC0_MAX_DIMENSIONS in sqlite-vec 0.1).
MAX_DIM = 8192


def checked_dim(model_id: str, dim: int) -> int:
    """The dimension, or an EmbeddingError when the store cannot hold it: the caller then stores the
    text for keyword search only, as for any embedder failure, instead of failing the write."""
    if not 1 <= dim <= MAX_DIM:
        raise EmbeddingError(
            f"{model_id} answered {dim:,}-dimensional vectors; the store holds at most {MAX_DIM:,} "
            "dimensions, so no vector was kept: choose another model"
        )
    return dim


def create_vec_table(conn, name: str, dim: int) -> None:
    # Partitioned by scope (the project, '' for personal notes) so a project's KNN never scans
    # other projects: 4-8 ms instead of ~70 ms at 150k chunks in ten projects (PERF-NOTES).
    # Unit vectors with L2 rank like cosine and are ~25% faster.
    if not name.isidentifier():
        raise StoreError(f"invalid vector table name {name!r}")
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
        f"scope TEXT PARTITION KEY, embedding float[{int(dim)}] distance_metric=l2)"
    )
