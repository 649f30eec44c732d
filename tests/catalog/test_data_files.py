"""Every shipped data file: loads, has plausible figures, and a declared source for every figure."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lightspeed.catalog import Accelerator, Catalog
from lightspeed.catalog.parse import builtin_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SRC = Path(__file__).resolve().parents[2] / "src" / "lightspeed"

# The accelerators issue 2 asks for (one record each), plus V100, MI250X and A100 40GB for traces.
REQUIRED_ACCELERATORS = [
    "a100-sxm",
    "a100-pcie",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h800-sxm",
    "h800-pcie",
    "h20",
    "h200-sxm",
    "h200-nvl",
    "b200",
    "gb200",
    "b300",
    "gb300",
    "mi300x",
    "mi325x",
    "mi355x",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "v100-sxm2",
    "mi250x",
]
REQUIRED_LINKS = [
    "pcie-4-x16",
    "pcie-5-x16",
    "pcie-6-x16",
    "nvlink-3",
    "nvlink-4",
    "nvlink-4-reduced",
    "nvlink-5",
    "nvlink-c2c",
    "ib-hdr",
    "ib-ndr",
    "ib-xdr",
    "ethernet-400g",
    "ethernet-800g",
    "xgmi-cdna3",
    "tpu-ici-v5e",
]
REQUIRED_SYSTEMS = [
    "gh200-nvl32",
    "dgx-a100",
    "dgx-h100",
    "dgx-h200",
    "hgx-h800",
    "dgx-b200",
    "dgx-b300",
    "mi300x-platform",
    "gb200-nvl72",
    "gb300-nvl72",
]
# Sparse rows whose dense value is NOT half the printed one, with the reason.
NOT_TWO_TO_ONE = {
    ("b300", "fp4"): "Blackwell Ultra prints FP4 as 18 | 14 PF",
    ("gb300", "fp4"): "Blackwell Ultra prints FP4 as 20 | 15 PF",
    ("l40s", "bf16"): "the L40S datasheet prints 362.05 | 733",
    ("l40s", "fp16"): "the L40S datasheet prints 362.05 | 733",
}
# Issue 28's coverage, with each datasheet's figures written out: (dense BF16 TFLOP/s, usable memory GB,
# memory bandwidth TB/s, TDP W or None). L4, A10: NVIDIA datasheets print the tensor rows with sparsity
# (L4 BF16 242*, A10 250*); L40S prints 362.05 | 733*; GH200 is an H100 (BF16 1,979*); A10G from
# Baseten's spec sheet (NVIDIA publishes none); TPU v4 from Google's v4 page (32 GiB, 1,200 GBps,
# 192 W measured maximum).
COVERAGE = {
    "gh200": (989.5, 96.0, 4.0, 1000.0),
    "gh200-144gb": (989.5, 141.0, 4.9, 1000.0),
    "l40s": (362.05, 48.0, 0.864, 350.0),
    "l4": (121.0, 24.0, 0.3, 72.0),
    "a10": (125.0, 24.0, 0.6, 150.0),
    "a10g": (70.0, 24.0, 0.6, None),
    # A40 datasheet: BF16 149.7 | 299.4*, 48 GB GDDR6 at 696 GB/s, 300 W
    "a40": (149.7, 48.0, 0.696, 300.0),
    "tpu-v4": (275.0, 32 * 2**30 / 1e9, 1.2, 192.0),
}
# Families the sol engine has no efficiency defaults for (kept for traces from older machines).
FAMILIES_WITHOUT_EFFICIENCY = {"nvidia-volta", "amd-cdna2"}


def test_required_records_exist(catalog: Catalog) -> None:
    assert set(REQUIRED_ACCELERATORS) <= set(catalog.accelerators)
    assert set(REQUIRED_LINKS) <= set(catalog.links)
    assert set(REQUIRED_SYSTEMS) <= set(catalog.systems)
    assert {"grace", "xeon-platinum-8480c", "epyc-9654", "epyc-9575f"} <= set(catalog.cpus)


def test_one_record_per_file(catalog: Catalog) -> None:
    files = builtin_files()
    names = [tomllib.loads(path.read_text(encoding="utf-8"))["name"] for path in files]
    assert len(names) == len(set(names))
    total = len(catalog.accelerators) + len(catalog.links) + len(catalog.cpus) + len(catalog.systems)
    assert total == len(files)


@pytest.mark.parametrize("name", REQUIRED_ACCELERATORS)
def test_accelerator_figures_are_plausible(catalog: Catalog, name: str) -> None:
    accelerator = catalog.accelerator(name)
    bf16 = accelerator.compute.get("bf16") or accelerator.compute["fp16"]
    assert 50e12 <= bf16.dense_per_s <= 5000e12 * accelerator.num_logical_devices
    assert 8e9 <= accelerator.memory_usable_bytes <= accelerator.memory_nominal_bytes <= 400e9
    assert 0.5e12 <= accelerator.memory_bandwidth_bytes_per_s <= 20e12
    if accelerator.tdp_w is not None:
        assert 200 <= accelerator.tdp_w <= 2000
        assert accelerator.tdp_min_w is None or accelerator.tdp_min_w <= accelerator.tdp_w
    if accelerator.scale_up is not None:
        assert 100e9 <= accelerator.scale_up.bidirectional_bytes_per_s <= 2e12
    for figure in accelerator.compute.values():
        assert 0 < figure.dense_per_s <= figure.printed_per_s
        assert figure.unit == ("OP/s" if figure.precision.startswith("int") else "FLOP/s")


@pytest.mark.parametrize("name", sorted(COVERAGE))
def test_coverage_records_carry_their_datasheet_figures(catalog: Catalog, name: str) -> None:
    bf16_tflop, memory_gb, bandwidth_tb, tdp_w = COVERAGE[name]
    accelerator = catalog.accelerator(name)
    assert accelerator.dense_flop_per_s("bf16") == pytest.approx(bf16_tflop * 1e12)
    assert accelerator.memory_usable_bytes == pytest.approx(memory_gb * 1e9)
    assert accelerator.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_tb * 1e12)
    assert accelerator.tdp_w == tdp_w
    assert accelerator.family in {"nvidia-hopper", "nvidia-ada", "nvidia-ampere", "google-tpu"}


@pytest.mark.parametrize("name", [*REQUIRED_ACCELERATORS, *sorted(COVERAGE)])
def test_every_accelerator_figure_names_a_declared_source(catalog: Catalog, name: str) -> None:
    accelerator = catalog.accelerator(name)
    cited = [figure.source for figure in accelerator.compute.values()]
    cited += [accelerator.memory_source]
    cited += [accelerator.power_source] if accelerator.tdp_w is not None else []
    cited += [accelerator.chip_source] if accelerator.num_compute_units or accelerator.l2_cache_bytes else []
    cited += [a.source for a in (accelerator.scale_up, accelerator.host_link) if a is not None]
    cited += [key for conflict in accelerator.conflicts for key in conflict.sources]
    assert cited
    for key in cited:
        assert key in accelerator.sources, f"{name}: {key!r} is not declared"
    for source in accelerator.sources.values():
        assert source.title


def test_every_link_cpu_and_system_figure_names_a_declared_source(catalog: Catalog) -> None:
    for link in catalog.links.values():
        assert link.source in link.sources, link.name
        assert link.latency_source in link.sources, link.name
    for cpu in catalog.cpus.values():
        assert cpu.source in cpu.sources, cpu.name
    for system in catalog.systems.values():
        assert system.source in system.sources, system.name
        for total in system.printed_totals:
            assert total.source in system.sources, (system.name, total.key)
        if system.power_max_w is not None:
            assert system.power_source in system.sources, system.name


def test_links_keep_per_direction_and_bidirectional_apart(catalog: Catalog) -> None:
    for link in catalog.links.values():
        assert link.bidirectional_bytes_per_s == pytest.approx(2 * link.per_direction_bytes_per_s), link.name
        assert 10e9 <= link.per_direction_bytes_per_s <= 500e9, link.name
        assert 0.1e-6 <= link.latency_s <= 50e-6, link.name


def _nvidia_sparse_rows(catalog: Catalog) -> list[tuple[Accelerator, str]]:
    return [
        (accelerator, precision)
        for accelerator in catalog.accelerators.values()
        if accelerator.vendor == "NVIDIA"
        for precision, figure in accelerator.compute.items()
        if figure.printed_with_sparsity
    ]


def test_nvidia_sparse_rows_are_twice_dense_except_documented_ones(catalog: Catalog) -> None:
    rows = _nvidia_sparse_rows(catalog)
    assert len(rows) > 50
    for accelerator, precision in rows:
        figure = accelerator.compute[precision]
        row = (accelerator.name, precision)
        if row in NOT_TWO_TO_ONE:  # the datasheet prints both figures
            assert figure.dense_per_s != pytest.approx(figure.printed_per_s / 2), row
        else:
            assert figure.dense_per_s == pytest.approx(figure.printed_per_s / 2), (
                accelerator.name,
                precision,
            )


def test_non_nvidia_rows_are_printed_dense(catalog: Catalog) -> None:
    for accelerator in catalog.accelerators.values():
        if accelerator.vendor != "NVIDIA":
            assert not any(figure.printed_with_sparsity for figure in accelerator.compute.values())


def test_families_name_efficiency_defaults(catalog: Catalog) -> None:
    efficiency = tomllib.loads((SRC / "sol" / "data" / "efficiency.toml").read_text(encoding="utf-8"))
    known = set(efficiency["family"])
    for accelerator in catalog.accelerators.values():
        assert accelerator.family in known | FAMILIES_WITHOUT_EFFICIENCY, accelerator.name


def test_conflicts_record_both_values_and_the_choice(catalog: Catalog) -> None:
    conflicts = [(a.name, c) for a in catalog.accelerators.values() for c in a.conflicts]
    conflicts += [(s.name, c) for s in catalog.systems.values() for c in s.conflicts]
    assert len(conflicts) >= 10
    for _, conflict in conflicts:
        assert len(conflict.values) >= 2
        assert conflict.chosen in conflict.values


def test_nominal_and_usable_memory_are_kept_apart(catalog: Catalog) -> None:
    # REFERENCE.md section 1: B200 192 nominal vs 180 listed; H200 144 vs 141; B300 288 vs 270.
    # Nominal is the vendor's HBM "GB" in its binary sense (192 GB of stacks = 192 GiB); the
    # listed usable figure stays decimal.
    for name, nominal_gb, usable_gb in (("b200", 192, 180), ("h200-sxm", 144, 141), ("b300", 288, 270)):
        accelerator = catalog.accelerator(name)
        assert accelerator.memory_nominal_bytes == nominal_gb * 2**30
        assert accelerator.memory_usable_bytes == usable_gb * 1e9


def test_blackwell_ultra_fp4_is_not_halved(catalog: Catalog) -> None:
    # REFERENCE.md section 1: GB300 20 | 15 PF, HGX B300 18 | 14 PF (per GPU).
    assert catalog.accelerator("gb300").compute["fp4"].dense_per_s == 15e15
    assert catalog.accelerator("b300").compute["fp4"].dense_per_s == 14e15


def test_h100_sxm_dense_peaks_match_the_datasheet(catalog: Catalog) -> None:
    # NVIDIA H100 datasheet: BF16 1,979 TFLOPS with sparsity, "1/2 lower without".
    h100 = catalog.accelerator("h100-sxm")
    assert h100.dense_flop_per_s("bf16") == 989.5e12
    assert h100.dense_flop_per_s("fp8") == 1979e12
    assert h100.compute["bf16"].sparse_per_s == 1979e12


# Names devices and tools report, from the shared MLPerf system JSONs and HTA traces, and
# from nvidia-smi / torch.cuda.get_device_name / ROCm / JAX device_kind.
REPORTED_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA A100-SXM4-80GB": "a100-sxm",
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie",
    "A100-PCIE-40GB": "a100-pcie-40gb",  # Nsight Systems' TARGET_INFO_GPU (shared nsight/nsys/ex-gpu.s10)
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA H800": "h800-sxm",
    "NVIDIA H800 PCIe": "h800-pcie",
    "NVIDIA H20": "h20",
    "NVIDIA B200": "b200",
    "NVIDIA GB200": "gb200",
    "NVIDIA B300 SXM6 AC": "b300",
    "NVIDIA GB300": "gb300",
    "Tesla V100-SXM2-32GB": "v100-sxm2",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI325X": "mi325x",
    "AMD Instinct MI355X": "mi355x",
    "AMD Instinct MI250X": "mi250x",
    "TPU v5 lite": "tpu-v5e",
    "TPU v5": "tpu-v5p",
    "TPU v6 lite": "tpu-v6e",
    "TPU v4": "tpu-v4",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "NVIDIA A10": "a10",
    "NVIDIA A10G": "a10g",
    "NVIDIA A40": "a40",
    "NVIDIA GH200 480GB": "gh200",
}


@pytest.mark.parametrize(("reported", "expected"), sorted(REPORTED_NAMES.items()))
def test_find_device_maps_reported_names(catalog: Catalog, reported: str, expected: str) -> None:
    found = catalog.find_device(reported)
    assert found is not None
    assert found.name == expected


@pytest.mark.parametrize(
    "reported",
    [
        "NVIDIA A100-PG509-200",
        "AMD Radeon Graphics",
        "AMD Instinct MI250X/MI250",
        "NVIDIA H10",
        "",
        "H100 80GB",
    ],
)
def test_find_device_does_not_guess(catalog: Catalog, reported: str) -> None:
    assert catalog.find_device(reported) is None


def test_mlperf_system_descriptions_map_to_records(catalog: Catalog, shared: Path) -> None:
    systems = sorted((shared / "data" / "mlperf" / "training_v4.0").rglob("*.system.json"))
    assert systems
    for path in systems:
        description = json.loads(path.read_text(encoding="utf-8"))
        accelerator = catalog.find_device(description["accelerator_model_name"])
        assert accelerator is not None, description["accelerator_model_name"]
        cpu = catalog.find_cpu(description["host_processor_model_name"])
        assert cpu is not None
        assert cpu.name == "xeon-platinum-8480c"
