"""The shared folder the read-only tests give an unprivileged user is removed whatever its last
process still tidies (tests/readonly_support.py)."""

from __future__ import annotations

import os

import pytest


def test_a_shared_folder_is_removed_while_its_last_process_tidies_it(tmp_path, monkeypatch):
    """The editor's host removes its socket's lock file as it exits, which raced the fixture's
    removal of the shared folder (seen once in CI: a file listed, then gone before its turn). The
    race is made certain here by removing each file just before its own removal (a fake: the
    host's timing cannot be made to land there on demand); a folder that cannot be removed still fails."""
    from readonly_support import remove_shared

    folder = tmp_path / "shared"
    (folder / "run").mkdir(parents=True)
    for name in ("a.sock.lock", "b.log"):
        (folder / "run" / name).write_text("x")
    real_unlink = os.unlink

    def tidied_first(path, *, dir_fd=None):
        real_unlink(path, dir_fd=dir_fd)  # its owner removed it a moment before
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", tidied_first)
    remove_shared(folder)
    assert not folder.exists()
    monkeypatch.setattr(os, "unlink", real_unlink)
    (folder / "kept").mkdir(parents=True)
    monkeypatch.setattr(os, "rmdir", lambda path, *, dir_fd=None: (_ for _ in ()).throw(PermissionError(path)))
    with pytest.raises(PermissionError):
        remove_shared(folder)
