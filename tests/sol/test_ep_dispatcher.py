"""The MoE token dispatcher of a training plan (Megatron-Core's `alltoall`, or its flex dispatcher's
DeepEP / HybridEP backends, which send a token once per destination node), and how many nodes a
token reaches: at most as many as the EP group spans, which the old count (top_k_groups / top_k, or
every copy without group-limited routing) ignored."""

from __future__ import annotations

import json
from math import comb
from typing import Any

import pytest

from lightspeed.sol.core.experts import node_dedupe_scale
from lightspeed.sol.validation.published import read_table
from lightspeed.sol.validation.rows import read_training_row
from lightspeed.workload import ModelRegistry


def _plan(run_cli: Any, *extra: str) -> dict[str, Any]:
    result = run_cli(
        "plan", "train", "--model", "qwen3-30b-a3b", "--system", "2xdgx-h100", "--gpus", "16", "--ep", "16",
        "--global-batch", "64", "--seq", "4096", "--no-fit-check", "--json", *extra,
    )  # fmt: skip
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def test_the_nodes_a_token_reaches_by_hand(models: ModelRegistry) -> None:
    # Qwen3-30B-A3B: 8 of 128 experts, 64 on each of 2 nodes; a node is missed with probability
    # C(64, 8) / C(128, 8); the token reaches 2 (1 - that) nodes instead of sending 8 copies
    qwen = models.get("qwen3-30b-a3b").moe
    assert qwen is not None
    reached = 2 * (1 - comb(64, 8) / comb(128, 8))
    assert float(node_dedupe_scale(qwen, 2.0)) == pytest.approx(reached / 8, rel=1e-12)
    # DeepSeek-V3: 8 of 256 experts in at most 4 node groups; on 2 nodes it cannot reach more than 2
    deepseek = models.get("deepseek-v3").moe
    assert deepseek is not None
    assert float(node_dedupe_scale(deepseek, 2.0)) == pytest.approx(2 * (1 - comb(128, 8) / comb(256, 8)) / 8)
    assert float(node_dedupe_scale(deepseek, 16.0)) == 4 / 8


def test_a_flex_dispatcher_sends_a_token_once_a_node(run_cli: Any) -> None:
    alltoall, deepep = _plan(run_cli), _plan(run_cli, "--ep-dispatcher", "deepep")
    assert alltoall["plan"]["ep_dispatcher"] == "alltoall"  # megatron's default dispatcher
    hybridep = _plan(run_cli, "--ep-dispatcher", "hybridep")
    assert hybridep["breakdown_s"]["ep_comm"] == pytest.approx(deepep["breakdown_s"]["ep_comm"], rel=1e-12)
    # the cross-node bytes shrink to the nodes a token reaches (hand count above: 0.249 of the
    # copies); the per-message latency and the NVLink share do not shrink, so a little more is left
    ratio = deepep["breakdown_s"]["ep_comm"] / alltoall["breakdown_s"]["ep_comm"]
    scale = 2 * (1 - comb(64, 8) / comb(128, 8)) / 8
    assert scale < ratio < 1.1 * scale
    assert any("dispatched with deepep" in line for line in deepep["assumptions"])
    assert not any("dispatched with" in line for line in alltoall["assumptions"])


def test_deepseeks_own_stack_dispatches_once_a_node(run_cli: Any) -> None:
    plan = _plan(run_cli, "--stack", "deepseek-2024")
    assert plan["plan"]["ep_dispatcher"] == "deepep"


def test_an_unknown_dispatcher_is_one_line(run_cli: Any) -> None:
    result = run_cli(
        "plan", "train", "--model", "qwen3-30b-a3b", "--system", "dgx-h100", "--global-batch", "64",
        "--ep-dispatcher", "nccl",
    )  # fmt: skip
    assert result.code == 2
    assert "alltoall" in result.err
    assert len(result.err.strip().splitlines()) == 1


def _training_row(tmp_path: Any, catalog: Any, models: ModelRegistry, sharding: str, ep: int) -> Any:
    columns = (
        "id kind source model seq global_batch TP PP EP sharding GPUs hardware precision metric measured"
    )
    header = "\t".join(columns.split())
    cells = f"4096\t1024\t1\t4\t{ep}\t{sharding}\t256\tH100 SXM\tBF16\tstep time (s)\t8.2"
    path = tmp_path / "rows.tsv"
    path.write_text(f"{header}\nR1\ttrain\tAutoModel 2026\tDeepSeek V3 671B\t{cells}\n", encoding="utf-8")
    return read_training_row(read_table(path)[0], catalog, models)


@pytest.mark.parametrize(
    ("case", "dispatcher"),
    [
        (("FSDP 64; kernels TE + DeepEP", 64), "deepep"),
        (("FSDP 64; HybridEP", 64), "hybridep"),
        (("distributed optimizer; --moe-token-dispatcher-type alltoall", 64), "alltoall"),
        (("FSDP 64", 64), None),  # unsaid: the stack's
        (("FSDP 64; kernels TE + DeepEP", 1), None),  # no expert parallelism, nothing to dispatch
    ],
)
def test_a_row_that_names_its_dispatcher_is_read_so(
    tmp_path: Any, catalog: Any, models: ModelRegistry, case: tuple[str, int], dispatcher: str | None
) -> None:
    sharding, ep = case
    assert _training_row(tmp_path, catalog, models, sharding, ep).plan.ep_dispatcher == dispatcher


def test_a_search_says_its_dispatcher_sends_a_token_once_a_node(run_cli: Any) -> None:
    def notes(*extra: str) -> list[str]:
        result = run_cli(
            "search", "train", "--model", "qwen3-30b-a3b", "--system", "2xdgx-h100", "--gpus", "16",
            "--global-batch", "64", "--seq", "4096", "--top", "1", "--json", *extra,
        )  # fmt: skip
        assert result.code == 0, result.err
        return list(json.loads(result.out)["notes"])

    assert any("dispatched with hybridep" in note for note in notes("--ep-dispatcher", "hybridep"))
    assert not any("dispatched with" in note for note in notes())
