"""No query text can break recall: 300 generated hostile strings go through both legs without an
error (the keyword leg must answer, not fail quietly), and identifiers with '_', '.' and '/' still
find the chunks that contain them."""

from __future__ import annotations

import random

import pytest
from recall_support import assert_trace

from captain_memo.errors import InputError
from captain_memo.ranking.query import fts_match
from captain_memo.store import NewMemory
from captain_memo.store.search import Scope, keyword_leg

ATOMS = [
    '"',
    "'",
    "`",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "*",
    "-",
    "+",
    "^",
    ":",
    "~",
    "%",
    "$",
    "#",
    "@",
    "!",
    "\\",
    "|",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(",
    "NEAR/3",
    "and",
    "or",
    "not",
    "near(a b, 2)",
    "text:",
    "text:invoice",
    "{text}:",
    "{text title}: x",
    "chunks_fts:",
    "-text:",
    "rowid:1",
    "^text",
    "'; DROP TABLE memories; --",
    "' OR 1=1 --",
    '" OR ""="',
    "/*",
    "*/",
    "UNION SELECT * FROM meta",
    "1; DELETE FROM chunks",
    "%' --",
    "x' UNION SELECT",
    "bm25(chunks_fts)",
    "🙂",
    "🔥🔥",
    "👩‍💻",
    "🇳🇱",
    "价格",
    "契約価格",
    "계약",
    "Привет",
    "\u200f",
    "\u200e",
    "\u202e",
    "שלום",
    "مرحبا",
    "e\u0301",
    "\ufeff",
    "\u00a0",
    "\u2028",
    "𝔘𝔫𝔦",
    "ﬁ",
    "Ⅻ",
    "²",
    "\t",
    "\n",
    "\r",
    "get_effective_contract_price",
    "billing.money.Money",
    "api/routes/quotes.py",
    "formatMoney",
    "__init__",
    "a.b",
    "./",
    "../..",
    "//",
    "_",
    ".",
    "/",
    "...",
    "foo_bar*",
    "*foo",
    '"unbalanced',
    "(unbalanced",
    "((((",
    "))))",
    "[[",
    "}}",
    "invoice",
    "price",
    "tier",
    "gapless",
    "x" * 300,
]


def hostile_queries(n: int = 300) -> list[str]:
    rng = random.Random(20261129)
    fixed = [
        '"',
        "(",
        ")",
        "*",
        "-",
        "^",
        ":",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "AND OR NOT",
        "NEAR(invoice price)",
        '"invoice" AND "price"',
        "text:invoice",
        "{text}: invoice",
        "-invoice",
        "invoice*",
        "^invoice",
        '"unbalanced quote',
        "unbalanced (paren",
        "price)",
        "[tier",
        "a:b:c",
        "' OR '1'='1",
        "SELECT * FROM memories",
        "🙂",
        "价格の丸め",
        "\u200fprice\u200f",
        "\u202eecirp",
        "a" * 10_000,
        "(" * 10_000,
        "🙂" * 10_000,
        ("get_effective_contract_price " * 400)[:10_000],
        "NOT " * 2_500,
        ("x" * 9_999) + '"',
        "".join(chr(c) for c in range(0x21, 0x7F)),
    ]
    out = list(fixed)
    while len(out) < n:
        parts = rng.choices(ATOMS, k=rng.randint(1, 8))
        glue = rng.choice([" ", "", " ", "\t", " AND ", " OR "])
        query = glue.join(parts)
        if query.strip() and len(query) <= 10_000 and query not in out:
            out.append(query)
    return out[:n]


QUERIES = hostile_queries()
NOTES = [
    "get_effective_contract_price walks the contract override, then tiers, then the list price.",
    "All amounts are billing.money.Money; floats are refused.",
    "KeyError: 'sku' in api/routes/quotes.py when a cart line is a bundle.",
    "Every price in the browser goes through web/src/lib/formatMoney.ts.",
    "Tests import helpers from tests/__init__.py, which is why it exists.",
    "staging now runs 2.5.0-rc1 with contract_pricing_v2 enabled.",
    "Decoy: the quotes for the routes of the api, written in py.",
    "Decoy: price effective for a contract we get later.",
    "Invoice numbers are gapless; AND, OR and NOT are words here (NEAR too).",
    "契約価格 is the contract price, 🙂 noted.",
]


@pytest.fixture(scope="module")
def hostile_engine(tmp_path_factory):
    from fakes import HashEmbedder

    from captain_memo.engine.core import Engine
    from captain_memo.store import Store

    engine = Engine(Store(tmp_path_factory.mktemp("hostile") / "memo.db"), HashEmbedder())
    ids = {}
    for text in NOTES:
        ids[text] = engine.remember(NewMemory(body=text))
    yield engine, ids
    engine.close()


def test_three_hundred_distinct_queries():
    assert len(QUERIES) == 300 and len(set(QUERIES)) == 300


@pytest.mark.parametrize("index", range(0, 300, 30))
def test_hostile_queries_never_raise(hostile_engine, index):
    engine, _ = hostile_engine
    for query in QUERIES[index : index + 30]:
        result = engine.recall(query, record=False)
        assert result.failures == {}, (query[:80], result.failures)
        assert result.legs == ("vector", "keyword")
        assert_trace(result.hits)
        keyword_leg(engine.store, fts_match(query), Scope(), 25)  # and the keyword leg on its own


@pytest.mark.parametrize(
    "query, what",
    [
        ("price\x00", "NUL"),
        ("\x00", "NUL"),
        ("price \ud800", "unpaired surrogate"),
        ("\udfff", "unpaired surrogate"),
        ("   ", "empty"),
        ("", "empty"),
        ("x" * 10_001, "limit"),
    ],
)
def test_unsearchable_text_is_a_clear_input_error(hostile_engine, query, what):
    engine, _ = hostile_engine
    with pytest.raises(InputError) as caught:
        engine.recall(query)
    assert what in str(caught.value)


@pytest.mark.parametrize(
    "query, note",
    [
        ("get_effective_contract_price", 0),
        ("get_effective_contract_price?", 0),
        ("billing.money.Money", 1),
        ("billing.money.Money.", 1),
        ("api/routes/quotes.py", 2),
        ("`api/routes/quotes.py`,", 2),
        ("web/src/lib/formatMoney.ts", 3),
        ("formatMoney", 3),
        ("tests/__init__.py", 4),
        ("__init__", 4),
        ("2.5.0-rc1", 5),
        ("contract_pricing_v2", 5),
    ],
)
def test_identifiers_find_the_chunks_that_contain_them(hostile_engine, query, note):
    engine, ids = hostile_engine
    expected = ids[NOTES[note]]
    keyword_only = engine.recall(query, legs=("keyword",), record=False)
    assert keyword_only.hits and keyword_only.hits[0].memory.id == expected
    both = engine.recall(query, record=False)
    assert both.hits[0].memory.id == expected
    # The query is only a name: under v3 the chunk holding it gets IDENTIFIER_ONLY_WEIGHT (x3).
    assert both.hits[0].factor("identifier") == pytest.approx(3.0)
    assert_trace(both.hits)


@pytest.mark.parametrize(
    "query, note",
    [
        ("is it billing.money.Money.", 1),
        ("where is api/routes/quotes.py", 2),
        ("who calls get_effective_contract_price?", 0),
    ],
)
def test_identifiers_inside_sentences_are_found(hostile_engine, query, note):
    engine, ids = hostile_engine
    keyword_only = engine.recall(query, legs=("keyword",), record=False)
    assert ids[NOTES[note]] in [h.memory.id for h in keyword_only.hits]
    both = engine.recall(query, record=False)
    hit = next(h for h in both.hits if h.memory.id == ids[NOTES[note]])
    assert hit.factor("identifier") == pytest.approx(1.3)


def test_operators_are_plain_words(hostile_engine):
    engine, ids = hostile_engine
    result = engine.recall("AND OR NOT NEAR", legs=("keyword",), record=False)
    assert [h.memory.id for h in result.hits] == [ids[NOTES[8]]]
