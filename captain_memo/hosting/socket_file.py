"""A store's socket and its lock file: who holds the lock serves on the socket. The socket server
and the hand-over both take, write and release them, so they live here, imported by both."""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

BACKLOG = 64
LOCK_WAIT = 30.0  # seconds a new service waits for an exiting one to finish its last requests
SERVICE, EDITOR = "service", "editor"  # who serves: a process of its own, or the editor's host


def take_lock(path: Path, wait: float = LOCK_WAIT):
    """The service's lock file, held for its lifetime; None when another service answers on
    ``path``. A service still finishing its last requests holds the lock a moment longer."""
    deadline = time.monotonic() + wait
    fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline or answering(path):
                os.close(fd)
                return None
            time.sleep(0.02)
            continue
        if _names(path, fd):
            return fd
        # Its holder removed the file as it quit (release_lock): this lock guards nothing now.
        os.close(fd)
        fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o600)


def _names(path: Path, fd: int) -> bool:
    """The lock file at the path is the one ``fd`` holds."""
    try:
        return os.stat(f"{path}.lock").st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def release_lock(path: Path, lock: int) -> None:
    """A serving process quitting: the lock file goes (while still held, so a process that took it
    meanwhile sees it was removed and opens a new one), then the lock."""
    try:
        if _names(path, lock):
            os.unlink(f"{path}.lock")
    except OSError:
        pass
    os.close(lock)


def write_pid(lock: int) -> None:
    """For a client to name (or end) a service that does not answer."""
    os.ftruncate(lock, 0)
    os.pwrite(lock, f"{os.getpid()}\n".encode(), 0)


def answering(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
            return True
        except OSError:
            return False


def listen(path: Path) -> socket.socket:
    """Bind the socket 0600 from the start (no moment where others could connect)."""
    try:
        path.unlink()  # a killed service's leftover; the lock says no live service owns it
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(BACKLOG)
    return listener


def still_bound(path: Path, inode: int) -> bool:
    try:
        return os.lstat(path).st_ino == inode
    except FileNotFoundError:
        return False


def remove_socket(path: Path, inode: int) -> None:
    """Remove our socket, never one a newer service bound at the same path."""
    try:
        if os.lstat(path).st_ino == inode:
            path.unlink()
    except FileNotFoundError:
        pass
