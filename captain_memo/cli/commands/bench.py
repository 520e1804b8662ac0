"""`captain-memo bench`: build synthetic stores and measure recall latency, memory and size at scale."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from captain_memo.cli.commands._common import add_command, add_json_arg
from captain_memo.errors import InputError, StoreError

BYTES_PER_CHUNK = 3_700  # a synthetic store's size on disk, measured at 150,000 chunks
DEFAULT_SIZES = "10000,150000,1000000"


def register(sub) -> None:
    p = add_command(sub, "bench", run, "measure recall speed, memory and size on synthetic stores")
    p.add_argument(
        "--sizes", help="chunks per store, comma-separated (default: 10000,150000,1000000; none with --real alone)"
    )
    p.add_argument("--queries", type=int, default=50, help="queries per store (at least 50)")
    p.add_argument("--dir", help="where the stores are built (default: a temporary folder, deleted after)")
    p.add_argument("--keep", action="store_true", help="keep the stores, and reuse them on the next run")
    p.add_argument("--no-embed", action="store_true", help="skip recall with the local model")
    add_json_arg(p, "print the figures as JSON")
    p.add_argument("--out", help="also write the Markdown table to this file")
    p.add_argument(
        "--real",
        nargs="+",
        metavar="DIR",
        help="also check the index's recall on real embeddings of "
        "these BEIR-style sets (embedded once through the evaluation's cache)",
    )


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"--sizes takes chunk counts separated by commas, like 10000,150000; got {text!r}") from None
    if any(n < 100 for n in sizes):
        raise InputError(f"--sizes: each store needs at least 100 chunks; got {text!r}")
    return sizes


def run(args) -> int:
    from captain_memo.bench.bench_report import machine, markdown
    from captain_memo.bench.synth import Spec

    sizes = parse_sizes(args.sizes or ("" if args.real else DEFAULT_SIZES))
    if args.queries < 50:
        raise InputError("--queries: at least 50, so that p95 means something")
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="captain-memo-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    start_machine = machine()
    results = []
    try:
        for size in sizes:
            spec = Spec(size, queries=args.queries)
            db, build = _store(folder, spec)
            print(f"measuring {size:,} chunks ...", file=sys.stderr)
            result = _measure(db, args.no_embed)
            result["build_rows_per_s"] = build
            results.append(result)
            if not args.keep:
                _remove(db)
    finally:
        if not args.dir and not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    command = "captain-memo bench --sizes " + ",".join(str(n) for n in sizes) + f" --queries {args.queries}"
    text = markdown(results, command, start_machine) if results else ""
    real = []
    if args.real:
        from captain_memo.bench import real as real_check

        real = real_check.check(args.real)
        text += (
            ("\n" if text else "")
            + "`captain-memo bench --real "
            + " ".join(args.real)
            + "`\n\n"
            + real_check.markdown(real)
        )
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        json.dump(
            {"command": command, "machine": start_machine, "results": results, "real": [asdict(row) for row in real]},
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text)
    return 0


def _store(folder: Path, spec) -> tuple[Path, float | None]:
    """The store for ``spec``: reused when one built from the same spec is there, else built."""
    from captain_memo.base.progress import Progress
    from captain_memo.bench.synth import build_store, sidecar

    db = folder / f"bench-{spec.chunks}.db"
    spec_file = sidecar(db)[0]
    saved = json.loads(spec_file.read_text()) if db.exists() and spec_file.exists() else {}
    if saved.get("spec") == json.loads(json.dumps(asdict(spec))):
        print(f"reusing {db}", file=sys.stderr)
        return db, saved.get("build_rows_per_s")
    _remove(db)
    free = shutil.disk_usage(folder).free
    if free < spec.chunks * BYTES_PER_CHUNK * 1.2:
        raise StoreError(
            f"{folder} has {free / 2**30:.1f} GB free; a store of {spec.chunks:,} chunks needs about "
            f"{spec.chunks * BYTES_PER_CHUNK * 1.2 / 2**30:.1f} GB; use --dir"
        )
    report = build_store(db, spec, progress=lambda total, label: Progress(total, label))
    print(
        f"built {report.chunks:,} chunks in {report.seconds:.0f} s ({report.rows_per_second:,.0f} rows/s)",
        file=sys.stderr,
    )
    return db, round(report.rows_per_second)


def _measure(db: Path, no_embed: bool) -> dict:
    # A fresh process per store: its memory and its open-plus-first-query are that store's alone.
    command = [sys.executable, "-m", "captain_memo.bench.measure", str(db)] + (["--no-embed"] if no_embed else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise StoreError(f"measuring {db} failed:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def _remove(db: Path) -> None:
    from captain_memo.bench.synth import sidecar

    spec_file, queries = sidecar(db)
    for path in (
        db,
        db.with_name(db.name + "-wal"),
        db.with_name(db.name + "-shm"),
        spec_file,
        queries,
        queries.with_suffix(".npy"),
    ):
        path.unlink(missing_ok=True)
