"""The small pieces of text every front end shows the same way: an age, a count, the marks of a hit,
the explanation of a score. They read the JSON forms (doc/json.md), so the command line's thin
client renders a warm service's answer with them; importing this module imports nothing (``re``, which
the command line's warm path does without, only where a snippet's terms are matched)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

DAY = 86_400.0
UNKNOWN_AGE = "unknown"

# Words a question is made of that say nothing about what it is about: never matched in a snippet.
STOP_WORDS = frozenset(
    "a an and are as at be by can did do does for from had has have how i in is it its me my of on or our "
    "so that the their then there these this to was we were what when where which who why will with you "
    "your about into after before any all not no yes use used using".split()
)
# A query term: a run of letters, digits and _ . - / : (an identifier, a flag, a path) at least 2 long.
_TERM = r"[\w][\w.\-/:]*[\w]|\w{2,}"
_SUFFIXES = ("ing", "ed", "es", "s")


def age(seconds: float) -> str:
    """How long ago, in one short word: "now", "5h", "3d", "4mo", "2y"; "unknown" for a date that is
    no number (NaN or infinite, written into a store by hand: NaN read "nany")."""
    if not abs(seconds) < float("inf"):
        return UNKNOWN_AGE
    days = seconds / DAY
    if days < 1:
        hours = seconds / 3600
        return f"{hours:.0f}h" if hours >= 1 else "now"
    if days < 60:
        return f"{days:.0f}d"
    if days < 730:
        return f"{days / 30:.0f}mo"
    return f"{days / 365:.0f}y"


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``1 memory``, ``2 memories``, ``0 files read``: a count with its noun agreeing."""
    many = plural or (
        singular[:-1] + "ies" if singular.endswith("y") and singular[-2:-1] not in "aeiou" else singular + "s"
    )
    return f"{count:,} {singular if count == 1 else many}"


def message_line(message: object) -> str:
    """A message fit for one notification line (an editor's, an MCP error's)."""
    return " ".join(str(message).split()) or "unknown error"


def ref(memory_id: int | str) -> str:
    """A memory as a person names it: ``#12`` for a local memory, ``#t12`` for a team one."""
    return f"#{memory_id}"


def superseded_mark(data: dict) -> str:
    """``superseded by #t8`` for a memory (or hit) that was replaced, "" for a current one."""
    new = data.get("superseded_by")
    return f"superseded by {ref(new)}" if new is not None else ""


def store_mark(data: dict) -> str:
    """``team, by alice`` for a team memory (its author, when known), "" for one of this machine's."""
    if data.get("store") != "team":
        return ""
    return f"team, by {data['author']}" if data.get("author") else "team"


def query_terms(query: str) -> list[str]:
    """The words of a query a snippet looks for, lower-cased, in order, without the question words."""
    import re

    terms = []
    for found in re.findall(_TERM, query.lower()):
        term = found.strip(".-/:")
        if len(term) >= 2 and term not in STOP_WORDS and term not in terms:
            terms.append(term)
    return terms


def stem(term: str) -> str:
    """A term without a plain English ending (``changed`` -> ``chang``), so forms of a word meet."""
    if not term.isalpha():
        return term
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[: -len(suffix)]
    return term


def term_pattern(terms: list[str]) -> re.Pattern | None:
    """A case-blind pattern finding any of ``terms`` (or a form of it) as a whole word."""
    import re

    if not terms:
        return None
    parts = sorted({re.escape(stem(t)) for t in terms}, key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(parts) + r")[\w]*", re.IGNORECASE)


# -- the explanation of a score --------------------------------------------------------------

FACTOR_LABELS = {"rare_token": "rare token"}


def _num(value) -> str:
    return "absent" if value is None else f"{value:.3f}"


def code_weighting(trace: dict) -> str:
    """How the fusion weighed a chunk of source code, or "" when it weighed it like every chunk."""
    weight = trace.get("code_vector_weight")
    if weight is None:
        return ""
    return f" (source code: vector x{weight:.2f} + keyword x{1 - weight:.2f})"


def keyword_scale(trace: dict) -> str:
    """``scaled among curated text`` when the keyword score was scaled within its own kind (v3 with
    curated text's own word statistics), "" when every candidate shared one scale."""
    among = trace.get("keyword_among")
    return f"scaled among {among}" if among else ""


# The trace fields the lines above show by name; any other the ranking adds is shown as it is.
_SHOWN_FIELDS = frozenset(
    {"vector", "keyword", "keyword_among", "bm25", "fused", "code_vector_weight", "factors", "product"}
)


def _other_fields(trace: dict) -> str:
    extra = []
    for name, value in trace.items():
        if name in _SHOWN_FIELDS or value is None or isinstance(value, (dict, list)):
            continue
        shown = f"{value:.3f}" if isinstance(value, float) else " ".join(str(value).split())
        extra.append(f"  {name.replace('_', ' ')} {shown}")
    return "".join(extra)


def explain_lines(hit: dict) -> list[str]:
    """A hit's score as it was made: the legs, the fused score, every multiplier applied (whatever its
    name: a new factor shows with its own name) and the product, which is the score."""
    trace = hit["explain"]
    store = f"{hit['store']} store  " if hit.get("store") else ""
    scale = keyword_scale(trace)
    lines = [
        f"{store}vector {_num(trace.get('vector'))}  keyword {_num(trace.get('keyword'))}{f' ({scale})' if scale else ''}"
        f"  fused {_num(trace.get('fused'))}{code_weighting(trace)}{_other_fields(trace)}"
    ]
    factors = trace.get("factors") or []
    for factor in factors:
        detail = f" ({' '.join(str(factor['detail']).split())})" if factor.get("detail") else ""
        label = FACTOR_LABELS.get(factor["name"], str(factor["name"]).replace("_", " "))
        lines.append(f"x {factor['value']:.3f} {label}{detail}")
    if factors:
        product = " x ".join([f"{trace['fused']:.3f}"] + [f"{f['value']:.3f}" for f in factors])
        lines.append(f"= {product} = {hit['score']:.3f}")
    else:
        lines.append(f"= {hit['score']:.3f} (no multiplier applied)")
    return lines
