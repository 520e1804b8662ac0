"""Both stores answer one interface (store/protocol.py's ``MemoryStore``, checked by mypy): the local
store answers the members only a team store gives meaning to, and raises the project's own error
where SQLite refuses a row, so nothing outside store/ catches a driver's exception."""

from __future__ import annotations

import pytest
from sources_support import write

from captain_memo.errors import DuplicateKeyError
from captain_memo.records import NewMemory
from captain_memo.sources.indexer import index_paths
from captain_memo.store import Store
from captain_memo.store.migrations import MIGRATIONS


def test_a_second_memory_under_a_stored_source_key_is_refused_with_the_projects_error(db_file):
    store = Store(db_file)
    try:
        first = store.add(NewMemory(body="kept", project="/p", source_key="note:a.md#1"), ["kept"], None)
        with pytest.raises(DuplicateKeyError, match="source key is stored already"):
            store.add(NewMemory(body="again", project="/p", source_key="note:a.md#1"), ["again"], None)
        assert [m.id for m in store.list_memories()] == [first]
    finally:
        store.close()


def test_the_local_store_answers_what_only_a_team_store_has_with_nothing(db_file):
    store = Store(db_file)
    try:
        assert store.schema_version() == MIGRATIONS[-1][0]
        assert store.grant_problem("/p") is None
        with store.time_limit(0.5):  # no server to bound: the statements run as ever
            assert store.memory_count() == 0
        store.cancel()
        assert store.touched_paths() is not None
        store.set_metas({"a": "1", "b": "2"})
        assert (store.meta("a"), store.meta("b")) == ("1", "2")
    finally:
        store.close()


class SavedMeanwhile:
    """An embedder that, while embedding a note's text, lets another writer (a second real store
    on the same file, as the editor is beside `captain-memo index`) save that note first: the race
    made to happen every time."""

    def __init__(self, inner, db_file, memory: NewMemory):
        self.inner, self.db_file, self.memory = inner, db_file, memory
        self.model_id = inner.model_id
        self.raced = False

    def embed(self, texts):
        if not self.raced:
            self.raced = True
            other = Store(self.db_file)
            try:
                other.add(self.memory, [self.memory.body], None)
            finally:
                other.close()
        return self.inner.embed(texts)


def test_a_note_saved_by_another_writer_while_indexing_is_rewritten_not_failed(db_file, hash_embedder, tmp_path):
    from captain_memo.engine.core import Engine

    notes = tmp_path / "notes"
    write(notes, "a.md", "# Ports\n\nThe service listens on 8080.\n")
    first = Engine(Store(db_file), hash_embedder)
    index_paths(first, [notes])  # learn the key the indexer gives the note
    (stored,) = first.store.list_memories()
    first.store.delete(stored.id)
    first.close()
    other = NewMemory(body="an older text", project=stored.project, source_key=stored.source_key)
    engine = Engine(Store(db_file), SavedMeanwhile(hash_embedder, db_file, other))
    try:
        report = index_paths(engine, [notes])
        (memory,) = engine.store.list_memories()
        assert memory.source_key == stored.source_key and "8080" in memory.body
        assert (report.indexed, report.updated) == (0, 1)
    finally:
        engine.close()
