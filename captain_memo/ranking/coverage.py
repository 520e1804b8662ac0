"""What kind of text answers the question, and the query's rare words held together.

Three stages after the boosts (ranking/pipeline.py), each a multiplier in the trace:

- ``rare_words_floor``: when the query is only rare words (two or more plain words of four letters
  or more, not stopwords), a chunk holding all of them is lifted just above the best chunk holding
  none of them.
  Min-max gives the pool's lowest vector similarity 0, so a long note holding "Bigwritemarker" and
  "unicorn" in one of its chunks ranked 4th at 0.351, below notes holding neither word (keyword
  0.000) that only read closer. A chunk is never below those for its vector score alone.
- ``kind_prior``: on a question that is not about a change, an observation (a commit) is weighed
  ``kind_prior`` against curated text. Commit messages are short and dense with the words of a
  change, and many: in a store of Flask's docs beside its 3,800 commits they crowded out the doc
  section answering a how-to question. A question about a change (temporal intent, or a change
  word: "which commit", "when was X added") keeps them at full weight.
- ``heading_words``: on a question that is not about a change, a section of an indexed file whose
  heading path holds a rare word of the query is weighed ``heading_weight``.
"""

from __future__ import annotations

import re

from captain_memo.config import RankConfig
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.query import QueryShape, strip_token

# Two or more: one word held says little (a commit "started" for "get started").
MIN_RARE_WORDS = 2
# Just above: the lifted chunk ranks first among equals without a visible jump in its score.
ABOVE = 1.0 + 1e-6
# Words that ask about a change: the kind prior leaves such a question's commits at full weight.
CHANGE_QUESTION = re.compile(
    r"\b(commits?|changelog|when\s+(?:was|were|did)|added|introduced|removed|dropped|deprecated|renamed|fixed"
    r"|switched|changed|fix(?:es)?\s+for)\b",
    re.IGNORECASE,
)


def _holds(text: str, word: str) -> bool:
    return re.search(r"\b" + re.escape(word) + r"\b", text, re.IGNORECASE) is not None


def keywords_only(shape: QueryShape) -> bool:
    """Whether the query is only rare words ("Bigwritemarker unicorn"), two or more: a set of
    keywords, not a sentence. In a sentence ("Add X to top level import") holding every word of
    4+ letters says little: measured on pytest_changelog's pull-request titles, lifting such chunks
    cost 0.005 nDCG@10 (doc/eval.md)."""
    words = set(shape.rare_words)
    tokens = [t.lower() for t in (strip_token(raw) for raw in shape.text.split()) if any(ch.isalnum() for ch in t)]
    return len(words) >= MIN_RARE_WORDS and all(token in words for token in tokens)


def rare_words_floor(candidates: list[Candidate], shape: QueryShape, cfg: RankConfig) -> list[Candidate]:
    words = shape.rare_words
    if not cfg.rare_words_floor or not keywords_only(shape):
        return candidates
    held = {c.key: sum(_holds(c.text, w) for w in words) for c in candidates}
    best_none = max((c.score for c in candidates if held[c.key] == 0), default=None)
    if best_none is None or best_none <= 0:
        return candidates
    out = []
    for c in candidates:
        if held[c.key] == len(words) and 0 < c.score < best_none:
            detail = f"holds {', '.join(words)}: not below a chunk holding none of them"
            c = c.times("rare_words", best_none * ABOVE / c.score, detail)
        out.append(c)
    return out


def section_heading(c: Candidate) -> str:
    """A file section's heading path: its chunk's first line when that extends the section's title
    (a part titled by what it is about, sources/markdown.py), else the title."""
    first = c.text.split("\n", 1)[0]
    return first if first.startswith(c.memory.title) else c.memory.title


def heading_words(candidates: list[Candidate], shape: QueryShape, cfg: RankConfig) -> list[Candidate]:
    """A section of an indexed file whose heading path holds a rare word of the query: x weight.

    A heading says what a whole section is about, where a word in its text may be in passing:
    "Tell Flask it is Behind a Proxy" answers "behind nginx my app sees the wrong client IP", and
    the sections on binding a server externally only mention proxies. Only files' sections have
    headings; a saved note's title is often its first line, and a commit's its subject. A question
    about a change is left to the changes: on Flask's change questions a heading weight of 1.1 put
    doc sections over the answering commit (nDCG@10 0.783 -> 0.760)."""
    if cfg.heading_weight == 1.0 or not shape.rare_words or asks_about_change(shape):
        return candidates
    out = []
    for c in candidates:
        if c.memory.source.origin == "file" and c.memory.title:
            held = [w for w in shape.rare_words if _holds(section_heading(c), w)]
            if held:
                c = c.times("heading", cfg.heading_weight, ", ".join(held))
        out.append(c)
    return out


def asks_about_change(shape: QueryShape) -> bool:
    return shape.temporal or CHANGE_QUESTION.search(shape.text) is not None


def kind_prior(candidates: list[Candidate], shape: QueryShape, cfg: RankConfig) -> list[Candidate]:
    if cfg.kind_prior >= 1.0 or asks_about_change(shape):
        return candidates
    detail = "an observation (a commit, a capture), and the question is not about a change"
    return [c.times("kind", cfg.kind_prior, detail) if c.memory.kind == "observation" else c for c in candidates]
