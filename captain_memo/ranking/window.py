"""Time windows in a question: "last week", "since yesterday", "in March", "since 8.0", "this month".

``find_window`` reads what the words ask (pure text); ``resolve`` turns it into dates against a
reference moment (now, or the newest observation's date when the history has stopped there) and
the dates of tags. Days start at local midnight; "last week" is the seven days up to the reference
day, "last month" the calendar month before it, "in March" the latest March not after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from captain_memo.ranking.candidates import Candidate

OPEN_END = 1e18  # seconds since the epoch: no upper bound
MONTHS = "january february march april may june july august september october november december".split()
MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
TAG = r"v?\d+(?:\.\d+)+[\w.+-]*"
UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30}
PATTERNS = [
    ("tag", re.compile(rf"\bsince\s+(?:the\s+)?(?:release\s+|version\s+)?(?P<tag>{TAG})(?:\s+release)?\b", re.I)),
    ("since_date", re.compile(r"\bsince\s+(?P<date>\d{4}-\d{2}-\d{2})\b", re.I)),
    ("since_yesterday", re.compile(r"\bsince\s+yesterday\b", re.I)),
    ("yesterday", re.compile(r"\byesterday\b", re.I)),
    ("today", re.compile(r"\b(?:today|since\s+this\s+morning)\b", re.I)),
    ("last_n", re.compile(r"\b(?:in\s+)?the\s+(?:last|past)\s+(?P<n>\d+)\s+(?P<unit>days?|weeks?|months?)\b", re.I)),
    ("this_week", re.compile(r"\bthis\s+week\b", re.I)),
    ("last_week", re.compile(r"\b(?:in\s+)?(?:the\s+)?(?:last|past)\s+week\b", re.I)),
    ("this_month", re.compile(r"\bthis\s+month\b", re.I)),
    ("last_month", re.compile(r"\b(?:in\s+)?(?:the\s+)?(?:last|past)\s+month\b", re.I)),
    ("since_month", re.compile(rf"\bsince\s+{MONTH}(?:\s+(?P<year>\d{{4}}))?\b", re.I)),
    ("in_month", re.compile(rf"\b(?:in|during)\s+{MONTH}(?:\s+(?P<year>\d{{4}}))?\b", re.I)),
    ("in_year", re.compile(r"\b(?:in|during)\s+(?P<year>(?:19|20)\d{2})\b", re.I)),
]


@dataclass(frozen=True)
class Ask:
    """The window words of a question, not yet dated: which form, its match and the text without it."""

    form: str
    match: re.Match
    rest: str

    @property
    def relative(self) -> bool:
        """Read against a moment (now, or the history's last date); a tag or a full date is not."""
        has_year = bool(self.match.groupdict().get("year"))
        return self.form not in ("tag", "since_date", "in_year") and not has_year


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    label: str  # "last week (2026-04-02 to 2026-04-09)"


def find_window(text: str) -> Ask | None:
    for form, pattern in PATTERNS:
        if found := pattern.search(text):
            return Ask(form, found, (text[: found.start()] + " " + text[found.end() :]).strip())
    return None


def _stamp(day: date) -> float:
    return datetime(day.year, day.month, day.day).timestamp()


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _next_month(day: date) -> date:
    return date(day.year + (day.month == 12), day.month % 12 + 1, 1)


def _month_number(word: str) -> int:
    return next(i + 1 for i, name in enumerate(MONTHS) if name.startswith(word.casefold()[:3]))


def _named_month(ask: Ask, today: date) -> date:
    month = _month_number(ask.match.group(1))
    if ask.match.group("year"):
        return date(int(ask.match.group("year")), month, 1)
    year = today.year if month <= today.month else today.year - 1
    return date(year, month, 1)


def _days(start: date, end: date | None, label: str) -> Window:
    if end is None:
        dates = f"from {start}"
    else:
        last = end - timedelta(days=1)
        dates = f"{start}" if last == start else f"{start} to {last}"
    return Window(_stamp(start), OPEN_END if end is None else _stamp(end), f"{label} ({dates})")


def resolve(ask: Ask, reference: float, tag_date: Callable[[str], float | None]) -> Window | None:
    """The dates ``ask`` means, read against ``reference``; None for a tag no store knows."""
    today = datetime.fromtimestamp(reference).date()
    said = ask.match.group(0).strip()
    form = ask.form
    if form == "tag":
        stamp = tag_date(ask.match.group("tag"))
        if stamp is None:
            return None
        tagged = datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")
        return Window(stamp + 0.5, OPEN_END, f"{said} (after the tag, {tagged})")
    if form == "since_date":
        return _days(date.fromisoformat(ask.match.group("date")), None, said)
    if form in ("today", "yesterday", "since_yesterday"):
        start = today - timedelta(days=0 if form == "today" else 1)
        return _days(start, None if form == "since_yesterday" else start + timedelta(days=1), said)
    if form in ("last_week", "last_n"):
        n = 7 if form == "last_week" else int(ask.match.group("n")) * UNITS[ask.match.group("unit").casefold()]
        return _days(today - timedelta(days=n - 1), None, said)
    if form == "this_week":
        return _days(today - timedelta(days=today.weekday()), None, said)
    if form == "this_month":
        return _days(_month_start(today), None, said)
    if form == "last_month":
        start = _month_start(_month_start(today) - timedelta(days=1))
        return _days(start, _next_month(start), said)
    if form == "since_month":
        return _days(_named_month(ask, today), None, said)
    if form == "in_month":
        start = _named_month(ask, today)
        return _days(start, _next_month(start), said)
    year = int(ask.match.group("year"))
    return _days(date(year, 1, 1), date(year + 1, 1, 1), said)


def inside(candidates: list[Candidate], window: Window | None) -> list[Candidate]:
    """Observations dated outside the window left out; every other kind of memory kept."""
    if window is None:
        return candidates
    return [
        c
        for c in candidates
        if c.memory.kind != "observation" or window.start <= (c.memory.created_at or 0.0) < window.end
    ]
