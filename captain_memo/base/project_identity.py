"""A project's portable identity: the same for every clone of a repository, on any machine.

Locally a project is the path of its repository (base/git_context.py), which differs between two clones.
A store shared by a team needs a name both clones agree on:

1. the ``origin`` remote's URL, normalised so that the ssh and https forms of one repository
   agree: scheme, user, password, port and a trailing ``.git`` or ``/`` are dropped and the host
   is lower-cased (``git@GitHub.com:Org/Shop.git`` and ``https://github.com/Org/Shop`` are both
   ``github.com/Org/Shop``; the path keeps its case, which some hosts honour);
2. without an origin, ``root:`` and the repository's root commit (the lowest hash when histories
   were merged), which every clone shares and no other repository has;
3. a repository with no commit yet, or a folder outside any repository: its path, which is all
   there is to go by.
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
    from captain_memo.base import git_commands

    start = Path(folder)
    state = git_commands.head_state(start) if start.is_dir() else None
    if state is None:
        return str(start.resolve())
    _, common, commit, _ = state
    url = git_commands.config_value(start, "remote.origin.url")
    if url and normalised_remote(url):
        return normalised_remote(url)
    # A detached HEAD has a commit as well as a branch does; only a repository with no commit at
    # all (an unborn branch) has none.
    roots = git_commands.root_commits(start) if commit else []
    if roots:
        return f"root:{min(roots)}"
    return str(common.parent if common.name == ".git" else common)
