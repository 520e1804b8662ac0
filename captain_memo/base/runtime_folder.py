"""The user's private runtime folder: where the warm service listens, and where state shared by
processes for a short while lives (an embedding endpoint's back-off).

One service per store and configuration: its socket is named by a hash of the database path and
every ``CAPTAIN_MEMO_*`` setting (the service runs with the same settings as the command that
started it, so it never answers with another model, profile or redaction rule). Sockets live in a
folder only the user can enter (0700); a folder or socket that another user owns, or that others
can open, is refused rather than used.
"""

from __future__ import annotations

import os
import stat
import zlib

from captain_memo.base.paths import ENV_PREFIX
from captain_memo.errors import CaptainMemoError

# pathlib is imported only where a Path is asked for: it costs the command line's thin path, which
# names its socket with socket_file, ~3 ms (urllib.parse and ipaddress come with it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

SERVICE_ENV = ENV_PREFIX + "SERVICE"  # 0 / off: every command runs in its own process
IDLE_ENV = ENV_PREFIX + "SERVICE_IDLE"  # seconds without a request before the service exits
RUNTIME_ENV = ENV_PREFIX + "RUNTIME_DIR"  # sockets, the service log, back-off state
TIMEOUT_ENV = ENV_PREFIX + "SERVICE_TIMEOUT"  # seconds a client waits for an answer (hosting/client.py)
ACCEPT_ENV = ENV_PREFIX + "SERVICE_ACCEPT"  # seconds a client waits for the service to take a request
DEFAULT_IDLE = 600.0
DEFAULT_ACCEPT = 5.0
# Settings that change where or how long the service runs, not what it answers; and the store's
# path, which is in the key as the absolute path however it was named (a shell that uses the
# default store and an agent configured with its path share one service).
UNKEYED = {SERVICE_ENV, IDLE_ENV, RUNTIME_ENV, TIMEOUT_ENV, ACCEPT_ENV, ENV_PREFIX + "DB"}


class UnsafeRuntimeError(CaptainMemoError):
    """The socket folder or the socket is not private to this user."""


def enabled(env=None) -> bool:
    env = os.environ if env is None else env
    return (env.get(SERVICE_ENV) or "1").strip().lower() not in ("0", "off", "no", "false")


def idle_seconds(env=None) -> float:
    return _positive_seconds(env, IDLE_ENV, DEFAULT_IDLE)


def accept_seconds(env=None) -> float:
    return _positive_seconds(env, ACCEPT_ENV, DEFAULT_ACCEPT)


def answer_seconds(env, default: float) -> float:
    """``CAPTAIN_MEMO_SERVICE_TIMEOUT``: seconds a client waits for an answer; ``default`` when unset
    or not a number."""
    env = os.environ if env is None else env
    try:
        return float(env.get(TIMEOUT_ENV) or default)
    except ValueError:
        return default


def _positive_seconds(env, name: str, default: float) -> float:
    """Setting ``name`` as seconds; ``default`` when it is unset, not a number, or not above zero."""
    env = os.environ if env is None else env
    try:
        value = float(env.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def runtime_dir(env=None) -> Path:
    """``CAPTAIN_MEMO_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/captain-memo``, else /tmp/captain-memo-UID."""
    from pathlib import Path

    return Path(_runtime_folder(env))


def _runtime_folder(env) -> str:
    env = os.environ if env is None else env
    if env.get(RUNTIME_ENV):
        return os.path.abspath(os.path.expanduser(env[RUNTIME_ENV]))
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return os.path.join(xdg, "captain-memo")
    return f"/tmp/captain-memo-{os.getuid()}"


def private_dir(env=None) -> Path:
    """The runtime folder, created 0700; refused when it is a link, another user's, or open to others."""
    from pathlib import Path

    return Path(_private_folder(env))


def _private_folder(env) -> str:
    folder = _runtime_folder(env)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise UnsafeRuntimeError(f"cannot create the service folder {folder}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeRuntimeError(f"{folder} is not a folder (a link?); not using it for the service")
    if info.st_uid != os.getuid():
        raise UnsafeRuntimeError(f"{folder} belongs to user id {info.st_uid}, not to you; not using it")
    if info.st_mode & 0o077:
        raise UnsafeRuntimeError(f"{folder} is {info.st_mode & 0o777:04o}, open to others; run chmod 700 {folder}")
    return folder


def service_key(db: str | os.PathLike, env=None) -> str:
    env = os.environ if env is None else env
    settings = sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIX) and k not in UNKEYED)
    # Two 32-bit checksums rather than hashlib, whose OpenSSL import costs the thin path ~5 ms; the
    # name only has to tell a user's few configurations apart, in a folder nobody else can enter.
    # The installation is not: the editor plugin's own environment and the shell's installation
    # share one engine per store when they run the same code (hosting/build.py).
    material = repr((os.path.abspath(os.path.expanduser(str(db))), settings, team_identity(env)))
    encoded = material.encode("utf-8")
    return f"{zlib.crc32(encoded):08x}{zlib.adler32(encoded):08x}"


def team_identity(env) -> str:
    """Who a team store's connection logs in as, beyond ``CAPTAIN_MEMO_TEAM_DB``: libpq's ``PG*``
    settings (PGUSER, PGPASSWORD, PGSERVICE...) and the files it reads them from (the password
    file, the service file, the client certificate). Two people sharing an account and a store
    thus never share a service, which would answer and write as whoever started it. A digest
    (only when a team store is set): a password must not be recoverable from a socket's name."""
    if not env.get(ENV_PREFIX + "TEAM_DB"):
        return ""
    import hashlib
    from pathlib import Path

    home = Path(env.get("HOME") or os.path.expanduser("~"))
    files = [
        env.get("PGPASSFILE") or home / ".pgpass",
        env.get("PGSERVICEFILE") or home / ".pg_service.conf",
        Path(env.get("PGSYSCONFDIR") or "/etc/postgresql-common") / "pg_service.conf",
        env.get("PGSSLCERT") or home / ".postgresql" / "postgresql.crt",
    ]
    digest = hashlib.sha256(repr(sorted((k, v) for k, v in env.items() if k.startswith("PG"))).encode())
    for name in files:
        try:
            digest.update(Path(name).read_bytes())
        except OSError:
            digest.update(b"\0absent")
    return digest.hexdigest()


def socket_path(db: str | os.PathLike, env=None) -> Path:
    from pathlib import Path

    return Path(socket_file(db, env))


def socket_file(db: str | os.PathLike, env=None) -> str:
    """``socket_path`` as a string, found without pathlib: the command line's thin path."""
    return os.path.join(_private_folder(env), f"{service_key(db, env)}.sock")


def check_socket(path: str | os.PathLike) -> bool:
    """True when ``path`` is a socket this user owns and only this user can open; False when there
    is nothing there. Anything else is refused: another user's socket would see every query."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISSOCK(info.st_mode):
        raise UnsafeRuntimeError(f"{path} is not a socket; not using it")
    if info.st_uid != os.getuid():
        raise UnsafeRuntimeError(
            f"the service socket {path} belongs to user id {info.st_uid}, not to you; not using it"
        )
    if info.st_mode & 0o077:
        raise UnsafeRuntimeError(
            f"the service socket {path} is {info.st_mode & 0o777:04o}, open to others; not using it"
        )
    return True
