"""Cloud instance types as catalog systems (issue 28, coverage: rows and users name
``p5.48xlarge``, ``a3-megagpu-8g`` or ``Standard_ND96isr_H100_v5`` instead of a GPU)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.cost.workloads import system_for
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.validation.hardware_text import default_system, resolve_row_cluster
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.workload import load_models

# What each provider prints for GPU-to-GPU networking between instances, in Gb/s, and the GPUs:
# AWS EC2 User Guide p5-efa ("P5 and P5e instances support up to 32 network cards and can provide
# up to 3,200 Gbps"); Google Cloud "Networking and GPU machines" (A4 and A3 Ultra: 8 ConnectX-7,
# 3,200 Gbps GPU to GPU; A3 Mega 8 x 200 Gbps GPUDirect-TCPXO of its 1,800; A3 High 4 x 200 Gbps
# GPUDirect-TCPX of its 1,000); Microsoft Learn ND H100 v5 (400 Gb/s InfiniBand per GPU, 3.2 Tbps
# per VM) and ND A100 v4 (200 Gb/s HDR per GPU, 1.6 Tb/s per VM).
PRINTED = {
    "p5.48xlarge": ("AWS", "h100-sxm", 3200),
    "p5e.48xlarge": ("AWS", "h200-sxm", 3200),
    "a3-highgpu-8g": ("Google Cloud", "h100-sxm", 4 * 200),
    "a3-megagpu-8g": ("Google Cloud", "h100-sxm", 8 * 200),
    "a3-ultragpu-8g": ("Google Cloud", "h200-sxm", 3200),
    "a4-highgpu-8g": ("Google Cloud", "b200", 3200),
    "nd-h100-v5": ("Azure", "h100-sxm", 8 * 400),
    "nd-a100-v4": ("Azure", "a100-sxm-40gb", 8 * 200),
}


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_each_instance_carries_what_its_provider_prints(catalog: Catalog, name: str) -> None:
    provider, accelerator, gbit_per_s = PRINTED[name]
    system = catalog.system(name)
    assert system.cloud_provider == provider
    shape = (system.accelerator.name, system.num_accelerators, system.scale_up_domain_size)
    assert shape == (accelerator, 8, 8)
    assert system.scale_out is not None
    per_node_gbit = system.scale_out.num_links * system.scale_out.link.per_direction_bytes_per_s * 8 / 1e9
    assert per_node_gbit == pytest.approx(gbit_per_s)
    # NVLink SHARP only where a measurement on the instance shows it: Azure's own benchmarking
    # guide runs NCCL's NVLS all-reduce on ND H100 v5 (478.87 GB/s busbw at 8 GB); no other
    # provider says it is on
    assert system.in_network_reduction == (name == "nd-h100-v5")
    assert system.sources[system.source].url.startswith("https://")


def test_a_bare_gpu_stays_the_vendors_own_system(catalog: Catalog) -> None:
    # Four H100 SXM systems now exist; a row or a command that names only the GPU means the
    # DGX/HGX node (its NICs, its NVLink SHARP), never whichever cloud sorts first.
    h100 = catalog.accelerator("h100-sxm")
    built = [system.name for system in catalog.systems_built_from("h100-sxm")]
    assert built[0] == "dgx-h100"
    assert set(built) >= {
        "dgx-h100",
        "p5.48xlarge",
        "a3-highgpu-8g",
        "nd-h100-v5",
    }
    assert default_system(catalog, h100).name == "dgx-h100"
    assert system_for(catalog, "h100-sxm").name == "dgx-h100"
    assert system_for(catalog, "b200").name == "dgx-b200"
    with pytest.raises(InvalidPlanError, match=r"e\.g\. dgx-h100"):
        catalog.accelerator_cluster("h100-sxm", 16)
    cluster, _ = resolve_row_cluster(catalog, _row("H100 (SXM assumed), 989 TF dense BF16"), 96)
    assert (cluster.system.name, cluster.num_nodes) == ("dgx-h100", 12)


def _row(hardware: str) -> PublishedRow:
    return PublishedRow(row_id="C", kind="train", line=2, cells={"hardware": hardware})


@pytest.mark.parametrize(
    ("text", "gpus", "expected"),
    [
        ("p5.48xlarge", 96, ("p5.48xlarge", 12)),
        ("12 x p5.48xlarge", 96, ("p5.48xlarge", 12)),
        ("AWS p5.48xlarge (8x H100)", 16, ("p5.48xlarge", 2)),
        ("ml.p5.48xlarge", 8, ("p5.48xlarge", 1)),
        ("p5e.48xlarge", 64, ("p5e.48xlarge", 8)),
        ("a3-megagpu-8g", 256, ("a3-megagpu-8g", 32)),
        ("Google Cloud A3 Ultra", 16, ("a3-ultragpu-8g", 2)),
        ("Standard_ND96isr_H100_v5", 32, ("nd-h100-v5", 4)),
        ("Azure ND H100 v5", 32, ("nd-h100-v5", 4)),
        ("Standard_ND96asr_v4", 64, ("nd-a100-v4", 8)),
    ],
)
def test_rows_name_instances_the_way_sources_write_them(
    catalog: Catalog, text: str, gpus: int, expected: tuple[str, int]
) -> None:
    cluster, notes = resolve_row_cluster(catalog, _row(text), gpus)
    assert (cluster.system.name, cluster.num_nodes) == expected
    assert notes[0].startswith(f"hardware '{text}'")


def test_the_thinner_network_costs_a_data_parallel_step(catalog: Catalog) -> None:
    # The same H100s, the same plan: ZeRO-3 data parallelism over 8 instances moves the weights
    # and gradients of Llama 3 8B between them every step. A3 High gives each instance 800 Gb/s
    # (4 x 200), P5 3,200 Gb/s: the step over A3 High cannot be the faster, and over the thinner
    # network the exposed communication it adds must show.
    model = load_models().get("llama-3-8b")
    plan = TrainingPlan(dp=64, zero_stage=3, micro_batch_size=1, global_batch_size=64, seq_len=8192)

    def step_s(name: str) -> float:
        cluster = catalog.cluster(name, num_nodes=8)
        return estimate_training(model=model, cluster=cluster, plan=plan).step_time_s

    p5, a3_high = step_s("p5.48xlarge"), step_s("a3-highgpu-8g")
    assert a3_high > p5 * 1.01
