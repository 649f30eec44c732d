"""A bandwidth's lowercase b is a bit (a NIC's 400Gb/s is 50 GB/s), its capital B a byte; a size
written with a lowercase b after a capital prefix (80Gb) is refused rather than read as bytes."""

from __future__ import annotations

import pytest

from lightspeed.errors import UserInputError
from lightspeed.units import parse_bandwidth, parse_bytes


@pytest.mark.parametrize(
    ("text", "bytes_per_s"),
    [
        ("400Gb/s", 400e9 / 8),  # 50e9: an NDR InfiniBand port
        ("400 Gbit/s", 400e9 / 8),
        ("400Gbps", 400e9 / 8),
        ("1.6Tb/s", 1.6e12 / 8),  # 200e9
        ("100Mb/s", 100e6 / 8),
        ("8b/s", 1.0),
        ("50GB/s", 50e9),  # bytes, as before
        ("50GB", 50e9),  # the /s may be left out, as before
        ("50 GBps", 50e9),
        ("1GiB/s", 2.0**30),
        ("1Gib/s", 2.0**30 / 8),
    ],
)
def test_bandwidths_in_bits_and_bytes(text: str, bytes_per_s: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize("text", ["400G/s", "400 parsecs/s", "Gb/s", "400xb/s"])
def test_a_bandwidth_unit_that_names_neither_is_refused(text: str) -> None:
    with pytest.raises(UserInputError, match="bandwidth"):
        parse_bandwidth(text)


@pytest.mark.parametrize(
    ("text", "spelling"), [("80Gb", "80GB or 80GiB"), ("1.5Tb", "1.5TB or 1.5TiB"), ("4Gib", "4GiB")]
)
def test_a_size_in_bits_is_refused_with_the_spellings_that_mean_bytes(text: str, spelling: str) -> None:
    with pytest.raises(UserInputError, match=f"write {spelling}$"):
        parse_bytes(text)


def test_sizes_keep_their_meaning() -> None:
    assert parse_bytes("80GB") == 80e9
    assert parse_bytes("80gb") == 80e9  # all lowercase, as before
    assert parse_bytes("141 GiB") == 141 * 2**30
    assert parse_bytes("512b") == 512.0  # a bare b stays a byte for sizes
