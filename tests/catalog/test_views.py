"""Comparisons, listings and descriptions behind ``hw compare``, ``hw list`` and ``hw show``."""

from __future__ import annotations

import json

import pytest

from lightspeed.catalog import Catalog, compare_hardware, describe, list_entries
from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.records import to_jsonable


def test_compare_json_contract(catalog: Catalog) -> None:
    payload = json.loads(
        json.dumps(to_jsonable(compare_hardware(catalog=catalog, names=["h100-sxm", "b200"])))
    )
    assert payload["devices"] == ["h100-sxm", "b200"]
    for row in payload["rows"]:
        assert {"field", "unit", "values", "ratios", "sparse"} <= set(row)
        assert len(row["values"]) == len(row["ratios"]) == len(row["sparse"]) == 2
    bf16 = next(row for row in payload["rows"] if row["field"] == "bf16")
    assert bf16["unit"] == "FLOP/s"
    assert bf16["values"] == [1979e12, 4.5e15]
    assert bf16["sparse"] == [True, True]
    assert bf16["dense_values"] == [989.5e12, 2.25e15]
    assert bf16["ratios"][1] == pytest.approx(2.25e15 / 989.5e12)


def test_ratios_use_dense_values_across_vendors(catalog: Catalog) -> None:
    # H100 prints BF16 sparse (1,979), MI300X dense (1,307.4): the ratio compares dense figures.
    row = compare_hardware(catalog=catalog, names=["h100-sxm", "mi300x"]).row("bf16")
    assert row.sparse == (True, False)
    assert row.ratios[1] == pytest.approx(1307.4 / 989.5)


def test_missing_rows_are_none_not_zero(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["h100-sxm", "b200", "tpu-v6e"])
    fp4 = comparison.row("fp4")
    assert fp4.values[0] is None
    assert fp4.ratios == (None, None, None)  # no first value to compare with
    tdp = comparison.row("tdp")
    assert tdp.values[2] is None  # Google prints no TPU power


def test_compare_links_shows_both_directions(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["nvlink-4", "nvlink-5", "ib-ndr"])
    assert comparison.kind == "link"
    assert comparison.row("per_direction").values == (25e9, 50e9, 50e9)
    assert comparison.row("bidirectional").values == (50e9, 100e9, 100e9)


def test_compare_systems_uses_derived_totals(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["dgx-h100", "gb200-nvl72"])
    assert comparison.row("num_accelerators").values == (8, 72)
    assert comparison.row("bf16_dense").values[1] == pytest.approx(180e15)


def test_compare_cpus(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["xeon-platinum-8480c", "epyc-9654"])
    # 56 cores x 2.0 GHz x 2 FMA x 8 FP64 lanes x 2 = 3.584 TFLOP/s at base clock.
    assert comparison.row("fp64_peak").values[0] == pytest.approx(3.584e12)
    # Zen 4: 96 cores x 2.4 GHz x 1 x 8 x 2 (512-bit FMA double-pumped on 2 x 256-bit).
    assert comparison.row("fp64_peak").values[1] == pytest.approx(3.6864e12)


def test_compare_needs_one_kind_and_two_names(catalog: Catalog) -> None:
    # dgx-h100 is known, as a system: the error says the kinds differ (it used to call it unknown)
    with pytest.raises(UserInputError) as info:
        compare_hardware(catalog=catalog, names=["h100-sxm", "dgx-h100"])
    assert "'h100-sxm' is an accelerator and 'dgx-h100' a system" in str(info.value)
    assert not isinstance(info.value, UnknownNameError)
    with pytest.raises(UserInputError):
        compare_hardware(catalog=catalog, names=["h100-sxm"])


def test_unknown_name_lists_closest(catalog: Catalog) -> None:
    with pytest.raises(UnknownNameError) as info:
        compare_hardware(catalog=catalog, names=["h10", "h200"])
    assert "h100" in str(info.value)


def test_list_entries_by_kind(catalog: Catalog) -> None:
    every = list_entries(catalog=catalog)
    links = list_entries(catalog=catalog, kind="link")
    assert {entry.kind for entry in every} == {"accelerator", "link", "cpu", "system"}
    assert len(links) == len(catalog.links)
    assert all(entry.kind == "link" for entry in links)
    with pytest.raises(UserInputError):
        list_entries(catalog=catalog, kind="gpu")


def test_describe_kinds(catalog: Catalog) -> None:
    assert describe(catalog=catalog, name="NVIDIA H100 80GB HBM3").kind == "accelerator"
    system = describe(catalog=catalog, name="nvl72")
    assert system.kind == "system"
    assert system.totals is not None
    cpu = describe(catalog=catalog, name="grace")
    assert cpu.cpu_peak is not None
    assert cpu.cpu_peak.fp64_flop_per_s == pytest.approx(72 * 3.1e9 * 4 * 2 * 2)  # within 1% of 3.55 printed
    cluster = describe(catalog=catalog, name="9xdgx-h100@ib-ndr")
    assert cluster.kind == "cluster"


def test_describe_unknown_name_is_not_treated_as_a_spec(catalog: Catalog) -> None:
    with pytest.raises(UnknownNameError) as info:
        describe(catalog=catalog, name="h100-sxx")
    assert "hardware name" in str(info.value)
    assert "h100-sxm" in str(info.value)
