"""The Markdown chunker: sections, fences, paragraph splits with a cap, front matter, heading paths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from captain_memo.base.chunking import MAX_CHUNK_CHARS
from captain_memo.sources.markdown import parse, parse_date, split_front_matter

FENCED = """# Deploys

## Pipeline

Every merge to main runs the pipeline below.

```yaml
## not a heading
stages:

  - build

  - deploy
```

After the fence the section goes on.

## Afterwards

The next section.
"""


def test_a_fence_holding_a_heading_line_stays_in_one_chunk():
    note = parse(FENCED, "deploys")
    assert [s.path for s in note.sections] == [("Deploys", "Pipeline"), ("Deploys", "Afterwards")]
    pipeline = note.sections[0]
    assert len(pipeline.chunks) == 1
    fence = FENCED[FENCED.index("```yaml") : FENCED.index("```\n", FENCED.index("```yaml") + 3) + 3]
    assert fence in pipeline.chunks[0]
    assert "After the fence the section goes on." in pipeline.chunks[0]


def test_a_fence_is_never_cut_even_in_a_section_split_by_the_cap():
    filler = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))
    code = "```python\n" + "\n\n".join(f"## not a heading {i}\nx_{i} = {i}" for i in range(60)) + "\n```"
    text = f"# Big\n\n## Section\n\n{filler}\n\n{code}\n\n{filler}\n"
    note = parse(text, "big")
    assert len(note.sections) == 1
    chunks = note.sections[0].chunks
    assert len(chunks) > 3
    holding = [c for c in chunks if "```python" in c]
    assert len(holding) == 1 and code in holding[0]  # whole, although longer than the cap
    assert len(code) > MAX_CHUNK_CHARS
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0
        assert chunk.startswith("Big > Section\n")
        if chunk is not holding[0]:
            assert len(chunk) <= MAX_CHUNK_CHARS


def test_long_sections_split_at_paragraph_boundaries_under_the_cap():
    paragraphs = [f"Paragraph {i}: " + " ".join(f"w{i}x{j}" for j in range(40)) for i in range(20)]
    note = parse("## Notes\n\n" + "\n\n".join(paragraphs), "notes")
    chunks = note.sections[0].chunks
    assert len(chunks) > 1
    joined = "\n\n".join(c.split("\n", 1)[1] for c in chunks)
    for paragraph in paragraphs:
        assert sum(paragraph in c for c in chunks) == 1  # never cut in two
        assert paragraph in joined
    assert all(len(c) <= MAX_CHUNK_CHARS for c in chunks)


def test_subheadings_extend_the_heading_path_of_later_chunks():
    body = "\n\n".join("Filler " + "text " * 150 for _ in range(3))
    text = f"# Guide\n\n## Setup\n\nIntro.\n\n### Linux\n\n{body}\n\n### macOS\n\nUse brew.\n"
    chunks = parse(text, "guide").sections[0].chunks
    assert chunks[0].startswith("Guide > Setup\n")
    assert chunks[-1].startswith("Guide > Setup > macOS\n") and "Use brew." in chunks[-1]
    assert any(c.startswith("Guide > Setup > Linux\n") for c in chunks)


def test_front_matter_gives_title_date_and_tags_and_keeps_line_numbers():
    text = '---\ntitle: "Cache policy"\ndate: 2024-05-06T10:00:00Z\ntags:\n  - cache\n  - http\n---\n\n## TTL\n\nThirty seconds.\n'
    note = parse(text, "file-name")
    assert note.title == "Cache policy"
    assert note.front.date == parse_date("2024-05-06T10:00:00+00:00")
    assert note.front.tags == ("cache", "http")
    section = note.sections[0]
    assert section.title == "Cache policy > TTL"
    assert text.splitlines()[section.line_start - 1] == "## TTL" and section.line_end == 11


@pytest.mark.parametrize(
    "front, title, tags, bad_date",
    [
        ("title: One\ntags: a, b", "One", ("a", "b"), None),
        ("tags: [x, 'y z']", "H1 title", ("x", "y z"), None),
        ("date: next tuesday", "H1 title", (), "next tuesday"),
        ("name: skill-name\ndescription: does things", "skill-name", (), None),
    ],
)
def test_front_matter_subset(front, title, tags, bad_date):
    note = parse(f"---\n{front}\n---\n# H1 title\n\nText.\n", "stem")
    assert (note.title, note.front.tags, note.front.date_error) == (title, tags, bad_date)


SKILL_BLOCK = """---
name: db-retries
description: |
  Retry a failed database call with backoff.
  Use when a query times out or the pool is exhausted.
---
# Retries

Body.
"""


@pytest.mark.parametrize("style, joined", [("|", "\n"), (">", " ")])
def test_a_block_description_is_read_whole_and_leads_the_preamble(style, joined):
    note = parse(SKILL_BLOCK.replace("description: |", f"description: {style}"), "SKILL")
    wanted = f"Retry a failed database call with backoff.{joined}Use when a query times out or the pool is exhausted."
    assert note.front.description == wanted  # the subset reader stored "|"
    assert note.sections[0].text.startswith(wanted)


@pytest.mark.parametrize(
    "front, field, wanted",
    [
        ('tags: [db, "retry, backoff"]', "tags", ("db", "retry backoff")),  # was split inside the quotes
        ("title: Cache policy # draft", "title", "Cache policy"),  # the comment was kept
        ('title: "Cache policy" # draft', "title", "Cache policy"),  # the quotes and comment were kept
        ("title: 'It''s cached'", "title", "It's cached"),  # stayed doubled
        ("title: 2024", "title", "2024"),
        ("tags: [1, true, [nested], db]", "tags", ("1", "db")),  # words only
    ],
)
def test_front_matter_is_read_as_yaml(front, field, wanted):
    note = parse(f"---\n{front}\n---\n# H1 title\n\nText.\n", "stem")
    assert (note.title if field == "title" else note.front.tags) == wanted
    assert note.front.fallback is None


def test_yaml_dates_are_read_as_dates():
    note = parse("---\ndate: 2024-05-06\ncreated: 2020-01-01\n---\ntext\n", "n")
    assert note.front.date == parse_date("2024-05-06") and note.front.date_error is None
    timed = parse("---\ndate: 2024-05-06T10:00:00+02:00\n---\ntext\n", "n")
    assert timed.front.date == parse_date("2024-05-06T08:00:00Z")


def test_front_matter_yaml_refuses_is_read_by_the_simple_reader_and_says_why():
    # Cursor writes unquoted globs, which YAML reads as an alias: its documented form, read as globs.
    note = parse("---\ndescription: Web rules\nglobs: *.ts,*.tsx # web\nalwaysApply: false\n---\nUse strict.\n", "web")
    assert note.front.description == "Web rules" and note.front.data["globs"] == "*.ts,*.tsx"
    assert note.front.fallback is None and note.front.data["alwaysapply"] is False
    broken = parse("---\ndescription: Web rules\nglobs: [*.ts\n---\nUse strict.\n", "web")
    assert broken.front.description == "Web rules"
    assert broken.front.fallback is not None and "file line" in broken.front.fallback
    assert parse("---\n- a list\n---\ntext\n", "n").front.fallback == "YAML gave a list, not keys and values"


def test_without_front_matter_or_h1_the_file_name_is_the_title():
    note = parse("Just a line of text.\n\n## Part\n\nMore.\n", "quick-note")
    assert [s.title for s in note.sections] == ["quick-note", "quick-note > Part"]
    assert [s.anchor for s in note.sections] == ["top", "part"]


def test_an_unclosed_front_matter_is_text_and_an_unclosed_fence_runs_to_the_end():
    assert split_front_matter(["---", "not closed", "text"]) == ({}, 0)
    note = parse("## A\n\n```\n## inside\n\n## still inside\n", "f")
    assert len(note.sections) == 1 and "## still inside" in note.sections[0].chunks[0]


def test_repeated_headings_get_distinct_anchors_and_empty_sections_are_left_out():
    note = parse("# T\n\n## Notes\n\none\n\n## Empty\n\n## Notes\n\ntwo\n", "t")
    assert [s.anchor for s in note.sections] == ["notes", "notes-2"]


def test_windows_line_endings_and_tilde_fences():
    note = parse("## A\r\n\r\n~~~\r\n## no\r\n~~~\r\n\r\n## B\r\n\r\nb\r\n", "f")
    assert [s.anchor for s in note.sections] == ["a", "b"]
    assert "## no" in note.sections[0].chunks[0]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "## H",
                "### h",
                "```",
                "~~~",
                "text line",
                "",
                "# T",
                "---",
                "    ```",
                "- item",
                "  ```",
                "<!--",
                "-->",
                "===",
                "> q",
            ]
        ),
        max_size=40,
    )
)
def test_any_line_soup_parses_and_every_chunk_keeps_fences_balanced(lines):
    text = "\n".join(lines)
    note = parse(text, "soup")
    total = len(text.split("\n"))
    for section in note.sections:
        assert 1 <= section.line_start <= section.line_end <= total
        assert section.chunks and all(c.strip() for c in section.chunks)


def test_a_heading_inside_an_html_comment_opens_no_section():
    note = parse("# T\n\nIntro.\n\n<!--\n## Draft\nnot ready\n-->\n\nMore.\n\n## Real\n\nbody\n", "t")
    assert [s.path for s in note.sections] == [("T",), ("T", "Real")]
    assert "## Draft" in note.sections[0].text and (note.sections[0].line_start, note.sections[0].line_end) == (1, 10)


def test_a_fence_marker_inside_an_html_block_does_not_swallow_the_headings_after_it():
    note = parse("# T\n\n<details>\n```\n</details>\n\n## Real\n\nbody\n", "t")
    assert [s.path for s in note.sections] == [("T",), ("T", "Real")]


@pytest.mark.parametrize("fence", ["```sh", "~~~", "````"])
def test_a_fenced_block_holding_heading_lines_opens_no_section(fence):
    close = fence.rstrip("sh")
    note = parse(f"# T\n\nIntro.\n\n{fence}\n# x\n## y\n\n{close}\n\n## Real\n\nbody\n", "t")
    assert [s.path for s in note.sections] == [("T",), ("T", "Real")]
    assert f"{fence}\n# x\n## y\n\n{close}" in note.sections[0].chunks[0]


def test_a_fence_inside_a_list_item_is_never_cut():
    code = "```\n" + "\n\n".join(f"step_{i} = {i}  # " + "x" * 40 for i in range(40)) + "\n```"
    listed = "\n".join("  " + line if line else "" for line in code.split("\n"))
    note = parse(f"## Steps\n\n- Run this:\n\n{listed}\n\n- Then go on.\n", "s")
    holding = [c for c in note.sections[0].chunks if "step_0 =" in c]
    assert len(holding) == 1 and listed in holding[0]


def test_setext_headings_open_sections_with_their_line_ranges():
    text = (
        "Runbook\n=======\n\nIntro.\n\nRestarts\n--------\n\nRestart the worker.\n\nRollbacks\n---------\n\nRevert.\n"
    )
    note = parse(text, "file")
    assert note.title == "Runbook"
    assert [(s.path, s.line_start, s.line_end) for s in note.sections] == [
        (("Runbook",), 1, 4),
        (("Runbook", "Restarts"), 6, 9),
        (("Runbook", "Rollbacks"), 11, 14),
    ]
    assert note.sections[1].chunks[0].startswith("Runbook > Restarts\n")


def test_a_heading_keeps_a_hash_that_ends_a_word():
    assert parse("## C# tips ##\n\nUse var.\n", "n").sections[0].path == ("n", "C# tips")
