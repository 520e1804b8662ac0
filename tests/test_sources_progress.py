"""Long indexing runs: progress on a terminal, a summary of what was left out, the cost of the
supersession rule on a history full of version bumps, and capped reads for `import`."""

from __future__ import annotations

import os
import re

import pytest
from sources_support import BASE_DAY, commit, init_repo, write

from captain_memo.base.progress import Progress
from captain_memo.cli.main import main
from captain_memo.sources.git_history import index_history

DAY = 86400


def read_all(fd: int) -> str:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while part := os.read(fd, 65536):
            chunks.append(part)
    except (BlockingIOError, OSError):
        pass
    return b"".join(chunks).decode()


def test_progress_on_a_terminal_shows_count_rate_and_time_left():
    master, slave = os.openpty()  # a real terminal device
    with open(slave, "w", closefd=True) as tty:
        bar = Progress(400, "commits", stream=tty)
        for _ in range(4):
            bar.advance(100)
            bar._last = 0.0  # draw every step, not every 0.1 s
        bar.close()
        quiet = Progress(400, "quiet", stream=tty, quiet=True)
        quiet.advance(400)
        quiet.close()
    shown = read_all(master)
    os.close(master)
    assert re.search(r"commits \[#+-+\] 300/400 [\d,.]+/s \d+:\d\d left", shown), shown
    assert re.search(r"commits \[#{20}\] 400/400 [\d,.]+/s \d+:\d\d taken", shown), shown
    assert "quiet" not in shown


def test_progress_is_silent_when_stderr_is_not_a_terminal(tmp_path):
    with open(tmp_path / "log", "w") as stream:
        bar = Progress(10, "notes", stream=stream)
        bar.advance(10)
        bar.close()
    assert (tmp_path / "log").read_text() == ""


def test_the_summary_names_the_commit_cap_and_the_option_that_changes_it(db_file, tmp_path, capsys, monkeypatch):
    repo = init_repo(tmp_path / "repo")
    for n in range(6):
        commit(repo, f"Tune the cache step {n}", {"cache.py": f"SIZE = {n}\n"}, when=BASE_DAY + n * DAY)
    write(repo, "docs/decisions/requirements.txt", "sphinx==7.2.6\n")
    write(repo, "docs/decisions/0001-cache.md", "# Cache\n\nKeep it in memory.\n")
    write(repo, "docs/decisions/blob.md", b"\x00\x01")
    monkeypatch.chdir(repo)
    assert main(["--db", str(db_file), "index", "--git", "--max-commits", "4"]) == 0
    out = capsys.readouterr().out
    assert (
        "git: 4 new commits · 0 already stored (4 chunks embedded); left out: 2 older commits, past the "
        "newest 4 read (--max-commits N or CAPTAIN_MEMO_GIT_MAX_COMMITS)"
    ) in out
    assert ("left out: 1 binary (not text); 1 file that is not a note (requirements 1)") in out
    assert main(["--db", str(db_file), "index", "--git", "--max-commits", "0"]) == 1
    assert "--max-commits must be at least 1" in capsys.readouterr().err


def test_version_bumps_embed_each_older_text_once(engine, tmp_path, hash_embedder):
    """Every bump states a version, so the rule compares it with all older bumps of the same
    dependency; their texts are embedded once for the run, not once per newer bump."""
    repo = init_repo(tmp_path / "repo")
    words = ["parser", "speed", "crash", "windows", "unicode", "timeout", "memory", "docs", "wheel", "typing"]
    bumps = 12
    for n in range(bumps):
        body = " ".join(words[(n + k) % len(words)] + str(n * 7 + k) for k in range(8))
        commit(
            repo,
            f"Bump hypothesis from 6.{n}.0 to 6.{n + 1}.0\n\nChangelog: {body}",
            {"requirements.txt": f"hypothesis==6.{n + 1}.0\n"},
            when=BASE_DAY + n * DAY,
        )
    report = index_history(engine, repo)
    assert report.indexed == bumps
    # The commits' own chunks, plus at most one masked text (versions replaced) per bump.
    assert hash_embedder.texts_embedded <= report.chunks_embedded + bumps


def test_import_of_a_device_or_a_binary_file_stops_at_the_line_cap(db_file, tmp_path, capsys, monkeypatch):
    from captain_memo.base import jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 1 << 16)  # the real cap is 4 MiB: the same path, faster
    assert main(["--db", str(db_file), "import", "/dev/zero"]) == 1
    assert "/dev/zero:1: line longer than 65,536 bytes" in capsys.readouterr().err
    good = write(tmp_path, "ok.jsonl", '{"text": "Pin the parser version"}\n')
    assert main(["--db", str(db_file), "import", "--quiet", str(good)]) == 0
    assert "imported 1 memory," in capsys.readouterr().out


@pytest.mark.parametrize("name", ["fixtures.rst", "requirements.txt"])
def test_naming_one_file_says_what_happened_to_it(db_file, tmp_path, capsys, name):
    path = write(tmp_path, f"doc/{name}", "Fixtures\n========\n\nUse tmp_path.\n")
    assert main(["--db", str(db_file), "index", str(path)]) == 0
    out = capsys.readouterr().out
    if name.endswith(".rst"):
        assert "notes: indexed 1 · updated 0 · unchanged 0 · removed 0 · skipped 0 (1 file read," in out
    else:
        assert f"skipped {path.as_posix()}: not a note: requirements.txt holds requirements, not prose" in out
        assert "left out: 1 not notes (notes are Markdown, reStructuredText, AsciiDoc or plain text)" in out
