"""Relevance in a store holding every kind of text: a name no memory holds is said so, a part of a
name is no keyword evidence, and a chunk holding every rare word of the query is not ranked below
chunks holding none of them for its vector score alone. Real model, small stores."""

from __future__ import annotations

from dataclasses import replace

import pytest
from recall_support import NOW, assert_trace, candidate, memory

from captain_memo.config import PROFILES
from captain_memo.ranking.candidates import by_score
from captain_memo.ranking.coverage import asks_about_change
from captain_memo.ranking.pipeline import RankRequest, rank_pool
from captain_memo.ranking.query import analyse, unheld_names, without_names
from captain_memo.ranking.result import result_json
from captain_memo.records import NewMemory

DOCS = [
    ("Get Started", "Get Started\n\nInstall the package with pip, then run the first example to see it work."),
    ("Capturing output", "The capture plugin swaps stdout and stderr for a MultiCapture object during each test."),
    ("Fixtures", "A fixture provides a value to the tests that name it as an argument."),
    ("Command line", "Run only the tests that failed last time with the option to rerun failures."),
]


def remember_all(engine, notes) -> dict[str, int]:
    ids = engine.remember_many([NewMemory(body=body, title=title, kind="memory") for title, body in notes])
    return {title: memory_id for (title, _), memory_id in zip(notes, ids)}


@pytest.mark.parametrize(
    ("query", "texts", "unheld"),
    [
        ("_get_multicapture", ["Get Started: get the package"], ("_get_multicapture",)),
        ("_get_multicapture", ["def _get_multicapture(method):"], ()),
        ("app.run_forever", ["app.run() starts the server"], ("run_forever",)),  # `app` is a name of its own
        ("skip/skipif", ["the skip marker"], ()),  # alternatives, each a word
        ("--lf", ["nothing"], ()),  # options have their own rule
        ("getMultiCapture", ["get multi capture"], ("getMultiCapture",)),
        ("monkeypatch.setattr", ["monkeypatch.setattr(obj, name)"], ()),
        ("e.g. 3.6", ["nothing"], ()),
    ],
)
def test_a_name_is_held_only_whole(query, texts, unheld):
    assert unheld_names(analyse(query).identifiers, texts) == unheld


def test_a_name_is_taken_out_of_the_keyword_query_where_it_stands_whole():
    assert without_names("why _get_multicapture fails", ("_get_multicapture",)).split() == ["why", "fails"]
    assert without_names("app.run_forever()", ("run_forever",)).strip() == "app. ()"


def test_a_name_no_memory_holds_gives_no_keyword_evidence_and_says_so(local_engine):
    remember_all(local_engine, DOCS)
    result = local_engine.recall("_get_multicapture", record=False)
    # Before: "Get Started" first with keyword 1.0, found by the fragment "get".
    assert all(not hit.bm25 for hit in result.hits), [(h.memory.title, h.bm25) for h in result.hits]
    assert result.unnamed == ("_get_multicapture",)
    assert result.notice == "no memory names `_get_multicapture`; closest by meaning:"
    shown = result_json(result, now=0.0)
    assert shown["unnamed"] == ["_get_multicapture"] and shown["notice"] == result.notice
    assert_trace(result.hits)


def test_a_name_a_memory_holds_is_found_as_before(local_engine):
    ids = remember_all(local_engine, [*DOCS, ("Internals", "`_get_multicapture(method)` picks the capture class.")])
    result = local_engine.recall("_get_multicapture", record=False)
    assert result.unnamed == () and result.notice == ""
    assert result.hits[0].memory.id == ids["Internals"]


def test_the_seed_profile_keeps_its_rule(local_engine):
    remember_all(local_engine, DOCS)
    assert local_engine.recall("_get_multicapture", record=False, profile="v2").unnamed == ()


def pool_of_the_issue() -> list:
    """The pool of ``recall "Bigwritemarker unicorn"`` as it was met: a chunk of a long note holding
    both words, with the pool's lowest vector similarity and a bm25 below shorter chunks holding
    "unicorn" alone, beside chunks holding neither word that read closer (12 candidates: no
    small-pool calibration)."""
    note = replace(
        candidate(memory(1), "... the Bigwritemarker flag of the unicorn exporter stays off in CI ...", vector=0.55),
        bm25=0.4,
    )
    one_word = [
        replace(candidate(memory(2 + i), "unicorn stickers, unicorn mugs", vector=0.6), bm25=2.0) for i in range(3)
    ]
    neither = [candidate(memory(10 + i), "a white horse with a spiral horn", vector=0.8 - i * 0.01) for i in range(8)]
    return [note, *one_word, *neither]


def test_a_chunk_holding_every_rare_word_is_not_below_chunks_holding_none():
    req = RankRequest(analyse("Bigwritemarker unicorn"), None, NOW, 10)
    ranked = by_score(rank_pool(pool_of_the_issue(), req, PROFILES["v3"]))
    assert_trace(ranked)
    neither = [c.score for c in ranked if c.memory.id >= 10]
    note = next(c for c in ranked if c.memory.id == 1)
    # Before: 0.086 (vector 0 after min-max, keyword 0.15, x1.15 rare token) under 0.5 for the closest
    # chunk holding neither word.
    assert note.score > max(neither)
    assert [f.name for f in note.factors][-1] == "rare_words"
    # One rare word held is not lifted: the three chunks holding "unicorn" alone keep their place.
    assert all(c.factor("rare_words") == 1.0 for c in ranked if 2 <= c.memory.id < 10)


def test_the_rare_words_floor_is_off_in_the_seed_profile():
    req = RankRequest(analyse("Bigwritemarker unicorn"), None, NOW, 10)
    ranked = rank_pool(pool_of_the_issue(), req, replace(PROFILES["v3"], rare_words_floor=False))
    assert all(c.factor("rare_words") == 1.0 for c in ranked)


@pytest.mark.parametrize(
    ("question", "about_a_change"),
    [
        ("which commit deprecated before_first_request", True),
        ("when was the JSON provider interface added", True),
        ("latest change to the cli", True),
        ("the fix for url_prefix of nested blueprints", True),
        ("how do I fix a 404 page", False),
        ("how do I upload a file", False),
        ("read settings from environment variables", False),
    ],
)
def test_a_question_about_a_change_is_told_apart(question, about_a_change):
    assert asks_about_change(analyse(question, word_forms=True)) is about_a_change


def test_v3_holds_names_whole_and_lifts_rare_words():
    assert PROFILES["v3"].names_whole and PROFILES["v3"].rare_words_floor
    assert not PROFILES["v2"].names_whole and not PROFILES["legacy"].rare_words_floor


def test_the_terminal_and_the_editor_footer_say_no_memory_names_it(local_engine):
    from captain_memo.cli.commands.recall import render
    from captain_memo.presentation.views import recall_json
    from captain_memo.presentation.window import shown_recall

    remember_all(local_engine, DOCS)
    data = recall_json(local_engine.recall("_get_multicapture\x1b[2J", record=False), 0.0)
    editor = shown_recall(data, 0.0)
    assert editor["footer"].endswith("no memory names _get_multicapture\\x1b[2J: closest by meaning")
    assert editor["footer"] in render(data).split("\n")


def test_in_a_sentence_the_rare_words_are_not_lifted_together():
    from captain_memo.ranking.coverage import keywords_only

    assert keywords_only(analyse("Bigwritemarker unicorn"))
    assert not keywords_only(analyse("Add FixtureLookupError to top level import"))
    assert not keywords_only(analyse("unicorn"))


def test_in_a_sentence_a_name_keeps_its_parts(local_engine):
    remember_all(local_engine, DOCS)
    result = local_engine.recall("how to get started with _get_multicapture", record=False)
    assert result.unnamed == () and any(hit.bm25 for hit in result.hits)


def doc_and_commit(query: str, cfg=PROFILES["v3"]) -> list:
    """A doc section and a commit both naming ``url_for``; the commit's message reads a little closer."""
    doc = replace(candidate(memory(1), "Routing: build a URL with url_for(endpoint)", vector=0.8), bm25=2.0)
    commit = replace(
        candidate(memory(2, kind="observation", age_days=0.1), "fix url_for with a subdomain", vector=0.84), bm25=2.2
    )
    filler = [candidate(memory(10 + i), "unrelated text", vector=0.5) for i in range(10)]
    req = RankRequest(analyse(query, 4, True), None, NOW, 10)
    ranked = by_score(rank_pool([doc, commit, *filler], req, cfg))
    assert_trace(ranked)
    return [c.memory.id for c in ranked]


def test_curated_text_answers_a_question_that_is_not_about_a_change():
    # Before: the commit first (kind weighed alike), as commits crowded out Flask's API reference.
    assert doc_and_commit("url_for")[:2] == [1, 2]
    assert doc_and_commit("url_for", replace(PROFILES["v3"], kind_prior=1.0))[:2] == [2, 1]


def test_a_question_about_a_change_keeps_its_commits_at_full_weight():
    assert doc_and_commit("which commit fixed url_for")[:2] == [2, 1]


def test_a_section_whose_heading_holds_a_word_of_the_question_is_weighed_up():
    from captain_memo.records import Source

    def section(mid: int, title: str, vector: float):
        mem = replace(memory(mid), title=title, source=Source(f"docs/{mid}.rst", 1, 9, None, "file", "rst"))
        return candidate(mem, f"{title}\nSet the headers the server forwards.", vector=vector)

    pool = [
        section(1, "Gunicorn > Binding Externally", 0.81),
        section(2, "Tell Flask it is Behind a Proxy", 0.80),
        *[candidate(memory(10 + i), "unrelated text", vector=0.5) for i in range(10)],
    ]
    how_to = RankRequest(analyse("behind nginx my app sees the wrong client IP", 4, True), None, NOW, 10)
    ranked = by_score(rank_pool(pool, how_to, PROFILES["v3"]))
    assert_trace(ranked)
    # Before: the section on binding a server first, by its vector score alone.
    assert [c.memory.id for c in ranked[:2]] == [2, 1] and ranked[0].factors[-1].name == "heading"
    change = RankRequest(analyse("which commit fixed running behind a proxy", 4, True), None, NOW, 10)
    assert all(c.factor("heading") == 1.0 for c in rank_pool(pool, change, PROFILES["v3"]))


def test_explain_shows_each_new_stage_with_its_multiplier():
    from captain_memo.presentation.words import explain_lines
    from captain_memo.ranking.result import hit_json

    req = RankRequest(analyse("url_for", 4, True), None, NOW, 10)
    commit = replace(candidate(memory(2, kind="observation", age_days=0.1), "fix url_for", vector=0.84), bm25=2.2)
    pool = [commit, *[candidate(memory(10 + i), "unrelated text", vector=0.5) for i in range(10)]]
    (shown,) = [c for c in rank_pool(pool, req, PROFILES["v3"]) if c.memory.id == 2]
    lines = explain_lines(hit_json(shown, 1, NOW))
    assert "x 0.600 kind (an observation (a commit, a capture), and the question is not about a change)" in lines
    assert lines[-1].endswith(f"= {shown.score:.3f}")


def test_each_kind_s_keyword_score_is_scaled_to_its_own_best_on_a_question_not_about_a_change():
    """With curated text's own statistics, a doc's bm25 and a commit's are on two scales: the doc
    naming ``url_for`` has 5.9 where commits naming it have 11.4 (Flask's store), which put the API's
    answers below the top 3. Scaled among its own kind, the best doc scores 1 beside the best commit,
    and the kind prior weighs the two; a question about a change keeps one scale."""
    from captain_memo.presentation.words import explain_lines
    from captain_memo.ranking.result import hit_json

    doc = replace(candidate(memory(1), "Routing: build a URL with url_for(endpoint)", vector=0.80), bm25=5.9)
    near = replace(candidate(memory(3), "Blueprints: url_for with the blueprint's name", vector=0.84), bm25=5.0)
    commit = replace(
        candidate(memory(2, kind="observation", age_days=0.1), "fix url_for with a subdomain", vector=0.84), bm25=11.4
    )
    pool = [doc, near, commit, *[candidate(memory(10 + i), "unrelated text", vector=0.5) for i in range(10)]]

    def ranked(query: str, cfg=PROFILES["v3"]) -> list:
        out = by_score(rank_pool(pool, RankRequest(analyse(query, 4, True), None, NOW, 10), cfg))
        assert_trace(out)
        return out

    name = ranked("url_for")
    # Before: one scale, and the doc closer in meaning but weaker in bm25 ranked first.
    assert [c.memory.id for c in name[:2]] == [1, 3] and name[0].keyword == 1.0
    assert [c.memory.id for c in ranked("url_for", replace(PROFILES["v3"], curated_statistics=False))[:2]] == [3, 1]
    lines = explain_lines(hit_json(name[0], 1, NOW))
    assert "keyword 1.000 (scaled among curated text)" in lines[0], lines
    assert not any("keyword scale" in line for line in lines), "it multiplies nothing: no multiplier line"
    assert {c.memory.id: c.keyword_among for c in name}[2] == "observations"
    change = ranked("which commit fixed url_for")
    assert all(c.keyword_among is None for c in change)
    assert "scaled among" not in explain_lines(hit_json(change[0], 1, NOW))[0]
    assert {c.memory.id: c.keyword for c in change}[2] == 1.0 and {c.memory.id: c.keyword for c in change}[1] < 0.6
