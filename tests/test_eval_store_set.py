"""The whole-store evaluation set: its questions, its labels, and how `captain-memo eval` runs it
(skipped, saying what is missing, without ../shared)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fakes import HashEmbedder

from captain_memo.cli.commands.eval import planned_sets
from captain_memo.errors import InputError
from captain_memo.evaluation.flask_store import STORE_SETS, questions
from captain_memo.evaluation.runner import said_no_match

SHARED = Path(__file__).resolve().parents[2] / "shared"


def test_the_set_asks_every_kind_of_question():
    asked = questions()
    kinds = Counter(q.category for q in asked)
    assert len(asked) >= 60 and len({q.id for q in asked}) == len(asked)
    assert kinds["how-to"] >= 25 and kinds["name"] >= 10 and kinds["change"] >= 10 and kinds["no answer"] >= 5
    assert all(q.answers for q in asked if q.category != "no answer")
    assert all(not q.answers for q in asked if q.category == "no answer")
    assert all(a.startswith(("docs/", "commit:")) for q in asked for a in q.answers)


def every_answer() -> set[str]:
    labels = set()
    for q in questions():
        for answer in q.answers:
            labels.add(answer + "0" * 30 if answer.startswith("commit:") else answer)
    return labels


def test_labels_resolve_against_the_store_and_a_commit_by_its_sha_start():
    ds = STORE_SETS["flask_store"].dataset(every_answer())
    assert len(ds.queries) == len(questions())
    assert all(ds.qrels[q.id] for q in ds.queries if q.category != "no answer")
    docs_alone = STORE_SETS["flask_docs"].dataset(every_answer())
    assert {q.category for q in docs_alone.queries} == {"how-to", "name"}


def test_a_label_naming_nothing_in_the_store_stops_the_run():
    labels = every_answer() - {"docs/quickstart.rst#Quickstart > Sessions"}
    with pytest.raises(InputError, match=r"howto-7 names 'docs/quickstart.rst#Quickstart > Sessions'"):
        STORE_SETS["flask_store"].dataset(labels)


def test_without_the_shared_data_the_set_is_skipped_saying_what_is_missing(tmp_path, capsys):
    assert planned_sets(["flask_store"], tmp_path) == []
    said = capsys.readouterr().err
    assert "flask_store" in said and str(tmp_path / "histories/flask.jsonl") in said and "skipped" in said


class Recalled:
    def __init__(self, unnamed=(), best=None):
        self.unnamed = unnamed
        self.hits = [type("Hit", (), {"vector": best})()] if best is not None else []


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (Recalled(unnamed=("_get_multicapture",), best=0.9), True),
        (Recalled(best=0.6), True),  # cosine 0.2: far in meaning
        (Recalled(best=0.8), False),  # cosine 0.6: an answer
        (Recalled(), True),  # nothing found
    ],
)
def test_a_question_nothing_answers_is_answered_by_saying_so(result, said):
    assert said_no_match(result) is said


@pytest.mark.skipif(not (SHARED / "histories" / "flask.jsonl").exists(), reason="needs ../shared/histories")
def test_every_label_names_a_section_or_commit_of_the_built_store(tmp_path):
    engine, doc_of, ds = STORE_SETS["flask_store"].build(SHARED, HashEmbedder(), tmp_path, progress=False)
    try:
        assert len(ds.queries) == len(questions()) and len(set(doc_of.values())) > 4000
    finally:
        engine.close()
