"""Embedding providers behind one interface (see base.Embedder)."""

from __future__ import annotations

from captain_memo.config import EmbedConfig
from captain_memo.errors import ConfigError


def make_embedder(cfg: EmbedConfig, backoff: bool = True):
    """The provider the configuration names; nothing is loaded or contacted until first use.

    An HTTP provider comes behind a back-off (embeddings/backoff.py) unless ``backoff`` is False:
    commands that must really ask (reindex, eval, health checks) turn it off."""
    from captain_memo.embeddings.prefixes import with_prefixes

    if cfg.provider == "local":
        from captain_memo.embeddings.local import LocalEmbedder

        return with_prefixes(LocalEmbedder(), cfg)
    if cfg.provider in ("ollama", "openai"):
        try:
            from captain_memo.embeddings.http import make_http_embedder
        except ImportError:
            raise ConfigError(f"embedding provider {cfg.provider!r} is not available in this build") from None
        embedder = with_prefixes(make_http_embedder(cfg), cfg)
        if not backoff:
            return embedder
        from captain_memo.embeddings.backoff import with_backoff

        return with_backoff(embedder)
    raise ConfigError(f"unknown embedding provider {cfg.provider!r}; use local, ollama or openai")


def probe_provider(cfg: EmbedConfig) -> str:
    """Embed one text with the configured provider now (no back-off); its model, dimension and
    latency, or EmbeddingError / ConfigError saying what failed. For an HTTP provider the result
    ends or extends a recorded outage (embeddings/backoff.py)."""
    import time

    from captain_memo.errors import EmbeddingError

    embedder = make_embedder(cfg, backoff=False)
    from captain_memo.embeddings.backoff import record_probe

    record = record_probe if cfg.provider != "local" else None
    try:
        started = time.perf_counter()
        vectors = embedder.embed(["captain memo health check"])
        took = (time.perf_counter() - started) * 1000
    except EmbeddingError as exc:
        if record is not None:
            record(embedder, str(exc))
        raise
    finally:
        if hasattr(embedder, "close"):
            embedder.close()
    if record is not None:
        record(embedder, None)
    return f"{embedder.model_id} answered ({vectors.shape[1]} dimensions, {took:.0f} ms)"
