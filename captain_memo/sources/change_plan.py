"""What a change question asks the store before ranking: the changes touching its topic, its window.

"latest change to capture": the newest observations with a path naming capture, or whose text names
it, join the pool and are ranked first (ranking/changes.py). "what changed in capture last week":
the same, inside the dates the words mean (ranking/window.py), read against now, or against the
newest observation's date when the history stopped before the window began (and said so). An empty
window says so and offers the newest changes before it.

The local store keeps every touched path (``store.touched_paths()``, store/touched.py). A team store
keeps none: there a change
question is answered by relevance and recency as any temporal question, and a window still keeps only
the observations dated inside it. A window is judged over both stores (``over_team``): when the local
store has nothing of the topic in the dates the words mean but the team store's hits do, those dates
stand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from captain_memo.base.touches import is_code_form, prefers_source
from captain_memo.config import RankConfig
from captain_memo.ranking.changes import is_change_question
from captain_memo.ranking.query import (
    ASCII_SEPARATORS,
    WORD,
    QueryShape,
    is_topic_word,
    strip_token,
    topic,
    topic_match,
)
from captain_memo.ranking.window import OPEN_END, Ask, Window, find_window, resolve
from captain_memo.records import Memory
from captain_memo.store.protocol import MemoryStore, Scope
from captain_memo.store.touched import TouchedPaths

TAG_META = "git_tag"
OBJECT_MARKS = frozenset("to in of touch touched".split())


def tag_key(project: str | None, name: str) -> str:
    return f"{TAG_META}\x1f{project or ''}\x1f{name}"


@dataclass
class ChangePlan:
    query: str  # what the legs search: the topic, without time and window words
    touching: dict[int, str] = field(default_factory=dict)  # local memory id -> what it touched
    chunk_ids: list[int] = field(default_factory=list)  # their first chunks, to join the pool
    window: Window | None = None
    notice: str = ""
    subject: str = ""  # what the question is about, without its time words
    # The dates the words mean, read against now, when the local store moved the window away from
    # them (its history stopped before them, or nothing of the topic is in them): the team's hits
    # may still hold the topic there (``over_team``).
    asked: Window | None = None


def _day(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d")


def _tag_date(store: MemoryStore, scope: Scope):
    def lookup(name: str) -> float | None:
        bare = name.lstrip("vV")
        # "since 8.0" names the release tagged 8.0.0, "since 8.3" the one tagged 8.3.0.
        zeros = [bare + ".0" * n for n in (1, 2) if bare.replace(".", "").isdigit() and bare.count(".") + n <= 2]
        forms = [form for base in (bare, *zeros) for form in (base, "v" + base)]
        for candidate in dict.fromkeys((name, *forms)):
            value = store.meta(tag_key(scope.project, candidate))
            if value is not None:
                return float(value)
        return None

    return lookup


class _Finder:
    """The touching changes of one store and scope, inside a window (or before a date)."""

    def __init__(self, touched: TouchedPaths, scope: Scope, k: int):
        self.touched, self.scope, self.k = touched, scope, k

    def by_paths(self, tokens: list[str], span) -> tuple[str | None, dict[int, tuple[float, str]]]:
        """The most specific token naming paths (fewest changes), and those changes."""
        best: tuple[str | None, dict[int, tuple[float, str]]] = (None, {})
        for token in tokens:
            found = self.touched.touching_paths(token, self.scope.project, self.scope.all_projects, self.k, span)
            if prefers_source(token) and not is_code_form(token):  # a bare name: a package covers its files
                under = self.touched.touching_folder(token, self.scope.project, self.scope.all_projects, self.k, span)
                if under:
                    merged = sorted({**under, **found}.items(), key=lambda item: -item[1][0])
                    found = dict(merged[: self.k])
            if found and (best[0] is None or len(found) < len(best[1])):
                best = (token, found)
        return best

    def by_text(self, match: str | None, span) -> dict[int, float]:
        if match is None:
            return {}
        return self.touched.text_naming(match, self.scope.project, self.scope.all_projects, self.k, span)

    def touching(self, subject: str, span) -> dict[int, tuple[float, str]]:
        """memory id -> (date, why) for the changes touching ``subject`` (all of them when empty)."""
        if not subject:
            found = self.touched.newest_observations(self.scope.project, self.scope.all_projects, self.k, span)
            why = "inside the window" if span is not None else "one of the newest changes"
            return {mid: (when, why) for mid, when in found.items()}
        token, by_path = self.by_paths(subject.split(), span)
        out = {mid: (when, f"touches {path}") for mid, (when, path) in by_path.items()}
        if token is not None and (not is_code_form(token) or not prefers_source(token)):
            # A module's own name, or a file name or path the history holds: the paths say it.
            # Messages are not read for a file name: FTS reads "test_capture.py" as naming capture.py.
            return out
        # A code form (pkg.capture, capture.py) named in a message counts too; a topic that names no
        # path at all (CaptureFixture, "rounding") is touched by the messages holding every word of it.
        match = f'"{token}"' if token is not None else topic_match(subject)[0]
        for mid, when in self.by_text(match, span).items():
            out.setdefault(mid, (when, f"its text names {token or subject}"))
        return dict(sorted(out.items(), key=lambda item: -item[1][0])[: self.k])

    def newest(self) -> float | None:
        return self.touched.newest_before(self.scope.project, self.scope.all_projects, OPEN_END)

    def oldest(self) -> float | None:
        """The date of the oldest observation in scope (only asked when a window found nothing)."""
        found = self.touched.newest_observations(self.scope.project, self.scope.all_projects, 10**9, None)
        return min(found.values()) if found else None

    def first_chunks(self, memory_ids: list[int]) -> list[int]:
        return list(self.touched.first_chunks(memory_ids).values())


def plan(
    store: MemoryStore, query: str, shape: QueryShape, scope: Scope, cfg: RankConfig, now: float
) -> ChangePlan | None:
    """None unless the query is a change question or names a window (and the profile answers them)."""
    if not cfg.changes_first:
        return None
    ask = find_window(query)
    change = is_change_question(query, shape.temporal, ask is not None)
    if not change and ask is None:
        return None
    asked = ask.rest if ask else query
    subject = topic(asked) or _object_of(asked)
    result = ChangePlan(subject or query, subject=subject)
    touched = store.touched_paths()
    finder = _Finder(touched, scope, max(cfg.temporal_pool, cfg.result_limit)) if touched is not None else None
    if ask is not None:
        _date_window(result, ask, store, scope, now, finder)
    if finder is None or (not change and result.window is None):
        return result  # a team store; or no window after all (an unknown tag) and no change asked about
    span = None if result.window is None else (result.window.start, result.window.end)
    found = finder.touching(subject, span)
    if not found and result.window is not None:
        found = _before_window(result, finder, subject)
    elif result.window is not None and not result.notice:
        result.notice = f"observations {result.window.label}"
    result.touching = {mid: why for mid, (_, why) in found.items()}
    result.chunk_ids = finder.first_chunks(list(found))
    return result


def _object_of(query: str) -> str:
    """The last word after "to", "in", "of" or "touch": a module named like a time word
    ("latest change to latest" asks about latest.py), which ``topic`` leaves out."""
    words = [strip_token(word) for word in query.split()]
    if len(words) >= 2 and words[-2].casefold() in OBJECT_MARKS and WORD.fullmatch(words[-1]):
        return words[-1]
    return ""


def _date_window(
    result: ChangePlan, ask: Ask, store: MemoryStore, scope: Scope, now: float, finder: _Finder | None
) -> None:
    try:
        window = resolve(ask, now, _tag_date(store, scope))
    except (ValueError, OverflowError):  # "since 2024-13-45", "in December 9999"
        result.notice = f"cannot read {ask.match.group(0).strip()!r} as dates; no window applied"
        return
    if window is None:
        tag = ask.match.group("tag")
        tag = tag if len(tag) <= 40 else tag[:40] + "…"
        result.notice = f"no tag {tag!r} is known here (index --git records tags); no window applied"
        return
    newest = finder.newest() if finder is not None else None
    if ask.relative and newest is not None and newest < window.start:
        # The history stopped before the window began: read the words against its last day.
        result.asked = window
        window = resolve(ask, newest, _tag_date(store, scope)) or window
        result.notice = f"{window.label}, read against {_day(newest)} (the newest observation's date)"
    result.window = window


def _before_window(result: ChangePlan, finder: _Finder, subject: str) -> dict[int, tuple[float, str]]:
    """Nothing inside the window: say so, and offer the newest touching changes before it."""
    window = result.window
    assert window is not None
    result.asked = result.asked or window
    about = f" touching {subject}" if subject else ""
    found = finder.touching(subject, (0.0, window.start))
    said = f"nothing{about} in it" + ("; the newest before it:" if found else "")
    starts = None if found else finder.oldest()
    if starts is not None and starts >= window.end:
        # Not "nothing touched it then": nothing that old was read (the cap on commits read).
        said = (
            f"the stored history starts on {_day(starts)}, after it; to read further back, index a fresh "
            "store with a higher `captain-memo index --git --max-commits N`"
        )
    result.notice = f"{result.notice or window.label}: {said}"
    result.window = Window(0.0, window.start, f"before {window.label}")
    return found


def over_team(plan: ChangePlan, rows: Mapping[int, tuple[str, Memory]]) -> ChangePlan:
    """The plan judged over both stores, given the team store's hits (chunk id -> text, memory):
    when the local store moved the window away from the dates the words mean and a team observation
    of the topic is dated inside them, those dates stand (the local changes found elsewhere are
    then outside them, and left out as any observation outside a window is)."""
    asked = plan.asked
    if asked is None:
        return plan
    words = _topic_words(plan.subject)
    for text, memory in rows.values():
        if memory.kind == "observation" and asked.start <= (memory.created_at or 0.0) < asked.end:
            said = {w.casefold() for w in WORD.findall(f"{memory.title} {text}")}
            if words <= said:
                return replace(plan, window=asked, notice=f"observations {asked.label}", touching={}, asked=None)
    return plan


def _topic_words(subject: str) -> set[str]:
    """The words a text must hold to be about ``subject`` (as ``topic_match`` asks the index)."""
    return {
        part.casefold()
        for raw in topic(subject).split()
        for part in ASCII_SEPARATORS.split(raw)
        if WORD.fullmatch(part) and is_topic_word(part)
    }
