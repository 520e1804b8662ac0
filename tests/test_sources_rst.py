"""reStructuredText and AsciiDoc notes: sections by title adornment, opaque literal blocks and
directives, indexing through a note folder."""

from __future__ import annotations

from captain_memo.sources import asciidoc, rst
from captain_memo.sources.indexer import index_paths
from sources_support import write

FIXTURES = """\
========
Fixtures
========

How to use fixtures in tests.

Requesting a fixture
--------------------

Name it as an argument::

    def test_answer(tmp_path):
        assert tmp_path.exists()

    Section title inside a literal block
    ------------------------------------

Then it is created for the test.

Scopes
~~~~~~

.. code-block:: python

    @pytest.fixture(scope="module")
    def smtp():

        return connect()

    Not a title either
    ==================

Module scope shares one instance.

Teardown
--------

Use ``yield`` instead of ``return``.

.. note::

   The code after the yield runs at teardown.
"""


def test_sections_follow_the_adornment_styles():
    note = rst.parse(FIXTURES, "fixtures")
    assert note.title == "Fixtures"
    assert [s.path for s in note.sections] == [("Fixtures",), ("Fixtures", "Requesting a fixture"),
                                               ("Fixtures", "Teardown")]
    requesting = note.sections[1]
    assert (requesting.line_start, requesting.line_end) == (7, 33)
    assert "Module scope shares one instance." in requesting.text


def test_literal_blocks_and_directives_are_never_split_or_read_for_titles():
    note = rst.parse(FIXTURES, "fixtures", max_chars=200)
    chunks = [c for s in note.sections for c in s.chunks]
    literal = "    def test_answer(tmp_path):\n        assert tmp_path.exists()\n\n    Section title inside"
    directive = '.. code-block:: python\n\n    @pytest.fixture(scope="module")\n    def smtp():\n\n        return'
    assert sum(literal in c for c in chunks) == 1
    assert sum(directive in c and "Not a title either" in c for c in chunks) == 1
    assert all(len(c) <= 200 or literal in c or directive in c for c in chunks)
    # A subsection heads its chunks' path, like a Markdown ###.
    assert any(c.startswith("Fixtures > Requesting a fixture > Scopes\n") for c in chunks)


def test_a_file_of_same_level_titles_gives_one_section_each():
    text = "Release 8.1\n===========\n\nFixed things.\n\nRelease 8.0\n===========\n\nBroke things.\n"
    note = rst.parse(text, "changelog")
    assert [s.path for s in note.sections] == [("Release 8.1",), ("Release 8.0",)]


def test_asciidoc_sections_and_delimited_blocks():
    text = ("= Runbook\n\nWhat to do at night.\n\n== Restart\n\n----\n== not a title\n\nsystemctl restart app\n"
            "----\n\nThen check the logs.\n\n=== Logs\n\nThey are in /var/log/app.\n\n== Escalate\n\nCall the lead.\n")
    note = asciidoc.parse(text, "runbook")
    assert [s.path for s in note.sections] == [("Runbook",), ("Runbook", "Restart"), ("Runbook", "Escalate")]
    restart = note.sections[1]
    assert "== not a title\n\nsystemctl restart app" in restart.chunks[0]
    assert restart.chunks[-1].startswith("Runbook > Restart > Logs\n") or "=== Logs" not in restart.chunks[0]


def test_rst_and_asciidoc_files_in_a_note_folder_are_indexed_by_section(engine, tmp_path):
    docs = tmp_path / "docs"
    write(docs, "how-to/fixtures.rst", FIXTURES)
    write(docs, "runbook.adoc", "= Runbook\n\n== Restart\n\nRestart the app.\n")
    report = index_paths(engine, [docs / "how-to" / "fixtures.rst"])
    assert report.indexed == 3 and not report.skipped_files
    report = index_paths(engine, [docs])
    assert report.indexed == 1 and report.unchanged == 3
    stored = {m.title: m for m in engine.store.list_memories()}
    teardown = stored["Fixtures > Teardown"]
    assert teardown.source.filetype == "rst" and teardown.source.line_start == 35
    assert stored["Runbook > Restart"].source.filetype == "asciidoc"
