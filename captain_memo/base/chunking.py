"""Splitting a memory's text into the chunks that are embedded and keyword-indexed."""

from __future__ import annotations

import hashlib

# ~1,200 characters is about 256 tokens of English, the model's input limit: a longer chunk
# would be truncated by the embedder and its tail would be invisible to the vector leg.
MAX_CHUNK_CHARS = 1200


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def split_paragraphs(text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[str]:
    """Pack blank-line-separated paragraphs into pieces of at most ``max_chars`` (a longer
    paragraph is cut at line, then word, boundaries)."""
    pieces: list[str] = []
    current = ""
    for para in [p.strip() for p in text.split("\n\n") if p.strip()]:
        for part in _cut(para, max_chars):
            if current and len(current) + 2 + len(part) > max_chars:
                pieces.append(current)
                current = part
            else:
                current = f"{current}\n\n{part}" if current else part
    if current:
        pieces.append(current)
    return pieces


def _cut(text: str, max_chars: int) -> list[str]:
    if len(text) <= max_chars:
        return [text]
    out, current = [], ""
    for word in text.replace("\n", " \n").split(" "):
        while len(word) > max_chars:
            if current:
                out.append(current)
                current = ""
            out.append(word[:max_chars])
            word = word[max_chars:]
        if current and len(current) + 1 + len(word) > max_chars:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current.strip():
        out.append(current)
    return [piece.strip() for piece in out if piece.strip()]


def chunk_texts(title: str, body: str, max_chars: int = MAX_CHUNK_CHARS) -> list[str]:
    """Chunks of a typed memory; each carries the title so every chunk can be found by it."""
    header = title.strip()
    budget = max(200, max_chars - len(header) - 1) if header else max_chars
    pieces = split_paragraphs(body, budget) or [body.strip()]
    return [piece if piece.startswith(header) else f"{header}\n{piece}" for piece in pieces]
