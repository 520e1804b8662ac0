"""A change question is answered from the changes.

"latest change to capture", "when did we last touch pkg.capture", "what changed in capture last
week": the observations that touch the topic (a path of theirs names it, or their text does) come
first, newest first; relevance orders ties and everything after them, notes and doc sections
included. A question with time words about something other than a change ("the latest decision on
rounding") is left to relevance and recency.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from captain_memo.ranking.candidates import Candidate

CHANGE_WORDS = re.compile(
    r"\b(chang\w*|touch\w*|commit\w*|modif\w*|edit(?:s|ed)?|updat\w*|happen\w*|worked\s+on|landed|merged)\b", re.I
)


# "what's new in capture" asks for its latest changes with no change word nor time word.
WHATS_NEW = re.compile(r"\bwhat(?:'|’)?s\s+new\b|\bwhat\s+is\s+new\b", re.I)


def is_change_question(text: str, temporal: bool, has_window: bool) -> bool:
    return bool(WHATS_NEW.search(text)) or (bool(CHANGE_WORDS.search(text)) and (temporal or has_window))


def changes_first(candidates: list[Candidate], touching: Mapping[tuple[str, int], str]) -> list[Candidate]:
    """Observations that touch the topic ranked before the rest, newest first (``precedence``); the
    trace says what each one touched."""
    if not touching:
        return candidates
    in_history = _history_order(candidates, touching)
    out = []
    for c in candidates:
        why = touching.get((c.memory.store, c.memory.id))
        if why is None or c.memory.kind != "observation":
            out.append(c)
            continue
        out.append(
            replace(
                c.times("touches", 1.0, f"{why}: changes first, newest first"),
                precedence=c.memory.created_at + in_history.get(c.key, 0.0),
            )
        )
    return out


def _history_order(candidates: list[Candidate], touching: Mapping[tuple[str, int], str]) -> dict:
    """Changes with the same commit time (a rebased stack) in history's order: a fraction of a
    second each, by the order they were stored in (oldest first, as git's log is read), so the
    later one in history comes first. Commit times are whole seconds; 1e-4 s steps stay exact
    at today's timestamps (a float's step there is ~2e-7 s)."""
    tied: dict[float, list[Candidate]] = {}
    for c in candidates:
        if c.memory.kind == "observation" and (c.memory.store, c.memory.id) in touching:
            tied.setdefault(c.memory.created_at, []).append(c)
    order = {}
    for group in tied.values():
        if len(group) > 1:
            for rank, c in enumerate(sorted(group, key=lambda c: c.memory.id)):
                order[c.key] = min(rank, 9_999) * 1e-4
    return order
