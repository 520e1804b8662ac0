"""What the editor's windows show, computed here so the plugin's Lua only lays it out (widths,
truncation to the float, highlights): each hit's age, heading path, branch, place, marks and
preview lines, the recall's footer and warning, and a memory opened in full. Every stored text
comes with its control characters escaped (terminal.one_line, terminal.block): a title can hold
a line break, which a buffer line cannot, or an escape sequence.
"""

from __future__ import annotations

from captain_memo.base.terminal import block, one_line
from captain_memo.presentation.text import footer, hit_id, hit_title, hit_where, memory_meta, warning
from captain_memo.presentation.words import age, keyword_scale, store_mark, superseded_mark


def shown_recall(data: dict, now: float) -> dict:
    """A recall's JSON (views.recall_json) with what the results window shows: ``footer``,
    ``warning`` ("" when every leg and store answered) and each hit's ``shown``."""
    data["footer"] = footer(data)
    data["warning"] = warning(data, flat=one_line)
    for hit in data["hits"]:
        hit["shown"] = shown_hit(hit, now)
    return data


def shown_hit(hit: dict, now: float) -> dict:
    """A hit's texts as its line, preview and explanation show them, one line each but ``body``."""
    when = age(now - hit["created_at"])
    where = one_line(hit_where(hit))
    store = one_line(store_mark(hit))
    meta = [hit["kind"], hit_id(hit), one_line(hit.get("branch")), where, when, store]
    return {
        "age": when,
        "title": one_line(hit_title(hit)),
        "branch": one_line(hit.get("branch")),
        "where": where,
        "meta": " · ".join(part for part in meta if part),
        "superseded": superseded_mark(hit),
        "body": body_lines(hit.get("text") or "", hit_title(hit)),
        # How the keyword score was scaled, when not with every other candidate's ("" then).
        "keyword_note": keyword_scale(hit.get("explain") or {}),
        # The multipliers' details, in the order of explain.factors (a branch name, an identifier).
        "details": [one_line(str(f.get("detail") or "")) for f in (hit.get("explain") or {}).get("factors") or ()],
    }


def body_lines(text: str, title: str = "") -> list[str]:
    """A chunk's or a memory's text as buffer lines, without the heading line it starts with: a
    Windows line ending is a line ending, tabs are kept, other control characters escaped."""
    first, newline, rest = text.partition("\n")
    if newline and title and first.strip() == title.strip():
        text = rest
    return block(text).split("\n")


def shown_memory(data: dict) -> dict:
    """A memory opened in full (views.opened_json) with what its buffer shows: ``shown.title``,
    ``shown.meta`` (kind, id, age, author, branch, source) and ``shown.body``."""
    data["shown"] = {
        "title": one_line(data["title"]),
        "meta": one_line(" · ".join(memory_meta(data))),
        "body": body_lines(data.get("body") or ""),
    }
    return data
