"""Round 16, helper GS2: a horizon counts only the decode steps that ended by it, and a saved
simulate run gives plan infer the mean of the lengths it drew after clipping (a lognormal's), while
``simulate --config`` still re-runs it to the last digit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import ArrivalProcess, LengthDistribution, ServingWorkload, simulate
from lightspeed.workload import ModelRegistry

# Llama 3 8B holds 8,030,261,248 parameters (its Hugging Face safetensors index); in BF16 each decode
# step reads them all from HBM, at most 3.35 TB/s on an H100 SXM (NVIDIA's datasheet): no step of one
# replica is shorter than 16.06e9 B / 3.35e12 B/s = 4.79 ms, and the steps of one replica run in turn
LLAMA_3_8B_WEIGHT_BYTES = 8_030_261_248 * 2
H100_SXM_HBM_BYTES_PER_S = 3.35e12
MIN_DECODE_STEP_S = LLAMA_3_8B_WEIGHT_BYTES / H100_SXM_HBM_BYTES_PER_S

SIMULATE = [
    "simulate",
    "--model",
    "llama-3.1-8b",
    "--system",
    "h100-sxm",
    "--requests",
    "60",
    "--arrival-rate",
    "5",
]
# figures that differ between two identical runs (wall time) or name where the count came from
NOT_THE_RUN = {"elapsed_s", "num_requests_source", "num_requests_reason"}


@pytest.mark.parametrize("horizon_s", [0.5, 1.0, 2.0])
def test_a_horizon_counts_only_the_steps_that_ended_by_it(
    catalog: Catalog, models: ModelRegistry, horizon_s: float
) -> None:
    """One replica, 200 requests at 5 req/s, 1,024 tokens out: before, a fused decode record that
    started before the horizon counted all its steps, 1,024 iterations at a 0.5 s horizon (and at 1 s),
    where at most 0.5 s / 4.79 ms = 104 steps fit."""
    workload = ServingWorkload(
        arrivals=ArrivalProcess.poisson(5.0),
        num_requests=200,
        input_lengths=LengthDistribution.fixed(1024),
        output_lengths=LengthDistribution.fixed(1024),
    )
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=InferencePlan(tp=1, precision="bf16"),
        workload=workload,
        horizon_s=horizon_s,
    )
    assert 1 <= result.num_iterations <= horizon_s / MIN_DECODE_STEP_S


def _json(run_cli: Any, *args: str) -> dict[str, Any]:
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    payload: dict[str, Any] = json.loads(result.out)
    return payload


def _lognormal_clipped_mean(mean: float, std: float, low: int, high: int) -> float:
    """The mean of a lognormal of ``mean`` and ``std`` clipped to ``low..high``, by drawing a million
    lengths (independent of the library's closed form)."""
    sigma2 = np.log1p((std / mean) ** 2)
    draws = np.random.default_rng(0).lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2), 1_000_000)
    return float(np.clip(draws, low, high).mean())


def test_a_saved_lognormal_run_gives_plan_infer_its_clipped_mean(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--osl 1024 (the default) spread lognormal:1500 and clipped to 10-1200 draws a mean near 654
    (a quarter of the draws clipped): the file said 1024, the centre before clipping, and plan infer
    then analysed 1,024-token answers; the centre is kept in [simulate], for simulate to re-run."""
    plan = tmp_path / "p.toml"
    first = _json(run_cli, *SIMULATE, "--osl-dist", "lognormal:1500:10-1200", "--save-config", str(plan))
    text = plan.read_text()
    data = tomllib.loads(text)
    expected = _lognormal_clipped_mean(1024.0, 1500.0, 10, 1200)
    assert abs(data["output_tokens"] - expected) <= 2.0
    assert data["input_tokens"] == 1024  # fixed, as given
    assert data["simulate"]["osl_dist_mean_tokens"] == 1024
    assert "isl_dist_mean_tokens" not in data["simulate"]
    assert first["config"]["output_tokens"] == data["output_tokens"]
    assert first["config"]["simulate"]["osl_dist_mean_tokens"] == 1024
    assert f"output_tokens = {data['output_tokens']} is the lognormal's mean after clipping" in text
    from_toml = _json(run_cli, "simulate", "--config", str(plan))
    json_file = tmp_path / "a.json"
    json_file.write_text(json.dumps(first))
    from_json = _json(run_cli, "simulate", "--config", str(json_file))
    for again in (from_toml, from_json):
        assert sorted(key for key in first if key not in NOT_THE_RUN and first[key] != again.get(key)) == []


def test_lengths_all_clipped_to_the_top_bound_are_saved_as_it(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """lognormal:0.5 around 1024 draws every length within a few tokens of 1024, all above 900: each
    is clipped to 900, the mean plan infer must run at; the file said 1024."""
    plan = tmp_path / "p.toml"
    first = _json(run_cli, *SIMULATE, "--osl-dist", "lognormal:0.5:10-900", "--save-config", str(plan))
    data = tomllib.loads(plan.read_text())
    assert data["output_tokens"] == 900
    assert data["simulate"]["osl_dist_mean_tokens"] == 1024
    again = _json(run_cli, "simulate", "--config", str(plan))
    assert again["output_tokens_per_s"] == first["output_tokens_per_s"]
    assert again["workload"] == first["workload"]


def test_a_given_centre_with_clipping_is_kept_for_the_rerun(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--isl 2000 spread lognormal:0.5 and clipped to 1-1500: every prompt is 1,500 tokens; the
    file's input_tokens is 1500 for plan infer and the table keeps --isl 2000 for simulate."""
    plan = tmp_path / "p.toml"
    first = _json(
        run_cli, *SIMULATE, "--isl", "2000", "--isl-dist", "lognormal:0.5:1-1500", "--save-config", str(plan)
    )
    data = tomllib.loads(plan.read_text())
    assert (data["input_tokens"], data["simulate"]["isl_dist_mean_tokens"]) == (1500, 2000)
    assert "osl_dist_mean_tokens" not in data["simulate"]
    again = _json(run_cli, "simulate", "--config", str(plan))
    assert sorted(key for key in first if key not in NOT_THE_RUN and first[key] != again.get(key)) == []


def test_an_unclipped_or_fixed_run_writes_no_centre(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "p.toml"
    _json(run_cli, *SIMULATE, "--osl", "200", "--save-config", str(plan))
    data = tomllib.loads(plan.read_text())
    assert data["output_tokens"] == 200
    assert not {"isl_dist_mean_tokens", "osl_dist_mean_tokens"} & set(data["simulate"])
