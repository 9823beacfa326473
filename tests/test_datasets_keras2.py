"""imdb, reuters, cifar100, boston_housing and get_file, on fixture files in Keras's official formats.

Every test runs with HOME (so ``~/.keras``) and ARIGNOTE_DATA in tmp dirs and the network cut off.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import tarfile
import urllib.error
import urllib.request
import zipfile

import numpy as np
import pytest

from arignote import config
from arignote.datasets import DatasetError, _files, boston_housing, cifar100, imdb, reuters
from arignote.utils.data_utils import get_file, validate_file


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".keras" / "datasets").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)  # conftest points it away; ~/.keras is the default
    monkeypatch.setenv("ARIGNOTE_DATA", str(tmp_path / "data"))

    def no_network(url, timeout=None):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(_files, "_urlopen", no_network)
    config.reload()
    yield home
    monkeypatch.undo()
    config.reload()


@pytest.fixture
def keras_dir(home):
    return home / ".keras" / "datasets"


def _md5(path) -> str:
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def _objects(lists):
    out = np.empty(len(lists), dtype=object)
    for i, x in enumerate(lists):
        out[i] = list(x)
    return out


# ------------------------------------------------------------------------------------------- imdb

TRAIN = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [2, 2]]
TEST = [[3, 1], [9, 8, 7, 6], [5]]


@pytest.fixture
def imdb_file(keras_dir, monkeypatch):
    path = keras_dir / "imdb.npz"
    np.savez(path, x_train=_objects(TRAIN), y_train=np.array([0, 1, 1, 0]),
             x_test=_objects(TEST), y_test=np.array([1, 0, 1]))
    monkeypatch.setattr(imdb, "FILE_HASH", _md5(path))
    return path


def _keras_order(n, rng):
    idx = np.arange(n)
    rng.shuffle(idx)
    return idx


def test_imdb_defaults_shift_start_and_shuffle_like_keras(imdb_file):
    (x_train, y_train), (x_test, y_test) = imdb.load_data()
    rng = np.random.RandomState(113)
    tr, te = _keras_order(4, rng), _keras_order(3, rng)  # train drawn first, then test
    assert x_train.dtype == object and x_train.shape == (4,) and y_train.dtype == np.int64
    # Keras keeps ids < max id when num_words is None: the largest id (10 + 3) becomes oov_char 2
    assert [list(x) for x in x_train] == [[1] + [w + 3 if w + 3 < 13 else 2 for w in TRAIN[i]] for i in tr]
    assert y_train.tolist() == [[0, 1, 1, 0][i] for i in tr]
    assert [list(x) for x in x_test] == [[1] + [w + 3 for w in TEST[i]] for i in te]
    assert y_test.tolist() == [[1, 0, 1][i] for i in te]


def test_imdb_num_words_skip_top_oov_and_index_from(imdb_file):
    (x_train, _), (x_test, _) = imdb.load_data(num_words=8, skip_top=2, seed=0, start_char=None,
                                               index_from=1, oov_char=0)
    flat = sorted(w for x in list(x_train) + list(x_test) for w in x)
    assert set(flat) <= {0, 2, 3, 4, 5, 6, 7}  # ids >= 8 and < 2 became oov 0
    assert flat.count(0) == sum(1 for x in TRAIN + TEST for w in x if not 2 <= w + 1 < 8)
    (x_train, _), _ = imdb.load_data(num_words=8, oov_char=None, start_char=None, index_from=0)
    assert all(w < 8 for x in x_train for w in x)  # dropped, not replaced


def test_imdb_maxlen_filters_train_and_test_each(imdb_file):
    (x_train, y_train), (x_test, y_test) = imdb.load_data(maxlen=4)  # start_char makes lengths +1
    assert all(len(x) < 4 for x in list(x_train) + list(x_test))
    assert len(x_train) == 2 and len(y_train) == 2  # [4,5] and [2,2] (+start) are the only short ones
    assert len(x_test) == 2 and len(y_test) == 2    # [3,1] and [5]
    with pytest.raises(ValueError, match="Increase maxlen"):
        imdb.load_data(maxlen=1)


def test_imdb_seed_and_unknown_kwargs(imdb_file):
    a = imdb.load_data(seed=1)[0][1].tolist()
    rng = np.random.RandomState(1)
    assert a == [[0, 1, 1, 0][i] for i in _keras_order(4, rng)]
    with pytest.warns(UserWarning, match="renamed `num_words`"):
        (x, _), _ = imdb.load_data(nb_words=5)
    assert all(w < 5 for s in x for w in s)
    with pytest.raises(TypeError, match="unrecognized keyword arguments: \\['bogus'\\]"):
        imdb.load_data(bogus=1)


def test_imdb_word_index(keras_dir, monkeypatch):
    path = keras_dir / "imdb_word_index.json"
    path.write_text(json.dumps({"the": 1, "movie": 17}))
    monkeypatch.setattr(imdb, "WORD_INDEX_HASH", _md5(path))
    assert imdb.get_word_index() == {"the": 1, "movie": 17}


def test_imdb_pickle_that_runs_code_is_refused(keras_dir, monkeypatch):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = keras_dir / "imdb.npz"
    arr = np.empty(1, dtype=object)
    arr[0] = Evil()
    np.savez(path, x_train=arr, y_train=np.array([0]), x_test=arr, y_test=np.array([0]))
    monkeypatch.setattr(imdb, "FILE_HASH", _md5(path))
    with pytest.raises(DatasetError, match="refused: global 'posix.system'|refused: global 'os.system'"):
        imdb.load_data()


def test_imdb_wrong_hash_offline_names_the_path_and_the_url(keras_dir):
    (keras_dir / "imdb.npz").write_bytes(b"not the file")
    with pytest.raises(DatasetError) as info:
        imdb.load_data()
    message = str(info.value)
    assert "a copy with the wrong hash is at " + str(keras_dir / "imdb.npz") in message
    assert "Fetch https://s3.amazonaws.com/text-datasets/imdb.npz by hand" in message
    assert f"put it at {keras_dir / 'imdb.npz'}" in message and imdb.FILE_HASH in message


def test_imdb_missing_offline_is_one_clear_error(keras_dir):
    with pytest.raises(DatasetError, match="imdb.npz is not in the cache and could not be downloaded") \
            as info:
        imdb.load_data()
    assert "network disabled" in str(info.value) and str(keras_dir) in str(info.value)
    assert os.listdir(keras_dir) == []  # nothing partial left behind


# ------------------------------------------------------------------------------------------- reuters


def test_reuters_split_and_word_index(keras_dir, monkeypatch):
    xs = [[i % 7 + 1] * (i % 4 + 1) for i in range(10)]
    path = keras_dir / "reuters.npz"
    np.savez(path, x=_objects(xs), y=np.arange(10) % 3)
    monkeypatch.setattr(reuters, "FILE_HASH", _md5(path))
    (x_train, y_train), (x_test, y_test) = reuters.load_data(test_split=0.3)
    assert len(x_train) == 7 and len(x_test) == 3 and x_train.dtype == object
    order = _keras_order(10, np.random.RandomState(113))
    assert y_train.tolist() + y_test.tolist() == [(np.arange(10) % 3)[i] for i in order]
    assert list(x_train[0]) == [1] + [w + 3 for w in xs[order[0]]]
    (x_train, _), (x_test, _) = reuters.load_data(maxlen=3, test_split=0.5)
    assert all(len(x) < 3 for x in list(x_train) + list(x_test)) and len(x_train) + len(x_test) == 3
    with pytest.raises(ValueError, match="test_split=1"):
        reuters.load_data(test_split=1)
    wi = keras_dir / "reuters_word_index.json"
    wi.write_text('{"said": 1}')
    monkeypatch.setattr(reuters, "WORD_INDEX_HASH", _md5(wi))
    assert reuters.get_word_index() == {"said": 1}


# ------------------------------------------------------------------------------------------- cifar100


def _cifar100_archive(path, n_train=5, n_test=3):
    rng = np.random.default_rng(0)
    parts = {}
    with tarfile.open(path, "w:gz") as tar:
        for split, n in (("train", n_train), ("test", n_test)):
            d = {b"filenames": [b"a.png"] * n, b"batch_label": b"x",
                 b"fine_labels": [int(v) for v in rng.integers(0, 100, n)],
                 b"coarse_labels": [int(v) for v in rng.integers(0, 20, n)],
                 b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8)}
            parts[split] = d
            blob = pickle.dumps(d, protocol=2)
            info = tarfile.TarInfo(f"cifar-100-python/{split}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return parts


def test_cifar100_untars_and_reads_both_label_modes(keras_dir, monkeypatch):
    archive = keras_dir / "cifar-100-python.tar.gz"
    parts = _cifar100_archive(archive)
    monkeypatch.setattr(cifar100, "FILE_HASH", _md5(archive))
    (x_train, y_train), (x_test, y_test) = cifar100.load_data()
    assert (keras_dir / "cifar-100-python" / "train").is_file()  # extracted next to the archive
    assert x_train.shape == (5, 32, 32, 3) and x_train.dtype == np.uint8 and y_train.shape == (5, 1)
    assert x_test.shape == (3, 32, 32, 3)
    row = parts["train"][b"data"][2]
    np.testing.assert_array_equal(x_train[2, :, :, 1], row[1024:2048].reshape(32, 32))  # G plane
    assert y_train[:, 0].tolist() == parts["train"][b"fine_labels"]
    (_, y_coarse), _ = cifar100.load_data(label_mode="coarse")
    assert y_coarse[:, 0].tolist() == parts["train"][b"coarse_labels"]
    with pytest.raises(ValueError, match="label_mode='medium' must be one of 'fine', 'coarse'"):
        cifar100.load_data("medium")


# ------------------------------------------------------------------------------------------- boston


def test_boston_housing_split(keras_dir, monkeypatch):
    x = np.arange(20 * 13, dtype=np.float64).reshape(20, 13)
    y = np.arange(20, dtype=np.float64)
    np.savez(keras_dir / "boston_housing.npz", x=x, y=y)
    monkeypatch.setattr(boston_housing, "FILE_HASH",
                        hashlib.sha256(open(keras_dir / "boston_housing.npz", "rb").read()).hexdigest())
    (x_train, y_train), (x_test, y_test) = boston_housing.load_data()
    assert x_train.shape == (16, 13) and x_test.shape == (4, 13) and y_train.dtype == np.float64
    order = _keras_order(20, np.random.RandomState(113))
    assert y_train.tolist() + y_test.tolist() == order.tolist()
    np.testing.assert_array_equal(x_train[0], x[order[0]])


# ------------------------------------------------------------------------------------------- get_file


@pytest.fixture
def file_urls(monkeypatch):
    def opener(url, timeout=None):
        assert url.startswith("file://"), f"test tried to reach {url}"
        return urllib.request.urlopen(url, timeout=timeout)

    monkeypatch.setattr(_files, "_urlopen", opener)


def test_get_file_downloads_into_cache_subdir_and_checks_the_hash(tmp_path, file_urls):
    src = tmp_path / "server" / "w.txt"
    src.parent.mkdir()
    src.write_text("weights")
    cache = tmp_path / "cache"
    got = get_file("w.txt", origin="file://" + str(src), cache_dir=str(cache), cache_subdir="models",
                   file_hash=_md5(src))
    assert got == str(cache / "models" / "w.txt") and open(got).read() == "weights"
    assert validate_file(got, _md5(src)) and not validate_file(got, "0" * 32)
    # md5_hash (the deprecated spelling) is checked too: a wrong hash keeps nothing
    with pytest.raises(DatasetError, match="hash mismatch"):
        get_file("v.txt", origin="file://" + str(src), cache_dir=str(cache), md5_hash="0" * 32)
    assert not (cache / "datasets" / "v.txt").exists()


def test_get_file_redownloads_a_stale_copy(tmp_path, file_urls, capsys):
    src = tmp_path / "server.bin"
    src.write_bytes(b"new")
    cache = tmp_path / "cache"
    (cache / "datasets").mkdir(parents=True)
    (cache / "datasets" / "f.bin").write_bytes(b"old")
    got = get_file("f.bin", "file://" + str(src), cache_dir=str(cache),
                   file_hash=hashlib.sha256(b"new").hexdigest())
    assert open(got, "rb").read() == b"new"
    assert "hash does not match" in capsys.readouterr().err


def test_get_file_extract_zip_and_untar(tmp_path, file_urls):
    cache = tmp_path / "cache"
    (cache / "datasets").mkdir(parents=True)
    with zipfile.ZipFile(cache / "datasets" / "z.zip", "w") as z:
        z.writestr("inner/a.txt", "A")
    got = get_file("z.zip", "https://example.org/z.zip", cache_dir=str(cache), extract=True)
    assert got.endswith("z.zip") and (cache / "datasets" / "inner" / "a.txt").read_text() == "A"
    with tarfile.open(cache / "datasets" / "pack.tar.gz", "w:gz") as tar:
        blob = b"B"
        info = tarfile.TarInfo("pack/b.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(blob))
    folder = get_file("pack", "https://example.org/pack.tar.gz", untar=True, cache_dir=str(cache))
    assert folder == str(cache / "datasets" / "pack")
    assert (cache / "datasets" / "pack" / "b.txt").read_bytes() == b"B"


def test_get_file_refuses_archive_members_outside_the_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "datasets").mkdir(parents=True)
    with zipfile.ZipFile(cache / "datasets" / "evil.zip", "w") as z:
        z.writestr("../escape.txt", "x")
    with pytest.raises(DatasetError, match="'../escape.txt' would land outside"):
        get_file("evil.zip", "https://example.org/evil.zip", cache_dir=str(cache), extract=True)
    assert not (cache / "escape.txt").exists()
    with pytest.raises(ValueError, match="archive_format 'rar' is not supported"):
        get_file("evil.zip", "https://example.org/evil.zip", cache_dir=str(cache), extract=True,
                 archive_format="rar")


def test_get_file_finds_files_in_arignote_data(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "boston_housing.npz").write_bytes(b"x")
    assert get_file("boston_housing.npz", "https://example.org/b.npz") == str(data / "boston_housing.npz")
    with pytest.raises(ValueError, match="hash_algorithm='sha1'"):
        get_file("boston_housing.npz", "https://example.org/b.npz", file_hash="ab", hash_algorithm="sha1")


def test_get_file_default_cache_is_keras_home(tmp_path, monkeypatch, home):
    keras_home = tmp_path / "kh"
    (keras_home / "models").mkdir(parents=True)
    (keras_home / "models" / "w.h5").write_bytes(b"w")
    monkeypatch.setenv("KERAS_HOME", str(keras_home))
    got = get_file("w.h5", "https://example.org/w.h5", cache_subdir="models")
    assert got == str(keras_home / "models" / "w.h5")
    monkeypatch.delenv("KERAS_HOME")
    with pytest.raises(DatasetError, match=f"put it at {home / '.keras' / 'models' / 'w.h5'}"):
        get_file("w.h5", "https://example.org/w.h5", cache_subdir="models")
