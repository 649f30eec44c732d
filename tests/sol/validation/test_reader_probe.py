"""The rephrasing probe (``benchmarks/reader_probe.py``, issue 28, reading): dev rows rewritten
cell by cell in ways that mean the same are each predicted as their row is. At the twenty-third
session's start 5 of the 100 were read wrong (``Float8`` as BF16, ``8K`` context as 8,000 tokens)
and 25 refused (``1024 nodes x 8``, ``6 nodes of 8 H100``, ``16,777,216 tokens``, ``fully_shard``,
``TPS per GPU``, ``--input-len``)."""

from __future__ import annotations

from scripts import load_script


def test_every_rewrite_that_means_the_same_is_read_the_same() -> None:
    result = load_script("benchmarks/reader_probe.py").probe()
    assert result["variants"] >= 100
    assert result["misread"] == []
    assert result["refused"] == []
