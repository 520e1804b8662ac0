"""Model changes: recall with another model is refused, and `reindex` re-embeds everything,
resumably, without ever leaving two models' vectors in the store.

The "previous model" of each store is the deterministic hash embedder (tests/fakes.py) with a
dimension of its own; the new model is the real local model reached over HTTP through a real
serve-embeddings server, so each vector shows which model made it.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from embed_support import MODEL, REPO, GatedEmbedder, provider_env, start_server, stop_server
from fakes import HashEmbedder

from captain_memo.base.progress import Progress
from captain_memo.cli.main import main
from captain_memo.embeddings.http import OllamaEmbedder
from captain_memo.engine.core import Engine
from captain_memo.errors import EmbeddingError, ModelMismatchError
from captain_memo.store import NewMemory, Store
from captain_memo.store.reindex import DONE_TABLE, pending_target, reindex

OLD_MODEL = "test:hash64"
NEW_MODEL = f"ollama:{MODEL}"
TOPICS = ["rounding", "webhooks", "pricing", "billing", "caching", "migrations", "tenants", "invoices"]


class InterruptAfter:
    """The user's Ctrl-C arriving while the embedder works on batch ``calls + 1``."""

    def __init__(self, inner, calls: int):
        self.inner, self.model_id, self.left = inner, inner.model_id, calls

    def embed(self, texts):
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return self.inner.embed(texts)


def old_embedder():
    return HashEmbedder(dim=64, model_id=OLD_MODEL)


def corpus(n: int) -> list[NewMemory]:
    projects = ["billing", "search", None]
    return [
        NewMemory(
            body=f"Note {i} on {TOPICS[i % len(TOPICS)]}: step {i * 7} of the runbook for "
            f"{TOPICS[(i * 3) % len(TOPICS)]}.",
            title=f"note {i}",
            project=projects[i % 3],
        )
        for i in range(n)
    ]


def seeded(db, n: int = 40) -> None:
    engine = Engine(Store(db), old_embedder())
    engine.remember_many(corpus(n))
    engine.close()


def new_embedder(server):
    return OllamaEmbedder(server.url, MODEL)


def stored_vectors(store, table: str) -> dict[int, np.ndarray]:
    return {
        rowid: np.frombuffer(blob, dtype=np.float32)
        for rowid, blob in store.conn.execute(f"SELECT rowid, embedding FROM {table}")
    }


def assert_one_model(db, embedders: dict) -> str:
    """The store holds exactly one model's vectors, one per chunk marked as having one, each equal
    to what that model makes of the chunk's current text; returns the model."""
    store = Store(db)
    try:
        conn = store.conn
        model, dim, live = store.meta("embed_model"), int(store.meta("embed_dim")), store.vec_table
        assert f"float[{dim}]" in conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (live,)).fetchone()[0]
        virtual = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'"
                " AND name NOT IN ('chunks_fts', 'curated_fts')"
            )
        }
        pending = pending_target(store)
        if pending is None:
            assert virtual == {live} and conn.execute(f"SELECT count(*) FROM {DONE_TABLE}").fetchone()[0] == 0
        else:
            assert virtual <= {live, pending[0]} and live in virtual
        texts = dict(conn.execute("SELECT id, text FROM chunks WHERE has_vector = 1"))
        vectors = stored_vectors(store, live)
        assert set(vectors) == set(texts)
        assert conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 0").fetchone()[0] == 0
        ids = sorted(texts)
        expected = embedders[model].embed([texts[i] for i in ids])
        np.testing.assert_allclose(np.stack([vectors[i] for i in ids]), expected, atol=1e-5)
        return model
    finally:
        store.close()


def assert_recall_works(db, embedder) -> None:
    engine = Engine(Store(db), embedder)
    try:
        result = engine.recall("runbook rounding", all_projects=True, record=False)
        assert result.legs == ("vector", "keyword") and result.hits
    finally:
        engine.close()


def test_recall_with_another_model_is_refused(db_file, embed_server, monkeypatch, capsys):
    seeded(db_file, 6)
    with pytest.raises(ModelMismatchError) as err:
        Engine(Store(db_file), new_embedder(embed_server))
    message = str(err.value)
    assert OLD_MODEL in message and NEW_MODEL in message and "captain-memo reindex" in message

    for name, value in provider_env("ollama", embed_server.url).items():
        monkeypatch.setenv(name, value)
    assert main(["--db", str(db_file), "recall", "rounding"]) == 1
    stderr = capsys.readouterr().err
    assert OLD_MODEL in stderr and NEW_MODEL in stderr and "`captain-memo reindex`" in stderr


def test_reindex_replaces_every_vector_with_the_new_model(db_file, embed_server):
    seeded(db_file)
    before = Store(db_file)
    counts = before.counts()
    before.close()
    store = Store(db_file)
    out = io.StringIO()
    report = reindex(
        store,
        new_embedder(embed_server),
        batch_size=16,
        progress=lambda total, label: Progress(total, label, stream=out, force=True),
    )
    after = store.counts()
    store.close()
    assert (report.model, report.dim, report.previous_model, report.embedded) == (NEW_MODEL, 384, OLD_MODEL, 40)
    assert not report.resumed
    assert after == counts and after["vectors"] == after["chunks"] == 40
    assert "re-embedding with ollama:" in out.getvalue() and "40/40" in out.getvalue()
    assert assert_one_model(db_file, {NEW_MODEL: new_embedder(embed_server)}) == NEW_MODEL
    assert_recall_works(db_file, new_embedder(embed_server))
    with pytest.raises(ModelMismatchError):
        Engine(Store(db_file), old_embedder())


def test_an_interrupted_reindex_resumes_and_follows_changes_made_meanwhile(db_file, embed_server):
    """Ctrl-C after three batches; meanwhile the old model's users add, edit and delete memories."""
    seeded(db_file)
    store = Store(db_file)
    with pytest.raises(KeyboardInterrupt):
        reindex(store, InterruptAfter(new_embedder(embed_server), 3), batch_size=4)
    assert pending_target(store)[1] == NEW_MODEL
    assert store.conn.execute(f"SELECT count(*) FROM {DONE_TABLE}").fetchone()[0] == 12
    store.close()
    # Until the swap the store is wholly the old model, and recall works as before.
    assert assert_one_model(db_file, {OLD_MODEL: old_embedder()}) == OLD_MODEL
    assert_recall_works(db_file, old_embedder())

    old = Engine(Store(db_file), old_embedder())
    edited = old.store.get(3)  # already re-embedded: its new chunk must be embedded again
    old.store.replace_body(
        edited.id,
        NewMemory(
            body="Rewritten: tenants get their own invoice numbering.", title=edited.title, project=edited.project
        ),
        ["Rewritten: tenants get their own invoice numbering."],
        None,
    )
    old.forget(2)
    added = old.remember(NewMemory(body="Added during the reindex: the rounding runbook moved.", project="search"))
    old.close()

    store = Store(db_file)
    report = reindex(store, new_embedder(embed_server), batch_size=4)
    store.close()
    assert report.resumed and report.chunks == 40  # 40 - 1 forgotten + 1 added
    assert report.embedded == 28 + 2  # the 28 left, the edited chunk and the added one
    assert assert_one_model(db_file, {NEW_MODEL: new_embedder(embed_server)}) == NEW_MODEL
    engine = Engine(Store(db_file), new_embedder(embed_server))
    try:
        hits = engine.recall("rounding runbook moved", project="search", record=False).hits
        assert hits[0].memory.id == added and hits[0].vector is not None
        assert "invoice numbering" in engine.recall("invoice numbering", all_projects=True).hits[0].text
    finally:
        engine.close()


def test_a_reused_chunk_id_with_new_text_is_embedded_again(db_file):
    """SQLite reuses the highest rowid after a delete: a done chunk id can come back with new text."""
    seeded(db_file, 5)
    new = HashEmbedder(dim=32, model_id="test:hash32")
    store = Store(db_file)
    with pytest.raises(KeyboardInterrupt):
        reindex(store, InterruptAfter(new, 2), batch_size=2)
    store.close()
    old = Engine(Store(db_file), old_embedder())
    old.forget(5)
    fourth = old.store.get(4)
    old.store.replace_body(
        4, NewMemory(body="entirely new words", title="", project=fourth.project), ["entirely new words"], None
    )
    assert [c.id for c in old.store.chunks_of(4)] == [4]  # the id came back
    old.close()
    store = Store(db_file)
    assert reindex(store, new, batch_size=2).embedded == 1
    store.close()
    assert assert_one_model(db_file, {new.model_id: new}) == new.model_id


def run_reindex(server_url: str, db) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "captain_memo.cli.main", "--db", str(db), "reindex", "--batch-size", "4"],
        env={**os.environ, **provider_env("ollama", server_url)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def kill_at_gate(gate: GatedEmbedder, proc: subprocess.Popen) -> None:
    """SIGKILL the reindex while the server holds the request after the armed number of answers."""
    assert gate.reached.wait(120), proc.communicate()
    proc.kill()
    proc.wait(30)
    gate.release()


def done_rows(db) -> int:
    store = Store(db)
    try:
        return store.conn.execute(f"SELECT count(*) FROM {DONE_TABLE}").fetchone()[0]
    finally:
        store.close()


def test_reindex_killed_with_sigkill_and_rerun(db_file, local_embedder):
    seeded(db_file)
    gate = GatedEmbedder(local_embedder)
    server = start_server(gate)
    try:
        for batches, done in ((2, 8), (3, 20)):  # killed after 2 batches, then after 3 more
            gate.arm(batches)
            proc = run_reindex(server.url, db_file)
            kill_at_gate(gate, proc)
            assert proc.returncode == -9
            assert done_rows(db_file) == done
            assert assert_one_model(db_file, {OLD_MODEL: old_embedder()}) == OLD_MODEL
            assert_recall_works(db_file, old_embedder())
            with pytest.raises(ModelMismatchError):
                Engine(Store(db_file), new_embedder(server))

        finished = run_reindex(server.url, db_file)
        out, err = finished.communicate(timeout=120)
        assert finished.returncode == 0, err
        assert "continuing the unfinished reindex" in out
        assert f"re-embedded 20 of 40 chunks with {NEW_MODEL} (384-d)" in out
        assert f"the vectors of {OLD_MODEL} were replaced" in out
        assert assert_one_model(db_file, {NEW_MODEL: new_embedder(server)}) == NEW_MODEL
        assert_recall_works(db_file, new_embedder(server))
    finally:
        gate.release()
        stop_server(server)


@pytest.mark.slow
def test_reindex_killed_at_random_moments_leaves_one_model(tmp_path, embed_server):
    template = tmp_path / "template.db"
    seeded(template, 60)
    models = {OLD_MODEL: old_embedder(), NEW_MODEL: new_embedder(embed_server)}
    # Kills drawn from the time an uninterrupted run takes here: with a fixed 0.3-3 s, most came
    # after the run had ended (it takes 0.6-1.2 s here), and nothing said whether any landed.
    shutil.copy(template, tmp_path / "timing.db")
    began = time.monotonic()
    assert run_reindex(embed_server.url, tmp_path / "timing.db").wait(120) == 0
    span = time.monotonic() - began
    rng, landed = random.Random(7), 0
    for attempt in range(3):
        db = tmp_path / f"attempt{attempt}.db"
        shutil.copy(template, db)
        proc = run_reindex(embed_server.url, db)
        time.sleep(rng.uniform(0.0, span))
        landed += proc.poll() is None
        proc.kill()
        proc.wait(30)
        assert_one_model(db, models)
        finished = run_reindex(embed_server.url, db)
        assert finished.wait(120) == 0, finished.communicate()
        assert assert_one_model(db, models) == NEW_MODEL
        store = Store(db)
        assert store.counts()["vectors"] == store.counts()["chunks"] == 60
        store.close()
    assert landed, "no kill landed while the reindex ran"


def test_reindex_of_an_empty_store_unbinds_it(db_file, embed_server):
    engine = Engine(Store(db_file), old_embedder())
    memory_id = engine.remember(NewMemory(body="short lived"))
    engine.forget(memory_id)
    engine.close()
    store = Store(db_file)
    report = reindex(store, new_embedder(embed_server))
    assert (report.embedded, report.chunks, report.dim) == (0, 0, None)
    assert store.meta("embed_model") is None and pending_target(store) is None
    store.close()
    engine = Engine(Store(db_file), new_embedder(embed_server))
    engine.remember(NewMemory(body="the first memory of the new model"))
    assert engine.store.meta("embed_model") == NEW_MODEL
    engine.close()


def test_reindex_with_the_same_model_re_embeds_into_a_fresh_table(db_file):
    seeded(db_file, 10)
    store = Store(db_file)
    first = store.vec_table
    report = reindex(store, old_embedder(), batch_size=3)
    assert report.embedded == 10 and store.vec_table != first
    report = reindex(store, old_embedder(), batch_size=3)
    assert store.vec_table == first  # the two names take turns
    store.close()
    assert assert_one_model(db_file, {OLD_MODEL: old_embedder()}) == OLD_MODEL


def test_a_changed_mind_discards_the_unfinished_target(db_file, caplog):
    seeded(db_file, 10)
    store = Store(db_file)

    class Stop:
        model_id = "test:other"

        def embed(self, texts):
            raise EmbeddingError("endpoint down")

    with pytest.raises(EmbeddingError):
        reindex(store, Stop())
    assert pending_target(store)[1] == "test:other"
    report = reindex(store, HashEmbedder(dim=32, model_id="test:hash32"))
    assert not report.resumed and report.dim == 32
    assert "discarding an unfinished reindex to test:other" in caplog.text
    store.close()
    assert assert_one_model(db_file, {"test:hash32": HashEmbedder(dim=32, model_id="test:hash32")}) == "test:hash32"


def test_a_dimension_change_mid_reindex_asks_for_a_restart(db_file):
    seeded(db_file, 10)
    store = Store(db_file)
    wide = HashEmbedder(dim=48, model_id="test:moving")

    class FailAfterOne:
        model_id = "test:moving"
        calls = 0

        def embed(self, texts):
            self.calls += 1
            if self.calls > 1:
                raise EmbeddingError("endpoint down")
            return wide.embed(texts)

    with pytest.raises(EmbeddingError):
        reindex(store, FailAfterOne(), batch_size=4)
    with pytest.raises(EmbeddingError, match="--restart"):
        reindex(store, HashEmbedder(dim=24, model_id="test:moving"), batch_size=4)
    report = reindex(store, HashEmbedder(dim=24, model_id="test:moving"), batch_size=4, restart=True)
    assert report.dim == 24 and report.embedded == 10
    store.close()


def test_a_second_reindex_is_refused_while_one_runs_and_runs_once_the_first_is_killed(
    db_file, local_embedder, embed_server
):
    """Two reindex runs to two models once mixed both in one live table. The loser now stops at once,
    naming the running one; a run killed with SIGKILL holds nothing, so the next one proceeds."""
    from embed_support import cli

    from captain_memo.embeddings.http import OpenAIEmbedder

    seeded(db_file)
    gate = GatedEmbedder(local_embedder)
    server = start_server(gate)
    other = {**os.environ, **provider_env("openai", embed_server.url)}  # another model id, another server
    second = [sys.executable, "-m", "captain_memo.cli.main", "--db", str(db_file), "reindex", "--batch-size", "4"]
    try:
        gate.arm(1)
        first = run_reindex(server.url, db_file)
        assert gate.reached.wait(120), first.communicate()
        loser = subprocess.run(second, env=other, capture_output=True, text=True, timeout=120, cwd=REPO)
        assert loser.returncode == 1, loser.stdout + loser.stderr
        assert f"another reindex of {db_file} is running (process {first.pid})" in loser.stderr, loser.stderr
        assert "damaged" not in loser.stderr and "continuing" not in loser.stdout
        doctor = cli("--db", str(db_file), "doctor")
        assert f"a reindex to {NEW_MODEL} is running (process {first.pid})" in doctor.stdout, doctor.stdout

        first.kill()
        first.wait(30)
        gate.release()
        winner = subprocess.run(second, env=other, capture_output=True, text=True, timeout=300, cwd=REPO)
        assert winner.returncode == 0, winner.stderr
        assert "re-embedded 40 of 40 chunks with openai:" in winner.stdout, winner.stdout
        openai_model = f"openai:{MODEL}"
        assert assert_one_model(db_file, {openai_model: OpenAIEmbedder(embed_server.url, MODEL)}) == openai_model
    finally:
        gate.release()
        stop_server(server)
