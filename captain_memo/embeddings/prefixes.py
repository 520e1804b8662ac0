"""The text some embedding models want before a search query and before a document.

Models trained with such prefixes place a text without them elsewhere in their space, and a query
embedded like a document matches documents worse (doc/embeddings.md). The prefixes are chosen by the
model's name (KNOWN, each from its model card), and either side can be set in the settings
(``CAPTAIN_MEMO_EMBED_QUERY_PREFIX``, ``CAPTAIN_MEMO_EMBED_DOCUMENT_PREFIX``; an empty value means
none). The prefixes are part of the embedder's ``model_id``, which the store records with its
vectors: vectors made with other prefixes are another model's, and ``reindex`` replaces them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from captain_memo.config import EmbedConfig


@dataclass(frozen=True)
class Prefixes:
    query: str = ""
    document: str = ""

    def __bool__(self) -> bool:
        return bool(self.query or self.document)

    def label(self) -> str:
        """How the prefixes read inside a model id: quoted, so a trailing space shows."""
        return f"[query {json.dumps(self.query, ensure_ascii=False)}, document {json.dumps(self.document, ensure_ascii=False)}]"


NONE = Prefixes()
SEARCH_INSTRUCTION = "Represent this sentence for searching relevant passages: "
WEB_QUERY_INSTRUCT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "

# (pattern over the lower-cased model name, prefixes), first match wins: the specific before the
# general. The names are matched anywhere, so `nomic-embed-text:v1.5` (Ollama),
# `nomic-ai/nomic-embed-text-v1.5` and `text-embedding-nomic-embed-text-v1.5` (LM Studio) agree.
KNOWN: tuple[tuple[str, Prefixes], ...] = (
    (r"nomic-embed-text", Prefixes("search_query: ", "search_document: ")),
    (r"e5-mistral|e5-[a-z0-9-]*instruct", Prefixes(WEB_QUERY_INSTRUCT, "")),
    (r"(?:^|[-/_.])e5(?:[-_.]|$)", Prefixes("query: ", "passage: ")),
    (r"bge-m3|bge-multilingual", NONE),  # trained without an instruction
    (r"bge-[a-z0-9.-]*zh", Prefixes("为这个句子生成表示以用于检索相关文章：", "")),
    (r"bge-(?:small|base|large)", Prefixes(SEARCH_INSTRUCTION, "")),
    (r"mxbai-embed-large", Prefixes(SEARCH_INSTRUCTION, "")),
    (r"snowflake-arctic-embed2|snowflake-arctic-embed-[a-z-]*v2", Prefixes("query: ", "")),
    (r"snowflake-arctic-embed", Prefixes(SEARCH_INSTRUCTION, "")),
    (r"embeddinggemma", Prefixes("task: search result | query: ", "title: none | text: ")),
    (r"qwen3-embedding", Prefixes(WEB_QUERY_INSTRUCT.rstrip(" "), "")),
)


def known_prefixes(model: str) -> Prefixes:
    """The prefixes the model's card asks for; none for a model not in KNOWN."""
    name = model.strip().lower()
    for pattern, prefixes in KNOWN:
        if re.search(pattern, name):
            return prefixes
    return NONE


def chosen_prefixes(model: str, cfg: EmbedConfig) -> Prefixes:
    """The model's known prefixes, with either side replaced where the settings name one."""
    known = known_prefixes(model)
    return Prefixes(
        known.query if cfg.query_prefix is None else cfg.query_prefix,
        known.document if cfg.document_prefix is None else cfg.document_prefix,
    )


def model_name(embedder) -> str:
    """The model's own name: ``model_id`` without the provider (``ollama:``) before it."""
    return embedder.model_id.split(":", 1)[-1]


def with_prefixes(embedder, cfg: EmbedConfig):
    """``embedder`` adding the prefixes its model wants; itself when it wants none."""
    prefixes = chosen_prefixes(model_name(embedder), cfg)
    return PrefixedEmbedder(embedder, prefixes) if prefixes else embedder


class PrefixedEmbedder:
    """An embedder whose texts get the document prefix, and whose queries the query prefix."""

    def __init__(self, inner, prefixes: Prefixes):
        self.inner = inner
        self.prefixes = prefixes
        self.model_id = f"{inner.model_id} {prefixes.label()}"

    def __getattr__(self, name: str):  # url, close, expect_dim...: the provider's own
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"PrefixedEmbedder({self.inner!r}, {self.prefixes!r})"

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed([self.prefixes.document + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed([self.prefixes.query + text for text in texts])
