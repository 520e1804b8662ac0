"""`captain-memo index` and `observe` from the command line, on a real repository and the default
embedder (the command builds its own, as it does for a user)."""

from __future__ import annotations

import json

from sources_support import DECISION_PORTS, SKILL_ROLLBACK, commit, init_repo, write

from captain_memo.cli.main import main


def test_index_with_git_then_nothing_changed_then_a_deleted_file(db_file, tmp_path, capsys, monkeypatch):
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "Add the ports decision",
        {"docs/decisions/0002-ports.md": DECISION_PORTS, ".captain-memo/skills/rollback.md": SKILL_ROLLBACK},
    )
    commit(repo, "Document the debug proxy port", {"docs/decisions/0002-ports.md": DECISION_PORTS + "\n"})
    write(repo, "docs/decisions/scan.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    monkeypatch.chdir(repo)
    base = ["--db", str(db_file)]

    assert main(base + ["index", "--git"]) == 0
    out = capsys.readouterr().out
    assert "skipped docs/decisions/scan.md: binary (NUL byte at offset 8)" in out
    assert "notes: indexed 3 · updated 0 · unchanged 0 · removed 0 · skipped 1" in out
    assert "git: 2 new commits" in out

    assert main(base + ["index", "--git", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["notes"]["unchanged"] == 3 and again["notes"]["chunks_embedded"] == 0
    assert again["git"]["indexed"] == 0 and again["git"]["chunks_embedded"] == 0
    assert again["notes"]["skipped_files"] == [
        {"path": "docs/decisions/scan.md", "reason": "binary (NUL byte at offset 8)"}
    ]

    (repo / ".captain-memo/skills/rollback.md").unlink()
    assert main(base + ["index", "--json"]) == 0
    third = json.loads(capsys.readouterr().out)
    assert third["notes"]["removed"] == 1 and third["git"] is None

    assert main(base + ["recall", "which port does the metrics exporter use", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["title"] == "Service ports > Allocation"


def test_index_a_path_outside_any_repository(db_file, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "loose/idea.md", "# Idea\n\nCache the parsed config between runs.\n")
    assert main(["--db", str(db_file), "index", str(tmp_path / "loose")]) == 0
    assert "notes: indexed 1" in capsys.readouterr().out
    assert main(["--db", str(db_file), "index", str(tmp_path / "missing")]) == 1
    assert "no such file or folder" in capsys.readouterr().err


def test_index_with_nothing_configured_says_so(db_file, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--db", str(db_file), "index"]) == 1
    assert "nothing to index" in capsys.readouterr().err


def test_observe_refuses_a_credential_unless_allowed(db_file, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    token = "ghp_" + "a1B2c3D4e5" * 4
    assert main(["--db", str(db_file), "observe", f"the deploy bot token is {token}"]) == 1
    assert "--allow-secrets" in capsys.readouterr().err
    assert main(["--db", str(db_file), "observe", "--allow-secrets", f"the deploy bot token is {token}"]) == 0
    assert "storing a credential as it is" in capsys.readouterr().err
