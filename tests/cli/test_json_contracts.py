"""The ``--json`` contract of every command, frozen (as torchtitan freezes its CLI surface):
the keys listed here are documented in docs/ and scripts depend on them. Removing or
renaming one is a deliberate edit of this file and a CHANGELOG.md line; a renamed key
keeps its old name as an alias, and both are listed here.

A path is dotted; ``[]`` means "every element of this list" (and the list is not empty).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLAN_KEYS = (
    "tp",
    "pp",
    "dp",
    "ep",
    "etp",
    "cp",
    "vpp",
    "zero_stage",
    "micro_batch_size",
    "recompute",
    "schedule",
    "uneven_pipeline",
    "step_time_s",
    "mfu",
    "tokens_per_s",
    "memory_per_gpu_bytes",
    "bound",
)
ALIASES_0_1 = ("zero", "micro_batch")  # CHANGELOG 0.2.0: kept beside zero_stage, micro_batch_size
SEARCH = (
    "search",
    "train",
    "--model",
    "llama-3-8b",
    "--system",
    "dgx-h100",
    "--gpus",
    "16",
    "--global-batch",
    "64",
)
EPLB_EXAMPLE = (
    [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
    [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27],
)
TRAIN = ("--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2")

CONTRACTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "hw list": (("hw", "list"), ("records",)),
    "hw show": (("hw", "show", "h100-sxm"), ("name", "kind", "record", "totals")),
    "hw compare": (("hw", "compare", "h100-pcie", "h800-pcie"), ("devices", "rows[]", "labels")),
    "model list": (("model", "list"), ("models[]",)),
    "model show": (
        ("model", "show", "llama-3-70b"),
        ("name", "total_params", "active_params", "flops_per_token", "kv_cache_bytes_per_token", "spec"),
    ),
    "memory": (
        ("memory", "--model", "dense-100t", "--gpu", "b200"),
        (
            "total_bytes",
            "bytes_per_gpu",
            "gpus_needed",
            "nodes_needed",
            "memory_usable_bytes",
            "zero_stage",
            "memory_listed_bytes",
            "gpus_needed_at_listed",
            "memory_device_bytes",
            "gpus_needed_at_device",
        ),
    ),
    "flops": (
        ("flops", "--model", "dense-100t", "--tokens", "29e12"),
        ("total_flop", "per_token", "num_tokens", "formula", "total_params", "active_params"),
    ),
    "plan train": (
        ("plan", "train", *TRAIN, "--global-batch", "256"),
        (
            *PLAN_KEYS,
            *ALIASES_0_1,
            "breakdown_s",
            "memory_bytes",
            "fits",
            "tflop_per_s_per_gpu",
            "hfu",
            "peak_flop_per_s",
            "bound_part",
            "gpu_hours",
            "assumptions",
            "plan",
        ),
    ),
    "search train": (
        (
            "search",
            "train",
            "--model",
            "llama-3-8b",
            "--system",
            "dgx-h100",
            "--gpus",
            "16",
            "--global-batch",
            "64",
        ),
        ("num_plans_evaluated", "num_plans_fitting", "why_best", *(f"plans[].{key}" for key in PLAN_KEYS)),
    ),
    "plan infer": (
        (
            "plan",
            "infer",
            *(
                "--model",
                "llama-3-70b",
                "--system",
                "dgx-h100",
                "--gpus",
                "2",
                "--tp",
                "2",
                "--precision",
                "fp8",
            ),
            *("--isl", "1000", "--osl", "1000"),
        ),
        (
            "ttft_s",
            "tpot_s",
            "output_tokens_per_s",
            "output_tokens_per_s_per_gpu",
            "output_tokens_per_s_per_user",
            "requests_per_s",
            "iteration_breakdown_s",
            "memory_bytes",
            "max_batch",
            "bound",
            "plan",
            "load",
            "simulated",
            "not_simulated",
        ),
    ),
    "search infer": (
        ("search", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--isl", "1000", "--osl", "200"),
        ("best", "frontier[]", "constraints", "num_points_evaluated", "num_points_feasible"),
    ),
    "validate": (
        ("validate", "{shared}/validation/published-dev.tsv"),
        (
            "rows[].id",
            "rows[].kind",
            "rows[].metric",
            "rows[].measured",
            "rows[].predicted",
            "rows[].status",
            "rows[].source",
            "summary.train",
            "summary.infer",
            "summary.infer.num_within",
            "summary.infer.within_error",
            "summary_by_metric.infer/ttft_s.num_within",
            "summary_by_metric.train/tflop_per_s_per_gpu.median_abs_error",
        ),
    ),
    "mig profiles": (("mig", "profiles", "--gpu", "h100-sxm"), ("name", "profiles[]", "sources")),
    "cost cluster": (("cost", "cluster", "--racks", "8", "--site-kw", "1000"), ("rack_plan", "tco")),
    "trace summary": (
        ("trace", "summary", "{shared}/data/traces/trace_filter"),
        ("[].rank", "[].compute_pct", "[].non_compute_pct", "[].idle_pct", "[].steps", "[].sol"),
    ),
    "kernels report": (
        ("kernels", "report", "{shared}/data/nsight/ncu/b200_cublaslt_fp8_gemm.csv"),
        (
            "accelerator",
            "thresholds",
            "kernels[].kernel",
            "kernels[].bound",
            "kernels[].compute_throughput_pct",
            "kernels[].memory_throughput_pct",
            "kernels[].headroom_pct",
            "kernels[].findings",
            "kernels[].occupancy_limiters",
        ),
    ),
    "trace summary (nsys)": (
        ("trace", "summary", "{shared}/data/nsight/nsys/concurrent.s16.sqlite"),
        ("[].rank", "[].compute_pct", "[].non_compute_pct", "[].idle_pct"),
    ),
    "moe balance": (
        (
            "moe",
            "balance",
            "--load",
            "{load}",
            "--replicas",
            "16",
            "--groups",
            "4",
            "--nodes",
            "2",
            "--gpus",
            "8",
        ),
        (
            "policy",
            "gpu_load_max_over_mean",
            "layers[].phy2log",
            "layers[].gpu_load_max_over_mean",
            "layers[].node_load_max_over_mean",
        ),
    ),
    "moe stats": (("moe", "stats", "{load}"), ("layers[]", "hot_experts", "replicas[]")),
    "cost train (DeepSeek-V3)": (
        ("cost", "train", "--scenario", "deepseek-v3"),
        (
            "predicted_pretrain_gpu_hours",
            "published_pretrain_gpu_hours",
            "predicted_total_usd",
            "published_total_usd",
            "usd_per_gpu_hour",
        ),
    ),
    "bench membw": (
        ("bench", "membw", "--quick", "--array-size", "1MiB"),
        (
            "[].suite",
            "[].name",
            "[].value",
            "[].unit",
            "[].sol",
            "[].fraction_of_sol",
            "[].size_bytes",
            "[].size",
        ),  # size: the 0.1 name of the unit-carrying size fields (CHANGELOG 0.2.0)
    ),
    "search train (ranking)": (
        SEARCH,
        ("margin_over_runner_up", "tolerance", "ties", "compared", "stack"),
    ),
    "goodput plan-checkpoints": (
        (
            "goodput",
            "plan-checkpoints",
            *("--nodes", "1024", "--failures-per-node-day", "0.0065"),
            *("--checkpoint-write-s", "60", "--restart-s", "600"),
        ),
        ("optimal_interval_s", "optimal_ettr", "young_interval_s", "daly_interval_s", "job_mttf_s", "rows[]"),
    ),
}


# Documented aliases (CHANGELOG 0.2.0): the old name beside the new, both written on purpose.
# `memory`'s headline counts are at usable memory, what the driver reports; the `*_at_device` pair,
# which counted at that memory before usable meant it, is kept as their alias (docs/workload.md).
ALIASES = {
    ("zero", "zero_stage"),
    ("micro_batch", "micro_batch_size"),
    ("size", "size_bytes"),
    ("gpus_needed", "gpus_needed_at_device"),
    ("nodes_needed", "nodes_needed_at_device"),
}
# Different figures that may coincide, not aliases: `memory`'s counts at the datasheet's listed and
# at the nominal capacity beside its headline at usable memory (dense-100t on B200: 1,041 GPUs on
# 131 nodes at the driver's 192.27 GB, 971 on 122 at the nominal 192 GiB).
COMPARISONS = {
    ("gpus_needed", "gpus_needed_at_listed"),
    ("nodes_needed", "nodes_needed_at_listed"),
    ("gpus_needed", "gpus_needed_at_nominal"),
    ("nodes_needed", "nodes_needed_at_nominal"),
}


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"a key written twice in one object: {keys}"
    return dict(pairs)


def _objects(payload: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(payload, dict):
        yield path, payload
        for key, value in payload.items():
            yield from _objects(value, f"{path}.{key}")
    elif isinstance(payload, list):
        for item in payload:
            yield from _objects(item, f"{path}[]")


def _fractional_byte_counts(payload: Any) -> Iterator[str]:
    """Values under ``*_bytes`` keys that are not whole numbers written as integers (bytes are whole)."""

    def numbers(value: Any) -> Iterator[Any]:
        if isinstance(value, dict):
            for item in value.values():
                yield from numbers(item)
        elif isinstance(value, list):
            for item in value:
                yield from numbers(item)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield value

    for path, item in _objects(payload):
        for key, value in item.items():
            if key.endswith("_bytes"):
                yield from (
                    f"{path}.{key}={number}" for number in numbers(value) if isinstance(number, float)
                )


def _undocumented_aliases(payload: Any) -> Iterator[str]:
    """A key and a longer key that starts with it (``x`` and ``x_...``) holding the same value:
    one figure written twice, allowed only for the documented aliases."""
    for path, item in _objects(payload):
        for key, value in item.items():
            for other, twin in item.items():
                same = value == twin and isinstance(value, int | float | list) and not isinstance(value, bool)
                if other.startswith(f"{key}_") and same and (key, other) not in ALIASES | COMPARISONS:
                    yield f"{path}: {key} = {other}"
        if "intervals" in item:  # a train estimate's intervals are not repeated beside it
            yield from (f"{path}.{key}" for key in ("step_time_interval_s", "mfu_interval") if key in item)


def _values_at(payload: Any, path: str) -> list[Any]:
    """Every value at ``path`` (``a.b``, ``a[].b``, ``[].b``); raises KeyError when absent."""
    values = [payload]
    for part in path.replace("[]", ".[]").strip(".").split("."):
        if part == "[]":
            assert all(isinstance(value, list) and value for value in values), f"{path}: not a non-empty list"
            values = [item for value in values for item in value]
        else:
            values = [value[part] for value in values]
    return values


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_json_contract_keeps_its_documented_keys(name: str, run_cli, shared: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    args, paths = CONTRACTS[name]
    load = tmp_path / "load.json"  # EPLB README's example weights, in lightspeed's load format
    load.write_text(json.dumps({"format": "lightspeed-expert-load", "schema_version": 1, "num_steps": 1,
                                "layers": [{"name": "a", "counts": EPLB_EXAMPLE[0]},
                                           {"name": "b", "counts": EPLB_EXAMPLE[1]}]}))  # fmt: skip
    result = run_cli(*(arg.format(shared=shared, load=load) for arg in args), "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out, object_pairs_hook=_no_key_twice)
    assert not list(_fractional_byte_counts(payload)), f"{name} --json has fractional byte counts"
    assert not list(_undocumented_aliases(payload)), f"{name} --json writes a figure twice"
    missing = []
    for path in paths:
        try:
            _values_at(payload, path)
        except (KeyError, TypeError):
            missing.append(path)
    assert not missing, f"{name} --json lost {missing}"


def test_old_plan_keys_equal_the_new_ones(run_cli) -> None:  # type: ignore[no-untyped-def]
    payload = json.loads(run_cli("plan", "train", *TRAIN, "--global-batch", "256", "--json").out)
    assert payload["zero"] == payload["zero_stage"] == 1
    assert payload["micro_batch"] == payload["micro_batch_size"] == 1


def test_old_flags_still_set_the_same_settings(run_cli) -> None:  # type: ignore[no-untyped-def]
    new = run_cli(
        "plan",
        "train",
        *TRAIN,
        "--global-batch",
        "256",
        "--zero-stage",
        "2",
        "--micro-batch-size",
        "2",
        "--json",
    )
    old = run_cli(
        "plan", "train", *TRAIN, "--global-batch", "256", "--zero", "2", "--micro-batch", "2", "--json"
    )
    assert json.loads(new.out)["step_time_s"] == json.loads(old.out)["step_time_s"]
    assert (json.loads(old.out)["zero_stage"], json.loads(old.out)["micro_batch_size"]) == (2, 2)
