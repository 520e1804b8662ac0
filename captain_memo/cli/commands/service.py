"""`captain-memo service status|stop`: the warm service that answers recall and remember."""

from __future__ import annotations

import time
from pathlib import Path

from captain_memo.cli.commands._common import add_command, add_json_arg, print_json
from captain_memo.presentation.words import counted

HELP = "the warm service behind recall and remember (status, stop)"
DESCRIPTION = """recall and remember use the store's engine where one runs: Neovim's host while the editor has the
store open, else a small service started on first use that keeps the model and index loaded, and
exits after CAPTAIN_MEMO_SERVICE_IDLE seconds (600) without a request. CAPTAIN_MEMO_SERVICE=0 or
--no-service turns it off."""


def register(sub) -> None:
    p = add_command(sub, "service", run, HELP, DESCRIPTION)
    p.add_argument("action", choices=["status", "stop"])
    add_json_arg(p)


def run(args) -> int:
    from captain_memo.base.paths import db_path
    from captain_memo.hosting.client import control

    db = args.db or db_path()
    answer = control(args.action, db)
    if args.json:
        up = {"up_seconds": _uptime(answer)} if answer is not None and "started" in answer else {}
        print_json({"running": answer is not None, **(answer or {}), **up})
        return 0
    if answer is None:
        print(f"no service is running for {db}")
    elif "unanswered" in answer:
        return _unanswered(answer, db)
    elif args.action == "stop" and answer.get("host") == "editor":
        print(
            f"Neovim's host (pid {answer['pid']}) stopped serving {db}; it keeps its engine for the editor "
            "and serves the store again on the editor's next request"
        )
    elif args.action == "stop":
        print(f"stopped the service (pid {answer['pid']}) for {db}")
    else:
        print(
            f"{_who(answer)} for {answer['db']}: model {answer['model'] or 'not loaded yet'}, "
            f"{counted(answer['requests'], 'request')}{_by_client(answer.get('clients'))}, "
            f"{_embedded(answer.get('embedded'))}{_up(answer)}, {_lifetime(answer)}"
        )
        from captain_memo.hosting.watcher import watching_lines

        for line in watching_lines(answer.get("watching")):
            print(line)
    return 0


def _up(answer: dict) -> str:
    seconds = _uptime(answer)
    return "up for a time unknown (the clock was set back)" if seconds is None else f"up {seconds:.0f} s"


def _uptime(answer: dict) -> float | None:
    """How long the serving process has run: from the kernel's own count since boot, which no clock
    change moves (the wall clock set back a year made it "up -31535996 s"); else from its start's
    wall-clock time, None when that lies ahead."""
    age = _process_age(answer.get("pid"))
    if age is None:
        age = time.time() - answer["started"]
    return round(age, 1) if age >= 0 else None


def _process_age(pid) -> float | None:
    """Seconds since process ``pid`` started, from /proc (Linux); None where it cannot be read."""
    import os

    try:
        since_boot = float(Path("/proc/uptime").read_text().split()[0])
        started = int(Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[19])
        return since_boot - started / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return None


def _who(answer: dict) -> str:
    if answer.get("host") == "editor":
        return f"Neovim's host (pid {answer['pid']}) serves its engine"
    return f"service pid {answer['pid']}"


def _lifetime(answer: dict) -> str:
    idle = answer.get("idle_exit_seconds")
    return "while Neovim runs" if idle is None else f"exits after {idle:g} s idle"


def _by_client(clients: dict | None) -> str:
    """`` (cli 3, mcp:claude-code 12)``: who the engine served (a service of an older build names none)."""
    return f" ({', '.join(f'{name} {count}' for name, count in clients.items())})" if clients else ""


def _embedded(embedded: dict | None) -> str:
    """`240 texts embedded for index and import, `: nothing when there were none."""
    texts = (embedded or {}).get("texts")
    return f"{counted(texts, 'text')} embedded for index and import, " if texts else ""


def _unanswered(answer: dict, db) -> int:
    """A service that holds the socket and answers nothing (stopped with SIGSTOP, or stuck)."""
    pid = answer["pid"]
    who = f"the service (pid {pid})" if pid else "the process serving the store"
    if "signalled" in answer:
        print(f"{who} for {db} did not answer ({answer['unanswered']}); ended it with {answer['signalled']}")
        return 0
    # Only a service of its own is ended by `stop`; a Neovim host stopped or busy is the user's editor.
    ending = ", and `captain-memo service stop` ends it" if pid else ""
    print(
        f"{who} for {db} does not answer: {answer['unanswered']}; commands run in their own process meanwhile{ending}"
    )
    return 1
