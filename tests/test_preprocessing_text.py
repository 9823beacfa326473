"""preprocessing.sequence and preprocessing.text against keras_preprocessing 1.1's documented results."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from arignote.models import Sequential
from arignote.preprocessing import sequence, text
from arignote.preprocessing.sequence import TimeseriesGenerator, pad_sequences, skipgrams
from arignote.preprocessing.text import Tokenizer, hashing_trick, one_hot, text_to_word_sequence

# ------------------------------------------------------------------------------------------ sequence


def test_pad_sequences_sides_dtype_and_value():
    seqs = [[1], [2, 3], [4, 5, 6]]
    out = pad_sequences(seqs)
    assert out.dtype == np.int32 and out.tolist() == [[0, 0, 1], [0, 2, 3], [4, 5, 6]]
    assert pad_sequences(seqs, maxlen=2).tolist() == [[0, 1], [2, 3], [5, 6]]           # pre-truncate
    assert pad_sequences(seqs, maxlen=2, truncating="post").tolist() == [[0, 1], [2, 3], [4, 5]]
    assert pad_sequences(seqs, padding="post", value=-1).tolist() == [[1, -1, -1], [2, 3, -1], [4, 5, 6]]
    assert pad_sequences([[0.5], []], dtype="float32", maxlen=2).tolist() == [[0.0, 0.5], [0.0, 0.0]]
    assert pad_sequences([["a"], ["b", "c"]], dtype=object, value="_").tolist() == [["_", "a"], ["b", "c"]]
    vec = pad_sequences([[[1, 1]], [[2, 2], [3, 3]]])  # items with a shape keep it
    assert vec.shape == (2, 2, 2) and vec[0].tolist() == [[0, 0], [1, 1]]


def test_pad_sequences_errors_name_the_argument():
    with pytest.raises(ValueError, match='Padding type "middle" not understood'):
        pad_sequences([[1]], padding="middle")
    with pytest.raises(ValueError, match='Truncating type "x"'):
        pad_sequences([[1]], truncating="x")
    with pytest.raises(ValueError, match="pass dtype=object"):
        pad_sequences([["a"]], value="_")
    with pytest.raises(ValueError, match="list of iterables; found 3"):
        pad_sequences([[1], 3])
    with pytest.raises(ValueError, match="items of sequence 1 have shape"):
        pad_sequences([[[1, 2]], [[1, 2, 3]]])


def test_make_sampling_table_follows_zipf_word2vec():
    table = sequence.make_sampling_table(1000, sampling_factor=1e-3)
    assert table.shape == (1000,) and table[0] == table[1]
    r = 500
    f = 1e-3 * (r * (math.log(r) + 0.577) + 0.5 - 1 / (12 * r))
    assert table[r] == pytest.approx(min(1.0, f / math.sqrt(f)))
    assert np.all(np.diff(table) >= 0) and table.max() <= 1.0  # rarer words are kept more often


def test_skipgrams_windows_negatives_and_seed():
    state = random.getstate()
    couples, labels = skipgrams([1, 2, 0, 3], vocabulary_size=10, window_size=1, shuffle=False,
                                negative_samples=0)
    assert couples == [[1, 2], [2, 1]] and labels == [1, 1]  # 0 is never paired, 3 has only 0 nearby
    couples, labels = skipgrams([1, 2, 3], vocabulary_size=5, window_size=2, negative_samples=2.0, seed=7)
    assert len(couples) == 18 and labels.count(1) == 6 and labels.count(0) == 12
    positives = {tuple(c) for c, lab in zip(couples, labels) if lab == 1}
    assert positives == {(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)}
    assert all(1 <= c[1] <= 4 for c, lab in zip(couples, labels) if lab == 0)
    assert skipgrams([1, 2, 3], 5, window_size=2, negative_samples=2.0, seed=7) == (couples, labels)
    _, cat = skipgrams([1, 2], 5, categorical=True, seed=0)
    assert sorted(map(tuple, cat)) == [(0, 1), (0, 1), (1, 0), (1, 0)]  # 2 positives, 2 negatives
    never = skipgrams([1, 2, 3], 5, sampling_table=np.zeros(5), seed=0)
    assert never == ([], [])
    assert random.getstate() == state  # the global RNG is untouched


def test_timeseries_generator_keras_doc_example_and_options():
    data = np.array([[i] for i in range(50)])
    gen = TimeseriesGenerator(data, data, length=10, sampling_rate=2, batch_size=2)
    assert len(gen) == 20
    x, y = gen[0]
    np.testing.assert_array_equal(x, [[[0], [2], [4], [6], [8]], [[1], [3], [5], [7], [9]]])
    np.testing.assert_array_equal(y, [[10], [11]])
    rev = TimeseriesGenerator(data, data, length=3, reverse=True, stride=2, start_index=5, end_index=12,
                              batch_size=3)
    x, y = rev[0]
    assert x[:, :, 0].tolist() == [[7, 6, 5], [9, 8, 7], [11, 10, 9]] and y[:, 0].tolist() == [8, 10, 12]
    assert len(rev) == 1
    with pytest.raises(IndexError, match="has 1 batches"):
        rev[1]
    np.random.seed(0)
    shuffled = TimeseriesGenerator(data, data, length=4, shuffle=True, batch_size=5)
    xs, ys = shuffled[0]
    assert xs.shape == (5, 4, 1) and all(xs[k, -1, 0] == ys[k, 0] - 1 for k in range(5))
    with pytest.raises(ValueError, match="same length"):
        TimeseriesGenerator(data, data[:3], length=2)
    with pytest.raises(ValueError, match="start_index\\+length=60 > end_index=49"):
        TimeseriesGenerator(data, data, length=60)


def test_timeseries_generator_json_round_trip_and_fit():
    data = np.arange(20, dtype="float32").reshape(20, 1)
    gen = TimeseriesGenerator(data, data, length=4, batch_size=4, stride=2)
    back = sequence.timeseries_generator_from_json(gen.to_json())
    assert len(back) == len(gen) and back.start_index == gen.start_index
    np.testing.assert_array_equal(back[1][0], gen[1][0])
    from arignote.layers import Dense, Flatten

    model = Sequential([Flatten(input_shape=(4, 1)), Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(gen, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1


# ------------------------------------------------------------------------------------------ text


def test_text_to_word_sequence_filters_lower_split():
    assert text_to_word_sequence("Hello, World!  It's\tme.") == ["hello", "world", "it's", "me"]
    assert text_to_word_sequence("A-B c", filters="", lower=False) == ["A-B", "c"]
    assert text_to_word_sequence("a;b;;c", split=";") == ["a", "b", "c"]


def test_hashing_trick_and_one_hot_ranges():
    idx = hashing_trick("the cat the", 10, hash_function="md5")
    import hashlib

    assert idx == [int(hashlib.md5(w.encode()).hexdigest(), 16) % 9 + 1 for w in ("the", "cat", "the")]
    oh = one_hot("a b c d e f", 4)
    assert len(oh) == 6 and all(1 <= i <= 3 for i in oh)
    assert hashing_trick("x y", 5, hash_function=len) == [2, 2]
    with pytest.raises(ValueError, match="n=1 must be an int >= 2"):
        one_hot("x", 1)


CORPUS = ["The cat sat on the mat.", "The dog ate my homework!", "the cat"]


def test_tokenizer_index_order_and_sequences():
    t = Tokenizer()
    t.fit_on_texts(CORPUS)
    assert t.document_count == 3
    assert t.word_index["the"] == 1 and t.word_index["cat"] == 2  # the x4, cat x2, then first-seen order
    assert list(t.word_index)[:4] == ["the", "cat", "sat", "on"]
    assert t.word_counts["the"] == 4 and t.word_docs["the"] == 3 and t.index_docs[1] == 3
    assert t.texts_to_sequences(["the cat ate a bird"]) == [[1, 2, 7]]
    assert t.sequences_to_texts([[1, 2, 99]]) == ["the cat"]
    cut = Tokenizer(num_words=3, oov_token="<unk>")
    cut.fit_on_texts(CORPUS)
    assert cut.word_index["<unk>"] == 1 and cut.word_index["the"] == 2
    assert cut.texts_to_sequences(["the cat sat zebra"]) == [[2, 1, 1, 1]]  # cat has index 3 >= num_words
    assert cut.sequences_to_texts([[2, 3]]) == ["the <unk>"]
    chars = Tokenizer(char_level=True)
    chars.fit_on_texts(["aab"])
    assert chars.word_index == {"a": 1, "b": 2}
    lists = Tokenizer()
    lists.fit_on_texts([["Hello", "World"], ["hello"]])
    assert lists.texts_to_sequences([["HELLO", "world"]]) == [[1, 2]]
    with pytest.raises(TypeError, match="wrap it in a list"):
        t.fit_on_texts("one string")


def test_tokenizer_matrix_modes():
    t = Tokenizer(num_words=4)
    t.fit_on_texts(CORPUS)
    seqs = [[1, 1, 2], [3, 9]]
    assert t.sequences_to_matrix(seqs, "binary").tolist() == [[0, 1, 1, 0], [0, 0, 0, 1]]
    assert t.sequences_to_matrix(seqs, "count").tolist() == [[0, 2, 1, 0], [0, 0, 0, 1]]
    assert t.sequences_to_matrix(seqs, "freq")[0].tolist() == [0, 2 / 3, 1 / 3, 0]
    tfidf = t.sequences_to_matrix(seqs, "tfidf")
    assert tfidf[0, 1] == pytest.approx((1 + math.log(2)) * math.log(1 + 3 / (1 + 3)))
    assert tfidf[0, 2] == pytest.approx(1 * math.log(1 + 3 / (1 + 2)))
    assert t.texts_to_matrix(["the the cat"], mode="count").tolist() == [[0, 2, 1, 0]]
    with pytest.raises(ValueError, match="Unknown vectorization mode: 'bm25'"):
        t.sequences_to_matrix(seqs, "bm25")
    with pytest.raises(ValueError, match="Specify a dimension"):
        Tokenizer().sequences_to_matrix(seqs)
    with pytest.raises(ValueError, match="before using tfidf"):
        Tokenizer(num_words=3).sequences_to_matrix([[1]], "tfidf")
    fs = Tokenizer(num_words=3)
    fs.fit_on_sequences([[1, 1, 2], [2]])
    assert fs.document_count == 2 and fs.index_docs[2] == 2


def test_tokenizer_json_round_trip_and_legacy_args():
    t = Tokenizer(num_words=5, oov_token="?")
    t.fit_on_texts(CORPUS)
    raw = json.loads(t.to_json())
    assert raw["class_name"] == "Tokenizer" and isinstance(raw["config"]["word_index"], str)
    back = text.tokenizer_from_json(t.to_json())
    assert back.word_index == t.word_index and back.index_word == t.index_word
    assert back.texts_to_matrix(CORPUS, "tfidf").tolist() == t.texts_to_matrix(CORPUS, "tfidf").tolist()
    with pytest.warns(UserWarning, match="renamed `num_words`"):
        assert Tokenizer(nb_words=7).num_words == 7
    with pytest.raises(TypeError, match="unrecognized keyword arguments: \\['bogus'\\]"):
        Tokenizer(bogus=1)
