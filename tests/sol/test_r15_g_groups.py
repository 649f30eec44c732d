"""Parallel groups that do not tile their scale-up domain (TP 6 on 8-GPU nodes): some copies
straddle two nodes, and every engine prices the group at the straddling copy's cost."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, ServingLoad, TrainingPlan, estimate_inference, estimate_training
from lightspeed.sol.core.collectives import (
    all_reduce_s,
    all_to_all_s,
    crosses_domains,
    fabric_of,
    local_size,
    straddle_note,
    thinnest_share,
    tiles_domain,
)
from lightspeed.workload import ModelRegistry

GB = 1e9
NVLINK4_BYTES_PER_S = 450 * GB  # H100 SXM, one direction per GPU
NDR_NIC_BYTES_PER_S = 50 * GB  # ConnectX-7 400 Gb/s, one NIC per GPU on a DGX H100


@pytest.mark.parametrize(
    ("group", "stride", "domain", "ranks", "share"),
    [
        (6, 1, 8, 24, 2),  # GPUs 6-11: 2 on node 0, 4 on node 1; GPUs 12-17: 4 and 2
        (6, 1, 8, 6, 6),  # one group on one node: nothing straddles
        (3, 1, 8, 24, 1),  # GPUs 6-8: 2 and 1
        (12, 1, 8, 24, 4),  # GPUs 0-11: 8 and 4
        (4, 3, 8, None, 1),  # ranks 0 3 6 | 9
        (8, 1, 8, 24, 8),  # tiles: one node each
        (16, 1, 8, 32, 8),  # tiles: two whole nodes each
    ],
)
def test_the_thinnest_share_of_a_domain_by_hand(
    group: int, stride: int, domain: int, ranks: int | None, share: int
) -> None:
    assert thinnest_share(group, stride, domain, ranks) == share
    assert float(local_size(group, stride, domain, ranks)) == share


def test_only_groups_that_tile_the_domain_stay_inside_it() -> None:
    assert [size for size in range(1, 17) if tiles_domain(size, 1, 8)] == [1, 2, 4, 8, 16]
    assert tiles_domain(9, 8, 72)  # a DP group of 9 behind TP 8 fills an NVL72 rack
    assert not tiles_domain(16, 1, 72)  # TP 16 in 72-GPU racks: 64-79 spans two racks


def test_a_straddling_tp_group_all_reduces_over_infiniband(catalog: Catalog) -> None:
    # 3 x DGX H100: ranks fill nodes of 8 in order, so TP 6 copies are GPUs 0-5, 6-11, 12-17, 18-23.
    # The copy on GPUs 6-11 has 2 GPUs on node 0: priced as 6 / 2 = 3 domains of 2 GPUs, the
    # cross-node part 2(n-1)/n x S over those 2 GPUs' NICs, the inside part a ring of 2 on NVLink,
    # the slower of the two, plus the scale-out hop latency over min(2(g-1), 2 ceil(log2 g)) = 6 steps.
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=3), bandwidth_efficiency=1.0)
    assert fabric.scale_out is not None
    size = 48e6  # 48 MB per rank
    inside = 2 * 1 / 2 * size / NVLINK4_BYTES_PER_S  # 107 us
    across = 2 * 2 / 3 * size / (2 * NDR_NIC_BYTES_PER_S)  # 640 us
    expected = max(inside, across) + 6 * fabric.scale_out.latency_s
    assert float(all_reduce_s(fabric, size, 6)) == pytest.approx(expected, rel=1e-9)
    assert bool(crosses_domains(fabric, 6, 1))
    assert not bool(crosses_domains(fabric, 8, 1))
    # an all-to-all of the same group: the 2 GPUs on the thin side send 4/6 of their buffer across
    a2a_across = (6 - 2) / 6 * size / NDR_NIC_BYTES_PER_S
    steps = 1 + 2.584962500721156  # 1 + log2(6)
    assert float(all_to_all_s(fabric, size, 6)) == pytest.approx(
        a2a_across + steps * fabric.scale_out.latency_s, rel=1e-9
    )


def test_the_same_group_on_one_node_stays_on_nvlink(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=1), bandwidth_efficiency=1.0)
    assert not bool(crosses_domains(fabric, 6, 1))
    assert straddle_note(fabric, "TP", 6) == ""


def test_the_note_says_the_group_crosses_nodes(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=3), bandwidth_efficiency=1.0)
    note = straddle_note(fabric, "TP", 6)
    assert "TP groups of 6 GPUs do not tile the 8-GPU scale-up domain" in note
    assert "InfiniBand" in note
    assert "3 domains of 2 GPUs" in note
    assert straddle_note(fabric, "TP", 8) == ""
    assert straddle_note(fabric, "TP", 4) == ""


def test_plan_infer_prices_tp6_on_three_nodes_over_ib(catalog: Catalog, models: ModelRegistry) -> None:
    # The expert's case: GPT-3 175B, tp=6 x 4 replicas on 3 x DGX H100, FP8, 1000/1000 tokens.
    def run(system: str, gpus: int, replicas: int) -> tuple[float, str]:
        estimate = estimate_inference(
            model=models.get("gpt-3-175b"),
            cluster=catalog.resolve_cluster(system, gpus),
            plan=InferencePlan(tp=6, replicas=replicas, precision="fp8"),
            load=ServingLoad(1000, 1000, concurrency=16 * replicas),  # 16 per replica
        )
        return estimate.iteration_breakdown_s["tp_comm"], estimate.bound

    across, bound = run("3xdgx-h100", 24, 4)
    inside, _ = run("dgx-h100", 6, 1)  # one replica on one node: the same batch, all on NVLink
    assert "TP all-reduce over InfiniBand" in bound
    assert across > 2 * inside


def test_plan_train_tp6_costs_more_tp_time_than_tp8(catalog: Catalog, models: ModelRegistry) -> None:
    # Before: tp=6 pp=4 showed less TP communication (436 ms) than tp=8 pp=3 (633 ms) because its
    # all-reduces were priced on NVLink; two of its four TP groups per stage straddle two nodes.
    cluster = catalog.cluster("dgx-h100", num_nodes=3)

    def tp_comm(tp: int) -> float:
        plan = TrainingPlan(tp=tp, pp=24 // tp, dp=1, global_batch_size=64, seq_len=2048)
        estimate = estimate_training(
            model=models.get("gpt-3-175b"), cluster=cluster, plan=plan, check_fit=False
        )
        return estimate.breakdown_s["tp_comm"]

    assert tp_comm(6) > 2 * tp_comm(8)


def test_the_serving_search_says_straddling_sizes_are_priced(catalog: Catalog, models: ModelRegistry) -> None:
    from lightspeed.sol import search_inference

    result = search_inference(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster("2xdgx-h100"),
        load=ServingLoad(1024, 256),
        precision="fp8",
    )
    line = result.constraints[0]
    assert "neither divides 8 nor is a multiple of it" in line
    assert "priced at the straddling copy's cost" in line
    assert "every group stays inside it" not in line


def test_the_note_counts_the_straddling_groups_and_bounds_the_others() -> None:
    from lightspeed.sol.core.collectives import straddling_groups

    # by hand: TP6 over 24 GPUs in nodes of 8: 0-5 | 6-11 (crosses 8) | 12-17 (crosses 16) | 18-23
    assert straddling_groups(6, 1, 8, 24) == (2, 4)
    # TP16 over 144 GPUs in racks of 72: starts 0, 16, ..., 128; only 64-79 crosses 72
    assert straddling_groups(16, 1, 72, 144) == (1, 9)
    # DP groups of 3, 8 apart (behind TP8) over 24 GPUs in nodes of 8: one rank a node, none straddle
    # a node (each member sits in its own): they all cross, none is inside one
    assert straddling_groups(3, 8, 8, 24) == (8, 8)
