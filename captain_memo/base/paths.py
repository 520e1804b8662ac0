"""Where the database lives. Apart from config.py so the command line's thin path (the warm
service's client) can find the store without importing every ranking setting."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_PREFIX = "CAPTAIN_MEMO_"


def data_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(ENV_PREFIX + "HOME"):
        return Path(env[ENV_PREFIX + "HOME"]).expanduser()
    xdg = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg).expanduser() / "captain-memo"


def db_path(env: Mapping[str, str] | None = None) -> Path:
    """``CAPTAIN_MEMO_DB`` (a file), else ``CAPTAIN_MEMO_HOME/memo.db``, else the XDG data folder."""
    env = os.environ if env is None else env
    if env.get(ENV_PREFIX + "DB"):
        return Path(env[ENV_PREFIX + "DB"]).expanduser()
    return data_home(env) / "memo.db"
