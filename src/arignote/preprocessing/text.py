"""Keras 2 ``preprocessing.text``: ``Tokenizer``, ``text_to_word_sequence``, ``one_hot``,
``hashing_trick``, ``tokenizer_from_json`` (keras_preprocessing 1.1 behaviour: index 0 is never a
word, the most frequent word gets index 1, ties keep their first-seen order).

Example::

    >>> t = Tokenizer(num_words=3)
    >>> t.fit_on_texts(["The cat sat.", "The dog."])
    >>> t.word_index["the"], t.texts_to_sequences(["the cat and the dog"])
    (1, [[1, 2, 1]])
    >>> t.texts_to_matrix(["the the cat"], mode="count").tolist()
    [[0.0, 2.0, 1.0]]
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

__all__ = ["text_to_word_sequence", "one_hot", "hashing_trick", "Tokenizer", "tokenizer_from_json"]

FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
MODES = ("binary", "count", "tfidf", "freq")


def text_to_word_sequence(text: str, filters: str = FILTERS, lower: bool = True,
                          split: str = " ") -> list[str]:
    """The words of ``text``: lower-cased, every character of ``filters`` turned into ``split``, split
    on ``split``, empty pieces dropped."""
    if not isinstance(text, str):
        raise TypeError(f"text_to_word_sequence takes a string, got {type(text).__name__}")
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in text.split(split) if w]


def hashing_trick(text: str, n: int, hash_function: Callable[[str], int] | str | None = None,
                  filters: str = FILTERS, lower: bool = True, split: str = " ") -> list[int]:
    """Each word of ``text`` as ``hash_function(word) % (n - 1) + 1`` (indices 1..n-1, collisions
    possible). ``hash_function`` defaults to Python's ``hash`` (salted per process unless
    ``PYTHONHASHSEED`` is set); ``'md5'`` is stable across runs."""
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"hashing_trick: n={n!r} must be an int >= 2 (index 0 is reserved)")
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(w: str) -> int:
            return int(hashlib.md5(w.encode()).hexdigest(), 16)
    elif not callable(hash_function):
        raise ValueError(f"hashing_trick: hash_function={hash_function!r} must be None, 'md5' or a function")
    return [hash_function(w) % (n - 1) + 1 for w in text_to_word_sequence(text, filters, lower, split)]


def one_hot(text: str, n: int, filters: str = FILTERS, lower: bool = True, split: str = " ") -> list[int]:
    """:func:`hashing_trick` with Python's ``hash`` (Keras's name; the result is word indices)."""
    return hashing_trick(text, n, hash_function=hash, filters=filters, lower=lower, split=split)


class Tokenizer:
    """Vocabulary of a corpus and the texts as index sequences or matrices.

    ``num_words``: only indices below it are used (the ``num_words - 1`` most frequent words);
    ``oov_token``: gets index 1 and replaces unknown or cut words; ``char_level``: characters are
    the tokens. A text given as a list is taken as its list of tokens.
    """

    def __init__(self, num_words: int | None = None, filters: str = FILTERS, lower: bool = True,
                 split: str = " ", char_level: bool = False, oov_token: str | None = None,
                 document_count: int = 0, **kwargs: Any) -> None:
        if "nb_words" in kwargs:
            warnings.warn("The `nb_words` argument in `Tokenizer` has been renamed `num_words`.",
                          UserWarning, stacklevel=2)
            num_words = kwargs.pop("nb_words")
        if kwargs:
            raise TypeError(f"Tokenizer: unrecognized keyword arguments: {sorted(kwargs)}")
        self.num_words, self.filters, self.lower, self.split = num_words, filters, lower, split
        self.char_level, self.oov_token, self.document_count = char_level, oov_token, document_count
        self.word_counts: dict[str, int] = OrderedDict()
        self.word_docs: dict[str, int] = defaultdict(int)
        self.index_docs: dict[int, int] = defaultdict(int)
        self.word_index: dict[str, int] = {}
        self.index_word: dict[int, str] = {}

    def _tokens(self, text: Any) -> list[str]:
        if self.char_level or isinstance(text, list):
            if isinstance(text, list):
                return [t.lower() for t in text] if self.lower else list(text)
            return list(text.lower() if self.lower else text)
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts: Iterable[Any]) -> None:
        """Count the words of ``texts`` (strings, or lists of tokens) and rebuild ``word_index``."""
        if isinstance(texts, str):
            raise TypeError("fit_on_texts takes a list of texts, got one string; wrap it in a list")
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for w in tokens:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(tokens):
                self.word_docs[w] += 1
        # sorted is stable: words with equal counts keep their first-seen order
        ranked = sorted(self.word_counts.items(), key=lambda kv: kv[1], reverse=True)
        vocabulary = ([self.oov_token] if self.oov_token is not None else []) + [w for w, _ in ranked]
        self.word_index = {w: i for i, w in enumerate(vocabulary, start=1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in self.word_docs.items():
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences: Iterable[Iterable[int]]) -> None:
        """Count in how many sequences each index occurs (for ``tfidf`` without ``fit_on_texts``)."""
        sequences = list(sequences)
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def _keep(self, i: int) -> bool:
        return not (self.num_words and i >= self.num_words)

    def texts_to_sequences_generator(self, texts: Iterable[Any]) -> Iterator[list[int]]:
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for text in texts:
            out = []
            for w in self._tokens(text):
                i = self.word_index.get(w)
                if i is not None and self._keep(i):
                    out.append(i)
                elif oov is not None:
                    out.append(oov)
            yield out

    def texts_to_sequences(self, texts: Iterable[Any]) -> list[list[int]]:
        """Each text as the indices of its known words (``oov_token``'s index for the others when set)."""
        if isinstance(texts, str):
            raise TypeError("texts_to_sequences takes a list of texts, got one string; wrap it in a list")
        return list(self.texts_to_sequences_generator(texts))

    def sequences_to_texts_generator(self, sequences: Iterable[Iterable[int]]) -> Iterator[str]:
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for seq in sequences:
            words = []
            for i in seq:
                w = self.index_word.get(i)
                if w is not None and self._keep(i):
                    words.append(w)
                elif oov is not None:
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def sequences_to_texts(self, sequences: Iterable[Iterable[int]]) -> list[str]:
        """The inverse of :meth:`texts_to_sequences` (words joined by spaces)."""
        return list(self.sequences_to_texts_generator(sequences))

    def texts_to_matrix(self, texts: Iterable[Any], mode: str = "binary") -> np.ndarray:
        """:meth:`sequences_to_matrix` of :meth:`texts_to_sequences`."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences: Iterable[Iterable[int]], mode: str = "binary") -> np.ndarray:
        """float64 ``(len(sequences), num_words)`` (``len(word_index) + 1`` without ``num_words``):
        ``binary`` 1 where an index occurs, ``count`` occurrences, ``freq`` occurrences / length,
        ``tfidf`` ``(1 + ln count) * ln(1 + documents / (1 + documents holding the index))``."""
        if mode not in MODES:
            raise ValueError(f"Unknown vectorization mode: {mode!r}; use one of {', '.join(MODES)}")
        if self.num_words:
            width = self.num_words
        elif self.word_index:
            width = len(self.word_index) + 1
        else:
            raise ValueError("Specify a dimension (`num_words` argument), or fit on some text data first.")
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        sequences = list(sequences)
        x = np.zeros((len(sequences), width))
        for row, seq in enumerate(sequences):
            seq = list(seq)
            counts: dict[int, int] = defaultdict(int)
            for j in seq:
                if j < width:
                    counts[j] += 1
            for j, c in counts.items():
                if mode == "count":
                    x[row, j] = c
                elif mode == "freq":
                    x[row, j] = c / len(seq)
                elif mode == "binary":
                    x[row, j] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[row, j] = (1 + np.log(c)) * idf
        return x

    def get_config(self) -> dict[str, Any]:
        """Arguments and counts; the dictionaries as JSON strings (Keras's layout, readable by Keras)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split,
                "char_level": self.char_level, "oov_token": self.oov_token,
                "document_count": self.document_count, "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs), "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word), "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs: Any) -> str:
        """JSON of ``{"class_name": "Tokenizer", "config": get_config()}``
        (read back by :func:`tokenizer_from_json`)."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """The Tokenizer saved by :meth:`Tokenizer.to_json` (ours or keras_preprocessing's)."""
    cfg = dict(json.loads(json_string).get("config") or {})
    tables = {k: json.loads(cfg.pop(k)) for k in ("word_counts", "word_docs", "index_docs", "index_word",
                                                   "word_index")}
    t = Tokenizer(**cfg)
    t.word_counts = OrderedDict(tables["word_counts"])
    t.word_docs = defaultdict(int, tables["word_docs"])
    t.index_docs = defaultdict(int, {int(k): v for k, v in tables["index_docs"].items()})
    t.index_word = {int(k): v for k, v in tables["index_word"].items()}
    t.word_index = tables["word_index"]
    return t
