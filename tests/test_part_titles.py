"""A part of a long section is titled by what it is about: an rst directive's name or a definition
list's term, after the section's heading path, when its own heading is generic."""

from __future__ import annotations

from dataclasses import replace

import recall_support

from captain_memo.presentation.chunks import heading_of
from captain_memo.sources.markdown import MAX_CHUNK_CHARS
from captain_memo.sources.markdown import parse as parse_markdown
from captain_memo.sources.rst import parse as parse_rst

BODY = "    " + "Explains what the value does, its default and when to change it. " * 6


def settings_reference() -> str:
    entries = "\n\n".join(f".. py:data:: SETTING_{n}\n\n{BODY}\n\n    Default: ``{n}``" for n in range(12))
    return f"Settings\n========\n\nBuiltin values\n--------------\n\nThe values read at start:\n\n{entries}\n"


def titles(note) -> list[str]:
    return [chunk.split("\n", 1)[0] for section in note.sections for chunk in section.chunks]


def test_a_part_opening_on_a_directive_is_titled_by_its_name():
    shown = titles(parse_rst(settings_reference(), "settings"))
    assert len(shown) > 3
    assert shown[0] == "Settings > Builtin values", "the section's first part keeps its heading"
    later = shown[1:]
    # Before: every part read "Settings > Builtin values", its subject only in its text.
    assert all(t.startswith("Settings > Builtin values > SETTING_") for t in later), later


def test_a_function_directive_is_titled_by_the_name_without_its_arguments():
    text = "API\n===\n\nHelpers\n-------\n\n" + "\n\n".join(
        f".. function:: helper_{n}(endpoint, **values)\n\n{BODY}" for n in range(10)
    )
    shown = titles(parse_rst(text, "api"))
    assert "API > Helpers > helper_4" in shown and not any("(" in t for t in shown)


def test_a_definition_list_term_titles_its_part():
    terms = "\n\n".join(f"option_{n}\n{BODY}" for n in range(12))
    shown = titles(parse_rst(f"Options\n=======\n\nAll of them\n-----------\n\n{terms}\n", "options"))
    assert any(t.startswith("Options > All of them > option_") for t in shown), shown


def test_a_titled_part_stays_within_the_chunk_size_and_is_read_as_its_heading_path():
    note = parse_rst(settings_reference(), "settings")
    chunks = [c for s in note.sections for c in s.chunks]
    assert all(len(c) <= MAX_CHUNK_CHARS for c in chunks)
    memory = replace(recall_support.memory(), title="Settings > Builtin values")
    heading, _ = heading_of(memory, chunks[2])
    assert heading.startswith("Settings > Builtin values > SETTING_")


def test_prose_paragraphs_keep_their_section_title():
    text = "# Guide\n\n## Deploying\n\n" + "\n\n".join(
        f"Step {n}: " + "do the thing carefully. " * 20 for n in range(8)
    )
    assert set(titles(parse_markdown(text, "guide"))) == {"Guide > Deploying"}
