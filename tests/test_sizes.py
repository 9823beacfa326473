"""One size grammar and one formatter for the whole project (``arignote.sizes``)."""

from __future__ import annotations

import pytest

from arignote import sizes
from arignote.sizes import MiB, Size, format_mib, format_used_total, mib_or_fraction, parse_size

GiB = 1 << 30


@pytest.mark.parametrize("text, expected", [
    ("10GiB", Size(nbytes=10 * GiB)), ("512MiB", Size(nbytes=512 * MiB)),
    ("1.5GB", Size(nbytes=1_500_000_000)),
    ("2 g", Size(nbytes=2 * GiB)), ("100kB", Size(nbytes=100_000)), ("0B", Size(nbytes=0)),
    ("4096", Size(nbytes=4096 * MiB)), (4096, Size(nbytes=4096 * MiB)), ("80%", Size(fraction=0.8)),
    ("0.25", Size(fraction=0.25)), (1, Size(fraction=1.0)), ("0", Size(fraction=0.0)),
])
def test_parse_size_forms(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["10XB", "GiB", "-1GiB", "", True, -5, "nan", "inf", float("inf"), "150%",
                                  None, [1]])
def test_parse_size_rejects_with_the_forms(text):
    with pytest.raises(ValueError, match="10GiB|negative|100%"):
        parse_size(text)


def test_size_of_a_total():
    assert parse_size("25%").of(40 * GiB) == 10 * GiB
    assert parse_size("3GiB").of(40 * GiB) == 3 * GiB


def test_flag_encoding_fraction_or_mib():
    assert mib_or_fraction(parse_size("8GiB")) == 8192.0
    assert mib_or_fraction(parse_size("50%")) == 0.5
    with pytest.raises(ValueError, match="too small to be told from a fraction"):
        mib_or_fraction(parse_size("1MiB"))


def test_format_mib_as_nvidia_smi():
    assert format_mib(24105 * MiB) == "24105 MiB"
    assert format_mib(2.5 * MiB) == "2.50 MiB"
    assert format_mib(0) == "0 MiB"
    assert format_mib(7280) == "0.00694 MiB"
    assert format_mib(None) == "n/a" and format_mib(object()) == "n/a"
    assert format_used_total(37888 * MiB, 40960 * MiB) == "37888 / 40960 MiB"
    assert format_used_total(None, 40960 * MiB) == "n/a / 40960 MiB"
    assert format_used_total(None, None) == "n/a"


def test_no_other_byte_formatter_left():
    # the formatters that printed sizes seven ways are gone; callers use arignote.sizes
    import arignote.diagnostics.memory_plan as memory_plan
    import arignote.monitor as monitor
    import arignote.share.select as select
    import arignote.training.oom as oom

    assert not hasattr(monitor, "fmt_bytes") and not hasattr(memory_plan, "fmt_bytes")
    assert not hasattr(oom, "_gib") and not hasattr(select, "format_size")
    assert select.parse_size is sizes.parse_size
