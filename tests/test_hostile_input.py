"""Hostile input: generated queries, texts, titles, paths and branch names never break anything.

Property tests (hypothesis) over the real parts: the FTS5 expression builder against a real FTS5
table, the ranking pipeline (``rank_pool`` and ``cut``) over generated candidate pools, and the
engine storing into a real SQLite store. What was saved reads back byte-equal, or is refused with
an InputError saying which field and why. The example counts below are the figures quoted in
doc/reliability.md.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from captain_memo.base.validation import MAX_BODY_CHARS, MAX_FIELD_CHARS, MAX_TITLE_CHARS, unix_newlines
from captain_memo.config import PROFILES
from captain_memo.errors import InputError
from captain_memo.ranking.candidates import Candidate
from captain_memo.ranking.fusion import min_max
from captain_memo.ranking.pipeline import RankRequest, cut, rank_pool
from captain_memo.ranking.query import analyse, fts_match
from captain_memo.records import KINDS, Memory, NewMemory, Source

QUERY_EXAMPLES = 600
MATCH_SELF_EXAMPLES = 300
POOL_EXAMPLES = 300
STORE_EXAMPLES = 250
RECALL_EXAMPLES = 250
FAST = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

ATOMS = [
    # quotes and FTS5 syntax
    '"',
    "'",
    "`",
    "(",
    ")",
    "*",
    "^",
    ":",
    "-",
    "+",
    "{",
    "}",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(a b, 2)",
    "text:",
    "{text}: x",
    "chunks_fts:",
    '"unbalanced',
    "NEAR/3",
    "a*",
    "^start",
    # SQL fragments
    "'; DROP TABLE memories; --",
    "' OR '1'='1",
    "1; DELETE FROM chunks",
    "UNION SELECT * FROM meta",
    "/*",
    "*/",
    "%",
    "_",
    "\\",
    "?",
    "?1",
    ":name",
    "@p",
    "$x",
    # control characters, NUL, lone surrogates, direction marks, odd spaces
    "\x00",
    "\x01",
    "\x1b[31m",
    "\t",
    "\n",
    "\r\n",
    "\ud800",
    "\udfff",
    "\udcff",
    "\u200f",
    "\u200e",
    "\u202e",
    "\u2066",
    "\ufeff",
    "\u00a0",
    "\u2028",
    "\u3000",
    # emoji, CJK, other scripts, combining marks
    "🙂",
    "👩‍💻",
    "🇳🇱",
    "🔥" * 3,
    "価格の丸め",
    "契約",
    "记忆",
    "계약",
    "Привет",
    "שלום",
    "مرحبا",
    "e\u0301",
    "İstanbul",
    "ﬁ",
    "Ⅻ",
    "²",
    "𝔘𝔫𝔦",
    # code-shaped tokens and plain words the ranker reacts to
    "get_effective_contract_price",
    "billing.money.Money",
    "api/routes/quotes.py",
    "formatMoney",
    "__init__",
    "latest",
    "recent",
    "invoice",
    "rounding",
    "deploy",
]
hostile = st.lists(st.one_of(st.sampled_from(ATOMS), st.text(max_size=12)), max_size=10).map(" ".join)
MATCH_SHAPE = re.compile(r'^"(?:[^"]|"")+"(?: OR "(?:[^"]|"")+")*$')  # quoted terms, quotes doubled


@pytest.fixture(scope="module")
def store_engine(tmp_path_factory):
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    engine = Engine(Store(tmp_path_factory.mktemp("hostile") / "memo.db"), HashEmbedder())
    engine.remember_many(
        [
            NewMemory(
                body=f"{' '.join(ATOMS[i : i + 6])} note {i}".replace("\x00", "")
                .encode("utf-8", "ignore")
                .decode("utf-8"),
                project="p" if i % 2 else None,
            )
            for i in range(0, len(ATOMS), 3)
        ]
    )
    yield engine
    engine.close()


# -- the FTS5 expression ------------------------------------------------------------------------


@settings(max_examples=QUERY_EXAMPLES, **FAST)
@given(query=hostile)
@example(query="NOT " * 2500)
@example(query="(" * 10_000)
@example(query='"' * 999)
def test_the_match_expression_never_fails_in_fts5(store_engine, query):
    from captain_memo.store.search import Scope, keyword_leg, keyword_scores

    match = fts_match(query)
    if match is None:
        assert not re.search(r"[^\W_]", query.lower()), "searchable words were dropped"
        return
    assert MATCH_SHAPE.match(match), match  # only quoted terms joined by OR: no operator survives
    store = store_engine.store
    for scope in (Scope(all_projects=True), Scope("p"), Scope(None)):
        keyword_leg(store, match, scope, 25)
    keyword_scores(store, match, [1, 2, 3])


FTS_WORDS = st.characters(categories=("Lu", "Ll", "Lo", "Nd", "Po", "Ps", "Pe", "Pd", "Zs", "So", "Sm"))


@settings(max_examples=MATCH_SELF_EXAMPLES, **FAST)
@given(text=st.text(alphabet=FTS_WORDS, min_size=1, max_size=80))
def test_a_text_searched_for_itself_is_found(tmp_path_factory, text):
    """The expression is made of the text's own words, tokenised as FTS5 indexed them."""
    match = fts_match(text)
    if match is None:
        return
    conn = _scratch_fts()
    rowid = conn.execute("INSERT INTO docs (text) VALUES (?)", (text,)).lastrowid
    found = {r[0] for r in conn.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (match,))}
    assert rowid in found, (text, match)


_SCRATCH = {}


def _scratch_fts():
    """An in-memory FTS5 table declared exactly as the store's chunks_fts."""
    if "conn" not in _SCRATCH:
        import sqlean

        conn = sqlean.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize = 'porter unicode61')")
        _SCRATCH["conn"] = conn
    return _SCRATCH["conn"]


# -- ranking invariants -------------------------------------------------------------------------

DAY = 86400.0
NOW = 1_795_000_000.0
TOKENS = [
    "get_effective_contract_price",
    "billing.money.Money",
    "formatMoney",
    "api/routes/quotes.py",
    "invoice",
    "rounding",
    "latest",
    "recent",
    "deploy",
    "the",
    "of",
    "价格",
    "🙂",
    '"',
    "NOT",
]
words = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8).map(" ".join)
unit_float = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def memories(draw, mid: int) -> Memory:
    created = NOW - draw(st.floats(-30.0, 3000.0)) * DAY  # includes dates in the future
    surfaced = draw(st.none() | st.floats(-1.0, 3000.0).map(lambda days: NOW - days * DAY))
    return Memory(
        id=mid,
        kind=draw(st.sampled_from(KINDS)),
        title="",
        body="",
        created_at=created,
        updated_at=created,
        project=None,
        branch=draw(st.sampled_from([None, "main", "feature/x"])),
        source=Source(),
        content_hash=str(mid),
        superseded_by=draw(st.none() | st.integers(1, 50)),
        stability=draw(st.floats(0.0, 400.0)),
        last_surfaced=surfaced,
        opened_in_full=draw(st.booleans()),
    )


@st.composite
def pools(draw) -> list[Candidate]:
    """Candidates as the engine builds them: leg scores, keyword min-max, ranks within each leg."""
    mems = [draw(memories(mid)) for mid in range(1, draw(st.integers(1, 12)) + 1)]
    raw = []
    for chunk_id in range(1, draw(st.integers(1, 30)) + 1):
        legs = draw(st.sampled_from(["both", "vector", "keyword"]))
        vector = draw(unit_float) if legs != "keyword" else None
        bm25 = draw(st.floats(0.0, 40.0)) if legs != "vector" else None
        raw.append((chunk_id, draw(st.sampled_from(mems)), draw(words), vector, bm25))
    keyword = min_max({cid: bm25 for cid, _, _, _, bm25 in raw if bm25 is not None})
    vrank = {
        cid: i + 1 for i, (cid, *_rest) in enumerate(sorted((r for r in raw if r[3] is not None), key=lambda r: -r[3]))
    }
    krank = {
        cid: i + 1 for i, (cid, *_rest) in enumerate(sorted((r for r in raw if r[4] is not None), key=lambda r: -r[4]))
    }
    return [
        Candidate(
            chunk_id=cid,
            memory=m,
            text=text,
            vector=vector,
            keyword=keyword.get(cid),
            bm25=bm25,
            vector_rank=vrank.get(cid),
            keyword_rank=krank.get(cid),
        )
        for cid, m, text, vector, bm25 in raw
    ]


@st.composite
def configs(draw):
    base = draw(st.sampled_from(list(PROFILES.values())))
    return replace(
        base,
        identifier_boost_step=draw(st.floats(0.0, 2.0)),
        identifier_boost_cap=draw(st.floats(0.5, 5.0)),
        temporal_floor=draw(unit_float),
        temporal_half_life_days=draw(st.floats(0.01, 400.0)),
        tide_age_weight=draw(st.floats(0.0, 5.0)),
        supersede_penalty=draw(unit_float),
        branch_weight=draw(st.floats(1.0, 2.0)),
        rare_token_weight=draw(st.floats(1.0, 2.0)),
        vector_weight=draw(unit_float),
        keyword_weight=draw(unit_float),
    )


@pytest.mark.slow  # ~10 s: building 300 pools of up to 30 candidates is most of it
@settings(max_examples=POOL_EXAMPLES, **FAST)
@given(
    pool=pools(),
    cfg=configs(),
    query=words,
    branch=st.sampled_from([None, "main", "feature/x"]),
    limit=st.integers(1, 15),
)
def test_ranking_invariants_hold_for_any_pool(pool, cfg, query, branch, limit):
    assert cfg.tide_floor == 0.30  # every profile's Tide floor
    ranked = rank_pool(pool, RankRequest(analyse(query, cfg.rare_token_min_length), branch, NOW, limit), cfg)

    assert sorted(c.chunk_id for c in ranked) == sorted(c.chunk_id for c in pool)  # nothing removed
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)
    for c in ranked:
        assert math.isfinite(c.score) and c.score >= 0.0, c
        assert math.isclose(c.fused * math.prod(f.value for f in c.factors), c.score, rel_tol=1e-9, abs_tol=1e-300)
        for f in c.factors:
            assert math.isfinite(f.value) and f.value >= 0.0, f
            if f.name == "identifier":
                # A query that is only names may lift a chunk holding them all to IDENTIFIER_ONLY_WEIGHT.
                assert f.value <= max(cfg.identifier_boost_cap, cfg.identifier_only_weight)
            elif f.name == "recency":
                assert cfg.temporal_floor <= f.value <= 1.0
            elif f.name == "tide":
                assert 0.30 <= f.value <= 1.0

    hits = cut(ranked, limit)
    assert len({h.memory.id for h in hits}) == len(hits) == min(limit, len({c.memory.id for c in pool}))
    best = {}
    for c in ranked:
        best.setdefault(c.memory.id, c.score)
    assert all(h.score == best[h.memory.id] for h in hits)  # each memory's best chunk


# -- storing hostile text -----------------------------------------------------------------------

field_text = st.lists(st.one_of(st.sampled_from(ATOMS), st.text(max_size=8)), max_size=6).map("".join)


def _refusals(fields: dict[str, str]) -> set[tuple[str, str]]:
    """Every (field, reason) the engine may name when refusing these fields."""
    out = set()
    for name, value in fields.items():
        if "\x00" in value:
            out.add((name, "NUL"))
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            out.add((name, "surrogate"))
    if not fields["text"].replace("\x00", "").strip():
        out.add(("text", "empty"))
    return out


@settings(max_examples=STORE_EXAMPLES, **FAST)
@given(
    body=field_text,
    title=field_text,
    project=field_text,
    branch=field_text,
    path=field_text,
    kind=st.sampled_from(KINDS),
)
@example(
    body="'; DROP TABLE memories; --",
    title='"',
    project="p\u202e",
    branch="feature/🙂",
    path="src/契約.py",
    kind="memory",
)
def test_hostile_fields_round_trip_byte_equal_or_are_refused_by_name(
    store_engine, body, title, project, branch, path, kind
):
    body, title = body.replace("<private>", ""), title.replace("<private>", "")  # private spans: tested below
    fields = {"text": body, "title": title, "project": project, "branch": branch, "file path": path}
    refusals = _refusals(fields)
    memory = NewMemory(
        body=body, kind=kind, title=title, project=project, branch=branch, source=Source(path=path, origin="editor")
    )
    try:
        memory_id = store_engine.remember(memory)
    except InputError as exc:
        message = str(exc)
        event("refused")
        assert refusals, f"refused valid input: {message}"
        assert any(
            message.startswith(name) and reason in message or reason == "empty" and "empty" in message
            for name, reason in refusals
        ), message
        return
    event("stored")
    assert not refusals, f"stored what should have been refused: {refusals}"
    stored = store_engine.store.get(memory_id)
    # Byte-equal but for line ends: CRLF is stored as LF (validation.unix_newlines).
    assert stored.body.encode() == unix_newlines(body).encode()
    assert stored.title.encode() == unix_newlines(title).strip().encode()
    assert (stored.project, stored.branch, stored.source.path) == (project, branch, path)
    assert stored.project.encode() == project.encode() and stored.branch.encode() == branch.encode()


@settings(max_examples=RECALL_EXAMPLES, **FAST)
@given(query=hostile)
def test_recall_answers_from_both_legs_or_refuses_the_query(store_engine, query):
    try:
        result = store_engine.recall(query, project="p", branch="main")
    except InputError as exc:
        event("refused")
        assert "\x00" in query or not query.strip() or "surrogate" in str(exc), exc
        return
    event("answered")
    assert not result.failures and set(result.legs) == {"vector", "keyword"}


def test_the_store_is_consistent_after_the_hostile_writes(store_engine):
    from reliability_support import agreement, assert_consistent

    for body in ATOMS:
        try:
            store_engine.remember(NewMemory(body=body * 3, title=body, branch=body, project=body))
        except InputError:
            assert "\x00" in body or re.search("[\ud800-\udfff]", body) or not body.strip()
    report = agreement(store_engine.store.path)
    assert_consistent(report)
    assert report["chunks"] == report["fts_rows"] == report["vectors"] and report["memories"] > 0


# -- sizes -------------------------------------------------------------------------------------


def test_a_one_megabyte_text_of_emoji_and_cjk_round_trips(engine):
    pattern = "契約価格 🙂 \u200f rounding \"quoted\" 'x' ; -- "
    body = (pattern * (MAX_BODY_CHARS // len(pattern) + 1))[:MAX_BODY_CHARS]
    memory_id = engine.remember(NewMemory(body=body, title="big"))
    assert engine.store.get(memory_id).body.encode() == body.encode()
    assert engine.recall("契約価格 rounding").hits[0].memory.id == memory_id


@pytest.mark.parametrize(
    "field, make, limit",
    [
        ("text", lambda n: NewMemory(body="x" * n), MAX_BODY_CHARS),
        ("title", lambda n: NewMemory(body="x", title="t" * n), MAX_TITLE_CHARS),
        ("project", lambda n: NewMemory(body="x", project="p" * n), MAX_FIELD_CHARS),
        ("branch", lambda n: NewMemory(body="x", branch="b" * n), MAX_FIELD_CHARS),
        ("file path", lambda n: NewMemory(body="x", source=Source(path="f" * n)), MAX_FIELD_CHARS),
    ],
)
def test_oversized_fields_are_refused_naming_the_limit(engine, field, make, limit):
    with pytest.raises(InputError, match=rf"^{field} is {limit + 1:,} characters; the limit is {limit:,}$"):
        engine.remember(make(limit + 1))
    assert engine.store.counts()["memories"] == 0
    engine.remember(make(limit))  # the limit itself is allowed
    assert engine.store.counts()["memories"] == 1


# -- private spans ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, stored",
    [
        ("deploy key <private>hunter2</private> rotated", "deploy key  rotated"),
        ("a <PRIVATE>multi\nline\nsecret</Private> b", "a  b"),
        ("x <private>1</private> y <private>2</private> z", "x  y  z"),
        ("kept <private>an opening tag never closed hides the rest", "kept "),
        ("public <private>A <private>B</private> C secret</private> end", "public  end"),
        ("public <private>A</private> B secret </private> end", "public  end"),
        ("x <private>1</private> y <private>2 <private>3</private> z", "x  y "),
        ("a secret</private> b </private> c", " c"),
    ],
)
def test_private_spans_are_never_stored_or_indexed(engine, body, stored):
    memory_id = engine.remember(NewMemory(body=body, title="t <private>title secret</private>"))
    memory = engine.store.get(memory_id)
    assert memory.body == stored and memory.title == "t"
    from captain_memo.store.search import Scope, keyword_leg

    texts = " ".join(c.text for c in engine.store.chunks_of(memory_id))
    for secret in ("hunter2", "secret", "never closed", "multi"):
        assert secret not in memory.body + texts
        assert keyword_leg(engine.store, fts_match(secret), Scope(all_projects=True), 25) == {}  # not indexed


def test_private_spans_in_given_chunks_are_removed(engine):
    memory_id = engine.remember(
        NewMemory(
            body="## Deploy\nthe token is <private>abc</private> rotated",
            chunks=("## Deploy\nthe token is <private>abc", "rotated</private> daily"),
        )
    )
    texts = [c.text for c in engine.store.chunks_of(memory_id)]
    assert texts == ["## Deploy\nthe token is ", " daily"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<private>", "</private>", "<PRIVATE>", "kept ", "\n"]), max_size=12))
def test_nothing_between_a_first_opening_tag_and_its_last_matching_close_is_kept(pieces):
    """Whatever the nesting or order of tags, no text inside an opened span survives (counting
    nested tags), no tag survives, and blanking line for line keeps every line break."""
    from captain_memo.base.validation import without_private

    marked = [piece if "private" in piece.lower() or piece != "kept " else f"k{i} " for i, piece in enumerate(pieces)]
    text = "".join(marked)
    kept = without_private(text)
    assert "private>" not in kept.lower()
    depth = 0
    for piece in marked:
        lowered = piece.lower()
        depth += (lowered == "<private>") - (lowered == "</private>" and depth > 0)
        if piece.startswith("k") and depth > 0:
            assert piece not in kept, (text, kept)
    assert without_private(text, keep_lines=True).count("\n") == text.count("\n")


def test_only_private_text_is_refused_as_empty(engine):
    with pytest.raises(InputError, match="empty"):
        engine.remember(NewMemory(body="<private>all of it</private>"))


# -- the command line -------------------------------------------------------------------------


def test_cli_refuses_undecodable_bytes_and_searches_operators_literally(tmp_path):
    from reliability_support import child_env

    env = child_env(CAPTAIN_MEMO_HOME=str(tmp_path), CAPTAIN_MEMO_DB=str(tmp_path / "memo.db"))
    support = os.path.join(os.path.dirname(__file__), "reliability_support.py")

    def cli(*argv: bytes | str):
        proc = subprocess.run([sys.executable, support, "cli", *argv], env=env, capture_output=True, timeout=120)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    code, out, err = cli("remember", "--project", "none", b"caf\xe9 latin-1 bytes")  # not UTF-8: a lone surrogate
    assert code == 1 and "unpaired surrogate" in err and "Traceback" not in err, err
    code, out, err = cli("remember", "--project", "none", "--branch", "feature/🙂\u202e", 'NEAR(a b) AND "x" OR *')
    assert code == 0, err
    code, out, err = cli("recall", "--project", "none", 'NEAR(a b) AND "x" OR *')
    assert code == 0 and "#1 " in out, out + err
    code, out, err = cli("recall", "--project", "none", "'; DROP TABLE memories; --")
    assert code == 0 and "Traceback" not in err, err
