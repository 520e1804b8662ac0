"""What leaves for an agent: a recall's or a memory's JSON with no credential in it.

The user's own store keeps what it was given (a note `index` stored as is, `remember
--allow-secrets`, a commit message): the hook's block, the MCP tools' answers and the resources a
model reads are redacted on the way out, with the saving redactor's marks (secrets.py). A hit is
redacted from its whole chunk: its snippet, cut from the chunk's lines, could hold part of a
credential no scan sees (a token cut at 160 characters, a private key's middle lines without its
armour), so the snippet of a chunk that held one is made again from the redacted text.
"""

from __future__ import annotations

from captain_memo.base import secrets
from captain_memo.presentation.chunks import snippet


def redacted_recall(data: dict) -> tuple[dict, list[str]]:
    """A recall's JSON (views.recall_json) as it may reach an agent, and what was redacted in it."""
    hits, remade = [], []
    for hit in data.get("hits", []):
        clean_text, found = secrets.redacted(hit.get("text") or "")
        if found:
            hit = {**hit, "text": clean_text, "chunk": _snippet_again(hit, clean_text, data.get("query") or "")}
            remade += [f"{finding.kind} in #{hit['id']}" for finding in found]
        hits.append(hit)
    clean, redacted = secrets.redacted_json({**data, "hits": hits})
    return clean, list(dict.fromkeys(remade + redacted))


def _snippet_again(hit: dict, text: str, query: str) -> dict:
    """The hit's chunk with its snippet made from ``text``, the redacted chunk."""
    chunk = dict(hit.get("chunk") or {})
    heading = chunk.get("title") or hit.get("title") or ""
    lines = text.strip("\n").split("\n")
    if lines and lines[0].strip() == heading:
        lines = lines[1:]
    found = snippet(lines, query, heading)
    chunk.update(snippet=found.text, matched=list(found.matched))
    return chunk
