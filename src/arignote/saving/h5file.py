"""Keras 2's HDF5 file layout, read and written with h5py (no Keras needed).

A whole-model file (``model.save``)::

    /  attrs: keras_version, backend, model_config (JSON), training_config (JSON, when compiled)
    /model_weights            attrs: layer_names, backend, keras_version
    /model_weights/<layer>    attrs: weight_names ("<layer>/kernel:0", ...)
    /model_weights/<layer>/<layer>/kernel:0    the arrays (Keras layout)
    /optimizer_weights        attrs: weight_names; datasets named by them

A weights file (``model.save_weights``) is the ``model_weights`` group at the root. Strings are
written as h5py 2 wrote them for Keras 2 (fixed-length byte strings), and read whether they come
back as bytes (h5py 2 files) or ``str`` (files written under h5py 3). Long name lists are split
into ``layer_names0``, ``layer_names1``, ... as Keras does past the 64 KB attribute limit.

Example::

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.h5")
    >>> with open_for_write(path) as f:
    ...     write_names(f, "layer_names", ["dense_1"])
    >>> with open_for_read(path) as f:
    ...     read_names(f, "layer_names")
    ['dense_1']
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any

import h5py
import numpy as np

from arignote import checkpoint

__all__ = ["HDF5_SIGNATURE", "is_hdf5", "is_h5_object", "is_stream", "describe", "open_for_read",
           "open_for_write", "read_str", "write_str", "read_names", "write_names", "write_layer_group",
           "read_layer_group", "read_array", "HEADER_LIMIT"]  # fmt: skip

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
HEADER_LIMIT = 64512  # bytes an HDF5 object header can hold for attributes (Keras's limit)


def is_hdf5(path: str) -> bool:
    """True when ``path`` starts with the HDF5 signature (at offset 0; user blocks are not used by Keras)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(8) == HDF5_SIGNATURE
    except OSError:
        return False


def is_h5_object(target: Any) -> bool:
    """True for an open ``h5py.File`` or ``h5py.Group`` (Keras 2.3.1's ``save_model``/``load_model``
    also take those and write into / read from them)."""
    return isinstance(target, h5py.Group)


def is_stream(target: Any, method: str) -> bool:
    """True for a file-like object with a callable ``method`` (``"write"`` or ``"read"``): an open
    binary file or a ``BytesIO``, which Keras 2.3.1 also takes (the HDF5 image as bytes)."""
    return not isinstance(target, (str, bytes, os.PathLike)) and callable(getattr(target, method, None))


def describe(target: Any) -> str:
    """How a file, group or stream is named in messages."""
    if is_h5_object(target):
        return f"{target.file.filename}:{target.name}"
    if is_stream(target, "read") or is_stream(target, "write"):
        return getattr(target, "name", None) if isinstance(getattr(target, "name", None), str) else \
            f"<{type(target).__name__} stream>"
    return os.fspath(target)


@contextlib.contextmanager
def open_for_read(path: Any) -> Iterator[h5py.Group]:
    """Open an HDF5 file; one h5py can't open (truncated, corrupt) is a ValueError naming it. An open
    ``h5py.File``/``Group`` is read as it is (and left open); a binary stream is read to its end and
    opened in memory."""
    if is_h5_object(path):
        yield path
        return
    source = io.BytesIO(path.read()) if is_stream(path, "read") else path
    try:
        f = h5py.File(source, "r")
    except OSError as err:
        raise ValueError(f"{describe(path)}: an HDF5 file that h5py cannot open ({err}); it may be "
                         "truncated or corrupt") from None
    with f:
        yield f


@contextlib.contextmanager
def open_for_write(path: Any) -> Iterator[h5py.Group]:
    """Build the file in memory, then write it with :func:`arignote.checkpoint.atomic_write_bytes`
    (temporary file beside ``path``, fsync, rename): a failed save leaves the previous file intact
    and raises :class:`arignote.checkpoint.CheckpointSaveError` with the cause. An open
    ``h5py.File``/``Group`` is written into as it is (Keras 2.3.1's layout at that group, left
    open); a binary stream gets the finished file's bytes (``stream.write``)."""
    if is_h5_object(path):
        yield path
        return
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        yield f
    if is_stream(path, "write"):
        path.write(buffer.getvalue())
    else:
        checkpoint.atomic_write_bytes(os.fspath(path), buffer.getvalue())


def _text(value: Any) -> str:
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf8")
    return str(value)


def read_str(obj: Any, name: str) -> str | None:
    """A string attribute (bytes or str in the file), or None when absent; one written in numbered
    chunks (``name0``, ``name1``, ... : see :func:`write_str`) is joined back."""
    if name not in obj.attrs:
        if f"{name}0" not in obj.attrs:
            return None
        return "".join(read_names(obj, name))
    value = obj.attrs[name]
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    return _text(value)


def write_str(obj: Any, name: str, value: str) -> None:
    """A fixed-length byte string as Keras 2 wrote it. One over HDF5's attribute limit (a model whose
    layer names are huge) is cut into pieces at character boundaries and stored as numbered chunks
    ``name0``, ``name1``, ... (Keras 2.3.1's scheme for long name lists; Keras 2.3.1 itself cannot
    write such a ``model_config`` at all, and reads only the unchunked form)."""
    data = value.encode("utf8")
    _clear(obj, name)
    if len(data) <= HEADER_LIMIT:
        obj.attrs[name] = np.bytes_(data)
        return
    pieces, piece = [], ""
    for char in value:  # greedy, by encoded size, never splitting a character
        if len((piece + char).encode("utf8")) > HEADER_LIMIT // 2:
            pieces.append(piece)
            piece = ""
        piece += char
    pieces.append(piece)
    write_names(obj, name, pieces, chunk_always=True)


def read_names(obj: Any, name: str) -> list[str]:
    """A list-of-names attribute, also when Keras chunked it into ``name0``, ``name1``, ..."""
    if name in obj.attrs:
        return [_text(v) for v in np.atleast_1d(obj.attrs[name])]
    out: list[str] = []
    i = 0
    while f"{name}{i}" in obj.attrs:
        out += [_text(v) for v in np.atleast_1d(obj.attrs[f"{name}{i}"])]
        i += 1
    return out


def _clear(obj: Any, name: str) -> None:
    """Drop ``name`` and its chunks ``name0``, ``name1``, ... (a group written into a second time)."""
    if name in obj.attrs:
        del obj.attrs[name]
    i = 0
    while f"{name}{i}" in obj.attrs:
        del obj.attrs[f"{name}{i}"]
        i += 1


def write_names(obj: Any, name: str, names: list[str], chunk_always: bool = False) -> None:
    """Fixed-length byte strings as Keras 2 wrote them; chunked past the header limit (as Keras
    2.3.1's ``save_attributes_to_hdf5_group``: ``name0``, ``name1``, ... each under the limit)."""
    encoded = [n.encode("utf8") for n in names]
    too_long = [n for n in names if len(n.encode("utf8")) > HEADER_LIMIT]
    if too_long:
        raise ValueError(f"names longer than {HEADER_LIMIT} bytes cannot be stored: {too_long[:3]}")
    _clear(obj, name)
    if not encoded:
        obj.attrs[name] = np.array([], dtype=np.float64)  # what Keras 2 wrote for a layer without weights
        return
    data = np.array(encoded, dtype="S")
    chunks = 1
    parts = [data]
    while any(p.nbytes > HEADER_LIMIT for p in parts):
        chunks += 1
        parts = np.array_split(data, chunks)
    if chunks == 1 and not chunk_always:
        obj.attrs[name] = data
    else:
        for i, part in enumerate(parts):
            obj.attrs[f"{name}{i}"] = part


def write_layer_group(parent: Any, layer_name: str, names: list[str], arrays: list[np.ndarray]) -> None:
    """``parent/<layer_name>`` with its ``weight_names`` and one dataset per weight (nested by '/')."""
    group = parent.create_group(layer_name)
    write_names(group, "weight_names", names)
    for name, value in zip(names, arrays):
        value = np.asarray(value)
        dset = group.create_dataset(name, value.shape, dtype=value.dtype)
        if value.shape:
            dset[:] = value
        else:
            dset[()] = value


def read_layer_group(parent: Any, layer_name: str, where: str) -> tuple[list[str], list[np.ndarray]]:
    """``(weight_names, arrays)`` of ``parent/<layer_name>``; a missing group names the file."""
    if layer_name not in parent:
        raise ValueError(f"{where}: layer '{layer_name}' is listed in layer_names but has no group")
    group = parent[layer_name]
    names = read_names(group, "weight_names")
    arrays = []
    for name in names:
        if name not in group:
            raise ValueError(f"{where}: weight '{name}' of layer '{layer_name}' is listed but missing")
        arrays.append(read_array(group, name, f"{where}: weight '{name}' of layer '{layer_name}'"))
    return names, arrays


# a compressed dataset may declare this many times the bytes it stores (gzip's best is ~1000x)
_MAX_COMPRESSION = 1024


def read_array(group: Any, name: str, what: str) -> np.ndarray:
    """The numeric dataset ``group[name]``, read only after checks: it lives in this file (no external
    link, external storage or virtual dataset, which would read another file on this machine, e.g.
    ``/dev/zero`` or a private key, into the weights), and its declared size fits the bytes the file
    stores for it (a damaged or forged file declaring a 1 GiB, or 4 TiB, shape over no data would
    have h5py allocate and fill it). ``what`` names it in the ValueError.

    >>> import h5py, io
    >>> with h5py.File(io.BytesIO(), "w") as f:
    ...     ok = read_array(f, f.create_dataset("w", data=np.ones(3)).name, "w").tolist()
    ...     _ = f.create_dataset("huge", shape=(1 << 20, 1 << 20), dtype="f4", chunks=(64, 64))
    ...     try:
    ...         read_array(f, "huge", "huge")
    ...     except ValueError as err:
    ...         print(ok, str(err)[:48])
    [1.0, 1.0, 1.0] huge declares a (1048576, 1048576) float32 array
    """
    if isinstance(group.get(name, getlink=True), h5py.ExternalLink):
        raise ValueError(f"{what} is a link to another file, which a Keras file never holds")
    obj = group[name]
    if not isinstance(obj, h5py.Dataset):
        raise ValueError(f"{what} is an HDF5 {type(obj).__name__}, not a dataset of numbers")
    if obj.dtype.kind not in "fiub":
        raise ValueError(f"{what} holds {obj.dtype} data, not numbers")
    plist = obj.id.get_create_plist()
    if plist.get_external_count() or plist.get_layout() not in (h5py.h5d.COMPACT, h5py.h5d.CONTIGUOUS,
                                                                h5py.h5d.CHUNKED):
        raise ValueError(f"{what} reads its data from outside the file (external or virtual storage), "
                         "which a Keras file never does")
    declared = int(obj.size) * obj.dtype.itemsize
    stored = int(obj.id.get_storage_size())
    compressed = obj.compression is not None or bool(obj.chunks and plist.get_nfilters())
    allowed = stored * (_MAX_COMPRESSION if compressed else 1)
    if declared > allowed and obj.size > 1:
        raise ValueError(f"{what} declares a {obj.shape} {obj.dtype} array ({declared} bytes) but the file "
                         f"stores {stored} bytes for it: the file is truncated or damaged")
    return np.asarray(obj)
