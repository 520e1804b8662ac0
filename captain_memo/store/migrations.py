"""The local store's schema: numbered migrations, each applied in one transaction and recorded.

``Database._migrate`` (store/db.py) runs those not yet recorded in ``schema_migrations``, in order,
inside one write transaction with foreign keys off, then checks the keys. A migration never
changes once released: a store made by an older version is brought up to date by the ones after it.
"""

from __future__ import annotations

import os


def _run_script(conn, script: str) -> None:
    # executescript() would COMMIT the migration's transaction half-way; run statement by statement.
    for statement in script.split(";\n"):
        if statement.strip():
            conn.execute(statement)


def _m001_tables(conn) -> None:
    _run_script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('memory', 'skill', 'observation')),
            title TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            project TEXT,
            branch TEXT,
            source_path TEXT,
            line_start INTEGER,
            line_end INTEGER,
            source_commit TEXT,
            origin TEXT NOT NULL DEFAULT 'cli',
            filetype TEXT,
            content_hash TEXT NOT NULL,
            superseded_by INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            supersede_auto INTEGER NOT NULL DEFAULT 0,
            stability REAL NOT NULL DEFAULT 7,
            last_surfaced REAL,
            opened_in_full INTEGER NOT NULL DEFAULT 0,
            source_key TEXT,
            tags TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX memories_project ON memories(project);
        CREATE INDEX memories_hash ON memories(content_hash);
        CREATE UNIQUE INDEX memories_source_key ON memories(ifnull(project, ''), source_key)
            WHERE source_key IS NOT NULL;
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            text TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            has_vector INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX chunks_memory ON chunks(memory_id);
        CREATE INDEX chunks_pending ON chunks(has_vector) WHERE has_vector = 0;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = 'porter unicode61');
        """,
    )


def _m002_vector_changes(conn) -> None:
    # A log of chunk ids whose vector may have changed, for in-memory indexes (store/memindex.py)
    # to catch up with writes from any process without rescanning. Every vector write goes with a
    # write to its chunks row (insert, delete, or has_vector set), so triggers on chunks see them all.
    # The log keeps the last 100,000 changes; an index further behind than that rebuilds itself.
    _run_script(
        conn,
        """
        CREATE TABLE vector_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id INTEGER NOT NULL);
        CREATE TRIGGER chunks_insert_logged AFTER INSERT ON chunks BEGIN INSERT INTO vector_changes (chunk_id) VALUES (new.id); END;
        CREATE TRIGGER chunks_delete_logged AFTER DELETE ON chunks BEGIN INSERT INTO vector_changes (chunk_id) VALUES (old.id); END;
        CREATE TRIGGER chunks_vector_logged AFTER UPDATE OF has_vector ON chunks BEGIN INSERT INTO vector_changes (chunk_id) VALUES (new.id); END;
        CREATE TRIGGER vector_changes_pruned AFTER INSERT ON vector_changes WHEN new.seq % 10000 = 0 BEGIN DELETE FROM vector_changes WHERE seq <= new.seq - 100000; END;
        """,
    )


MEMORY_INDEXES = """
CREATE INDEX memories_project ON memories(project);
CREATE INDEX memories_hash ON memories(content_hash);
CREATE UNIQUE INDEX memories_source_key ON memories(ifnull(project, ''), source_key)
    WHERE source_key IS NOT NULL"""


def _m003_memory_ids_never_reused(conn) -> None:
    # Without AUTOINCREMENT SQLite gives a new row max(id) + 1, so forgetting the newest memory
    # handed its id to the next one, and a stale reference (a supersede link, an editor buffer
    # captain-memo://memory/N, a note in a commit message) silently named another memory. SQLite
    # cannot add AUTOINCREMENT to a table: it is rebuilt as its documentation prescribes (foreign
    # keys off, which Database._migrate does, so dropping the old table cascades nothing). Copying
    # the rows with their ids sets the sequence to the highest id stored; an id forgotten above it
    # before this migration cannot be known.
    columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(memories)"))
    ddl = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memories'").fetchone()[0]
    rebuilt = ddl.replace("CREATE TABLE memories", "CREATE TABLE memories_rebuilt", 1).replace(
        "id INTEGER PRIMARY KEY,", "id INTEGER PRIMARY KEY AUTOINCREMENT,", 1
    )
    if "AUTOINCREMENT" not in rebuilt:
        raise RuntimeError("unexpected memories table definition")
    conn.execute(rebuilt)
    conn.execute(f"INSERT INTO memories_rebuilt ({columns}) SELECT {columns} FROM memories")
    conn.execute("DROP TABLE memories")
    conn.execute("ALTER TABLE memories_rebuilt RENAME TO memories")
    _run_script(conn, MEMORY_INDEXES)


def _m004_last_opened(conn) -> None:
    # Tide's use clock restarts when a memory is opened in full. Stores before this knew only that
    # a memory had been opened and when it was last listed: that time is the best estimate.
    conn.execute("ALTER TABLE memories ADD COLUMN last_opened REAL")
    conn.execute("UPDATE memories SET last_opened = last_surfaced WHERE opened_in_full = 1")


def _m005_source_files_and_reindex(conn) -> None:
    # Tables that were created on first use before: a note file's state as last indexed (so an
    # unchanged file is not parsed again) and a running reindex's record of what it embedded.
    _run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS source_files (project TEXT NOT NULL, path TEXT NOT NULL,
            digest TEXT NOT NULL, sections INTEGER NOT NULL, PRIMARY KEY (project, path));
        CREATE TABLE IF NOT EXISTS reindex_chunks (chunk_id INTEGER PRIMARY KEY, content_hash TEXT NOT NULL,
            scope TEXT NOT NULL);
    """,
    )


def _m006_portable_projects(conn) -> None:
    # A store shared by a team names a project by what every clone agrees on (base/project_identity.py), while
    # this store keeps the local path its memories were saved under. The projects it already holds
    # learn theirs here, while their folders are likely still in place; one whose folder is gone
    # gets none (publishing from it asks for the project). A local memory can also be superseded
    # by a team memory, whose id lives in the team store: it has a column of its own, since
    # superseded_by references this store's memories.
    from captain_memo.base.project_identity import portable_id

    _run_script(
        conn,
        """
        CREATE TABLE projects (path TEXT PRIMARY KEY, portable_id TEXT NOT NULL);
        ALTER TABLE memories ADD COLUMN superseded_by_team INTEGER
        """,
    )
    for (path,) in conn.execute("SELECT DISTINCT project FROM memories WHERE project IS NOT NULL").fetchall():
        if os.path.isdir(path):
            conn.execute("INSERT INTO projects VALUES (?, ?)", (path, portable_id(path)))


def _m007_touched_paths(conn) -> None:
    # Every path a commit touched, as rows the search reads ("latest change to capture" is answered
    # by the commits whose paths name capture): the body lists only the first 20. Commits stored
    # before keep what their body listed (and their one source path).
    from captain_memo.store.touched import TOUCHED_TABLE, backfill_from_bodies

    _run_script(conn, TOUCHED_TABLE)
    backfill_from_bodies(conn)


def _m008_rule_scopes(conn) -> None:
    # Where an agent's rule applies (Cursor's globs or alwaysApply, Copilot's applyTo, Claude
    # Code's paths): records.RuleScope's stored text, NULL for every other memory. Rules indexed
    # before have none until their file is read again (the sources' file state version says so).
    conn.execute("ALTER TABLE memories ADD COLUMN rule_scope TEXT")


def _m009_curated_text_index(conn) -> None:
    # Curated text (notes, skills, doc sections: every memory that is not an observation) indexed a
    # second time on its own, so its bm25 takes its word statistics from curated text alone
    # (store/search.py ``keyword_leg``): in Flask's store the 3,806 commits beside 343 doc sections
    # gave the docs' words the commits' idf. Kept by triggers on ``chunks``, whatever writes them.
    _run_script(
        conn,
        """
        CREATE VIRTUAL TABLE curated_fts USING fts5(text, tokenize = 'porter unicode61');
        INSERT INTO curated_fts (rowid, text)
            SELECT c.id, c.text FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE m.kind != 'observation';
        CREATE TRIGGER curated_fts_insert AFTER INSERT ON chunks
            WHEN (SELECT kind FROM memories WHERE id = NEW.memory_id) != 'observation'
            BEGIN INSERT INTO curated_fts (rowid, text) VALUES (NEW.id, NEW.text); END;
        CREATE TRIGGER curated_fts_delete AFTER DELETE ON chunks
            BEGIN DELETE FROM curated_fts WHERE rowid = OLD.id; END
        """,
    )


def _m010_curated_text_follows_kind(conn) -> None:
    # A rewrite sets a memory's kind and keeps its unchanged chunks' rows: a memory that becomes an
    # observation, or stops being one, moves its chunks out of curated text's index or into it.
    conn.execute(
        """
        CREATE TRIGGER curated_fts_kind AFTER UPDATE OF kind ON memories
            WHEN (OLD.kind = 'observation') IS NOT (NEW.kind = 'observation')
            BEGIN
                DELETE FROM curated_fts WHERE rowid IN (SELECT id FROM chunks WHERE memory_id = NEW.id);
                INSERT INTO curated_fts (rowid, text)
                    SELECT id, text FROM chunks WHERE memory_id = NEW.id AND NEW.kind != 'observation';
            END
        """
    )


MIGRATIONS = [
    (1, _m001_tables),
    (2, _m002_vector_changes),
    (3, _m003_memory_ids_never_reused),
    (4, _m004_last_opened),
    (5, _m005_source_files_and_reindex),
    (6, _m006_portable_projects),
    (7, _m007_touched_paths),
    (8, _m008_rule_scopes),
    (9, _m009_curated_text_index),
    (10, _m010_curated_text_follows_kind),
]
# Migrations whose tables only writers use (indexing, reindex): a read-only store without them is
# read as it is.
# 7: a read-only store without touched paths finds changes by their text; 9: without the curated
# text's own index, curated text is scored with the whole index's statistics.
WRITERS_ONLY = {5, 7, 9, 10}
