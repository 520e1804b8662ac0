"""A project's portable identity: the same for every clone of a repository, on any machine.

Locally a project is the path of its repository (gitctx.py), which differs between two clones.
A store shared by a team needs a name both clones agree on:

1. the ``origin`` remote's URL, normalised so that the ssh and https forms of one repository
   agree: scheme, user, password, port and a trailing ``.git`` or ``/`` are dropped and the host
   is lower-cased (``git@GitHub.com:Org/Shop.git`` and ``https://github.com/Org/Shop`` are both
   ``github.com/Org/Shop``; the path keeps its case, which some hosts honour);
2. without an origin, ``root:`` and the repository's root commit (the lowest hash when histories
   were merged), which every clone shares and no other repository has;
3. a repository with no commit yet, or a folder outside any repository: its path, which is all
   there is to go by.

gitpython is imported on first use only (~100 ms).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# scp-like ssh syntax: [user@]host:path, where the path does not start with '/' or '//'.
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?!//)(?P<path>.+)$")
_URL = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?:[^@/]*@)?(?P<host>[^/:]*)(?::\d*)?(?P<path>/.*)?$", re.I)


def normalised_remote(url: str) -> str:
    """``url`` as a host/path name that the ssh, https and git forms of one remote share.

    A local path (``/srv/git/shop.git``, ``file:///srv/git/shop.git``) stays a path, without
    ``.git``: two clones of one local repository agree, and it cannot pass for a hosted one."""
    text = url.strip()
    match = _URL.match(text)
    if match and match["scheme"].lower() != "file":
        return _joined(match["host"], match["path"] or "")
    if match:  # file://
        return _stripped(match["path"] or "")
    scp = _SCP_LIKE.match(text)
    if scp and not os.path.isabs(text):
        return _joined(scp["host"], scp["path"])
    return _stripped(text)


def _joined(host: str, path: str) -> str:
    return f"{host.lower()}/{_stripped(path).lstrip('/')}"


def _stripped(path: str) -> str:
    path = path.rstrip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    return path.rstrip("/")


def portable_id(folder: str | os.PathLike) -> str:
    """The portable identity of the project holding ``folder`` (see the module's description)."""
    start = Path(folder)
    try:
        import git
    except ImportError:
        return str(start.resolve())
    try:
        repo = git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return str(start.resolve())
    try:
        return _from_remote(repo) or _from_root_commit(repo) or _repository_path(repo)
    finally:
        repo.close()


def _from_remote(repo) -> str | None:
    try:
        url = repo.remotes.origin.url
    except (AttributeError, ValueError, IndexError):  # no origin, or an origin without a URL
        return None
    return normalised_remote(url) or None


def _from_root_commit(repo) -> str | None:
    # A detached HEAD has a commit as well as a branch does; only a repository with no commit at
    # all (an unborn branch) has none.
    if not repo.head.is_valid():
        return None
    roots = repo.git.rev_list("--max-parents=0", "HEAD").split()
    return f"root:{min(roots)}" if roots else None


def _repository_path(repo) -> str:
    common = Path(repo.common_dir).resolve()
    return str(common.parent if common.name == ".git" else common)
