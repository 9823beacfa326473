"""arignote.datasets with small fixtures written in the official formats (never downloads)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import tarfile
import urllib.error

import numpy as np
import pytest

from arignote import config
from arignote.datasets import DatasetError, _files, cifar10, digits, fashion_mnist, mnist, synthetic
from arignote.datasets._files import Remote


@pytest.fixture(autouse=True)
def data_dirs(tmp_path, monkeypatch):
    """ARIGNOTE_DATA, HOME and the Debian folder all under tmp_path; any network access fails."""
    dirs = {"data": tmp_path / "data", "home": tmp_path / "home", "debian": tmp_path / "debian"}
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setenv("ARIGNOTE_DATA", str(dirs["data"]))
    monkeypatch.setenv("HOME", str(dirs["home"]))
    monkeypatch.setattr(_files, "DEBIAN_DIR", str(dirs["debian"]))

    def no_network(url, timeout=None):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(_files, "_urlopen", no_network)
    config.reload()
    return dirs


def _sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


# ---------------------------------------------------------------------------------------- writers


def write_idx(path, array: np.ndarray, gz: bool = True) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    blob = header + array.astype(np.uint8).tobytes()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with (gzip.open(str(path) + ".gz", "wb") if gz else open(path, "wb")) as fh:
        fh.write(blob)


def idx_set(folder, n_train=6, n_test=4, seed=0, gz=True):
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for name, array in arrays.items():
        write_idx(os.path.join(folder, name), array, gz=gz)
    return arrays


def trust_idx(monkeypatch, module, folder):
    """Point the module's official hashes at the fixture files (so verify=True passes)."""
    remotes = {name: Remote(r.name, (_sha256(os.path.join(folder, r.name)),), r.urls)
               for name, r in module.IDX.items()}
    monkeypatch.setattr(module, "IDX", remotes)


def cifar_batch(n, seed):
    rng = np.random.default_rng(seed)
    return {
        b"batch_label": b"training batch",
        b"labels": [int(v) for v in rng.integers(0, 10, n)],
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        b"filenames": [b"img_%d.png" % i for i in range(n)],
    }


CIFAR_NAMES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


def cifar_folder(folder, n=3):
    os.makedirs(folder, exist_ok=True)
    batches = {}
    for seed, name in enumerate(CIFAR_NAMES):
        batches[name] = cifar_batch(n, seed)
        with open(os.path.join(folder, name), "wb") as fh:
            pickle.dump(batches[name], fh, protocol=2)
    return batches


def trust_cifar_folder(monkeypatch, folder):
    for name in CIFAR_NAMES:
        digest = hashlib.md5(open(os.path.join(folder, name), "rb").read()).hexdigest()
        monkeypatch.setitem(cifar10.BATCH_MD5, name, digest)


def cifar_archive(path, batches_dir):
    with tarfile.open(path, "w:gz") as tar:
        tar.add(batches_dir, arcname="cifar-10-batches-py")


# ---------------------------------------------------------------------------------------- MNIST


def _mnist_npz(path, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {"x_train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
              "y_train": np.arange(5, dtype=np.uint8),
              "x_test": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
              "y_test": np.arange(3, dtype=np.uint8)}
    np.savez(path, **arrays)
    return arrays


def test_mnist_npz_from_arignote_data(data_dirs, monkeypatch):
    arrays = _mnist_npz(data_dirs["data"] / "mnist.npz")
    monkeypatch.setattr(mnist, "NPZ", Remote("mnist.npz", (_sha256(data_dirs["data"] / "mnist.npz"),), ()))
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert x_train.dtype == np.uint8 and x_train.shape == (5, 28, 28) and y_test.shape == (3,)
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])
    assert mnist.find() == str(data_dirs["data"] / "mnist.npz")


def test_mnist_npz_with_wrong_hash_is_refused_unless_verify_false(data_dirs):
    _mnist_npz(data_dirs["data"] / "mnist.npz")
    with pytest.raises(DatasetError, match="not the official file") as info:
        mnist.load_data()
    assert str(data_dirs["data"] / "mnist.npz") in str(info.value) and "verify=False" in str(info.value)
    (x_train, _), _ = mnist.load_data(verify=False)
    assert x_train.shape == (5, 28, 28)


def test_mnist_idx_folder_in_keras_cache(data_dirs, monkeypatch):
    folder = data_dirs["home"] / ".keras" / "datasets" / "mnist"
    arrays = idx_set(folder)
    trust_idx(monkeypatch, mnist, folder)
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(y_train, arrays["train-labels-idx1-ubyte"])
    np.testing.assert_array_equal(x_test, arrays["t10k-images-idx3-ubyte"])
    assert y_test.dtype == np.uint8 and y_test.shape == (4,)


def test_uncompressed_idx_files_are_read(data_dirs):
    folder = data_dirs["data"] / "mnist"
    arrays = idx_set(folder, gz=False)
    (x_train, _), _ = mnist.load_data()  # no published hash for raw idx: structure is checked
    np.testing.assert_array_equal(x_train, arrays["train-images-idx3-ubyte"])


def test_truncated_idx_file_names_the_file(data_dirs):
    folder = data_dirs["data"] / "mnist"
    idx_set(folder, gz=False)
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(DatasetError, match="truncated") as info:
        mnist.load_data()
    assert str(path) in str(info.value)
    path.write_bytes(b"\x00\x00\x99\x03garbage")
    with pytest.raises(DatasetError, match="not an idx file"):
        mnist.load_data()


def test_search_order_prefers_arignote_data(data_dirs, monkeypatch):
    keras = data_dirs["home"] / ".keras" / "datasets"
    keras.mkdir(parents=True)
    _mnist_npz(keras / "mnist.npz", seed=1)
    assert mnist.find() == str(keras / "mnist.npz")
    _mnist_npz(data_dirs["data"] / "mnist.npz", seed=2)
    assert mnist.find() == str(data_dirs["data"] / "mnist.npz")
    home = data_dirs["home"]
    assert _files.search_dirs() == [str(data_dirs["data"]), str(home / ".arignote" / "datasets"), str(keras),
                                    str(data_dirs["debian"])]


# ---------------------------------------------------------------------------------------- Fashion-MNIST


def test_fashion_mnist_from_the_debian_folder(data_dirs, monkeypatch):
    folder = data_dirs["debian"] / "fashion-mnist"
    arrays = idx_set(folder, seed=3)
    trust_idx(monkeypatch, fashion_mnist, folder)
    assert fashion_mnist.find() == str(folder)
    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data()
    np.testing.assert_array_equal(x_test, arrays["t10k-images-idx3-ubyte"])
    np.testing.assert_array_equal(y_train, arrays["train-labels-idx1-ubyte"])


def test_fashion_mnist_accepts_the_official_and_debian_hashes():
    # The two known-good hashes of each file: the zalando md5 and the Debian package's sha256.
    assert fashion_mnist.IDX["train-images-idx3-ubyte"].hashes == (
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7")
    assert _files.DEBIAN_DIR.endswith("debian")  # the fixture redirected the real /usr/share/datasets


def test_fashion_mnist_image_label_mismatch(data_dirs):
    folder = data_dirs["data"] / "fashion-mnist"
    idx_set(folder)
    write_idx(str(folder / "train-labels-idx1-ubyte"), np.zeros(5, np.uint8))
    with pytest.raises(DatasetError, match="do not belong together"):
        fashion_mnist.load_data(verify=False)


# ---------------------------------------------------------------------------------------- CIFAR-10


def _expected_cifar(batches):
    def conv(b):
        x = b[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return x, np.array(b[b"labels"], dtype=np.uint8).reshape(-1, 1)

    train = [conv(batches[n]) for n in CIFAR_NAMES[:5]]
    x = np.concatenate([t[0] for t in train])
    y = np.concatenate([t[1] for t in train])
    return (x, y), conv(batches["test_batch"])


def test_cifar10_batches_folder(data_dirs, monkeypatch):
    folder = data_dirs["data"] / "cifar-10-batches-py"
    batches = cifar_folder(folder)
    trust_cifar_folder(monkeypatch, folder)
    (x_train, y_train), (x_test, y_test) = cifar10.load_data()
    (ex, ey), (tx, ty) = _expected_cifar(batches)
    assert x_train.shape == (15, 32, 32, 3) and x_train.dtype == np.uint8
    assert y_train.shape == (15, 1) and y_train.dtype == np.uint8 and y_test.shape == (3, 1)
    np.testing.assert_array_equal(x_train, ex)
    np.testing.assert_array_equal(y_train, ey)
    np.testing.assert_array_equal(x_test, tx)
    # Channel layout: pixel (0, 0) of image 0 is (R, G, B) = data[0], data[1024], data[2048].
    d = batches["data_batch_1"][b"data"][0]
    assert tuple(x_train[0, 0, 0]) == (d[0], d[1024], d[2048])


def test_cifar10_channels_first_as_keras_2(data_dirs, monkeypatch):
    """Keras 2.3.1's cifar10.load_data transposes to channels last only when image_data_format says so:
    a Theano user's channels_first setting gets (N, 3, 32, 32)."""
    folder = data_dirs["data"] / "cifar-10-batches-py"
    batches = cifar_folder(folder)
    trust_cifar_folder(monkeypatch, folder)
    (ex, _), _ = _expected_cifar(batches)
    config.configure(image_data_format="channels_first")
    (x_train, _), (x_test, _) = cifar10.load_data()
    assert x_train.shape == (15, 3, 32, 32) and x_test.shape == (3, 3, 32, 32)
    np.testing.assert_array_equal(x_train, ex.transpose(0, 3, 1, 2))


def test_cifar_load_batch_as_keras_2(data_dirs):
    from arignote.datasets import cifar

    batch = cifar_batch(4, 7)
    path = data_dirs["data"] / "data_batch_1"
    with open(path, "wb") as fh:
        pickle.dump(batch, fh, protocol=2)
    data, labels = cifar.load_batch(str(path))
    assert data.shape == (4, 3, 32, 32) and data.dtype == np.uint8
    assert labels == batch[b"labels"] and isinstance(labels, list)
    np.testing.assert_array_equal(data.reshape(4, 3072), batch[b"data"])
    assert cifar10.load_batch is cifar.load_batch
    with pytest.raises(DatasetError, match="b'fine_labels'"):
        cifar.load_batch(str(path), label_key="fine_labels")


def test_cifar10_archive_read_without_extracting(data_dirs, monkeypatch, tmp_path):
    batches = cifar_folder(tmp_path / "build" / "cifar-10-batches-py")
    archive = data_dirs["home"] / ".keras" / "datasets" / "cifar-10-batches-py.tar.gz"  # Keras's name
    archive.parent.mkdir(parents=True)
    cifar_archive(archive, tmp_path / "build" / "cifar-10-batches-py")
    monkeypatch.setattr(cifar10, "ARCHIVE", Remote("cifar-10-python.tar.gz", (_sha256(archive),), ()))
    assert cifar10.find() == str(archive)
    (x_train, y_train), (x_test, y_test) = cifar10.load_data()
    (ex, ey), (tx, ty) = _expected_cifar(batches)
    np.testing.assert_array_equal(x_train, ex)
    np.testing.assert_array_equal(y_test, ty)
    assert not (archive.parent / "cifar-10-batches-py").exists()


def test_cifar10_wrong_batch_hash(data_dirs):
    cifar_folder(data_dirs["data"] / "cifar-10-batches-py")
    with pytest.raises(DatasetError, match="data_batch_1 is not the official file"):
        cifar10.load_data()
    (x_train, _), _ = cifar10.load_data(verify=False)
    assert x_train.shape == (15, 32, 32, 3)


def test_cifar10_pickle_that_runs_code_is_refused(data_dirs, tmp_path):
    folder = data_dirs["data"] / "cifar-10-batches-py"
    cifar_folder(folder)
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with open(folder / "data_batch_3", "wb") as fh:
        pickle.dump({b"data": Evil()}, fh, protocol=2)
    with pytest.raises(DatasetError, match="not allowed") as info:
        cifar10.load_data(verify=False)
    assert "data_batch_3" in str(info.value)
    assert not marker.exists()


def test_cifar10_truncated_pickle(data_dirs):
    folder = data_dirs["data"] / "cifar-10-batches-py"
    cifar_folder(folder)
    blob = (folder / "test_batch").read_bytes()
    (folder / "test_batch").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(DatasetError, match="test_batch is truncated or damaged"):
        cifar10.load_data(verify=False)


# ---------------------------------------------------------------------------------------- downloads


def _file_url(path) -> str:
    return "file://" + str(path)


@pytest.fixture
def allow_file_urls(monkeypatch):
    import urllib.request

    def opener(url, timeout=None):
        assert url.startswith("file://"), f"test tried to reach {url}"
        return urllib.request.urlopen(url, timeout=timeout)

    monkeypatch.setattr(_files, "_urlopen", opener)


def test_download_verifies_hash_and_writes_atomically(data_dirs, monkeypatch, tmp_path, allow_file_urls):
    source = tmp_path / "server" / "mnist.npz"
    source.parent.mkdir()
    arrays = _mnist_npz(source)
    monkeypatch.setattr(mnist, "NPZ", Remote("mnist.npz", (_sha256(source),), (_file_url(source),)))
    (x_train, _), _ = mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    assert sorted(os.listdir(data_dirs["data"])) == ["mnist.npz"]  # downloaded into ARIGNOTE_DATA


def test_download_hash_mismatch_leaves_nothing(data_dirs, monkeypatch, tmp_path, allow_file_urls):
    source = tmp_path / "server" / "cifar-10-python.tar.gz"
    source.parent.mkdir()
    source.write_bytes(b"not the archive")
    remote = Remote("cifar-10-python.tar.gz", ("0" * 64,), (_file_url(source),))
    monkeypatch.setattr(cifar10, "ARCHIVE", remote)
    with pytest.raises(DatasetError, match="hash mismatch") as info:
        cifar10.load_data()
    message = str(info.value)
    assert "cifar-10-batches-py/" in message and str(data_dirs["data"]) in message
    assert os.listdir(data_dirs["data"]) == []


def test_download_tries_the_next_mirror(data_dirs, monkeypatch, tmp_path, allow_file_urls):
    folder = tmp_path / "server"
    arrays = idx_set(folder, seed=5)
    remotes = {name: Remote(r.name, (_sha256(folder / r.name),),
                            (_file_url(folder / "missing" / r.name), _file_url(folder / r.name)))
               for name, r in fashion_mnist.IDX.items()}
    monkeypatch.setattr(fashion_mnist, "IDX", remotes)
    (x_train, _), _ = fashion_mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["train-images-idx3-ubyte"])
    assert sorted(os.listdir(data_dirs["data"] / "fashion-mnist")) == sorted(r.name for r in remotes.values())


def test_offline_error_says_where_to_put_which_files(data_dirs, monkeypatch):
    monkeypatch.delenv("ARIGNOTE_DATA")
    config.reload()
    with pytest.raises(DatasetError) as info:
        fashion_mnist.load_data()
    message = str(info.value)
    assert "Fashion-MNIST was not found and could not be downloaded" in message
    assert "network disabled" in message
    assert str(data_dirs["home"] / ".keras" / "datasets") in message and "ARIGNOTE_DATA" in message
    assert "train-images-idx3-ubyte.gz" in message and "8d4fb7e6c68d591d4c3dfef9ec88bf0d" in message
    with pytest.raises(DatasetError, match="mnist.npz"):
        mnist.load_data()
    # Nothing was created in the default download dir by the failed attempts except the empty folder.
    arignote_dir = data_dirs["home"] / ".arignote" / "datasets"
    leftovers = [f for _, _, files in os.walk(arignote_dir) for f in files]
    assert leftovers == []


# ---------------------------------------------------------------------------------------- digits, synthetic


def test_digits_are_the_real_uci_digits_shipped_in_the_package():
    (x_train, y_train), (x_test, y_test) = digits.load_data(test_split=0.2, seed=0)
    assert x_train.shape == (1438, 8, 8, 1) and x_test.shape == (359, 8, 8, 1)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    assert 0.0 <= x_train.min() and x_train.max() == 1.0
    y = np.concatenate([y_train, y_test])
    assert np.bincount(y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # The first image of the csv (a zero) is in there, scaled by 1/16.
    first = np.array([0, 0, 5, 13, 9, 1, 0, 0], dtype=np.float32) / 16
    x = np.concatenate([x_train, x_test])
    assert any(np.array_equal(img[0, :, 0], first) for img in x[np.concatenate([y_train, y_test]) == 0])
    again = digits.load_data(test_split=0.2, seed=0)
    np.testing.assert_array_equal(again[0][0], x_train)
    other = digits.load_data(test_split=0.5, seed=1)
    assert len(other[1][0]) == 898 and not np.array_equal(other[0][1][:50], y_train[:50])


def test_digits_need_no_scikit_learn_and_are_checked(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "sklearn", None)  # importing it would fail: it is not used
    assert digits.load_data()[0][0].shape == (1438, 8, 8, 1)
    assert os.path.getsize(digits.path()) < 100_000
    assert "CC BY 4.0" in open(os.path.join(os.path.dirname(digits.path()), "DIGITS-SOURCE.txt")).read()
    damaged = tmp_path / "digits.csv.gz"
    damaged.write_bytes(open(digits.path(), "rb").read()[:-10])
    monkeypatch.setattr(digits, "path", lambda: str(damaged))
    with pytest.raises(DatasetError, match="damaged.*reinstall arignote"):
        digits.load_data()
    with pytest.raises(ValueError, match="test_split"):
        digits.load_data(test_split=1.0)


def test_synthetic_is_deterministic_balanced_and_learnable():
    x, y = synthetic(shape=(8, 8, 1), classes=4, samples=400, seed=3)
    x2, y2 = synthetic(shape=(8, 8, 1), classes=4, samples=400, seed=3)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(synthetic(shape=(8, 8, 1), classes=4, samples=400, seed=4)[0], x)
    assert x.dtype == np.float32 and y.dtype == np.int64 and 0.0 <= x.min() and x.max() <= 1.0
    assert np.bincount(y).tolist() == [100, 100, 100, 100]
    # Learnable: nearest class mean (from the first half) classifies the second half well.
    means = np.stack([x[:200][y[:200] == c].mean(axis=0) for c in range(4)])
    dist = ((x[200:, None] - means[None]) ** 2).reshape(200, 4, -1).sum(-1)
    assert (dist.argmin(1) == y[200:]).mean() > 0.9
    with pytest.raises(ValueError, match="noise"):
        synthetic(noise=2.0)
    with pytest.raises(ValueError, match="shape"):
        synthetic(shape=(0, 3))


def test_restricted_unpickler_reads_plain_bytes_dicts():
    from arignote.datasets._formats import safe_unpickle

    blob = pickle.dumps({b"labels": [1, 2], b"data": np.ones((2, 3072), np.uint8)}, protocol=2)
    out = safe_unpickle(io.BytesIO(blob), "mem")
    assert out[b"labels"] == [1, 2] and out[b"data"].sum() == 6144


REAL_DEBIAN = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(REAL_DEBIAN),
                    reason="Debian package dataset-fashion-mnist not installed")
def test_real_debian_fashion_mnist(monkeypatch):
    monkeypatch.setattr(_files, "DEBIAN_DIR", os.path.dirname(REAL_DEBIAN))
    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data()  # hashes checked
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28) and x_train.dtype == np.uint8
    assert y_train[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert np.bincount(y_train).tolist() == [6000] * 10


def test_synthetic_noise_extremes():
    x, y = synthetic(shape=(3, 3), classes=2, samples=6, seed=0, noise=0.0)
    assert all(np.array_equal(x[i], x[j]) for i in range(6) for j in range(6) if y[i] == y[j])
    assert not np.array_equal(x[y == 0][0], x[y == 1][0])
    x, y = synthetic(shape=(3, 3), classes=2, samples=6, seed=0, noise=1.0)
    assert len({x[i].tobytes() for i in range(6)}) == 6  # all noise: every sample differs
