"""Generated note text for synthetic stores: common English, topic words and code identifiers.

The keyword leg's cost depends on how often query terms occur, so the text mixes the kinds of
words real notes hold: very common words (``the`` is in nearly every chunk, as in real notes),
a few hundred everyday developer words, each topic's own rare words, and identifiers
(snake_case, camelCase, dotted names, paths) built from those rare words.
"""

from __future__ import annotations

import numpy as np

COMMON = """
the a to of and in is for it that on with this be as we not are was by or at from but when if
have has can should will so all do use only then after before no new one more into there than
also how what which out up about because need just now still some where any other again they
""".split()
DEVELOPER = """
fix bug test tests error errors function method class module config setting option value values
file files path line code call calls return returns request response server client cache query
index table column row field type types list dict map key keys string number default version
release build deploy branch commit merge review change changes update updated remove removed add
added run runs running fails failed failing works check checks handle handles issue issues case
cases input output data user users name names time timeout retry retries log logs warning debug
api endpoint service job worker queue task tasks event events thread lock memory disk network
parse parser format schema migration database connection session token auth price order invoice
payment account report plugin command option flag env variable test_ setup teardown fixture mock
""".split()
SYLLABLES = (
    "ka ri to ne mo la su vi de pa zo lu fe ga mi ro sa te bu ki no ya ha ze qua dro bel"
    " tor vin mar sel kon dar fel gri pol tas"
).split()


def pseudo_words(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct made-up words of two to four syllables."""
    seen: dict[str, None] = {}
    while len(seen) < count:
        parts = rng.integers(len(SYLLABLES), size=(count, 4))
        lengths = rng.integers(2, 5, size=count)
        for row, n in zip(parts, lengths):
            seen.setdefault("".join(SYLLABLES[i] for i in row[:n]), None)
            if len(seen) == count:
                break
    return list(seen)


def identifiers(words: list[str], rng: np.random.Generator) -> list[str]:
    """Code-shaped names built from a topic's words, one of each shape."""
    a, b, c = (words[i] for i in rng.choice(len(words), 3, replace=False))
    return [f"{a}_{b}", f"{b}{c.capitalize()}", f"{c}.{a}", f"src/{a}/{b}.py", f"get_{c}_{a}"]


def zipf_weights(n: int, exponent: float = 1.0) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** exponent
    return w / w.sum()


KINDS = np.cumsum([0.55, 0.25, 0.15, 0.05])  # common, topic word, rare word, identifier


class Vocabulary:
    """Every word a synthetic store uses, and each topic's own words and identifiers.

    Words are drawn for a whole batch of chunks at once (indexes into one table of strings), so a
    million chunks of text take seconds rather than minutes.
    """

    def __init__(self, topics: int, seed: int, rare_words: int = 30_000, words_per_topic: int = 12):
        rng = np.random.default_rng([seed, 101])
        self.common = COMMON + DEVELOPER
        self.rare = pseudo_words(rng, rare_words)
        picks = rng.choice(rare_words, size=(topics, words_per_topic))
        self.topic_words = [[self.rare[i] for i in row] for row in picks]
        self.topic_ids = [identifiers(words, rng) for words in self.topic_words]
        self.per_topic = words_per_topic
        self.common_cdf = np.cumsum(zipf_weights(len(self.common), 0.9))
        self.rare_cdf = np.cumsum(zipf_weights(rare_words, 1.0))
        # One table: common | rare | topic words (topic-major) | identifiers (topic-major); each word
        # twice, the second time ending a sentence.
        words = (
            self.common
            + self.rare
            + [w for ws in self.topic_words for w in ws]
            + [i for ids in self.topic_ids for i in ids]
        )
        self.table = np.array([form for w in words for form in (w, w + ".")], dtype=object)
        self.rare_at = len(self.common)
        self.topic_at = self.rare_at + rare_words
        self.ids_at = self.topic_at + topics * words_per_topic

    def _draw(self, rng: np.random.Generator, topic_of_word: np.ndarray) -> np.ndarray:
        n = len(topic_of_word)
        kind = np.searchsorted(KINDS, rng.random(n), side="right")
        word = np.searchsorted(self.common_cdf, rng.random(n))
        rare = self.rare_at + np.minimum(np.searchsorted(self.rare_cdf, rng.random(n)), len(self.rare) - 1)
        topical = (
            self.topic_at
            + topic_of_word * self.per_topic
            + np.minimum(rng.exponential(3.0, n).astype(np.int64), self.per_topic - 1)
        )
        ident = self.ids_at + topic_of_word * 5 + rng.integers(5, size=n)
        word = np.where(kind == 1, topical, word)
        word = np.where(kind == 2, rare, word)
        return np.where(kind >= 3, ident, word)

    def chunks(self, rng: np.random.Generator, topics: np.ndarray) -> list[str]:
        """One chunk of note text per topic given: 30-80 words in sentences of about eleven."""
        lengths = rng.integers(30, 81, size=len(topics))
        word = self._draw(rng, np.repeat(topics, lengths))
        ends = np.zeros(len(word), bool)
        ends[rng.random(len(word)) < 1 / 11] = True
        ends[np.cumsum(lengths) - 1] = True
        forms = self.table[word * 2 + ends]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        return [" ".join(forms[a:b]).capitalize() for a, b in zip(bounds[:-1], bounds[1:])]

    def title(self, rng: np.random.Generator, topic: int) -> str:
        words = self.topic_words[topic]
        picked = [words[i] for i in rng.choice(len(words), int(rng.integers(2, 4)), replace=False)]
        return " ".join([DEVELOPER[int(rng.integers(len(DEVELOPER)))], *picked])

    def query(self, rng: np.random.Generator, topic: int) -> str:
        """What someone would type: a couple of topic words, common words, sometimes an identifier."""
        words = self.topic_words[topic]
        parts = [words[min(int(rng.exponential(3.0)), len(words) - 1)] for _ in range(int(rng.integers(1, 4)))]
        if rng.random() < 0.4:
            parts.append(self.topic_ids[topic][rng.integers(len(self.topic_ids[topic]))])
        lead = ["how do we", "why does the", "where is the", "fix the", "what broke in", ""][rng.integers(6)]
        tail = ["error", "config", "test", "when deploying", "in the cache", ""][rng.integers(6)]
        return " ".join(p for p in [lead, *dict.fromkeys(parts), tail] if p)
