"""Where the database lives. Apart from config.py so the command line's thin path (the warm
service's client) can find the store without importing every ranking setting."""

from __future__ import annotations

import os

# pathlib is imported only where a Path is asked for: the thin path asks for db_file, a string
# (and collections.abc would import the collections package, ~1 ms, for an annotation).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

ENV_PREFIX = "CAPTAIN_MEMO_"


def data_home(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(_data_folder(os.environ if env is None else env))


def _data_folder(env: Mapping[str, str]) -> str:
    if env.get(ENV_PREFIX + "HOME"):
        return os.path.expanduser(env[ENV_PREFIX + "HOME"])
    xdg = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(os.path.expanduser(xdg), "captain-memo")


def db_path(env: Mapping[str, str] | None = None) -> Path:
    """``CAPTAIN_MEMO_DB`` (a file), else ``CAPTAIN_MEMO_HOME/memo.db``, else the XDG data folder."""
    from pathlib import Path

    return Path(db_file(env))


def db_file(env: Mapping[str, str] | None = None) -> str:
    """``db_path`` as a string, found without pathlib: the command line's thin path."""
    env = os.environ if env is None else env
    if env.get(ENV_PREFIX + "DB"):
        return os.path.expanduser(env[ENV_PREFIX + "DB"])
    return os.path.join(_data_folder(env), "memo.db")
