"""Random image transforms of Keras 2's ``ImageDataGenerator``, applied to a whole batch at once.

A batch is a channels-last numpy array ``(N, H, W, C)``. :func:`draw` draws the parameters of N
random transforms (the Keras keys ``theta``, ``tx``, ``ty``, ``shear``, ``zx``, ``zy``,
``flip_horizontal``, ``flip_vertical``, ``channel_shift_intensity``, ``brightness``, each an array
of N values) from a numpy ``Generator``; :func:`apply` applies them in Keras's order: affine warp,
channel shift, horizontal flip, vertical flip, brightness.

The affine warp is Keras's (``keras_preprocessing`` ``apply_affine_transform``, also behind
:mod:`arignote.preprocessing.affine_transformations`): the matrix ``rotation @ shift @ shear @ zoom``
about the centre ``(H/2 + 0.5, W/2 + 0.5)`` maps an output pixel ``(row, col)`` to the input point
it reads, computed in Keras's float64 order (:func:`keras_matrix`). :func:`warp` samples that point
as scipy.ndimage does with spline order 1 (bilinear, the default ``interpolation_order``) or 0
(nearest pixel, halves rounded up), for the whole batch in one ``torch.nn.functional.grid_sample``
call on the CPU (orders 2 to 5 go to SciPy). The points are first folded into the image as scipy's
``map_coordinate`` does for each ``fill_mode``: ``nearest`` (clamped), ``reflect`` (half-sample
symmetric: ``d c b a | a b c d | d c b a``), ``constant`` (points outside the image read ``cval``;
inside, interpolation uses image pixels only) and scipy's ``wrap`` (period ``size - 1``: the first
and last pixel overlap). ``ImageDataGenerator``'s ``wrap`` is tiling instead, period H and W
(``a b c d | a b c d``, scipy's "grid-wrap"): :func:`apply` asks :func:`warp` for ``grid-wrap``.
Samples whose transform is the identity are not resampled at all.

Example::

    >>> import numpy as np
    >>> x = np.arange(4, dtype="float32").reshape(1, 1, 4, 1)
    >>> p = identity(1); p["ty"] = np.array([1.0])            # read one pixel to the right
    >>> apply(x, p, fill_mode="nearest")[0, 0, :, 0].tolist()
    [1.0, 2.0, 3.0, 3.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["FILL_MODES", "draw", "identity", "transform_matrix_offset_center", "keras_matrices",
           "keras_matrix", "affine_matrices", "warp", "brightness", "apply"]

FILL_MODES = ("nearest", "constant", "reflect", "wrap")
_PADDING = {"nearest": "border", "constant": "border", "reflect": "reflection", "wrap": "border",
            "grid-wrap": "border"}


def identity(n: int) -> dict[str, Any]:
    """Parameters of ``n`` transforms that change nothing."""
    return {"theta": np.zeros(n), "tx": np.zeros(n), "ty": np.zeros(n), "shear": np.zeros(n),
            "zx": np.ones(n), "zy": np.ones(n),
            "flip_horizontal": np.zeros(n, bool), "flip_vertical": np.zeros(n, bool),
            "channel_shift_intensity": None, "brightness": None}


def _shift(rng: np.random.Generator, n: int, spec: Any, size: int) -> np.ndarray:
    """Keras 2 shifts: float ``r`` -> uniform in ``[-r, r)``; int ``k`` -> an integer in ``(-k, k)``;
    a list -> one of its values with a random sign. A range whose largest value is < 1 is a fraction
    of ``size``, otherwise pixels."""
    if isinstance(spec, (list, tuple, np.ndarray)):
        values = np.asarray(spec, dtype=float)
        out = rng.choice(values, n) * rng.choice([-1.0, 1.0], n)
    elif not spec:
        return np.zeros(n)
    elif isinstance(spec, (int, np.integer)):
        out = rng.integers(0, int(spec), n) * rng.choice([-1.0, 1.0], n)
    else:
        out = rng.uniform(-spec, spec, n)
    return out * size if np.max(spec) < 1 else out


def draw(rng: np.random.Generator, n: int, height: int, width: int, settings: Any) -> dict[str, Any]:
    """Parameters of ``n`` random transforms for images ``height`` x ``width``.

    ``settings`` has the ``ImageDataGenerator`` attributes (``rotation_range``, ``width_shift_range``,
    ``height_shift_range``, ``shear_range``, ``zoom_range`` as ``[lo, hi]``, ``horizontal_flip``,
    ``vertical_flip``, ``channel_shift_range``, ``brightness_range``). As in Keras, ``tx`` moves along
    the rows (height) and ``ty`` along the columns (width); angles are in degrees.
    """
    s = settings
    p = identity(n)
    if s.rotation_range:
        p["theta"] = rng.uniform(-s.rotation_range, s.rotation_range, n)
    p["tx"] = _shift(rng, n, s.height_shift_range, height)
    p["ty"] = _shift(rng, n, s.width_shift_range, width)
    if s.shear_range:
        p["shear"] = rng.uniform(-s.shear_range, s.shear_range, n)
    lo, hi = s.zoom_range
    if not (lo == 1 and hi == 1):
        p["zx"], p["zy"] = rng.uniform(lo, hi, (2, n))
    p["flip_horizontal"] = (rng.random(n) < 0.5) & bool(s.horizontal_flip)
    p["flip_vertical"] = (rng.random(n) < 0.5) & bool(s.vertical_flip)
    if s.channel_shift_range:
        p["channel_shift_intensity"] = rng.uniform(-s.channel_shift_range, s.channel_shift_range, n)
    if s.brightness_range is not None:
        p["brightness"] = rng.uniform(s.brightness_range[0], s.brightness_range[1], n)
    return p


def _dot(a: Any, b: Any) -> np.ndarray:
    """``a @ b`` for 3 x 3 matrices (or stacks of them), summed in plain float64 order by numpy's
    elementwise ops, so without fused multiply-adds: the bits numpy 1.x's ``np.dot`` gave Keras 2
    (newer BLAS kernels differ in the last bit, which decides the ties of an order-0 warp)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return (a[..., :, 0, None] * b[..., None, 0, :] + a[..., :, 1, None] * b[..., None, 1, :]
            + a[..., :, 2, None] * b[..., None, 2, :])


def _stack(n: int, *entries: Any) -> np.ndarray:
    """``(n, 3, 3)`` matrices from the 9 entries (scalars or arrays of n), row by row."""
    full = np.broadcast_arrays(np.zeros(n), *(np.asarray(e, float) for e in entries))[1:]
    return np.stack(full, axis=-1).reshape(n, 3, 3)


def transform_matrix_offset_center(matrix: Any, x: float, y: float) -> np.ndarray:
    """``matrix`` (3 x 3, or a stack of them) moved to act about the point ``(x / 2 + 0.5, y / 2 +
    0.5)`` of an image with ``x`` rows and ``y`` columns: Keras's centre, one pixel past the true
    centre ``((x - 1) / 2, (y - 1) / 2)`` along each axis (kept for Keras's results).

    >>> transform_matrix_offset_center(np.eye(3), 4, 6).tolist()[0]
    [1.0, 0.0, 0.0]
    """
    o_x, o_y = float(x) / 2 + 0.5, float(y) / 2 + 0.5
    offset = [[1.0, 0.0, o_x], [0.0, 1.0, o_y], [0.0, 0.0, 1.0]]
    reset = [[1.0, 0.0, -o_x], [0.0, 1.0, -o_y], [0.0, 0.0, 1.0]]
    return _dot(_dot(offset, matrix), reset)


def keras_matrices(theta: Any, tx: Any, ty: Any, shear: Any, zx: Any, zy: Any) -> np.ndarray:
    """``(N, 3, 3)``: Keras's product rotation @ shift @ shear @ zoom for N transforms (angles in
    degrees), in Keras's order, with libm's sine and cosine (as numpy before 1.22), so that each
    float64 matrix is the one Keras 2 computed (its identity factors, which Keras skips, change no
    bit)."""
    values = np.broadcast_arrays(*(np.asarray(v, float).reshape(-1) for v in (theta, tx, ty, shear, zx, zy)))
    theta, tx, ty, shear, zx, zy = values
    n = len(theta)
    t, s = theta * (math.pi / 180.0), shear * (math.pi / 180.0)
    cos_t, sin_t = np.array([math.cos(v) for v in t]), np.array([math.sin(v) for v in t])
    sin_s, cos_s = np.array([math.sin(v) for v in s]), np.array([math.cos(v) for v in s])
    rotation = _stack(n, cos_t, -sin_t, 0, sin_t, cos_t, 0, 0, 0, 1)
    shift = _stack(n, 1, 0, tx, 0, 1, ty, 0, 0, 1)
    shearing = _stack(n, 1, -sin_s, 0, 0, cos_s, 0, 0, 0, 1)
    zoom = _stack(n, zx, 0, 0, 0, zy, 0, 0, 0, 1)
    return _dot(_dot(_dot(rotation, shift), shearing), zoom)


def keras_matrix(theta: float, tx: float, ty: float, shear: float, zx: float, zy: float) -> np.ndarray | None:
    """One transform's :func:`keras_matrices` (3 x 3), or None when it is the identity (as Keras)."""
    if theta == 0 and tx == 0 and ty == 0 and shear == 0 and zx == 1 and zy == 1:
        return None
    return keras_matrices(theta, tx, ty, shear, zx, zy)[0]


def affine_matrices(p: dict[str, Any], height: int, width: int) -> np.ndarray:
    """``(N, 3, 3)`` float64 matrices mapping output ``(row, col, 1)`` to the input point, as Keras
    (:func:`keras_matrices` about :func:`transform_matrix_offset_center`).

    >>> m = affine_matrices({"theta": [0.0], "tx": [2.0], "ty": [-1.0], "shear": [0.0],
    ...                      "zx": [1.0], "zy": [1.0]}, 4, 4)
    >>> m[0, :2].tolist()
    [[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]
    """
    core = keras_matrices(p["theta"], p["tx"], p["ty"], p["shear"], p["zx"], p["zy"])
    return transform_matrix_offset_center(core, height, width)


def _fold(c: np.ndarray, n: int, mode: str) -> np.ndarray:
    """scipy.ndimage's ``map_coordinate``: float64 coordinates folded into the image along an axis of
    ``n`` pixels by ``mode`` (``constant`` and ``grid-wrap`` are handled by :func:`warp`). Only the
    points outside ``[0, n - 1]`` are touched."""
    if mode == "nearest":
        return np.clip(c, 0, n - 1)
    if mode not in ("reflect", "wrap"):
        return c
    low, high = c < 0, c > n - 1
    if not (low.any() or high.any()):
        return c
    c = c.copy()
    if n <= 1:
        c[low | high] = 0.0
        return c
    v, u = c[low], c[high]
    if mode == "wrap":  # period n - 1: the first and the last pixel overlap
        sz = n - 1
        c[low] = v + sz * (np.trunc(-v / sz) + 1)
        c[high] = u - sz * np.trunc(u / sz)
    else:  # reflect: half-sample symmetric, period 2n
        sz2 = 2 * n
        v = np.where(v < -sz2, sz2 * np.trunc(-v / sz2) + v, v)
        c[low] = np.where(v < -n, v + sz2, np.where(v > -1e-15, 1e-15, -v) - 1)
        u = u - sz2 * np.trunc(u / sz2)
        c[high] = np.where(u >= n, sz2 - u - 1, u)
    return c


def warp(x: np.ndarray, matrices: np.ndarray, fill_mode: str = "nearest", cval: float = 0.0,
         order: int = 1) -> np.ndarray:
    """Resample the images ``x`` (N, H, W, C) through ``matrices`` (N, 3, 3) with torch, as
    ``scipy.ndimage.affine_transform`` with spline ``order`` 1 (bilinear) or 0 (nearest pixel, halves
    rounded up); orders 2 to 5 are scipy's own (``pip install 'arignote[scipy]'``). ``fill_mode``:
    ``nearest``, ``reflect``, ``constant`` (``cval``), ``wrap`` (scipy's: period ``size - 1``) or
    ``grid-wrap`` (tiling, period ``size``). Float inputs keep their dtype; integer ones are computed
    in float64 and rounded back as scipy does."""
    import torch
    import torch.nn.functional as F

    if order > 1:
        return _scipy_warp(x, matrices, fill_mode, cval, order)
    n, h, w, _ = x.shape
    exact = x.dtype == np.float64 or not np.issubdtype(x.dtype, np.floating)
    work = torch.float64 if exact else torch.float32
    img = torch.from_numpy(np.ascontiguousarray(x)).to(work).permute(0, 3, 1, 2).contiguous()
    m = np.asarray(matrices, float)
    rows, cols = np.arange(h, dtype=float)[None, :, None], np.arange(w, dtype=float)[None, None, :]
    src_r = m[:, 0, 0, None, None] * rows + m[:, 0, 1, None, None] * cols + m[:, 0, 2, None, None]
    src_c = m[:, 1, 0, None, None] * rows + m[:, 1, 1, None, None] * cols + m[:, 1, 2, None, None]
    outside = None
    if fill_mode == "constant":
        outside = (src_r < 0) | (src_r > h - 1) | (src_c < 0) | (src_c > w - 1)
    size_r, size_c = h, w
    if fill_mode == "grid-wrap":
        # tile: fold the points into the image, and give the last row/column a wrapped neighbour
        src_r, src_c = np.remainder(src_r, h), np.remainder(src_c, w)
        img = F.pad(img, (0, 1, 0, 1), mode="circular")
        size_r, size_c = h + 1, w + 1
    else:
        src_r, src_c = _fold(src_r, h, fill_mode), _fold(src_c, w, fill_mode)
    if order == 0:
        src_r, src_c = np.floor(src_r + 0.5), np.floor(src_c + 0.5)
    grid = np.stack(((2 * src_c + 1) / size_c - 1, (2 * src_r + 1) / size_r - 1), axis=-1)
    grid = torch.from_numpy(grid).to(work)
    out = F.grid_sample(img, grid, mode="nearest" if order == 0 else "bilinear",
                        padding_mode=_PADDING[fill_mode], align_corners=False)
    if outside is not None:
        out = out.masked_fill(torch.from_numpy(outside)[:, None], float(cval))
    out = out.permute(0, 2, 3, 1).numpy()
    if np.issubdtype(x.dtype, np.integer):  # scipy: round half away from zero, clip to the type's range
        info = np.iinfo(x.dtype)
        out = np.clip(np.trunc(out + np.where(out > 0, 0.5, -0.5)), info.min, info.max)
    return out.astype(x.dtype, copy=False)


def _scipy_warp(x: np.ndarray, matrices: np.ndarray, fill_mode: str, cval: float, order: int) -> np.ndarray:
    try:
        from scipy import ndimage
    except ImportError:
        raise ImportError(f"spline interpolation of order {order} is SciPy's: pip install 'arignote[scipy]' "
                          "(orders 0 and 1 need nothing more)") from None
    return np.stack([np.stack([ndimage.affine_transform(image[..., c], m[:2, :2], m[:2, 2], order=order,
                                                        mode=fill_mode, cval=cval)
                               for c in range(image.shape[-1])], axis=-1) for image, m in zip(x, matrices)])


def brightness(x: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Keras's ``apply_brightness_shift`` (through PIL), per image of the batch ``x`` (N, H, W, C): in
    float32, the image scaled to 0-255 as keras_preprocessing 1.1.2's ``array_to_img`` (minus its
    minimum, divided by its maximum), truncated to integers, times ``factor`` (a float32, as PIL's
    ``blend``), truncated and clipped to 0-255; a fourth (alpha) channel is kept. Returns float32."""
    x = np.asarray(x, dtype=np.float32)
    x = x - x.min(axis=(1, 2, 3), keepdims=True)
    top = x.max(axis=(1, 2, 3), keepdims=True)
    x = np.floor(x / np.where(top == 0, np.float32(1), top) * np.float32(255))
    out = np.floor(np.clip(x * np.asarray(factor, np.float32)[:, None, None, None], 0, 255))
    if x.shape[3] == 4:
        out[..., 3] = x[..., 3]
    return out


def apply(x: np.ndarray, p: dict[str, Any], fill_mode: str = "nearest", cval: float = 0.0,
          order: int = 1) -> np.ndarray:
    """The batch ``x`` (N, H, W, C) with the transforms ``p`` applied (a new array; ``x`` is kept),
    the warp with spline ``order`` (Keras's ``interpolation_order``)."""
    n, h, w, _ = x.shape
    m = affine_matrices(p, h, w)
    moved = np.abs(m - np.eye(3)).max(axis=(1, 2)) > 0
    out = x.copy()
    if moved.any():
        # ImageDataGenerator's wrap tiles (scipy's "grid-wrap"), see the module docstring
        mode = "grid-wrap" if fill_mode == "wrap" else fill_mode
        out[moved] = warp(x[moved], m[moved], mode, cval, order)
    intensity = p.get("channel_shift_intensity")
    if intensity is not None:
        # as Keras: clipped to the image's own range before the shift
        low, high = out.min(axis=(1, 2, 3), keepdims=True), out.max(axis=(1, 2, 3), keepdims=True)
        out = np.clip(out + np.asarray(intensity, out.dtype)[:, None, None, None], low, high)
    flip_h, flip_v = np.asarray(p["flip_horizontal"], bool), np.asarray(p["flip_vertical"], bool)
    out[flip_h] = out[flip_h, :, ::-1]
    out[flip_v] = out[flip_v, ::-1]
    if p.get("brightness") is not None:
        out = brightness(out, np.asarray(p["brightness"], float)).astype(x.dtype)
    return out
