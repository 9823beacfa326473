"""Memory sizes: the one parser and the one formatter of the project.

Every memory flag and option reads a size the same way (:func:`parse_size`):

- a number with a unit: ``512MiB``, ``10GiB``, ``1.5GB`` (KiB/MiB/GiB/TiB and bare K/M/G/T are
  binary, kB/MB/GB/TB decimal, ``B`` bytes);
- a percentage ``80%`` or a bare fraction ``0 < x <= 1``: that share of the device's total memory;
- a bare number ``x > 1``: that many MiB (Theano's ``gpuarray.preallocate`` convention).

Every size is printed in MiB, as ``nvidia-smi`` does (:func:`format_mib`): ``24105 MiB``, and
``2.38 MiB`` under 10 MiB and ``0.00694 MiB`` under 0.01 MiB, so that a small model's plan does
not read ``0 MiB``.

Example::

    >>> from arignote.sizes import parse_size, format_mib
    >>> parse_size("10GiB").nbytes, parse_size("80%").fraction, parse_size(4096).nbytes
    (10737418240, 0.8, 4294967296)
    >>> format_mib(10 * 2**30), format_mib(2.5 * 2**20)
    ('10240 MiB', '2.50 MiB')
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["MiB", "Size", "parse_size", "format_mib", "format_used_total", "mib_or_fraction"]

MiB = 1 << 20

_UNITS = {
    "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": MiB, "mb": 1000**2, "mib": MiB,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3, "t": 1024**4, "tb": 1000**4, "tib": 1024**4,
}
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z%]*)\s*")
EXAMPLES = "e.g. 10GiB, 512MiB, 80% or 0.8 (a fraction of the total), or 4096 (MiB)"


@dataclass(frozen=True)
class Size:
    """A size as written: absolute (``nbytes``) or a share of a total (``fraction``), never both."""

    nbytes: int | None = None
    fraction: float | None = None

    def of(self, total: int) -> int:
        """Bytes this size means on a device of ``total`` bytes."""
        return self.nbytes if self.nbytes is not None else int(self.fraction * total)

    def __str__(self) -> str:
        return format_mib(self.nbytes) if self.nbytes is not None else f"{self.fraction:g} of the total"


def parse_size(text: Any) -> Size:
    """Read a size (see the module doc); raises ``ValueError`` naming the text and the forms accepted.

    >>> parse_size("1.5 GB").nbytes, parse_size("0.5").fraction
    (1500000000, 0.5)
    """
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise ValueError(f"{text!r} is not a size; write {EXAMPLES}")
    if isinstance(text, (int, float)):
        number, unit = float(text), ""
        if not math.isfinite(number):
            raise ValueError(f"{text!r} is not a finite size; write {EXAMPLES}")
        if number < 0:
            raise ValueError(f"size {text!r} is negative; write {EXAMPLES}")
    else:
        match = _SIZE.fullmatch(text)
        if not match or match.group(2).lower() not in (*_UNITS, "", "%"):
            raise ValueError(f"size {text!r} is not understood; write {EXAMPLES}")
        number, unit = float(match.group(1)), match.group(2).lower()
        if not math.isfinite(number):
            raise ValueError(f"size {text!r} is not finite; write {EXAMPLES}")
    if unit == "%":
        if number > 100:
            raise ValueError(f"size {text!r} is more than 100%")
        return Size(fraction=number / 100)
    if unit:
        return Size(nbytes=int(number * _UNITS[unit]))
    if number <= 1:
        return Size(fraction=number)
    return Size(nbytes=int(number * MiB))


def mib_or_fraction(size: Size) -> float:
    """The flag encoding of a size: a fraction ``0 <= x <= 1`` as it is, an absolute size in MiB.

    An absolute size of 1 MiB or less would read as a fraction, so it is refused.
    """
    if size.fraction is not None:
        return size.fraction
    mib = size.nbytes / MiB
    if mib <= 1:
        raise ValueError(f"{format_mib(size.nbytes)} is too small to be told from a fraction; give more "
                         "than 1 MiB or a fraction like 0.5")
    return mib


def format_mib(nbytes: Any) -> str:
    """Bytes in MiB as nvidia-smi prints them (``24105 MiB``); under 10 MiB with two decimals, under
    0.01 MiB three significant digits;
    anything that is not a number (None, NVML's n/a) is ``n/a``."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not math.isfinite(nbytes):
        return "n/a"
    mib = nbytes / MiB
    if abs(mib) >= 10 or mib == 0:
        return f"{mib:.0f} MiB"
    if abs(mib) < 0.01:  # a per-sample figure: three significant digits
        return f"{mib:.3g} MiB"
    return f"{mib:.2f} MiB"


def format_used_total(used: Any, total: Any) -> str:
    """``37888 / 40960 MiB`` (nvidia-smi's memory-usage column); an unknown side shows as ``n/a``."""
    def whole(n: Any) -> str:  # both sides in whole MiB, as nvidia-smi
        return "n/a" if format_mib(n) == "n/a" else f"{n / MiB:.0f}"

    u, t = whole(used), whole(total)
    return "n/a" if u == t == "n/a" else f"{u} / {t} MiB"
