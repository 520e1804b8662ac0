"""Automatic supersession of version facts.

A new observation whose title states a version (``deploy version 2.4.1``) supersedes the older
observations of the same project and branch whose titles read the same apart from a lower version
(``deploy version 2.3.0``), when their texts are close: the cosine between the embeddings of
their first chunks, with every version number replaced by one placeholder word, is at least
``CAPTAIN_MEMO_AUTO_SUPERSEDE_COSINE`` (0.93). The title alone would supersede a failed deploy's
post-mortem with a routine one; the cosine keeps that from happening.

The versions are masked because the model reads them as content: with all-MiniLM-L6-v2,
"deploy version 2.4.1" and "deploy version 2.3.0" have cosine 0.757, so unmasked vectors would
never let the bare fact supersede itself; masked they are identical (1.0), while the same titles
over a routine rollout and a rollback post-mortem score 0.311. Identical masked texts need no
embedding at all; otherwise one call embeds the new text and its few candidates.

Only a statement of the current version of one thing takes part: a title that ends with its one
version (``deploy version 2.4.1``, ``postgres: 16.1``), not one where a version is part of an event
(``Cherry pick 8.0.2 release notes``, ``upgrade postgres 15.2 to 16.1``). Commits indexed from git
history never take part: each records an event, and two releases are two events, not two versions
of one fact.

Superseded memories are demoted by the ranker (x0.5), never dropped. The link is marked automatic,
listed by ``supersede --list`` and undone by ``supersede --undo OLD``. ``CAPTAIN_MEMO_AUTO_SUPERSEDE=0``
switches the rule off.
"""

from __future__ import annotations

import logging
import re

from captain_memo.sources.settings import SourceSettings, source_settings

log = logging.getLogger("captain_memo")
# 2.4, 2.4.1, v2.4.1, 2.4.1-rc.1; not part of a longer word, path or number.
VERSION = re.compile(r"(?<![\w.\-/])v?(\d+(?:\.\d+){1,3})(?:-([0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*))?(?![\w\-/]|\.\w)",
                     re.IGNORECASE)
SLOT = "\x00"
MASK = "VERSION"
# Older observations compared per new one, newest first; each costs one short text to embed.
MAX_CANDIDATES = 20


def version_key(number: str, pre: str | None) -> tuple:
    """Sortable: 2.4 == 2.4.0, and a pre-release sorts below its release."""
    parts = [int(p) for p in number.split(".")]
    return (*parts, *[0] * (4 - len(parts)), 0 if pre else 1, pre or "")


def states_current_version(template: str, versions: tuple) -> bool:
    """One version, and it is what the title ends with: ``<thing> [is|:] <version>``."""
    return len(versions) == 1 and template.endswith(SLOT)


def version_fact(title: str) -> tuple[str, tuple[tuple, ...]] | None:
    """(the title with its versions taken out, the versions) or None when it states none."""
    found = list(VERSION.finditer(title))
    if not found:
        return None
    template = " ".join(VERSION.sub(SLOT, title).lower().split()).rstrip(".!?;:, ")
    return template, tuple(version_key(m.group(1), m.group(2)) for m in found)


def _like_pattern(template: str) -> str:
    """A LIKE pattern that every title with this template matches (checked exactly afterwards)."""
    escaped = template.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return re.sub(r"[\x00 ]+", "%", escaped) + "%"


def masked(text: str) -> str:
    """The text with its version numbers replaced by one placeholder word."""
    return VERSION.sub(MASK, text)


def first_chunks(store, memory_ids: list[int]) -> dict[int, str]:
    marks = ",".join("?" * len(memory_ids))
    return dict(store.conn.execute(f"SELECT memory_id, text FROM chunks WHERE seq = 0 AND memory_id IN ({marks})",
                                   memory_ids))


def candidates(store, memory, template: str, versions: tuple) -> list[int]:
    """Current observations of the same project and branch stating a lower version of the same fact."""
    pattern = _like_pattern(template)
    rows = store.conn.execute(
        "SELECT id, title, body FROM memories WHERE kind = 'observation' AND id != ? AND superseded_by IS NULL"
        " AND origin != 'git' AND project IS ? AND branch IS ?"
        " AND (title LIKE ? ESCAPE '\\' OR (title = '' AND substr(ltrim(body), 1, 400) LIKE ? ESCAPE '\\'))"
        " ORDER BY created_at DESC",
        (memory.id, memory.project, memory.branch, pattern, pattern))
    found = []
    for memory_id, title, body in rows:
        shown = title or (body.strip().splitlines() or [""])[0][:80]
        fact = version_fact(shown)
        if fact and fact[0] == template and len(fact[1]) == len(versions) and fact[1] < versions:
            found.append(memory_id)
    return found


def supersede_older_versions(engine, memory_id: int, settings: SourceSettings | None = None) -> list[int]:
    """Apply the rule to a just-stored observation; returns the ids it superseded.

    The observation is already stored when this runs, so a failure here is logged, not raised.
    """
    settings = settings or source_settings()
    if not settings.auto_supersede:
        return []
    try:
        return _supersede(engine, memory_id, settings.auto_supersede_cosine)
    except Exception as exc:  # the memory is safe; only the automatic link is missing
        log.warning("automatic supersession of #%s failed: %s", memory_id, exc)
        return []


def _supersede(engine, memory_id: int, threshold: float) -> list[int]:
    store = engine.store
    memory = store.get(memory_id)
    if memory.kind != "observation" or memory.source.origin == "git":
        return []
    fact = version_fact(memory.display_title)
    if fact is None or not states_current_version(*fact):
        return []
    older = candidates(store, memory, *fact)[:MAX_CANDIDATES]
    if not older:
        return []
    texts = {mid: masked(text) for mid, text in first_chunks(store, [memory_id, *older]).items()}
    mine = texts.get(memory_id)
    differing = [mid for mid in older if mid in texts and texts[mid] != mine]
    vectors = engine.try_embed([mine] + [texts[mid] for mid in differing]) if differing else None
    if differing and vectors is None:
        return []  # the embedder is down: too little evidence to supersede anything
    cosine = {mid: float(vectors[0] @ vectors[i + 1]) for i, mid in enumerate(differing)}
    done = []
    for old_id in older:
        if old_id in texts and (texts[old_id] == mine or cosine.get(old_id, -1.0) >= threshold):
            store.set_superseded(old_id, memory_id, automatic=True)
            log.info("#%s supersedes #%s (same fact, newer version)", memory_id, old_id)
            done.append(old_id)
    return done
