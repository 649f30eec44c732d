"""A rack's node (a compute tray) is a catalog figure: a per-node rate on a GB200 NVL72 divides by
its tray's 4 GPUs, not by the job's GPUs in the rack (validate read "per node" of 64 GPUs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.errors import DataFileError


def test_rack_nodes_are_counted_where_a_source_counts_them(catalog: Catalog) -> None:
    # GB200 NVL72: 18 compute trays of 2 superchips (2 GPUs each) = 72 GPUs, 4 a tray
    assert catalog.system("gb200-nvl72").accelerators_per_node == 72 // 18
    # GB300 NVL72: the same rack of 18 trays (NVIDIA's NVKE guide: four GPUs a tray)
    assert catalog.system("gb300-nvl72").accelerators_per_node == 72 // 18
    # GH200 NVL32: 16 MGX nodes of two GH200 superchips (NVIDIA's blog)
    assert catalog.system("gh200-nvl32").accelerators_per_node == 32 // 16
    # a DGX is itself one node; a TPU pod's host is not counted by its record
    assert catalog.system("dgx-h100").accelerators_per_node == 0
    assert catalog.system("tpu-v5p-pod").accelerators_per_node == 0


def test_hw_show_says_the_node_and_its_source(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "gb200-nvl72")
    assert result.code == 0, result.err
    assert "nodes of 4 accelerators (source: nvidia-dgx-gb200)" in result.out


def test_a_node_that_does_not_divide_the_rack_is_refused(write_toml: Callable[[str, str], Path]) -> None:
    path = write_toml(
        "rack.toml",
        """
        schema_version = 1
        kind = "system"
        name = "odd-rack"
        system_type = "rack"
        accelerator = "h100-sxm"
        num_accelerators = 72
        source = "s"
        [sources.s]
        title = "t"
        url = ""
        [node]
        accelerators = 5
        source = "s"
        [scale_up]
        domain_size = 72
        """,
    )
    with pytest.raises(DataFileError, match=r"node\.accelerators"):
        load_catalog([path])
