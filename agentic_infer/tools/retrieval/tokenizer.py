"""The lexical tokenizer shared by the BM25 index and the benchmarks.

Same rules as `bm25s.tokenize` (scikit-learn's CountVectorizer pattern `(?u)\\b\\w\\w+\\b`,
lower-casing, English stopwords removed before stemming, PyStemmer's Snowball stemmer), but with a
per-word cache so repeated words cost one dict lookup. The settings round-trip through `to_dict()` /
`from_dict()` so a saved index tokenizes queries exactly as it tokenized its corpus.

Run: `python -c "from agentic_infer.tools.retrieval.tokenizer import Tokenizer; print(Tokenizer()('The cats ran'))"`.
Not covered: sub-word tokenizers (the dense index uses its model's own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.errors import ConfigError

DEFAULT_PATTERN = r"(?u)\b\w\w+\b"


def _stopword_set(name: str | None) -> frozenset[str]:
    if name is None or name == "none":
        return frozenset()
    if name in ("en", "english"):
        from bm25s.stopwords import STOPWORDS_EN

        return frozenset(STOPWORDS_EN)
    raise ConfigError(f"unknown stopword list {name!r}; use 'en' or None")


def _stem_fn(language: str | None):
    if language is None or language == "none":
        return None
    try:
        import Stemmer
    except ImportError:
        raise ConfigError(
            "stemming needs PyStemmer: pip install 'agentic-infer[search]' (or pass stemmer=None)"
        ) from None
    try:
        return Stemmer.Stemmer(language).stemWord
    except KeyError:
        raise ConfigError(f"PyStemmer has no stemmer for language {language!r}; try 'english'") from None


@dataclass
class Tokenizer:
    """Lower-case, split on `pattern`, drop `stopwords`, stem with `stemmer` (a Snowball language)."""

    lower: bool = True
    pattern: str = DEFAULT_PATTERN
    stopwords: str | None = "en"
    stemmer: str | None = "english"
    _split: Any = field(init=False, repr=False, compare=False)
    _stops: frozenset[str] = field(init=False, repr=False, compare=False)
    _stem: Any = field(init=False, repr=False, compare=False)
    _cache: dict[str, str | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            self._split = re.compile(self.pattern).findall
        except re.error as e:
            raise ConfigError(f"tokenizer pattern {self.pattern!r} is not a valid regex: {e}") from None
        self._stops = _stopword_set(self.stopwords)
        self._stem = _stem_fn(self.stemmer)
        self._cache = {}

    def words(self, text: str) -> list[str]:
        """The raw words of `text` (lower-cased, split), before stopwords and stemming."""
        return self._split(text.lower() if self.lower else text)

    def term(self, word: str) -> str | None:
        """The index term of one word (its stem), or None for a stopword; cached."""
        try:
            return self._cache[word]
        except KeyError:
            pass
        if word in self._stops:
            term = None
        else:
            term = self._stem(word) if self._stem is not None else word
        self._cache[word] = term
        return term

    def __call__(self, text: str) -> list[str]:
        """Tokens (stems) of one text, stopwords removed, in order (repeats kept)."""
        words = self.words(text)
        cache = self._cache
        try:
            terms = [cache[w] for w in words]
        except KeyError:
            terms = [self.term(w) for w in words]
        return [t for t in terms if t is not None]

    def batch(self, texts: Iterable[str]) -> list[list[str]]:
        return [self(t) for t in texts]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lower": self.lower,
            "pattern": self.pattern,
            "stopwords": self.stopwords,
            "stemmer": self.stemmer,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tokenizer:
        known = {"lower", "pattern", "stopwords", "stemmer"}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"unknown tokenizer settings {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)
