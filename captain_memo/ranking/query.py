"""What a query looks like: code-shaped tokens, plain rare words, temporal intent, and the
safe FTS5 expression built from it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

TRAILING = ",;:!?)]}'\"`."
LEADING = "([{'\"`"
# A lower-case letter or digit followed by an upper-case one inside a token: useEffect, getX.
CAMEL_HUMP = re.compile(r"[a-z0-9][A-Z]")
TEMPORAL = re.compile(r"\b(last|latest|newest|current|most\s+recent|recent|up[\s-]to[\s-]date|now)\b", re.IGNORECASE)
# With ``temporal_word_forms`` (v3), the adverbs too: "what changed most recently in capture".
TEMPORAL_FORMS = re.compile(r"\b(recently|currently|lately)\b", re.IGNORECASE)
# A command-line option: --lf, -k, --tb=short, -Wall, --no-header. A letter must follow the dashes:
# "-5", "--" and a dash standing for a bullet are not options.
FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*(?:=\S*)?")
# What continues a name in a text: a letter, digit or '_' ("get_price_total" does not hold
# get_price), and for an option '-' too ("make-kit" does not hold -k, nor "--lf-foo" --lf). '.', '/'
# and the rest end a name, so a dotted or slashed path holds each of its names (self.get_price,
# tmp_path_factory.mktemp), and "ExceptionGroup-related" holds ExceptionGroup.
NAME_CHAR = re.compile(r"\w")
OPTION_CHAR = re.compile(r"[\w-]")
# A one-letter option takes its value attached (-rA, -vv, -Werror, -k"expr"): only its start is a
# boundary. Measured on pytest_changelog, which says "-ra" and "-rA" for a query's "-r".
SHORT_OPTION = re.compile(r"-[A-Za-z]")
# unicode61 splits on everything but letters and digits; so do we, to build terms it will match.
WORD = re.compile(r"[^\W_]+")
MAX_MATCH_TERMS = 64
UNSENDABLE = re.compile("[\x00\ud800-\udfff]")
# ASCII characters other than letters and digits: unicode61 always splits on them.
ASCII_SEPARATORS = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")

STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing done down during each else even ever every few for from further get got
had has have having he her here hers herself him himself his how however i if in into is it its itself just like
make many may me might more most much must my myself need no nor not now of off often on once only or other our
ours ourselves out over own please same shall she should so some such than that the their theirs them themselves
then there these they this those through to too under until up upon us use used using very want was we were what
when where which while who whom why will with within without would yet you your yours yourself yourselves
does doesn don isn aren wasn weren won wouldn shouldn couldn didn hasn haven hadn cant cannot
""".split()
)


# Words that ask about time, not about a topic: left out of a temporal query's topic.
TIME_WORDS = frozenset(
    """
last latest newest current currently recent recently lately most now today yesterday new newer
change changes changed changing happened
""".split()
)
# Never rare tokens: every dated observation and every changelog holds time and release words, so
# boosting them favours whatever is most verbose about dates, not what the query is about.
TEMPORAL_WORDS = TIME_WORDS | frozenset("release releases released releasing version versions".split())


def strip_token(token: str) -> str:
    """A query token without surrounding punctuation; a sentence-final '.' goes, an internal one stays."""
    return token.rstrip(TRAILING).lstrip(LEADING).rstrip(TRAILING)


def is_code_shaped(token: str) -> bool:
    """Contains '_', '.' or '/', or an internal lower-to-upper camelCase hump, or is a command-line
    option (``--lf``, ``-k``, ``--tb=short``).

    ALL-CAPS words (HTTP, TODO) and plain words never count. An option read as a plain word was
    its letters alone: "what does --lf do" ranked first a commit about LF line endings, with
    keyword score 1.0; as a name it is searched whole, and a chunk holding "--lf" is boosted.
    """
    if not token or not any(ch.isalnum() for ch in token):
        return False
    if "_" in token or "." in token or "/" in token or FLAG.fullmatch(token):
        return True
    return CAMEL_HUMP.search(token) is not None


@functools.lru_cache(maxsize=256)
def name_pattern(name: str) -> re.Pattern[str]:
    """Where ``name`` (a code-shaped token, an option) stands whole in a text, case-sensitively: no
    name character (``NAME_CHAR``, ``OPTION_CHAR`` for an option) just before or after it, where its
    own first or last one is. A camelCase name may take a plural "s" in prose ("``ExceptionGroups``"
    for ExceptionGroup; a snake_case one may not: iter_markers is another function than
    iter_marker); a one-letter option, its attached value."""
    option = name.startswith("-")
    joined = OPTION_CHAR if option else NAME_CHAR
    before = rf"(?<!{joined.pattern})" if joined.match(name[:1]) else ""
    if SHORT_OPTION.fullmatch(name) or not joined.match(name[-1:]):
        after = ""
    elif name.isalnum() and name[-1].isalpha():
        after = rf"s?(?!{joined.pattern})"
    else:
        after = rf"(?!{joined.pattern})"
    return re.compile(before + re.escape(name) + after)


def holds_name(text: str, name: str) -> bool:
    return name_pattern(name).search(text) is not None


@dataclass(frozen=True)
class QueryShape:
    text: str
    identifiers: tuple[str, ...]  # code-shaped tokens, repeats kept (each counts as a match)
    rare_words: tuple[str, ...]  # plain words of min_length+ characters, not stopwords, lower-cased
    temporal: bool
    # Every token is code-shaped ("tmp_path_factory", "PYTEST_ADDOPTS"): the query is a name.
    identifier_only: bool = False

    @property
    def has_identifier(self) -> bool:
        return bool(self.identifiers)


def analyse(text: str, rare_min_length: int = 4, word_forms: bool = False) -> QueryShape:
    identifiers, rare, plain = [], [], 0
    for raw in text.split():
        token = strip_token(raw)
        if is_code_shaped(token):
            identifiers.append(token)
            continue
        plain += any(ch.isalnum() for ch in token)
        if (
            len(token) >= rare_min_length
            and token.isalpha()
            and token.lower() not in STOPWORDS
            and token.lower() not in TEMPORAL_WORDS
        ):
            rare.append(token.lower())
    temporal = bool(TEMPORAL.search(text) or (word_forms and TEMPORAL_FORMS.search(text)))
    only = bool(identifiers) and not plain
    return QueryShape(text, tuple(identifiers), tuple(dict.fromkeys(rare)), temporal, only)


def fts_match(text: str, identifier_parts: bool = False) -> str | None:
    """An FTS5 MATCH expression that cannot be a syntax error, or None when nothing is searchable.

    Every term is a double-quoted string, so AND/OR/NOT/NEAR, '*', '^', ':' and column filters are
    literal text. A code-shaped token becomes a phrase of its parts, which is how unicode61 indexed
    it: ``get_effective_contract_price`` finds chunks containing that identifier.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for raw in text.split():
        parts = [part for part in ASCII_SEPARATORS.split(raw) if WORD.search(part)]
        if not parts:
            continue
        # The token itself (a phrase when it has parts); a token that is not code-shaped also gives
        # each part on its own: a phrase alone made "fix(parametrize):" or "command-line" miss
        # chunks that say "parametrize" or "command line" apart. An identifier stays one phrase, so
        # it finds only chunks that contain it, unless ``identifier_parts`` (v3, which scores every
        # candidate on both legs) asks for its parts too. Parts are cut at ASCII separators only,
        # so FTS5 still tokenises everything else as it tokenised the chunks.
        split = len(parts) > 1 and (identifier_parts or not is_code_shaped(strip_token(raw)))
        candidates = [(raw, " ".join(parts))] + ([(part, part) for part in parts] if split else [])
        for term, key in candidates:
            if key.casefold() in seen:
                continue
            seen.add(key.casefold())
            # FTS5 tokenises the quoted token itself, as it tokenised the chunks. Splitting it here
            # instead missed "İ0" (Python lower-cases İ to i + a combining dot) and decomposed accents
            # ("e\u0301te"), found by tests/test_hostile_input.py. Inside the quotes only '"' needs
            # doubling; a NUL would end the string early, and a lone surrogate cannot be sent.
            terms.append('"' + UNSENDABLE.sub(" ", term).replace('"', '""') + '"')
        if len(terms) >= MAX_MATCH_TERMS:
            break
    return " OR ".join(terms[:MAX_MATCH_TERMS]) if terms else None


def options_in(text: str) -> tuple[str, ...]:
    """The command-line options of a query, as written (``--lf``, ``--tb=short``)."""
    return tuple(dict.fromkeys(t for raw in text.split() if FLAG.fullmatch(t := strip_token(raw))))


def keyword_hit_is_the_option(query: str, text: str) -> bool:
    """Whether a keyword hit for a query naming options holds what the query asks for.

    The full-text index keeps only an option's letters ("--lf" is the word "lf"), so the keyword
    leg matched a commit about LF line endings for "what does --lf do", and scored it 1.0. A hit
    counts when its chunk holds one of the options whole as written (``--maxfail`` for
    ``--maxfail=1`` too; not ``-k`` inside "make-kit"), or a word of the query beyond its options
    and stopwords; true of every hit for a query without options.
    """
    options = options_in(query)
    if not options or any(holds_name(text, option.split("=", 1)[0]) for option in options):
        return True
    words = {
        w.casefold()
        for raw in query.split()
        if not FLAG.fullmatch(strip_token(raw))
        for w in WORD.findall(raw)
        if w.casefold() not in STOPWORDS
    }
    return bool(words & {w.casefold() for w in WORD.findall(text)})


def is_topic_word(word: str) -> bool:
    return word.casefold() not in STOPWORDS and word.casefold() not in TIME_WORDS


def topic(text: str) -> str:
    """What a temporal query is about: its tokens without stopwords and time words ("what changed
    most recently in capture" is about "capture"); an identifier stays whole."""
    return " ".join(
        raw
        for raw in text.split()
        if (token := strip_token(raw)) and (is_code_shaped(token) or (WORD.fullmatch(token) and is_topic_word(token)))
    )


def topic_match(text: str) -> tuple[str | None, str | None]:
    """FTS5 expressions for a temporal query's topic: (every topic word, any topic word)."""
    words = list(
        dict.fromkeys(
            part.casefold()
            for raw in topic(text).split()
            for part in ASCII_SEPARATORS.split(raw)
            if WORD.fullmatch(part) and is_topic_word(part)
        )
    )
    quoted = ['"' + UNSENDABLE.sub(" ", word).replace('"', '""') + '"' for word in words[:MAX_MATCH_TERMS]]
    if not quoted:
        return None, None
    return " AND ".join(quoted), " OR ".join(quoted)


# '.' and '/' join names (a module and its function, a path, alternatives), each a name on its own;
# '_' and a camelCase hump join words into one name, whose parts alone name nothing.
NAME_JOINS = re.compile(r"[./]+")


def single_names(token: str) -> tuple[str, ...]:
    """The one-piece names of a code-shaped token: its pieces between '.' and '/' that are names made
    of words (``app.run_forever`` -> ``run_forever``). Options have their own rule (options_in)."""
    if FLAG.fullmatch(token):
        return ()
    pieces = (strip_token(piece) for piece in NAME_JOINS.split(token))
    return tuple(p for p in pieces if p and ("_" in p.strip("_") or CAMEL_HUMP.search(p)))


def unheld_names(identifiers: tuple[str, ...], texts) -> tuple[str, ...]:
    """The one-piece names of the query that no text holds whole.

    The keyword query searches a name's parts too (``keyword_identifier_parts``), so a lookup of
    ``_get_multicapture`` found "Get Started" by "get" alone and scored it 1.0: a part of a name
    that nothing holds is no evidence."""
    texts = list(texts)
    names = dict.fromkeys(name for token in identifiers for name in single_names(token))
    return tuple(name for name in names if not any(holds_name(text, name) for text in texts))


def without_names(text: str, names: tuple[str, ...]) -> str:
    """The query with each of ``names`` taken out where it stands whole."""
    for name in names:
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", " ", text)
    return text


def unnamed_notice(names: tuple[str, ...]) -> str:
    """What a recall says when the query names what no memory holds; its hits are closest by meaning."""
    listed = ", ".join(f"`{name}`" for name in names)
    return f"no memory names {listed}; closest by meaning:"
