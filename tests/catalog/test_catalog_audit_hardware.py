"""The hardware catalog audit: scale-out links, binary nominal memory, slice specs and shapes,
list/show/compare output, data-file contradictions and the figures the audit found missing.

Golden values are hand calculations written next to them, or the vendors' printed figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog, compare_hardware, derive_totals, list_entries, load_catalog
from lightspeed.catalog.torus import slice_name
from lightspeed.errors import DataFileError, InvalidPlanError, UserInputError

GIB = 2.0**30
MIB = 2.0**20
DOCS = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"
# Cloud TPU v5e / v6e system-architecture pages: the slices offered, 1 to 256 chips
GOOGLE_2D_SHAPES = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))


def one_line_error(result, text: str) -> None:  # type: ignore[no-untyped-def]
    assert result.code == 2, (result.code, result.out, result.err)
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert text in result.err, result.err


# 1. only NICs join nodes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        "2xdgx-h100@nvlink-c2c",
        "2xdgx-h100@nvlink-4",
        "2xdgx-h100@pcie-5-x16",
        "2xmi300x-platform@xgmi-cdna3",
        "2xgb200-nvl72@nvlink-5:0.5nic",
        "2xtpu-v5e-pod@tpu-ici-v5e",
    ],
)
def test_a_link_inside_a_node_is_not_a_scale_out(catalog: Catalog, spec: str) -> None:
    # used to give "scale-out: 8 x nvlink-c2c per node, 450 GB/s" and plan on it
    with pytest.raises(UserInputError, match="must be a NIC link"):
        catalog.parse_cluster(spec)


def test_the_cli_refuses_a_scale_up_link_as_the_fabric(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("hw", "show", "2xdgx-h100@nvlink-c2c"), "must be a NIC link")
    args = ["--model", "llama-3.1-8b", "--system", "2xdgx-h100@nvlink-c2c", "--global-batch", "16"]
    one_line_error(run_cli("plan", "train", *args, "--seq", "4096"), "must be a NIC link")


@pytest.mark.parametrize("link", ["ib-ndr", "ethernet-400g", "efa-200g", "pollara-400"])
def test_nic_links_still_join_nodes(catalog: Catalog, link: str) -> None:
    assert catalog.parse_cluster(f"2xdgx-h100@{link}:1nic").num_accelerators == 16


def test_every_shipped_scale_out_is_a_nic(catalog: Catalog) -> None:
    for system in catalog.systems.values():
        if system.scale_out is not None:
            assert system.scale_out.link.is_scale_out, system.name


def test_a_cluster_file_with_an_nvlink_fabric_is_refused(
    catalog: Catalog, write_toml: Callable[[str, str], Path]
) -> None:
    path = write_toml(
        "lab.toml",
        """
        schema_version = 1
        kind = "cluster"
        name = "lab"
        system = "dgx-h100"
        num_nodes = 2
        [scale_out]
        link = "nvlink-4"
        """,
    )
    with pytest.raises(DataFileError, match=r"scale_out\.link"):
        catalog.load_cluster_file(path)


def test_a_system_file_with_an_nvlink_scale_out_is_refused(write_toml: Callable[[str, str], Path]) -> None:
    path = write_toml(
        "node.toml",
        """
        schema_version = 1
        kind = "system"
        name = "bad-node"
        system_type = "node"
        accelerator = "h100-sxm"
        num_accelerators = 8
        source = "s"
        [sources.s]
        title = "t"
        url = ""
        [scale_up]
        domain_size = 8
        [scale_out]
        link = "nvlink-c2c"
        nics_per_node = 8
        """,
    )
    with pytest.raises(DataFileError, match="joins accelerators inside a node"):
        load_catalog([path])


# 2. nominal memory in the vendor's binary meaning ---------------------------------------------


def test_nominal_memory_is_binary(catalog: Catalog) -> None:
    # B200: 8 HBM3e stacks of 24 GiB = 192 GiB, and the driver reports 183,359 MiB (192.27e9 B),
    # which 192e9 decimal bytes could not hold
    b200 = catalog.accelerator("b200")
    assert b200.memory_nominal_bytes == 8 * 24 * GIB
    assert b200.memory_reported_bytes == 183_359 * MIB
    # the two 40 GB A100s were entered one in GiB, one in GB
    assert catalog.accelerator("a100-pcie-40gb").memory_nominal_bytes == 40 * GIB
    assert catalog.accelerator("a100-sxm-40gb").memory_nominal_bytes == 40 * GIB
    # H200 NVL carries the same six 24 GiB stacks as H200 SXM: 144 GiB nominal, 141 GB listed
    for name in ("h200-sxm", "h200-nvl"):
        h200 = catalog.accelerator(name)
        assert (h200.memory_nominal_bytes, h200.memory_usable_bytes) == (6 * 24 * GIB, 141e9)


def test_driver_reported_memory_is_never_above_nominal(catalog: Catalog) -> None:
    # was false for gb300 (297.02 vs 288 GB), b200, gb200, h200-sxm, h100-nvl, a100-pcie-40gb,
    # rtx-4090/5090, rtx-pro-6000
    for accelerator in catalog.accelerators.values():
        assert accelerator.memory_usable_bytes <= accelerator.memory_nominal_bytes, accelerator.name
        reported = accelerator.memory_reported_bytes
        assert reported is None or reported <= accelerator.memory_nominal_bytes, accelerator.name


def test_a_file_with_reported_memory_above_nominal_is_refused(write_toml: Callable[[str, str], Path]) -> None:
    path = write_toml(
        "gpu.toml",
        """
        schema_version = 1
        kind = "accelerator"
        name = "decimal-b200"
        extends = "b200"
        [memory]
        nominal_gb = 192.0
        """,
    )
    with pytest.raises(DataFileError, match=r"driver-reported memory .* is above the nominal"):
        load_catalog([path])


def test_system_nominal_memory_compares(catalog: Catalog) -> None:
    # DGX B200 8 x 192 GiB = 1,536 GiB against DGX H100 8 x 80 GiB = 640 GiB: 2.4x (was 2.24x)
    row = compare_hardware(catalog=catalog, names=["dgx-h100", "dgx-b200"]).row("memory_capacity_nominal")
    assert row.ratios[1] == pytest.approx(1536 / 640)
    assert row.binary_units
    # GB200 NVL72: 72 x 192 GiB = 13,824 GiB (was 13.82e12 B)
    rack = derive_totals(system=catalog.system("gb200-nvl72")).row("memory_capacity_nominal")
    assert rack.derived == pytest.approx(72 * 192 * GIB)


def test_nominal_memory_ratio_between_accelerators(catalog: Catalog) -> None:
    # H100 80 GiB vs B200 192 GiB: 2.4x, the same unit on both sides now
    row = compare_hardware(catalog=catalog, names=["h100-sxm", "b200"]).row("memory_capacity")
    assert row.ratios[1] == pytest.approx(192 / 80)


# 3. a slice's spec reads back as the same slice -----------------------------------------------


def test_the_v5e_8_spec_names_the_slice(catalog: Catalog, run_cli) -> None:  # type: ignore[no-untyped-def]
    cluster = catalog.resolve_cluster("v5e-8")
    # 8 chips on hosts of 8 with 2 x 100G NICs each: 2 NICs, 0.25 per chip
    assert cluster.spec == "1xv5e-2x4@ethernet-100g:0.25nic"
    again = catalog.resolve_cluster(cluster.spec)
    assert (again.num_accelerators, again.system.torus_dimensions) == (8, (2, 4))
    result = run_cli("hw", "show", "v5e-8")
    assert result.code == 0, result.err
    assert "1 x v5e-2x4 (8 chips of tpu-v5e-pod) = 8 x tpu-v5e" in result.out
    assert "1 x tpu-v5e-pod = 8" not in result.out


def _same_cluster(catalog: Catalog, text: str, gpus: int | None = None) -> None:
    cluster = catalog.resolve_cluster(text, gpus)
    again = catalog.parse_cluster(cluster.spec)
    assert again.spec == cluster.spec
    assert again.num_accelerators == cluster.num_accelerators, cluster.spec
    assert again.system == cluster.system, cluster.spec
    assert again.fabric == cluster.fabric, cluster.spec


@pytest.mark.parametrize("prefix", ["v5e", "v6e"])
@pytest.mark.parametrize("shape", GOOGLE_2D_SHAPES)
def test_every_2d_slice_round_trips(catalog: Catalog, prefix: str, shape: tuple[int, int]) -> None:
    _same_cluster(catalog, f"{prefix}-{shape[0] * shape[1]}")


@settings(max_examples=40, deadline=None)
@given(
    prefix=st.sampled_from(["v4", "v5p", "tpu7x"]),
    cubes=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
)
def test_3d_cube_slices_round_trip(catalog: Catalog, prefix: str, cubes: tuple[int, int, int]) -> None:
    topology = "x".join(str(4 * n) for n in cubes)
    _same_cluster(catalog, f"{prefix}-{topology}")


@settings(max_examples=40, deadline=None)
@given(
    system=st.sampled_from(["gb200-nvl72", "gb300-nvl72", "tpu-v5e-pod", "tpu-v5p-pod"]),
    gpus=st.integers(1, 2000),
)
def test_part_of_a_domain_round_trips(catalog: Catalog, system: str, gpus: int) -> None:
    # spread_over_domains: 128 GPUs of NVL72 racks are 64 in each of 2 racks, "2x64xgb200-nvl72"
    pod = catalog.system(system)
    if pod.torus_dimensions and gpus % pod.num_accelerators:
        pods = -(-gpus // pod.num_accelerators)  # the fewest pods that split the chips evenly
        while gpus % pods:
            pods += 1
        if not _google_offers(gpus // pods, pod.torus_dimensions):
            with pytest.raises(InvalidPlanError, match="slice"):
                catalog.resolve_cluster(system, gpus)
            return
    _same_cluster(catalog, system, gpus)


def _google_offers(chips: int, pod: tuple[int, ...]) -> bool:
    """Whether a slice Google offers holds ``chips`` on ``pod``: 2D from the table; 3D the blocks
    2x2x1, 2x2x2, 2x2x4, 2x4x4, or whole 4x4x4 cubes, as many along each axis as the pod has."""
    if len(pod) == 2:
        return chips in {a * b for a, b in GOOGLE_2D_SHAPES}
    if chips in {4, 8, 16, 32}:
        return True
    x, y, z = sorted(size // 4 for size in pod)
    cubes = {a * b * c for a in range(1, x + 1) for b in range(1, y + 1) for c in range(1, z + 1)}
    return chips % 64 == 0 and chips // 64 in cubes


def test_a_third_of_a_nic_reads_back(catalog: Catalog) -> None:
    # 1 NIC for 3 GPUs wrote ":0.333333nic", which read back as 0.999999 NICs and was refused
    cluster = catalog.parse_cluster("2x3xl40s@ethernet-400g:0.333333333333333nic")
    assert cluster.fabric is not None
    assert cluster.fabric.num_links == 1
    assert catalog.parse_cluster(cluster.spec).fabric == cluster.fabric


# 4. only the slices Google offers -------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["v5e-3", "v5e-13", "v5e-17x3", "v4-2x2x2x2", "v6e-300", "tpu7x-2", "v5e-2x2x2", "v5p-3x4x4"]
)
def test_slices_google_does_not_offer_are_refused(text: str) -> None:
    with pytest.raises(InvalidPlanError, match="Google offers"):
        slice_name(text)


def test_a_count_without_a_slice_is_refused(catalog: Catalog, run_cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidPlanError, match=r"1 \(1x1\), 4 \(2x2\), 8 \(2x4\)"):
        catalog.resolve_cluster("tpu-v5e", num_accelerators=3)
    one_line_error(run_cli("hw", "show", "v5e-3"), "not a v5e slice Google offers")


@pytest.mark.parametrize(
    ("text", "chips", "shape"),
    [
        ("v5litepod-1", 1, (1, 1)),
        ("v5e-4", 4, (2, 2)),
        ("v6e-256", 256, (16, 16)),
        ("v4-8", 4, (1, 2, 2)),  # TensorCores: 4 chips, 2x2x1
        ("v5p-64", 32, (2, 4, 4)),
        ("v5p-384", 192, (4, 4, 12)),
        ("tpu7x-8", 4, (1, 2, 2)),
        ("tpu7x-4x4x16", 256, (4, 4, 16)),
    ],
)
def test_offered_slices_keep_their_shape(
    catalog: Catalog, text: str, chips: int, shape: tuple[int, ...]
) -> None:
    named = slice_name(text)
    assert named is not None
    assert named[1] == chips
    assert catalog.resolve_cluster(text).system.torus_dimensions == shape


def test_a_topology_is_not_reshaped(catalog: Catalog) -> None:
    # 256 chips would take 4x8x8; the name asks for 4x4x16 (in any order)
    assert catalog.resolve_cluster("v5p-16x4x4").system.torus_dimensions == (4, 4, 16)


# 5. BF16 holds BF16 ---------------------------------------------------------------------------


def test_list_keeps_fp16_out_of_the_bf16_key(catalog: Catalog) -> None:
    figures = {entry.name: entry.figures for entry in list_entries(catalog=catalog)}
    # V100 has FP16 tensor cores (125 TFLOP/s, NVIDIA V100 datasheet) and no BF16
    assert figures["v100-sxm2"]["bf16_dense_flop_per_s"] is None
    assert figures["v100-sxm2"]["fp16_dense_flop_per_s"] == 125e12
    assert figures["dgx-2"]["bf16_dense_flop_per_s"] is None
    assert figures["dgx-2"]["fp16_dense_flop_per_s"] == 16 * 125e12
    assert figures["dgx-h100"]["bf16_dense_flop_per_s"] == 8 * 989.5e12


def test_list_tables_head_bf16_alike(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "list")
    assert result.code == 0, result.err
    assert result.out.count("BF16 (FP16) dense") == 2  # the accelerator and the system tables
    payload = json.loads(run_cli("hw", "list", "--json").out)
    v100 = next(record for record in payload["records"] if record["name"] == "v100-sxm2")
    assert v100["figures"]["bf16_dense_flop_per_s"] is None


# 6. hw show: driver-reported memory, GB300 L2 -------------------------------------------------


def test_show_has_the_driver_reported_memory(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "h100-sxm")
    assert result.code == 0, result.err
    assert "81,559 MiB" in result.out  # nvidia-smi memory.total
    assert "80 GiB" in result.out  # nominal, binary


def test_gb300_l2_from_its_cited_dump(catalog: Catalog) -> None:
    # xla-gb300's model_str: "135528448B L2$"
    assert catalog.accelerator("gb300").l2_cache_bytes == 135_528_448


# 7. contradictions in data files --------------------------------------------------------------

ACCELERATOR = """
schema_version = 1
kind = "accelerator"
name = "odd-gpu"
extends = "h100-sxm"
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[memory]\nusable_gb = 800.0\n", "the listed usable memory .* is above the nominal"),
        ("[power]\ntdp_w = 100.0\ntdp_min_w = 700.0\n", r"tdp_min \(700 W\) is above tdp \(100 W\)"),
    ],
)
def test_contradicting_figures_are_refused(
    write_toml: Callable[[str, str], Path], body: str, message: str
) -> None:
    path = write_toml("odd.toml", ACCELERATOR + body)
    with pytest.raises(DataFileError, match=message):
        load_catalog([path])


def test_the_cli_says_so_in_one_line(run_cli, write_toml: Callable[[str, str], Path]) -> None:  # type: ignore[no-untyped-def]
    path = write_toml("odd.toml", ACCELERATOR + "[memory]\nusable_gb = 800.0\n")
    one_line_error(run_cli("--catalog", str(path), "hw", "show", "odd-gpu"), "memory.usable")


# 8. a bandwidth needs its unit ----------------------------------------------------------------


def test_detect_refuses_a_bare_bandwidth(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("hw", "detect", "--no-gpu", "--memory-bandwidth", "200"), "give a unit")
    result = run_cli("hw", "detect", "--no-gpu", "--memory-bandwidth", "200GB/s", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["machine"]["cpu"]["memory_bandwidth_bytes_per_s"] == 200e9


# 9, 10. figures from their sources ------------------------------------------------------------


def test_h100_nvl_memory_is_what_nvidia_smi_prints(catalog: Catalog) -> None:
    # NVIDIA/gpu-admin-tools issue 4: "0MiB / 95830MiB" on NVIDIA H100 NVL
    nvl = catalog.accelerator("h100-nvl")
    assert nvl.memory_reported_bytes == 95_830 * MIB
    assert nvl.sources[nvl.memory_reported_source].url.endswith("gpu-admin-tools/issues/4")


def test_fp6_runs_at_the_fp8_rate_on_blackwell_ultra(catalog: Catalog) -> None:
    # HGX B300: FP8/FP6 72 PF sparse for 8 GPUs = 9 PF each, 4.5 dense;
    # GB300 NVL72: FP8/FP6 720 PF sparse for 72 GPUs = 10 PF each, 5 dense
    for name, sparse in (("b300", 72e15 / 8), ("gb300", 720e15 / 72)):
        fp6 = catalog.accelerator(name).compute["fp6"]
        assert (fp6.printed_per_s, fp6.dense_per_s) == (pytest.approx(sparse), pytest.approx(sparse / 2))
        assert fp6.dense_per_s == catalog.accelerator(name).compute["fp8"].dense_per_s


def test_b100_fp64(catalog: Catalog) -> None:
    # Blackwell datasheet (March 2024), HGX B100 per GPU: FP64/FP64 Tensor Core 30 TF
    b100 = catalog.accelerator("b100")
    assert b100.compute["fp64"].dense_per_s == b100.compute["fp64_tensor"].dense_per_s == 30e12


# 11, 12. the docs say what the data holds -----------------------------------------------------


def test_the_docs_count_and_name_every_accelerator(catalog: Catalog) -> None:
    row = next(line for line in DOCS.read_text(encoding="utf-8").splitlines() if "| accelerators (" in line)
    count = re.search(r"accelerators \((\d+)\)", row)
    assert count is not None
    assert int(count[1]) == len(catalog.accelerators)
    for name in catalog.accelerators:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", row), name


def test_the_h800_link_does_not_name_the_a800(catalog: Catalog) -> None:
    assert "A800" not in catalog.link("nvlink-4-reduced").display_name.replace("the A800 uses nvlink-3", "")
    a800 = catalog.accelerator("a800-sxm")
    assert a800.scale_up is not None
    assert a800.scale_up.link.name == "nvlink-3"


def test_the_docs_name_the_one_system_with_nvlink_sharp_from_a_provider(catalog: Catalog) -> None:
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert "no provider says NVLink SHARP is on" not in text
    assert catalog.system("nd-h100-v5").in_network_reduction
    assert "NVLink SHARP is assumed off except on `nd-h100-v5`" in text


# 13. small things -----------------------------------------------------------------------------


def test_an_empty_name_says_so_once(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "")
    one_line_error(result, "the hardware name is empty")
    assert "name name" not in result.err


def test_memory_types_compare_without_case(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "compare", "b200", "mi355x")  # HBM3e and HBM3E
    assert result.code == 0, result.err
    assert not any("memory type" in line and "differs" in line for line in result.out.splitlines())


def test_aliases_are_listed_once(catalog: Catalog) -> None:
    for table in (catalog.accelerators, catalog.systems, catalog.links, catalog.cpus):
        for record in table.values():
            assert len(set(record.aliases)) == len(record.aliases), record.name
            assert record.name not in record.aliases, record.name
    assert catalog.accelerator("a10").aliases.count("nvidia-a10") == 1


def test_no_sparsity_footnote_without_a_sparse_figure(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "compare", "dgx-h100", "dgx-b200")
    assert result.code == 0, result.err
    assert "2:4" not in result.out
    assert "2:4" in run_cli("hw", "compare", "h100-sxm", "b200").out
