"""Hostile note folders: a folder that cannot be listed, links out of the folder, files that are not
regular files, and files in a note folder that are not notes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sources_support import DECISION_PORTS, init_repo, write

from captain_memo.sources.folders import read_note
from captain_memo.sources.indexer import index_paths

WITHOUT_OVERRIDES = "-dac_override,-dac_read_search,-fowner"  # what lets root past a file's modes
# Indexing runs in a child process: without root's file capabilities where a permission must bite (as root,
# chmod 000 stops nothing), and always with a memory cap and a time limit, so that reading
# /dev/zero or opening a FIFO fails the test instead of taking the machine down or hanging it.
INDEX_SCRIPT = """
import json, os, sys
sys.path.insert(0, {tests!r})
from captain_memo.engine.core import Engine
from captain_memo.sources.indexer import index_paths
from captain_memo.store import Store
from fakes import HashEmbedder

folder, db = sys.argv[1], sys.argv[2]
engine = Engine(Store(db), HashEmbedder())
report = index_paths(engine, [folder])
memories = engine.store.list_memories(limit=1000)
engine.close()
print(json.dumps({{"ids": {{m.source_key: m.id for m in memories}}, "paths": sorted({{m.source.path for m in memories}}),
                  "bodies": " ".join(m.body for m in memories), "removed": report.removed,
                  "skipped": report.skipped_files}}))
"""
MEMORY_CAP = 3 << 30


def _capped() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_index(tmp: Path, folder: Path, unprivileged: bool = False) -> dict:
    script = tmp / "index.py"
    script.write_text(INDEX_SCRIPT.format(tests=str(Path(__file__).parent)))
    command = [sys.executable, str(script), str(folder), str(tmp / "memo.db")]
    if unprivileged and os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: a folder cannot be made unreadable")
        command = ["setpriv", "--bounding-set", WITHOUT_OVERRIDES, *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_MEMO_")}
    env["CAPTAIN_MEMO_HOME"] = str(tmp / "home")
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, preexec_fn=_capped)
    except subprocess.TimeoutExpired:
        pytest.fail("indexing blocked (a FIFO or a device read without end)")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.fixture
def shared_tmp():
    """A folder an unprivileged user can write (pytest's own temporary root is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="captain-memo-test-"))
    folder.chmod(0o777)
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(folder)


def test_a_folder_that_cannot_be_listed_keeps_its_memories(shared_tmp):
    notes = shared_tmp / "notes"
    write(notes, "ports.md", DECISION_PORTS)
    write(notes, "team/oncall.md", "# On-call\n\nThe rota changes on Mondays at 10:00.\n")
    write(notes, "team/deploys.md", "# Deploys\n\nNo deploys on Fridays after 15:00.\n")
    for path in [notes, *notes.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    first = run_index(shared_tmp, notes, unprivileged=True)
    assert len(first["ids"]) == 4
    (notes / "team").chmod(0o000)
    second = run_index(shared_tmp, notes, unprivileged=True)
    assert second["removed"] == 0 and second["ids"] == first["ids"]
    [(where, reason)] = second["skipped"]
    assert where == (notes / "team").as_posix() and reason.startswith("cannot read: Permission denied")
    (notes / "team").chmod(0o777)
    third = run_index(shared_tmp, notes, unprivileged=True)
    assert third["ids"] == first["ids"] and third["removed"] == 0 and not third["skipped"]


def test_links_out_of_the_folder_and_special_files_are_skipped_and_reported(tmp_path):
    repo = init_repo(tmp_path / "repo")
    decisions = repo / "docs" / "decisions"
    write(decisions, "0001-ports.md", DECISION_PORTS)
    secret = write(tmp_path / "home" / ".ssh", "id_ed25519.md", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    outside = write(tmp_path / "elsewhere", "plan.md", "# Plan\n\nOutside the repository.\n")
    (decisions / "passwd.md").symlink_to("/etc/passwd")
    (decisions / "key.md").symlink_to(secret)
    (decisions / "linked").symlink_to(outside.parent)
    (decisions / "zero.md").symlink_to("/dev/zero")
    os.mkfifo(decisions / "pipe.md")
    (decisions / "inside.md").symlink_to(decisions / "0001-ports.md")

    result = run_index(tmp_path, decisions)
    reasons = dict(result["skipped"])
    assert reasons == {
        "docs/decisions/passwd.md": "a symbolic link to outside the folder: not followed",
        "docs/decisions/key.md": "a symbolic link to outside the folder: not followed",
        "docs/decisions/linked": "a symbolic link to outside the folder: not followed",
        "docs/decisions/zero.md": "a symbolic link to outside the folder: not followed",
        "docs/decisions/pipe.md": "a FIFO, not a regular file",
    }
    assert result["paths"] == ["docs/decisions/0001-ports.md", "docs/decisions/inside.md"]
    bodies = result["bodies"]
    assert "root:" not in bodies and "PRIVATE KEY" not in bodies and "Outside the repository" not in bodies


def test_a_configured_folder_that_links_out_of_the_repository_is_not_followed(engine, tmp_path):
    repo = init_repo(tmp_path / "repo")
    write(tmp_path / "elsewhere", "plan.md", "# Plan\n\nOutside the repository.\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "decisions").symlink_to(tmp_path / "elsewhere")
    from captain_memo.sources.indexer import configured_folders, index_folders

    report = index_folders(engine, configured_folders(repo))
    assert ("docs/decisions", "a symbolic link to outside the repository: not followed") in report.skipped_files
    assert engine.store.list_memories() == []


def test_reading_a_device_or_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.md")
    write(tmp_path, "ok.md", "# Fine\n")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys; from pathlib import Path; from captain_memo.sources.folders import read_note\n"
        "print(read_note(Path(sys.argv[1]), 1000).problem)\n"
    )
    for path, expected in (
        (tmp_path / "pipe.md", "a FIFO, not a regular file"),
        (Path("/dev/zero"), "a character device, not a regular file"),
    ):
        try:
            done = subprocess.run(
                [sys.executable, str(probe), str(path)], capture_output=True, text=True, timeout=30, preexec_fn=_capped
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"reading {path} blocked")
        assert done.stdout.strip() == expected, done.stderr[-2000:]


def test_the_size_cap_counts_bytes_read_not_the_size_reported(tmp_path, monkeypatch):
    """A file that grows after it was measured is cut off at the cap, not read to its end."""
    path = write(tmp_path, "growing.md", "x" * 50)
    real_stat = Path.stat

    def shrunk(self, *args, **kwargs):  # a size the file system got wrong: the fault a cap on st_size misses
        found = real_stat(self, *args, **kwargs)
        return os.stat_result((*found[:6], 0, *found[7:])) if self == path else found

    monkeypatch.setattr(Path, "stat", shrunk)  # faked: a real file system reporting a wrong size is not at hand
    assert "over the 40-byte cap" in read_note(path, 40).problem


def test_files_that_are_not_notes_are_counted_as_skipped(engine, tmp_path):
    docs = tmp_path / "docs"
    write(docs, "guide.md", "# Guide\n\nHow to run the service.\n")
    write(docs, "requirements.txt", "sphinx==7.2.6\nfuro==2024.1.29\n")
    write(docs, "constraints.txt", "docutils<0.21\n")
    write(docs, "poetry.lock", "[[package]]\n")
    write(docs, "data/points.csv", "x,y\n1,2\n")
    write(docs, "data/points.json", "[]\n")
    write(docs, "notes.txt", "A plain text note about the release train.\n")
    report = index_paths(engine, [docs])
    assert report.files == 2 and report.skipped == 5
    assert dict(report.not_notes) == {"requirements": 2, ".lock": 1, ".csv": 1, ".json": 1}
    assert {m.source.path for m in engine.store.list_memories()} == {
        (docs / "guide.md").as_posix(),
        (docs / "notes.txt").as_posix(),
    }


def test_a_file_named_explicitly_but_skipped_says_why(engine, tmp_path):
    pins = write(tmp_path, "docs/requirements.txt", "sphinx==7.2.6\n")
    data = write(tmp_path, "docs/data.json", "{}\n")
    report = index_paths(engine, [pins, data])
    assert dict(report.skipped_files) == {
        pins.as_posix(): "not a note: requirements.txt holds requirements, not prose",
        data.as_posix(): "not a note: .json (notes are .md, .markdown, .mdown, .mkd, .mdx, .mdc, .txt, .rst, .adoc, "
        ".asciidoc)",
    }
