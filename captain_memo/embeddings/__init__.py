"""Embedding providers behind one interface (see base.Embedder)."""

from __future__ import annotations

from captain_memo.config import EmbedConfig
from captain_memo.errors import ConfigError


def make_embedder(cfg: EmbedConfig):
    """The provider the configuration names; nothing is loaded or contacted until first use."""
    if cfg.provider == "local":
        from captain_memo.embeddings.local import LocalEmbedder

        return LocalEmbedder()
    if cfg.provider in ("ollama", "openai"):
        try:
            from captain_memo.embeddings.http import make_http_embedder
        except ImportError:
            raise ConfigError(f"embedding provider {cfg.provider!r} is not available in this build") from None
        return make_http_embedder(cfg)
    raise ConfigError(f"unknown embedding provider {cfg.provider!r}; use local, ollama or openai")
