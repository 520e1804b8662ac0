"""v3 weighs a chunk of source code mostly by meaning when the query has plain words: the rule that
tells code from prose (ranking/content.py), the fusion (ranking/union.py), and what a user sees."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from recall_support import NOW, assert_trace, candidate, memory, run_cli

from captain_memo.config import PROFILES, RankConfig
from captain_memo.ranking.content import is_source_code
from captain_memo.ranking.pipeline import RankRequest, rank_pool
from captain_memo.ranking.query import analyse

V2, LEGACY = PROFILES["v2"], PROFILES["legacy"]
# These hand-made pools of a few chunks stand for a real store's pools of 25+, where min-max alone
# scales the legs; how a pool this small is calibrated is tests/test_calibration.py's subject.
V3 = replace(PROFILES["v3"], calibrated_scores=False)

PYTHON = '''def is_readable(filename):
    """Check if file is a regular file and is readable."""
    return os.path.isfile(filename) and os.access(filename, os.R_OK)
'''
PYTHON2 = """def ex(self, cmd):
    with self.builtin_trap:
        exec cmd in self.user_ns
    print cmd
"""
JAVASCRIPT = """function debounce(fn, wait) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), wait);
  };
}"""
GO = """func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listener.Close()
}"""
RUST = """pub fn parse(input: &str) -> Result<Config, Error> {
    let mut config = Config::default();
    for line in input.lines() {
        config.apply(line)?;
    }
    Ok(config)
}"""
LUA = """local function setup(opts)
  opts = opts or {}
  vim.keymap.set("n", "<leader>m", M.lookup, { desc = "memo" })
end"""

DECISION = """We decided to round contract prices half-even at the last step only.
If a discount applies, it is taken before rounding; for totals we sum the rounded lines.
See get_effective_contract_price() and the pricing tests."""
CHANGELOG = """Fix error when overwriting a parametrized fixture, while also reusing the super fixture value.
For instance when several processes try to remove the same directory (common with ``pytest-xdist``)."""
NOTE_WITH_EXAMPLE = """How to run one test with the debugger:

Use the -k option with the test's name and --pdb; the session stops at the first failure.
This works for parametrized tests too, with the id in brackets.
It also works under xdist if you pass -p no:xdist first.

```
pytest -k test_rounding --pdb
```"""
RST_EXAMPLE = """Fix error when overwriting a parametrized fixture, while also reusing the super fixture value.

.. code-block:: python

    # conftest.py
    import pytest


    @pytest.fixture(params=[1, 2])
    def foo(request):
        return request.param


    # test_foo.py
    @pytest.fixture
    def foo(foo):
        return foo * 2
"""
MARKDOWN_EXAMPLE = "Retry uploads like this:\n\n```python\nfor attempt in range(3):\n    try:\n        upload(path)\n        break\n    except Timeout:\n        sleep(2 ** attempt)\n```\n"
CONVERSATION = "User:\nHow do I rotate the logs?\nAssistant:\nUse logrotate with a weekly rule (see its man page)"
SESSION = "[2023-05-08 13:56] Caroline:\nHey Mel! Good to see you!\n[2023-05-08 13:57] Melanie:\nHi (it's been a while)"
LABELS = "Decision:\n  Round half-even.\nReason:\n  Matches the ledger.\nSteps:\n1. pull\n2. build (make)"
COMMIT_WITH_CALLS = (
    "Fix crash on empty query in analyse()\n\nAn empty string reached the FTS5 builder through recall()\n"
    "and the MATCH failed; the query is now checked first."
)
BULLETS = (
    "- call flush() before close()\n- rename get_user() to fetch_user()\n* API tokens;\n* private keys;\n1. retry()"
)
SETTINGS = "Timeout = 30 seconds\nowner = platform team\nretries = 3"
JAVA_TRACE = "java.lang.NullPointerException: boom\n\tat com.x.Foo.bar(Foo.java:42)\n\tat com.x.Baz.qux(Baz.java:7)"
PYTHON_TRACE = (
    'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n    main()\n'
    '  File "a.py", line 2, in main\n    return foo(1)\nValueError: bad'
)
SENTENCES = "let me know when the deploy is done\nimport errors are now shown once\nreturn to this later"
WRAPPED = "The ranking changed (v3)\nand the float shows it (see :help)\nwhich is nice"
COMMIT = """Team store: hnsw.ef_search at least 100 per connection

A larger database default is kept (it was overridden, so an administrator could not raise it).
With 100 the recall at 100,000 rows is 0.998."""


@pytest.mark.parametrize("text", [PYTHON, PYTHON2, JAVASCRIPT, GO, RUST, LUA], ids=str.split)
def test_source_code_is_told_from_its_lines_in_any_common_language(text):
    assert is_source_code(text)


@pytest.mark.parametrize(
    "text",
    [
        DECISION,
        CHANGELOG,
        NOTE_WITH_EXAMPLE,
        RST_EXAMPLE,
        MARKDOWN_EXAMPLE,
        COMMIT,
        "x = 1",
        "",
        "for the record: we ship",
        CONVERSATION,
        SESSION,
        LABELS,
        WRAPPED,
        COMMIT_WITH_CALLS,
        BULLETS,
        SETTINGS,
        JAVA_TRACE,
        PYTHON_TRACE,
        SENTENCES,
    ],
    ids=[
        "decision",
        "changelog",
        "note with an example",
        "note that is mostly an rst code block",
        "note that is mostly a markdown fence",
        "commit",
        "one line of code",
        "empty",
        "sentence",
        "conversation with speaker lines",
        "chat session with timestamps",
        "labels and steps",
        "wrapped prose closing asides",
        "commit message naming calls",
        "list items naming calls or ending in ;",
        "settings written as key = value in words",
        "java stack trace",
        "python traceback",
        "sentences starting with let, import, return",
    ],
)
def test_prose_stays_prose_even_with_code_in_it(text):
    """A note that mentions code, quotes a command or starts a sentence with "for" keeps its keyword
    evidence; so does one that is mostly a marked-up example (pytest's changelog fragment 1953 was
    taken for code and lifted over the fragments two queries asked for); so do conversations and
    labelled notes whose lines end in ":" or ")"; one line of code is not enough to call a chunk
    code."""
    assert not is_source_code(text)


def ranked(cands, query: str, cfg: RankConfig):
    req = RankRequest(analyse(query, cfg.rare_token_min_length, cfg.temporal_word_forms), None, NOW, 10)
    pool = rank_pool(cands, req, cfg)
    assert_trace(pool)
    return pool


def scored(mid: int, text: str, vector: float, bm25: float):
    return replace(candidate(memory(mid), text, vector=vector), bm25=bm25)


def pool_of_code():
    """The function that does what was asked (best by meaning) against one that repeats the
    query's words in its body (best by bm25), and a third, weaker on both."""
    meaning = scored(1, PYTHON, vector=0.80, bm25=2.0)
    words = scored(2, JAVASCRIPT.replace("timer", "file"), vector=0.60, bm25=9.0)
    return [meaning, words, scored(3, GO, vector=0.50, bm25=1.0)]


def test_plain_words_put_to_code_follow_meaning_under_v3():
    """Equal weights put the body that repeats the words first (0.5 x 0 + 0.5 x 1 = 0.5 against
    0.5 x 1 + 0.5 x 0.125); with code weighed 0.85 / 0.15 the function that does it leads."""
    query = "python check file is readable"
    equal = ranked(pool_of_code(), query, replace(V3, code_vector_weight=0.0))
    assert [c.memory.id for c in equal][:2] == [2, 1]
    v3 = ranked(pool_of_code(), query, V3)
    assert [c.memory.id for c in v3][:2] == [1, 2]
    top = v3[0]
    assert top.code_vector_weight == pytest.approx(0.85)
    assert top.fused == pytest.approx(0.85 * 1.0 + 0.15 * (2.0 - 1.0) / (9.0 - 1.0))


def test_a_query_that_is_only_a_name_weighs_code_like_any_chunk():
    """`os.access` asks for the exact string: the keyword leg keeps its half on code too."""
    v3 = ranked(pool_of_code(), "os.access", V3)
    assert all(c.code_vector_weight is None for c in v3)
    fused = {c.memory.id: c.fused for c in v3}
    assert fused[2] == pytest.approx(0.5 * (0.6 - 0.5) / 0.3 + 0.5 * 1.0)


def test_prose_beside_code_is_weighed_as_before():
    """Only the chunks that are code change: a decision keeps 0.5 / 0.5 and no weight in its trace."""
    pool = pool_of_code() + [scored(4, DECISION, vector=0.7, bm25=5.0)]
    before = {
        c.memory.id: c.fused for c in ranked(pool, "rounding of contract prices", replace(V3, code_vector_weight=0))
    }
    after = {c.memory.id: c for c in ranked(pool, "rounding of contract prices", V3)}
    assert after[4].code_vector_weight is None and after[4].fused == pytest.approx(before[4])
    assert {mid for mid, c in after.items() if c.code_vector_weight is not None} == {1, 2, 3}


def test_with_no_keyword_evidence_code_is_not_weighed_apart():
    """No candidate holds a query word: min-max gives every keyword score 1.0, so weighing code
    0.85 / 0.15 would sink it under prose the vector leg ranks lower. The vector order stands."""
    pool = [scored(1, GO, vector=0.62, bm25=0.0), scored(2, DECISION, vector=0.58, bm25=0.0)]
    v3 = ranked(pool, "zxqv wibble frobnicate", V3)
    assert [c.memory.id for c in v3] == [1, 2]
    assert all(c.code_vector_weight is None for c in v3)


def test_code_never_gets_less_vector_weight_than_prose():
    """With the usual weights raised to 0.9 vector, code keeps 0.9 rather than dropping to 0.85."""
    v3 = ranked(pool_of_code(), "python check file is readable", replace(V3, vector_weight=0.9, keyword_weight=0.1))
    assert [c.code_vector_weight for c in v3] == pytest.approx([0.9, 0.9, 0.9])


@pytest.mark.parametrize("cfg", [V2, LEGACY], ids=["v2", "legacy"])
def test_v2_and_legacy_do_not_weigh_code_apart(cfg):
    assert cfg.code_vector_weight == 0
    assert all(c.code_vector_weight is None for c in ranked(pool_of_code(), "python check file is readable", cfg))


def test_recall_explains_the_weights_it_gave_code(capsys, cli_env):
    """Through the real CLI, store and model: the JSON trace carries the vector weight for the code
    memory and null for the note, and --explain says why."""
    run_cli(capsys, "--db", cli_env, "remember", "--title", "is_readable", PYTHON)
    run_cli(
        capsys, "--db", cli_env, "remember", "--title", "readable files", "Readable files are checked before upload."
    )
    out = run_cli(capsys, "--db", cli_env, "recall", "--json", "check whether a file is readable")
    hits = {hit["title"]: hit["explain"] for hit in json.loads(out)["hits"]}
    assert hits["is_readable"]["code_vector_weight"] == pytest.approx(0.85)
    assert hits["readable files"]["code_vector_weight"] is None
    explained = run_cli(capsys, "--db", cli_env, "recall", "--explain", "check whether a file is readable")
    assert "(source code: vector x0.85 + keyword x0.15)" in explained
