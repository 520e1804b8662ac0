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


def is_change_question(text: str, temporal: bool, has_window: bool) -> bool:
    return bool(CHANGE_WORDS.search(text)) and (temporal or has_window)


def changes_first(candidates: list[Candidate], touching: Mapping[tuple[str, int], str]) -> list[Candidate]:
    """Observations that touch the topic ranked before the rest, newest first (``precedence``); the
    trace says what each one touched."""
    if not touching:
        return candidates
    out = []
    for c in candidates:
        why = touching.get((c.memory.store, c.memory.id))
        if why is None or c.memory.kind != "observation":
            out.append(c)
            continue
        out.append(
            replace(c.times("touches", 1.0, f"{why}: changes first, newest first"), precedence=c.memory.created_at)
        )
    return out
