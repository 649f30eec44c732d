"""``hw compare``: a name of another kind is called that (not "unknown"), a record named twice is
refused, and clusters (what ``hw show`` takes: ``2xdgx-h100``, TPU slices) compare, a system among
them as one node of it."""

from __future__ import annotations

import json

import pytest

from expect import one_line_error
from lightspeed.catalog import Catalog, compare_hardware, load_catalog
from lightspeed.errors import UnknownNameError, UserInputError


@pytest.mark.parametrize(
    ("names", "words"),
    [
        (
            ["h100-sxm", "dgx-h100"],
            ("'h100-sxm' is an accelerator and 'dgx-h100' a system", "hw show dgx-h100"),
        ),
        (["dgx-h100", "h100-sxm"], ("'dgx-h100' is a system and 'h100-sxm' an accelerator",)),
        (["h100-sxm", "nvlink-4"], ("'nvlink-4' a link", "links with links")),
        (["2xdgx-h100", "h100-sxm"], ("'2xdgx-h100' is a cluster and 'h100-sxm' an accelerator",)),
    ],
)
def test_names_of_different_kinds_say_so(catalog: Catalog, names: list[str], words: tuple[str, ...]) -> None:
    with pytest.raises(UserInputError) as info:
        compare_hardware(catalog=catalog, names=names)
    assert not isinstance(info.value, UnknownNameError)
    assert "hw compare takes names of one kind" in str(info.value)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    ("names", "words"),
    [
        (["h100-sxm", "h100-sxm"], "'h100-sxm' is given twice"),
        (["h100-sxm", "h200-sxm", "h100"], "'h100-sxm' and 'h100' name the same accelerator (h100-sxm)"),
        (["2xdgx-h100", "2xdgx-h100"], "'2xdgx-h100' is given twice"),
        (["dgx-h100", "1xdgx-h100"], "name the same cluster"),
    ],
)
def test_a_record_named_twice_is_refused(catalog: Catalog, names: list[str], words: str) -> None:
    with pytest.raises(UserInputError, match="name each record once") as info:
        compare_hardware(catalog=catalog, names=names)
    assert words in str(info.value)


def test_unknown_names_still_list_the_closest_of_the_kind(catalog: Catalog) -> None:
    with pytest.raises(UnknownNameError, match="unknown device 'h2000'; closest: h200"):
        compare_hardware(catalog=catalog, names=["h100-sxm", "h2000"])


def test_clusters_compare_as_totals(catalog: Catalog) -> None:
    xdr = "9xdgx-h100@ib-xdr:0.5nic"  # an 800G port per two GPUs: one per GPU outruns PCIe Gen5 x16
    comparison = compare_hardware(catalog=catalog, names=["dgx-h100", "2xdgx-h100", xdr])
    assert comparison.kind == "cluster"
    assert comparison.devices == ("dgx-h100", "2xdgx-h100", xdr)
    assert comparison.row("num_nodes").values == (1, 2, 9)
    assert comparison.row("num_accelerators").values == (8, 16, 72)
    # 8 x H100 dense BF16 989.5 TFLOP/s per node
    assert comparison.row("bf16_dense").values == pytest.approx((8 * 989.5e12, 16 * 989.5e12, 72 * 989.5e12))
    assert comparison.row("bf16_dense").ratios == pytest.approx((1.0, 2.0, 9.0))
    # one 400 Gb/s NDR port (50 GB/s) per GPU; half an XDR 800 Gb/s port (50 GB/s) per GPU
    assert comparison.row("scale_out_per_accelerator").values == pytest.approx((50e9, 50e9, 50e9))
    assert comparison.row("scale_out_per_direction").values == pytest.approx((8 * 50e9, 16 * 50e9, 72 * 50e9))
    assert comparison.labels["scale_out_link"] == ("ib-ndr", "ib-ndr", "ib-xdr")


def test_hw_compare_takes_what_hw_show_takes(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("hw", "show", "2xdgx-h100").code == 0
    result = run_cli("hw", "compare", "2xdgx-h100", "v5e-8", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["kind"] == "cluster"
    assert payload["devices"] == ["2xdgx-h100", "v5e-8"]
    rows = {row["field"]: row for row in payload["rows"]}
    assert rows["num_accelerators"]["values"] == [16, 8]
    one_line_error(run_cli("hw", "compare", "h100-sxm", "dgx-h100"), "'dgx-h100' a system")
    one_line_error(run_cli("hw", "compare", "h100-sxm", "h100-sxm"), "is given twice")


def test_nominal_memory_compares_in_gib_across_vendors() -> None:
    # H100 SXM's and H100 PCIe's nominal "80 GB" are the same HBM, both read in the binary sense
    # (80 GiB), so they compare as equal (not 0.931x); H200 SXM's 144 GiB is 144 / 80 = 1.8x, 64 GiB more
    comparison = compare_hardware(catalog=load_catalog(), names=["h100-sxm", "h100-pcie", "h200-sxm"])
    nominal = comparison.row("memory_capacity")
    assert nominal.values == (80 * 2**30, 80 * 2**30, 144 * 2**30)
    assert nominal.ratios == pytest.approx((1, 1, 144 / 80))
    assert nominal.deltas == pytest.approx((0, 0, (144 - 80) * 2**30))
    assert nominal.binary_units  # shown in GiB
    usable = comparison.row("memory_usable")
    assert usable.ratios[1:] == pytest.approx((80 / 80, 141 / 80))
