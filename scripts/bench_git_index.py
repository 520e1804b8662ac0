"""`index --git` speed on a long history, beside the embedder alone on the same texts.

    python scripts/bench_git_index.py [--commits 6000] [--repo PATH] [--seed 7] [--profile FILE]

Without ``--repo`` a history is generated with ``git fast-import`` in a temporary folder: commits
over two years by a dozen authors, each touching 1-8 of a few hundred files, one in six a merge,
with release commits and bots' dependency updates whose titles state versions (which the automatic
supersession rule reads), and some long messages. When the evaluation data is present (``../shared/evaldata`` beside the repository)
the subjects and bodies are real pull-request titles and changelog fragments of a Python project,
read at run time; otherwise they are built from a small vocabulary.

Prints the run's time, chunks/s and every text the run sent to the embedder (its own chunks plus
what the supersession rule compared), then the embedder alone on the stored chunk texts (the floor
the indexer can approach; ``--sample N`` times N of them, evenly spaced), then a rerun with
nothing new. ``--profile FILE`` writes a cProfile of the first run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "evaldata" / "pytest_changelog"
WORDS = (
    "cache",
    "index",
    "query",
    "latency",
    "deploy",
    "rollback",
    "schema",
    "migration",
    "worker",
    "queue",
    "timeout",
    "retry",
    "token",
    "session",
    "fixture",
    "capture",
    "plugin",
    "config",
    "marker",
    "assert",
    "rewrite",
    "collection",
    "warning",
    "terminal",
    "report",
    "parametrize",
    "tmp_path",
    "monkeypatch",
)
VERBS = ("Fix", "Add", "Remove", "Refactor", "Document", "Handle", "Support", "Deprecate", "Improve", "Test")
AREAS = ("src/core", "src/plugins", "src/assertion", "src/config", "testing", "doc/en", "changelog", "scripts")


def texts(rng: random.Random) -> tuple[list[str], list[str]]:
    """(subjects, bodies): real ones when the evaluation data is present, else generated."""
    if EVALDATA.is_dir():
        subjects = [json.loads(line)["text"] for line in (EVALDATA / "queries.jsonl").open(encoding="utf-8")]
        bodies = [json.loads(line)["text"] for line in (EVALDATA / "corpus.jsonl").open(encoding="utf-8")]
        return subjects, bodies
    subjects = [f"{rng.choice(VERBS)} {rng.choice(WORDS)} {rng.choice(WORDS)} handling" for _ in range(800)]
    bodies = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 60))).capitalize() + "." for _ in range(800)]
    return subjects, bodies


DEPENDENCIES = (
    "pytest-asyncio",
    "hypothesis",
    "django",
    "twisted",
    "pytest-cov",
    "setuptools-scm",
    "sphinx",
    "actions/checkout",
    "pre-commit",
    "coverage",
)


def dependency_bump(rng: random.Random, pins: dict[str, list[int]], bodies: list[str]) -> str:
    """A bot's dependency update: its title states two versions, its body a changelog excerpt."""
    name = rng.choice(DEPENDENCIES)
    old = pins.setdefault(name, [rng.randint(0, 9), rng.randint(0, 30), 0])
    new = [old[0], old[1] + 1, 0] if rng.random() < 0.3 else [old[0], old[1], old[2] + 1]
    before, after = ".".join(map(str, old)), ".".join(map(str, new))
    pins[name] = new
    return (
        f"build(deps): Bump {name} from {before} to {after}\n\nBumps [{name}] from {before} to {after}.\n"
        f"- [Release notes](https://example.org/{name}/releases)\n- [Changelog]\n\n{rng.choice(bodies)}\n\n"
        f"---\nupdated-dependencies:\n- dependency-name: {name}\n  dependency-type: direct:development\n"
    )


def message(
    rng: random.Random, n: int, subjects: list[str], bodies: list[str], release: list[int], pins: dict[str, list[int]]
) -> str:
    roll = rng.random()
    if roll > 0.90:  # one commit in ten is a bot's dependency update, as in many active projects
        return dependency_bump(rng, pins, bodies)
    if roll < 0.03:  # a release: states a version the supersession rule compares
        release[2] += 1
        if rng.random() < 0.2:
            release[1], release[2] = release[1] + 1, 0
        return f"Release {release[0]}.{release[1]}.{release[2]}\n\nPrepare the changelog and bump the version."
    subject = rng.choice(subjects)
    if roll < 0.35:
        return subject
    body = rng.choice(bodies)
    if roll > 0.88:  # a long message: a generated changelog pasted into the commit
        body = "\n\n".join(rng.choice(bodies) for _ in range(12))
    return f"{subject}\n\n{body}\n\nCloses #{n + 100}."


def fast_import_stream(count: int, seed: int) -> bytes:
    rng = random.Random(seed)
    subjects, bodies = texts(rng)
    files = [f"{rng.choice(AREAS)}/{rng.choice(WORDS)}_{i}.py" for i in range(400)]
    authors = [f"Dev {i} <dev{i}@example.org>" for i in range(12)]
    release = [1, 0, 0]
    pins: dict[str, list[int]] = {}
    stamp = 1_700_000_000 - count * 9000
    out: list[str] = []
    blob_mark = 1
    commit_marks: list[int] = []
    for n in range(count):
        stamp += rng.randint(600, 17_000)
        changes = []
        for path in rng.sample(files, rng.randint(1, 8)):
            data = f"# {path} at change {n}\nvalue = {rng.random()}\n"
            out.append(f"blob\nmark :{blob_mark}\ndata {len(data.encode())}\n{data}\n")
            changes.append(f"M 100644 :{blob_mark} {path}\n")
            blob_mark += 1
        mark = 1_000_000 + n
        text = message(rng, n, subjects, bodies, release, pins)
        author = rng.choice(authors)
        merge = commit_marks and len(commit_marks) > 10 and rng.random() < 1 / 6
        head = f"from :{commit_marks[-1]}\n" if commit_marks else ""
        if merge:
            other = commit_marks[-rng.randint(2, 10)]
            text = f"Merge pull request #{n} from dev/{rng.choice(WORDS)}\n\n{rng.choice(subjects)}"
            head += f"merge :{other}\n"
        raw = text.encode()
        out.append(
            f"commit refs/heads/main\nmark :{mark}\nauthor {author} {stamp} +0000\n"
            f"committer {author} {stamp} +0000\ndata {len(raw)}\n{text}\n{head}{''.join(changes)}\n"
        )
        commit_marks.append(mark)
    return "".join(out).encode()


def generate(repo: Path, count: int, seed: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "fast-import", "--quiet"], input=fast_import_stream(count, seed), check=True
    )
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", "main"], check=True)


class Counted:
    """The embedder, counting the texts it is given."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=6000)
    parser.add_argument("--repo", help="an existing repository to index instead of a generated one")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", help="write a cProfile of the first run to this file")
    parser.add_argument(
        "--sample", type=int, default=0, help="time the embedder alone on N of the stored chunks (default: all of them)"
    )
    args = parser.parse_args()

    from captain_memo.config import embed_config
    from captain_memo.embeddings import make_embedder
    from captain_memo.engine.core import Engine
    from captain_memo.sources.git_history import index_history
    from captain_memo.store import Store

    with tempfile.TemporaryDirectory(prefix="captain-memo-bench-git-") as tmp:
        repo = Path(args.repo).resolve() if args.repo else Path(tmp) / "repo"
        if not args.repo:
            started = time.perf_counter()
            generate(repo, args.commits, args.seed)
            source = "real messages from the evaluation data" if EVALDATA.is_dir() else "generated messages"
            print(f"generated {args.commits} commits ({source}) in {time.perf_counter() - started:.1f} s")
        total = subprocess.run(
            ["git", "-C", str(repo), "rev-list", "--count", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        embedder = Counted(make_embedder(embed_config()))
        embedder.embed(["warm up"])
        print(
            f"{repo}: {total} commits; embedder {embedder.model_id}; {os.cpu_count()} cores; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        engine = Engine(Store(Path(tmp) / "memo.db"), embedder)
        try:
            profiler = None
            if args.profile:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            started = time.perf_counter()
            embedder.texts = 0
            report = index_history(engine, repo)
            seconds = time.perf_counter() - started
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(args.profile)
            print(
                f"{'index --git, first run':<24} {seconds:8.1f} s  {report.chunks_embedded / seconds:6.1f} chunks/s  "
                f"({report.indexed} commits stored, {report.chunks_embedded} chunks, {report.skipped} skipped, "
                f"{report.left_out} older left out; load average {os.getloadavg()[0]:.2f})"
            )
            print(
                f"{'texts embedded':<24} {embedder.texts:8,}  ({embedder.texts - report.chunks_embedded:,} of them by the "
                f"supersession rule)"
            )
            chunks = [t for (t,) in engine.store.conn.execute("SELECT text FROM chunks ORDER BY id")]
            if args.sample:
                chunks = chunks[:: max(len(chunks) // args.sample, 1)][: args.sample]
            started = time.perf_counter()
            for start in range(0, len(chunks), 256):
                embedder.embed(sorted(chunks[start : start + 256], key=len))
            seconds = time.perf_counter() - started
            print(
                f"{'embedder alone':<24} {seconds:8.1f} s  {len(chunks) / seconds:6.1f} chunks/s  "
                f"(the same {len(chunks)} chunk texts, batches of 256; load average {os.getloadavg()[0]:.2f})"
            )
            started = time.perf_counter()
            again = index_history(engine, repo)
            print(
                f"{'rerun, nothing new':<24} {time.perf_counter() - started:8.2f} s  ({again.indexed} commits stored)"
            )
        finally:
            engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
