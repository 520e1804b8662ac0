"""Every question Captain Memo asks git, as one ``git`` process each.

One way to talk to git: the ``git`` program, never a library that reads the repository's files
by itself (gitpython cost ~100 ms to import, and a process round trip per commit object). Output
that holds paths or messages is asked for NUL-separated (``-z``): a NUL is the one byte neither
holds, and ``-z`` also keeps paths unquoted.

A git hook runs with ``GIT_DIR`` (and ``GIT_INDEX_FILE``) set to the hook's repository; a call
about another folder must find that folder's repository, so those variables are left out.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from captain_memo.errors import InputError

# Variables that make git read a repository other than the one ``-C`` names.
REPOSITORY_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX")


def run(folder: str | os.PathLike, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``git -C folder args``: its exit code, output and errors as bytes. Raises InputError when
    git cannot be run at all (not installed, not executable)."""
    env = {key: value for key, value in os.environ.items() if key not in REPOSITORY_VARIABLES}
    try:
        return subprocess.run(
            ["git", "-C", str(folder), "-c", "core.quotepath=off", *args],
            input=stdin,
            capture_output=True,
            check=False,
            env=env,
        )
    except OSError as exc:
        raise InputError(f"cannot run git: {exc.strerror or exc}") from None


def checked(folder: str | os.PathLike, *args: str, stdin: bytes | None = None) -> bytes:
    """``run``'s output; InputError with git's own message when git fails."""
    done = run(folder, *args, stdin=stdin)
    if done.returncode != 0:
        raise InputError(f"git {args[0]} failed in {folder}: {errors_of(done)}")
    return done.stdout


def errors_of(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stderr.decode("utf-8", "replace").strip()


def nul_separated(output: bytes) -> list[str]:
    """The fields of ``-z`` output (paths as UTF-8; a stray byte becomes U+FFFD)."""
    return [field for field in output.decode("utf-8", "replace").split("\0") if field]


def listed_files(folder: Path, *pathspecs: str, ignored: bool = False) -> list[str] | None:
    """Paths (relative to ``folder``) that ``git ls-files`` lists under it: tracked or new and not
    ignored; with ``ignored``, the untracked ones .gitignore leaves out, an ignored folder named once
    (``build/``) rather than file by file. None outside a work tree or when git cannot be run."""
    what = ("--others", "--ignored", "--directory") if ignored else ("--cached", "--others")
    try:
        done = run(folder, "ls-files", "-z", *what, "--exclude-standard", "--", *pathspecs)
    except InputError:
        return None
    return nul_separated(done.stdout) if done.returncode == 0 else None


def head_state(folder: Path) -> tuple[Path, Path, str | None, str | None] | None:
    """The work tree holding ``folder``: (its top folder, the repository's common git folder, the
    HEAD commit, HEAD's branch name); the commit is None on an unborn branch and the branch None on
    a detached HEAD. None outside a work tree or when git cannot be run."""
    try:
        # One process in the common case; a path (or ref name) holds no NUL, but rev-parse has no
        # -z, so the two paths come last and a newline in them is not taken for a field.
        done = run(folder, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD", "--show-toplevel", "--git-common-dir")
        if done.returncode == 0:
            commit, ref, paths = done.stdout.decode("utf-8", "surrogateescape").rstrip("\n").split("\n", 2)
            top, common = paths.rsplit("\n", 1)
            return Path(top), (folder / common).resolve(), commit, _branch(ref)
        # An unborn branch (no commit yet) fails on HEAD; anything else is no work tree.
        done = run(folder, "rev-parse", "--show-toplevel", "--git-common-dir")
        if done.returncode != 0:
            return None
        top, common = done.stdout.decode("utf-8", "surrogateescape").rstrip("\n").rsplit("\n", 1)
        ref = run(folder, "symbolic-ref", "-q", "HEAD").stdout.decode("utf-8", "surrogateescape").strip()
    except (InputError, ValueError):  # ValueError: output not in the shape asked for
        return None
    return Path(top), (folder / common).resolve(), None, _branch(ref)


def _branch(ref: str) -> str | None:
    """``refs/heads/main`` as ``main``; a detached HEAD (``HEAD``) has no branch."""
    prefix = "refs/heads/"
    return ref[len(prefix) :] if ref.startswith(prefix) else None


def config_value(folder: Path, key: str) -> str | None:
    """A git setting as the repository sees it (``remote.origin.url``); None when unset."""
    try:
        done = run(folder, "config", "-z", "--get", key)
    except InputError:
        return None
    fields = nul_separated(done.stdout) if done.returncode == 0 else []
    return fields[0] if fields else None


def root_commits(folder: Path) -> list[str]:
    """The commits without parents reachable from HEAD (one, or more when histories were merged)."""
    try:
        done = run(folder, "rev-list", "--max-parents=0", "HEAD", "--")
    except InputError:
        return []
    return done.stdout.decode("ascii", "replace").split() if done.returncode == 0 else []


def fast_import(root: Path, stream: str, branch: str = "main", marks: Path | None = None) -> None:
    """A new repository at ``root`` holding the history a ``git fast-import`` stream describes,
    with ``branch`` checked out (the benchmarks' rebuilt histories); ``marks``: a file to write
    each mark's commit to (``:1 <sha>`` a line)."""
    root.mkdir(parents=True, exist_ok=True)
    checked(root, "init", "-q", "-b", branch)
    exported = [f"--export-marks={marks}"] if marks is not None else []
    checked(root, "fast-import", "--quiet", *exported, stdin=stream.encode())
    checked(root, "checkout", "-q", branch)
