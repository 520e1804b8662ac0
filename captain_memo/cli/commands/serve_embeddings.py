"""`captain-memo serve-embeddings`: the local model over HTTP (Ollama and OpenAI embedding APIs)."""

from __future__ import annotations

import sys

from captain_memo.config import SERVE_API_KEY_ENV as API_KEY_VAR
from captain_memo.config import serve_api_key

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(sub) -> None:
    from captain_memo.config import SERVE_HOST as DEFAULT_HOST
    from captain_memo.config import SERVE_PORT as DEFAULT_PORT

    p = sub.add_parser(
        "serve-embeddings",
        help="serve the local embedding model over HTTP",
        description="Serve the built-in model on POST /api/embed, /api/embeddings (Ollama) and /v1/embeddings "
        f"(OpenAI), so a team can share one model. Set {API_KEY_VAR} to require a bearer key.",
    )
    p.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}, this machine only)"
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--threads", type=int, default=None, help="threads for the model (default: all cores)")
    p.add_argument("--model-name", default=None, help="name to serve the model under (default all-MiniLM-L6-v2-int8)")
    p.set_defaults(run=run)


def run(args) -> int:
    from captain_memo.errors import ConfigError
    from captain_memo.memo import embedding_server

    try:
        server = embedding_server(args.host, args.port, args.threads, args.model_name, serve_api_key())
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    if args.host not in LOOPBACK and not server.api_key:
        print(
            f"captain-memo: listening on {args.host}: anyone who can reach it can use the model; "
            f"set {API_KEY_VAR} to require a key",
            file=sys.stderr,
        )
    # Tools (and the tests) read the address from this line, so its form stays stable.
    print(f"serving {server.model_name} ({server.dim}-d) on {server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
