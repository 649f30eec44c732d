"""Catalog additions: NVIDIA A800 SXM4 80GB and its 8-GPU HGX node, the name "MI355", and the AWS
instance types p5en.48xlarge and p6-b200.48xlarge, each with the figures its source prints."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.catalog.totals import derive_totals
from lightspeed.catalog.views import compare_hardware
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.validation.hardware_text import (
    default_system,
    read_hardware,
    resolve_row_cluster,
    row_gpus,
)
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.workload import load_models

# NVIDIA A100 datasheet (SXM 80GB column), whose figures the A800 repeats (Reuters, 7 Nov 2022, via
# Tweakers: same listed performance, up to 80 GB HBM2e, 400 W SXM; NVLink 400 GB/s vs the A100's
# 600 GB/s). Dense TFLOP/s (TOP/s for INT8): the datasheet prints tensor rows "dense | sparse*".
A800_DENSE_TERA = {
    "fp64": 9.7,
    "fp64_tensor": 19.5,
    "fp32": 19.5,
    "tf32": 156.0,
    "bf16": 312.0,
    "fp16": 312.0,
    "int8": 624.0,
}
A800_NAMES = [
    "A800",
    "a800",
    "A800-SXM4-80GB",
    "A800 80GB",
    "NVIDIA A800",
    "NVIDIA A800-SXM4-80GB",  # what nvidia-smi and torch.cuda.get_device_name report
    "NVIDIA A800 80GB",
    "A800 SXM4 80GB",
]


def _row(hardware: str, gpus: str = "") -> PublishedRow:
    return PublishedRow(row_id="C", kind="train", line=2, cells={"hardware": hardware, "GPUs": gpus})


def test_a800_carries_the_a100_80gb_compute_and_memory(catalog: Catalog) -> None:
    a800 = catalog.accelerator("a800-sxm")
    assert (a800.vendor, a800.architecture, a800.form_factor, a800.family) == (
        "NVIDIA",
        "Ampere",
        "SXM4",
        "nvidia-ampere",
    )
    assert set(a800.compute) == set(A800_DENSE_TERA)
    for row, tera in A800_DENSE_TERA.items():
        assert a800.compute[row].dense_per_s == pytest.approx(tera * 1e12), row
    assert a800.dense_flop_per_s("bf16") == pytest.approx(312e12)
    assert a800.compute["bf16"].printed_with_sparsity
    assert a800.compute["bf16"].sparse_per_s == pytest.approx(624e12)
    assert a800.memory_usable_bytes == pytest.approx(80e9)
    assert a800.memory_nominal_bytes == 80 * 2**30
    assert a800.memory_bandwidth_bytes_per_s == pytest.approx(2039e9)
    assert a800.memory_device_bytes == 81920 * 2**20  # nvidia-smi: 81920MiB, as an A100 80GB
    assert a800.tdp_w == 400.0
    assert a800.num_compute_units == 108


def test_a800_nvlink_is_capped_at_400_gb_per_s_where_the_a100_has_600(catalog: Catalog) -> None:
    a800, a100 = catalog.accelerator("a800-sxm"), catalog.accelerator("a100-sxm")
    assert a800.scale_up is not None
    assert a100.scale_up is not None
    assert a800.scale_up.bidirectional_bytes_per_s == pytest.approx(400e9)
    assert a100.scale_up.bidirectional_bytes_per_s == pytest.approx(600e9)
    assert a800.scale_up.link.name == a100.scale_up.link.name == "nvlink-3"
    # side by side, only the NVLink rows differ
    comparison = compare_hardware(catalog=catalog, names=["a100-sxm", "a800-sxm"])
    differing = {row.field for row in comparison.rows if row.differs}
    assert differing == {"scale_up_links", "scale_up_per_direction", "scale_up_bidirectional"}


@pytest.mark.parametrize("name", A800_NAMES)
def test_a800_names_resolve(catalog: Catalog, name: str) -> None:
    found = catalog.find_device(name)
    assert found is not None
    assert found.name == "a800-sxm"


def test_an_a800_of_other_memory_is_not_the_80gb_part(catalog: Catalog) -> None:
    assert catalog.find_device("A800 40GB") is None
    assert catalog.find_device("NVIDIA A800 PCIe") is None


def test_the_hgx_a800_node(catalog: Catalog) -> None:
    # Skywork-13B (arXiv 2310.19341, section 3.5): NVIDIA-HGX-A800 nodes of 8 A800-80G SXM, 400 GB/s
    # NVLink inside, 800 Gb/s RoCE between nodes.
    node = catalog.system("hgx-a800")
    assert (node.accelerator.name, node.num_accelerators, node.scale_up_domain_size) == ("a800-sxm", 8, 8)
    assert node.in_network_reduction is False
    assert node.scale_out is not None
    per_node_gbit = node.scale_out.num_links * node.scale_out.link.per_direction_bytes_per_s * 8 / 1e9
    assert per_node_gbit == pytest.approx(800)
    a800 = catalog.accelerator("a800-sxm")
    assert default_system(catalog, a800).name == "hgx-a800"
    assert catalog.find_system("8xa800") is node


def test_the_a800_nvlink_cap_slows_a_tensor_parallel_step(catalog: Catalog) -> None:
    # One node, TP 8 over NVLink: the same GPUs with two thirds of the NVLink bandwidth cannot be
    # the faster.
    model = load_models().get("llama-3-8b")
    plan = TrainingPlan(tp=8, micro_batch_size=1, global_batch_size=8, seq_len=4096)

    def step_s(name: str) -> float:
        cluster = catalog.cluster(name, num_nodes=1)
        return estimate_training(model=model, cluster=cluster, plan=plan).step_time_s

    assert step_s("hgx-a800") > step_s("dgx-a100") * 1.005


@pytest.mark.parametrize(
    ("text", "gpus", "expected"),
    [
        ("A800 80GB (8 per node)", "64", ("hgx-a800", 8, 64)),
        ("64 A800 GPUs", "", ("hgx-a800", 8, 64)),
        ("8x A800 80GB", "", ("hgx-a800", 1, 8)),
        ("8x A800", "", ("hgx-a800", 1, 8)),
        ("A800 ('two-node, 16-GPU A800 environment')", "16", ("hgx-a800", 2, 16)),
        ("NVIDIA A800-SXM4-80GB", "32", ("hgx-a800", 4, 32)),
    ],
)
def test_rows_naming_a800_resolve_to_nodes_of_eight(
    catalog: Catalog, text: str, gpus: str, expected: tuple[str, int, int]
) -> None:
    row = _row(text, gpus)
    num_gpus, _ = row_gpus(catalog, row)
    cluster, notes = resolve_row_cluster(catalog, row, num_gpus)
    assert (cluster.system.name, cluster.num_nodes, num_gpus) == expected
    assert notes[0].startswith(f"hardware '{text}'")


def test_read_hardware_on_an_a800_cell_makes_no_variant(catalog: Catalog) -> None:
    hardware, span = read_hardware(catalog, "8x A800 80GB")
    assert (hardware.system, hardware.memory_gib, hardware.power_limit_w, hardware.fabric) == (
        "hgx-a800",
        None,
        None,
        None,
    )
    assert span == "8x A800 80GB"


@pytest.mark.parametrize("name", ["MI355", "mi355", "AMD Instinct MI355", "AMD MI355"])
def test_mi355_without_x_is_mi355x(catalog: Catalog, name: str) -> None:
    found = catalog.find_device(name)
    assert found is not None
    assert found.name == "mi355x"


def test_the_mi355_alias_guesses_nothing_else(catalog: Catalog) -> None:
    # MI300 stays the MI300X, MI355X stays itself, and an MI350X (a part the catalog lacks) is
    # not taken for the MI355X
    assert catalog.accelerator("MI300").name == "mi300x"
    assert catalog.accelerator("MI355X").name == "mi355x"
    assert catalog.find_device("MI350X") is None
    assert catalog.find_device("MI35") is None


def test_read_hardware_on_an_mi355_cell(catalog: Catalog) -> None:
    hardware, span = read_hardware(catalog, "MI355 ('Cluster with MI355, 4 nodes')")
    assert hardware.system == "mi355x-platform"
    assert hardware.memory_gib is None
    assert span == "MI355"
    assert read_hardware(catalog, "MI355")[0].system == "mi355x-platform"


# What AWS prints (EC2 instance types, accelerated computing; EC2 User Guide, EFA with multiple
# network cards): p5en.48xlarge 8 x H200 141GB, 16 network cards, 3,200 Gbps EFA (v3);
# p6-b200.48xlarge 8 x B200, 8 network cards of 400 Gbps EFA (v4), 3,200 Gbps.
AWS = {
    "p5en.48xlarge": ("h200-sxm", "efa-200g", 16, 200, 3200),
    "p6-b200.48xlarge": ("b200", "efa-400g", 8, 400, 3200),
}


@pytest.mark.parametrize("name", sorted(AWS))
def test_aws_instances_carry_what_aws_prints(catalog: Catalog, name: str) -> None:
    accelerator, link, num_cards, card_gbit, total_gbit = AWS[name]
    system = catalog.system(name)
    assert system.cloud_provider == "AWS"
    assert (system.accelerator.name, system.num_accelerators, system.scale_up_domain_size) == (
        accelerator,
        8,
        8,
    )
    assert system.in_network_reduction is False  # AWS does not say NVLink SHARP is on
    assert system.scale_out is not None
    assert (system.scale_out.link.name, system.scale_out.num_links) == (link, num_cards)
    assert system.scale_out.link.per_direction_bytes_per_s * 8 / 1e9 == pytest.approx(card_gbit)
    per_node_gbit = num_cards * system.scale_out.link.per_direction_bytes_per_s * 8 / 1e9
    assert per_node_gbit == pytest.approx(total_gbit)
    assert system.sources[system.source].url.startswith("https://docs.aws.amazon.com/")
    for row in derive_totals(system=system).rows:
        if row.printed is not None:
            assert row.within_tolerance, (name, row.key)


def test_aws_printed_totals(catalog: Catalog) -> None:
    p5en = derive_totals(system=catalog.system("p5en.48xlarge"))
    assert p5en.row("memory_capacity").printed == pytest.approx(1128e9)  # 8 x 141 GB
    p6 = derive_totals(system=catalog.system("p6-b200.48xlarge"))
    # AWS prints 1,432 GiB = 8 x 179 GiB, what the driver reports per B200 (183,359 MiB = 179.06 GiB)
    reported = p6.row("memory_capacity_reported")
    assert reported.printed == pytest.approx(1432 * 2**30)
    assert reported.derived == pytest.approx(8 * 183_359 * 2**20)
    assert reported.within_tolerance  # 8 x 183,359 MiB is 0.03% above 1,432 GiB
    assert p6.row("scale_up_bidirectional").printed == pytest.approx(14.4e12)  # AWS P6 page
    assert p6.row("scale_up_bidirectional").derived == pytest.approx(14.4e12)  # 8 x 1.8 TB/s


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("p5en.48xlarge", "p5en.48xlarge"),
        ("AWS p5en", "p5en.48xlarge"),
        ("ml.p5en.48xlarge", "p5en.48xlarge"),
        ("p6-b200.48xlarge", "p6-b200.48xlarge"),
        ("AWS p6-b200", "p6-b200.48xlarge"),
        ("ml.p6-b200.48xlarge", "p6-b200.48xlarge"),
    ],
)
def test_aws_instance_names_resolve(catalog: Catalog, text: str, expected: str) -> None:
    found = catalog.find_system(text)
    assert found is not None
    assert found.name == expected
    assert read_hardware(catalog, text)[0].system == expected


@pytest.mark.parametrize(
    ("text", "gpus", "expected"),
    [
        ("p5en.48xlarge", "64", ("p5en.48xlarge", 8, 64)),
        ("4 x p5en.48xlarge", "", ("p5en.48xlarge", 4, 32)),
        ("AWS p6-b200.48xlarge (8x B200)", "16", ("p6-b200.48xlarge", 2, 16)),
    ],
)
def test_rows_naming_aws_instances(
    catalog: Catalog, text: str, gpus: str, expected: tuple[str, int, int]
) -> None:
    row = _row(text, gpus)
    num_gpus, _ = row_gpus(catalog, row)
    cluster, _ = resolve_row_cluster(catalog, row, num_gpus)
    assert (cluster.system.name, cluster.num_nodes, num_gpus) == expected


def test_a_bare_gpu_still_means_the_vendors_node(catalog: Catalog) -> None:
    # the new instances sort after the vendor's 8-GPU node: 'H200' and 'B200' are unchanged
    assert catalog.systems_built_from("h200-sxm")[0].name == "dgx-h200"
    assert catalog.systems_built_from("b200")[0].name == "dgx-b200"
    assert read_hardware(catalog, "H200 141GB")[0].system == "dgx-h200"
    assert read_hardware(catalog, "8xB200")[0].system == "dgx-b200"
    assert "p5en.48xlarge" in {system.name for system in catalog.systems_built_from("h200-sxm")}
    assert "p6-b200.48xlarge" in {system.name for system in catalog.systems_built_from("b200")}
