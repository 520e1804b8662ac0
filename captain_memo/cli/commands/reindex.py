"""`captain-memo reindex`: re-embed every memory with the configured model (resumable)."""

from __future__ import annotations

from captain_memo.cli.commands._common import add_command, add_quiet_arg, open_memo

HELP = "re-embed everything with the configured embedding model"
DESCRIPTION = """Re-embed every chunk with the configured provider and model, in batches. Safe to interrupt: run it
again and it continues; recall keeps working on the old vectors until the end. A model's query and
document prefixes are part of its vectors: after changing them, run this."""


def register(sub) -> None:
    p = add_command(sub, "reindex", run, HELP, DESCRIPTION)
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="texts per embedding call (default: CAPTAIN_MEMO_EMBED_BATCH_SIZE or 32)",
    )
    p.add_argument(
        "--missing",
        action="store_true",
        help="only embed chunks saved without a vector (the endpoint was down), with the store's own model",
    )
    p.add_argument("--restart", action="store_true", help="discard an unfinished reindex and start over")
    add_quiet_arg(p)


def run(args) -> int:
    from captain_memo.base.progress import progress_factory
    from captain_memo.config import embed_config
    from captain_memo.errors import InputError

    if args.batch_size is not None and args.batch_size < 1:
        raise InputError("--batch-size must be at least 1")
    cfg = embed_config()
    batch_size = args.batch_size or cfg.batch_size
    bars = progress_factory(args.quiet)
    with open_memo(args) as memo:
        model = memo.embedder.model_id
        if args.missing:
            filled = memo.fill_missing(batch_size, bars)
            print(f"embedded {filled} chunk{'s' * (filled != 1)} that had no vector, with {model}")
            return 0
        memo.refuse_if_reindexing()  # before saying it would continue the unfinished one
        pending = memo.pending_reindex()
        if pending and pending[1] == model and not args.restart:
            print(f"continuing the unfinished reindex to {model}")
        report = memo.reindex(batch_size, bars, restart=args.restart)
    shape = f" ({report.dim}-d)" if report.dim else ""
    print(
        f"re-embedded {report.embedded} of {report.chunks} chunks with {report.model}{shape} in {report.seconds:.1f} s"
    )
    if report.previous_model and report.previous_model != report.model:
        print(f"the vectors of {report.previous_model} were replaced")
        if report.prefixes_changed:
            print(
                "the model is the same but its prefixes changed; a prefix is part of every vector, so each was made again"
            )
    return 0
