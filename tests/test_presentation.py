"""What a person sees of a hit: the matching chunk's own heading path and lines in a long section,
the lines holding the query's words, `show ID:LINE`, the superseded mark, the explanation and the
counts; the same pieces every front end uses (captain_memo/presentation/)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from recall_support import FILLER, cli_error, long_markdown, run_cli

from captain_memo.presentation.chunks import place, snippet
from captain_memo.presentation.text import COMPACT_TEXT_CHARS, compact_hit, fit_compact, recall_text, terminal_hit
from captain_memo.presentation.words import counted, explain_lines
from captain_memo.records import Memory, Source
from captain_memo.sources.markdown import parse


def section_memory(text: str) -> tuple[Memory, tuple[str, ...]]:
    """The long section as the indexer stores it (sources/indexer.py): body, title, lines, chunks."""
    [section] = [s for s in parse(text, "guide").sections if s.title.endswith("Deprecations and removals")]
    memory = Memory(
        id=7,
        kind="memory",
        title=section.title,
        body=section.text,
        created_at=0.0,
        updated_at=0.0,
        project=None,
        branch=None,
        source=Source("doc/guide.md", section.line_start, section.line_end, None, "file", "markdown"),
        content_hash="",
        superseded_by=None,
        stability=7.0,
        last_surfaced=None,
        opened_in_full=False,
    )
    return memory, section.chunks


def test_a_chunk_of_a_long_section_has_its_own_heading_path_and_lines():
    text = long_markdown()
    memory, chunks = section_memory(text)
    assert len(chunks) > 2 and memory.source.line_start == 3
    file_lines = text.split("\n")
    seen = []
    for chunk in chunks:
        where = place(memory, chunk)
        assert where.file_start is not None, chunk[:80]
        # Every line of the chunk is the file's line at the number given.
        for i, line in enumerate(where.lines):
            if line.strip():
                assert line.strip() in file_lines[where.file_line(i) - 1], (i, line)
        seen.append((where.title, where.file_start, where.file_end))
    deep = next(s for s in seen if s[0].endswith("tmp_path_factory"))
    assert deep[0] == "Guide > Deprecations and removals > tmp_path_factory"
    assert memory.source.line_start < deep[1] <= deep[2] < memory.source.line_end
    assert [s[1] for s in seen] == sorted(s[1] for s in seen), "the chunks follow one another"


def long_rst() -> str:
    parts = ["Deprecations", "============", "", "Removed Features", "----------------", ""]
    parts += [FILLER.format(n=n) + "\n" for n in range(1, 15)]
    parts += ["tmp_path_factory", "~~~~~~~~~~~~~~~~", "", "Return a TempPathFactory instance.", ""]
    parts += [".. code-block:: python", "", "    def test_x(tmp_path_factory):", "        pass", ""]
    parts += [FILLER.format(n=n) + "\n" for n in range(15, 30)]
    return "\n".join(parts)


def test_a_restructuredtext_chunk_is_found_past_the_underlines_its_text_leaves_out():
    from captain_memo.sources.rst import parse as parse_rst

    text = long_rst()
    [section] = parse_rst(text, "deprecations").sections
    memory = replace(
        section_memory(long_markdown())[0],
        title=section.title,
        body=section.text,
        source=Source("doc/deprecations.rst", section.line_start, section.line_end, None, "file", "rst"),
    )
    file_lines = text.split("\n")
    places = [place(memory, chunk) for chunk in section.chunks]
    assert len(places) > 2 and all(p.file_start is not None for p in places)
    for where in places:
        for i, line in enumerate(where.lines):
            if line.strip():
                assert line.strip() in file_lines[where.file_line(i) - 1], (i, line)
    deep = next(p for p in places if p.title.endswith("tmp_path_factory"))
    returned = file_lines.index("Return a TempPathFactory instance.") + 1
    assert deep.title == "Deprecations > Removed Features > tmp_path_factory"
    assert section.line_start < deep.file_start <= returned <= deep.file_end < section.line_end


def test_the_snippet_holds_the_querys_words_not_the_heading_the_title_shows():
    lines = [
        "### tmp_path_factory",
        "",
        "Fixtures are set up once per session.",
        "Return a TempPathFactory instance for the test session.",
        "Unrelated closing words.",
    ]
    found = snippet(lines, "what does tmp_path_factory return", title="Guide > tmp_path_factory", size=1)
    assert found.text == "Return a TempPathFactory instance for the test session." and found.line_index == 3
    assert found.matched == ("return",)
    none = snippet(lines, "zebra", title="Guide > tmp_path_factory")
    assert none.text.startswith("Fixtures are set up"), "no query word: the chunk's opening lines"


def hit_json(**extra) -> dict:
    base = {
        "rank": 1,
        "id": "t8",
        "store": "team",
        "author": "alice",
        "kind": "memory",
        "title": "Guide > Deprecations and removals",
        "text": "Guide > Deprecations and removals > tmp_path_factory\nReturn a TempPathFactory instance.",
        "score": 0.308,
        "created_at": 0.0,
        "branch": None,
        "project": None,
        "source": {"path": "doc/guide.md", "line_start": 3, "line_end": 80, "label": "doc/guide.md:3-80"},
        "superseded_by": "t9",
        "chunk": {
            "title": "Guide > Deprecations and removals > tmp_path_factory",
            "label": "doc/guide.md:33-35",
            "line_start": 33,
            "line_end": 35,
            "snippet": "Return a TempPathFactory instance.",
            "ref": "t8:33",
        },
        "explain": {"vector": 0.5, "keyword": None, "fused": 0.308, "factors": []},
    }
    return {**base, **extra}


def test_a_terminal_hit_shows_the_chunk_the_author_the_t_id_and_the_superseded_mark():
    lines = terminal_hit(hit_json(), now=86_400.0 * 3)
    assert lines[0].startswith(" 1. 0.308  #t8:33 [memory] Guide > Deprecations and removals > tmp_path_factory")
    assert "doc/guide.md:33-35" in lines[0] and "3-80" not in lines[0]
    assert "team, by alice" in lines[0] and "superseded by #t9" in lines[0]
    assert lines[1].strip() == "Return a TempPathFactory instance."


def test_the_explanation_without_a_multiplier_says_so_once():
    lines = explain_lines(hit_json())
    assert lines[-1] == "= 0.308 (no multiplier applied)"
    assert "0.308 = 0.308" not in "\n".join(lines)
    trace = {"vector": 0.5, "keyword": 1.0, "fused": 0.5, "factors": [{"name": "changed_file", "value": 2.0}]}
    with_new_factor = explain_lines(hit_json(explain=trace, score=1.0))
    assert "x 2.000 changed file" in with_new_factor and with_new_factor[-1] == "= 0.500 x 2.000 = 1.000"
    new_field = explain_lines(hit_json(explain={**trace, "calibrated": 0.25, "window": "since 8.0"}))
    assert new_field[0].endswith("fused 0.500  calibrated 0.250  window since 8.0"), new_field[0]


def test_a_compact_hit_keeps_what_a_model_needs_and_leaves_out_nulls():
    part = {**hit_json()["chunk"], "ref": "7:33"}  # a part inside memory 7: the id show opens it at
    compact = compact_hit(hit_json(author=None, superseded_by=None, store="local", id=7, chunk=part), now=0.0)
    assert compact == {
        "id": 7,
        "part": "7:33",
        "kind": "memory",
        "title": "Guide > Deprecations and removals > tmp_path_factory",
        "age": "now",
        "store": "local",
        "where": "doc/guide.md:33-35",
        "lines": "Return a TempPathFactory instance.",
    }


def test_a_compact_answer_fits_its_budget_whatever_its_header_holds():
    words = " ".join(f"word{i} team store down" for i in range(40))
    hits = [
        compact_hit(hit_json(id=i, chunk={**hit_json()["chunk"], "snippet": words, "ref": f"{i}:33"}), now=0.0)
        for i in range(10)
    ]
    answer = {"query": "team store down", "detail": "compact", "legs": ["vector", "keyword"], "stores": ["local"]}
    answer.update(failed_legs={}, notice="read against 2026-04-09 " * 12, project="/" + "p" * 200, hits=hits)
    assert len(recall_text(answer)) > COMPACT_TEXT_CHARS  # as the hits come: too long
    fit = recall_text(fit_compact(answer))
    assert len(fit) <= COMPACT_TEXT_CHARS
    assert all(f"#{i}:33 [memory]" in fit for i in range(10)), "every hit keeps its id and title"


@pytest.mark.parametrize(
    "count, noun, expected",
    [(1, "memory", "1 memory"), (2, "memory", "2 memories"), (1, "file", "1 file"), (0, "file", "0 files")],
)
def test_a_count_agrees_with_its_noun(count, noun, expected):
    assert counted(count, noun) == expected


def test_recall_and_show_at_a_line_on_an_indexed_long_section(cli_env, capsys):
    doc = Path(cli_env).parent / "doc" / "guide.md"
    doc.parent.mkdir()
    doc.write_text(long_markdown(), encoding="utf-8")
    run_cli(capsys, "--db", cli_env, "--no-service", "index", doc)
    data = json.loads(run_cli(capsys, "--db", cli_env, "--no-service", "recall", "--json", "TempPathFactory"))
    top = data["hits"][0]
    assert top["chunk"]["title"] == "Guide > Deprecations and removals > tmp_path_factory"
    assert "TempPathFactory" in top["chunk"]["snippet"] and top["chunk"]["matched"] == ["temppathfactory"]
    start = top["chunk"]["line_start"]
    assert top["chunk"]["ref"] == f"{top['id']}:{start}" and start > top["source"]["line_start"]
    listed = run_cli(capsys, "--db", cli_env, "--no-service", "recall", "TempPathFactory")
    assert f"#{top['id']}:{start} [memory] Guide > Deprecations and removals > tmp_path_factory" in listed

    part_only = run_cli(capsys, "--db", cli_env, "show", top["chunk"]["ref"])
    assert "Return a TempPathFactory instance" in part_only and "Paragraph 1:" not in part_only
    assert f"guide.md:{start}-" in part_only and f"show {top['id']} --whole" in part_only
    shown = run_cli(capsys, "--db", cli_env, "show", "--whole", top["chunk"]["ref"])
    head, whole = shown.split("── the whole memory", 1)
    assert f"guide.md:{start}-" in head.split("\n", 3)[3] and "Return a TempPathFactory instance" in head
    assert "Paragraph 1:" not in head and "Paragraph 1:" in whole, "the matching chunk first, then the memory"
    part = json.loads(run_cli(capsys, "--db", cli_env, "show", "--json", top["chunk"]["ref"]))["chunk"]
    assert part["line_start"] == start and "Return a TempPathFactory instance" in part["text"]
    assert "line 2 is not in it" in cli_error(capsys, "--db", cli_env, "show", f"{top['id']}:2")
    assert "12:310" in cli_error(capsys, "--db", cli_env, "show", f"{top['id']}:abc")


def test_the_command_line_marks_a_superseded_hit(cli_env, capsys):
    for text in ("the queue is postgres with skip locked", "the queue is redis streams now"):
        run_cli(capsys, "--db", cli_env, "--no-service", "remember", text)
    run_cli(capsys, "--db", cli_env, "supersede", "1", "2")
    listed = run_cli(capsys, "--db", cli_env, "--no-service", "recall", "queue")
    [line] = [row for row in listed.splitlines() if "#1 [" in row]
    assert "superseded by #2" in line, listed
    shown = run_cli(capsys, "--db", cli_env, "show", "1")
    assert "superseded by #2" in shown.splitlines()[1]


def test_a_line_between_two_chunks_opens_the_next_and_a_line_outside_is_refused():
    from captain_memo.errors import InputError
    from captain_memo.presentation.views import memory_at

    memory, chunks = section_memory(long_markdown())
    places = [place(memory, chunk) for chunk in chunks]
    gaps = [(a, b) for a, b in zip(places, places[1:]) if a.file_end + 1 < b.file_start]
    assert gaps, "the chunks of a section leave the blank lines between paragraphs out"
    before, after = gaps[0]
    _, part = memory_at(memory, list(chunks), before.file_end + 1)
    assert part["line_start"] == after.file_start and part["title"] == after.title
    _, part = memory_at(memory, list(chunks), before.file_start)
    assert part["line_start"] == before.file_start
    with pytest.raises(InputError, match="line 1 is not in it"):
        memory_at(memory, list(chunks), 1)


def test_a_missing_team_grant_is_not_called_a_failed_leg():
    from captain_memo.presentation.text import failure_line

    why = "your role bob has no grant for project 'shop'; ask the store's owner to run: INSERT ..."
    assert failure_line("team grant", why) == f"team store: {why}"
    answer = {"query": "q", "detail": "compact", "legs": ["vector", "keyword"], "stores": ["local", "team"]}
    text = recall_text({**answer, "failed_legs": {"team grant": why}, "hits": []})
    assert "leg failed" not in text and "these results are local only: your role bob has no grant" in text


# -- one footer and one escaping for the terminal and the editor -----------------------------

OSC52 = "\x1b]52;c;aGVsbG8=\x07"  # writes "hello" to the clipboard of many terminals


def hostile_recall(now: float) -> dict:
    """A recall's JSON whose stored texts hold line breaks and escape sequences, the team store down."""
    from captain_memo.presentation.views import recall_json
    from captain_memo.ranking.candidates import Candidate, Factor
    from captain_memo.ranking.result import RecallResult

    memory = replace(
        section_memory(long_markdown())[0],
        title="deploy" + OSC52 + "\nforged line",
        body="deploy\nsteps\r\nsecond\x1b[2J line\rback\tend\x9bx",
        branch="main\nforged",
        source=Source("ops/run\nbook.md\x1b[31m", None, None, None, "file", "markdown"),
        created_at=now - 3.2 * 86_400,
    )
    hit = Candidate(
        1, memory, memory.body, vector=0.8, keyword=1.0, bm25=4.2, keyword_among="curated text", fused=0.9,
        score=0.99, factors=(Factor("branch", 1.1, "main\nforged"),),
    )  # fmt: skip
    result = RecallResult(
        "deploy", "v3", (hit,), ("vector", "keyword"), {"team": "no answer within 1 s"}, 12.4, 1, ("local",)
    )
    return recall_json(result, now)


def test_the_terminal_and_the_editor_show_one_footer_for_one_result():
    from captain_memo.cli.commands.recall import render
    from captain_memo.presentation.window import shown_recall

    data = hostile_recall(1_000_000.0)
    cli_lines = render(data).split("\n")
    editor = shown_recall(data, 1_000_000.0)
    assert editor["footer"] == "profile v3 · legs: vector + keyword · stores: local · failed: team store · 12 ms"
    assert cli_lines[-2] == editor["footer"]
    assert cli_lines[-1] == f"warning: {editor['warning']}"
    assert editor["warning"] == "the local store alone answered (team store failed: no answer within 1 s)"


def test_what_the_editor_shows_of_a_hit_is_escaped_and_aged_here():
    import re

    from captain_memo.presentation.window import shown_hit, shown_memory

    now = 1_000_000.0
    shown = shown_hit(hostile_recall(now)["hits"][0], now)
    control = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
    assert shown["age"] == "3d"
    assert shown["title"] == "deploy\\u001b]52;c;aGVsbG8=\\u0007\\nforged line"
    assert shown["meta"] == "memory · #7 · main\\nforged · ops/run\\nbook.md\\u001b[31m · 3d"
    assert shown["body"] == ["deploy", "steps", "second\\u001b[2J line\\rback\tend\\u009bx"]
    assert shown["details"] == ["main\\nforged"]
    assert shown["keyword_note"] == "scaled among curated text"
    texts = [v for v in shown.values() if isinstance(v, str)] + shown["body"] + shown["details"]
    assert not [t for t in texts if control.search(t)]
    memory = shown_memory(
        {"title": "a\u2028b", "kind": "memory", "id": 3, "body": "x\r\ny\x1b", "source": {"label": "n\x85.md"}}
    )["shown"]
    assert memory == {"title": "a\\u2028b", "meta": "memory · #3 · n\\u0085.md", "body": ["x", "y\\u001b"]}
