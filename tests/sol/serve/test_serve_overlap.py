"""The overlap scheduler's extra step: TensorRT-LLM's PyTorch backend and SGLang (from 0.3.6) form
and launch iteration n+1 while the GPU runs iteration n ("The optimization introduces one extra
decoding step", TensorRT-LLM docs/source/features/overlap-scheduler.md; SGLang pull request
#2067: the median TTFT rose because "we delayed the processing of the first batch in favor of
launching the kernels for the next batch first"), so a request that arrives during a step joins
the iteration after the next one. Issue 27, point 1 (the schedulers as they run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    SimulationResult,
    simulate_deployment,
    simulated_deployment,
)
from lightspeed.sol.serve.workload import Requests
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from probes import validated_row


def _run(
    catalog: Catalog, models: ModelRegistry, *, overlap: bool, arrivals: list[float]
) -> SimulationResult:
    """Llama 3 8B on one H100 under trtllm-2025 with its overlap scheduler on or off (nothing
    else changed), 512-token prompts and 64-token outputs arriving at ``arrivals``."""
    serving = dataclasses.replace(load_serving_stack("trtllm-2025"), overlap_scheduler=overlap)
    deployment = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
        serving=serving,
        num_gpus=1,
    )
    count = len(arrivals)
    requests = Requests(
        arrival_s=np.asarray(arrivals, dtype=np.float64),
        input_tokens=np.full(count, 512, dtype=np.int64),
        output_tokens=np.full(count, 64, dtype=np.int64),
        cached_tokens=np.zeros(count),
        concurrency=None,
    )
    workload = ServingWorkload(
        ArrivalProcess.offline(), LengthDistribution.fixed(512), LengthDistribution.fixed(64), count
    )
    return simulate_deployment(deployment, workload, requests=requests)


def _iteration_ends(result: SimulationResult) -> np.ndarray:
    outcome = result.outcome
    return np.asarray(outcome.iteration_start_s + outcome.iteration_s)


def _arrival_during_a_decode_step(catalog: Catalog, models: ModelRegistry) -> float:
    """When a second request arrives: half way through the fifth decode step of a first request
    running alone (its steps' mean time from its decode run: the first request runs alone with
    and without the overlap scheduler until then)."""
    outcome = _run(catalog, models, overlap=False, arrivals=[0.0]).outcome
    per_step = float(outcome.iteration_s[1] / outcome.iteration_steps[1])
    return float(outcome.first_token_s[0]) + 4.5 * per_step


@pytest.mark.parametrize(("overlap", "iterations_later"), [(False, 1), (True, 2)])
def test_a_request_arriving_mid_step_joins_the_next_iteration_or_the_one_after(
    catalog: Catalog, models: ModelRegistry, overlap: bool, iterations_later: int
) -> None:
    """The run of decode steps is cut at the first step boundary after the second request comes;
    its prompt runs in the iteration that starts there without the overlap scheduler, and in the
    one after with it (the host formed the first when the step the request came in began, a
    single decode step of the first request), and its first token comes at that iteration's end."""
    arrival = _arrival_during_a_decode_step(catalog, models)
    result = _run(catalog, models, overlap=overlap, arrivals=[0.0, arrival])
    outcome = result.outcome
    starts, ends = outcome.iteration_start_s, _iteration_ends(result)
    running = int(np.flatnonzero((starts <= arrival) & (ends > arrival))[0])
    assert outcome.iteration_prefill_tokens[running] == 0.0
    joined = running + iterations_later
    assert outcome.iteration_prefill_tokens[joined] == 512.0
    between = slice(running + 1, joined)
    assert np.all(outcome.iteration_prefill_tokens[between] == 0.0)
    assert np.all(outcome.iteration_steps[between] == 1)
    assert outcome.first_token_s[1] == pytest.approx(ends[joined])


def test_an_idle_replica_takes_the_request_at_once(catalog: Catalog, models: ModelRegistry) -> None:
    """With nothing running, the host forms the next iteration when the request comes: the
    overlap scheduler adds no step, and the first token comes after the prompt's own iteration."""
    with_overlap = _run(catalog, models, overlap=True, arrivals=[0.0])
    without = _run(catalog, models, overlap=False, arrivals=[0.0])
    first = with_overlap.outcome.first_token_s[0]
    assert first == pytest.approx(with_overlap.outcome.iteration_s[0])
    assert first == pytest.approx(without.outcome.first_token_s[0], rel=0.01)


def test_a_request_arriving_in_the_last_step_runs_next(catalog: Catalog, models: ModelRegistry) -> None:
    """A request that comes during the last step of the only running sequence does not wait for
    an iteration of nothing: the host, with nothing else to run, takes it at once, when that
    sequence finishes."""
    alone = _run(catalog, models, overlap=True, arrivals=[0.0]).outcome
    finish = float(alone.finish_s[0])
    per_step = float(alone.iteration_s[-1] / alone.iteration_steps[-1])
    outcome = _run(catalog, models, overlap=True, arrivals=[0.0, finish - per_step / 4.0]).outcome
    prompt_iteration = int(np.flatnonzero(outcome.iteration_prefill_tokens == 512.0)[-1])
    assert outcome.finish_s[0] == pytest.approx(finish)
    assert outcome.iteration_start_s[prompt_iteration] == pytest.approx(finish)


def test_vllm_schedules_ahead_from_0_14_except_under_pipeline_parallelism(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """vLLM 0.14 turned async scheduling on by default, "excluding pipeline parallel" (its
    release notes); 0.8-0.13 scheduled between steps unless asked."""
    assert not load_serving_stack("vllm-2025").overlap_scheduler
    vllm = load_serving_stack("vllm-2026")
    assert vllm.for_pipeline(1).overlap_scheduler
    assert not vllm.for_pipeline(2).overlap_scheduler
    assert load_serving_stack("trtllm-2025").for_pipeline(2).overlap_scheduler

    def deployment(pp: int) -> bool:
        built = simulated_deployment(
            model=models.get("llama-3-70b"),
            cluster=catalog.cluster("dgx-h100"),
            plan=InferencePlan(tp=2, pp=pp, precision="fp8"),
            serving="vllm-2026",
            num_gpus=2 * pp,
        )
        return bool(built.timer.overlap)

    assert deployment(1)
    assert not deployment(2)


HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tprecision\tTP\tseq\tglobal_batch\tmetric\tmeasured"


def _ttft_row(tmp_path: Path, catalog: Catalog, models: ModelRegistry, source: str) -> ValidationRow:
    """Llama 3.1 8B on one H100 at 20 requests/s (1,000/200 tokens), mean TTFT, as ``source`` ran it."""
    cells = (source, "Llama 3.1 8B", "1", "H100", "fp8", "1", "ISL/OSL 1000/200", "request rate 20")
    line = "\t".join(("A", "infer", *cells, "Mean TTFT (ms)", "50"))
    return validated_row(tmp_path, HEADER, line, catalog, models)


@pytest.mark.parametrize(
    "case",
    [
        # vLLM before 0.14 schedules between steps unless asked (--async-scheduling)
        ("vLLM 0.10.2 bench serve, vllm serve --async-scheduling", "vLLM 0.10.2 bench serve", True),
        # SGLang from 0.4 schedules ahead unless asked not to
        ("SGLang 0.4.6 bench_serving, --disable-overlap-schedule", "SGLang 0.4.6 bench_serving", False),
        # TensorRT-LLM's PyTorch backend, its LLM API option
        (
            "TensorRT-LLM 1.0 trtllm-serve, disable_overlap_scheduler: true",
            "TensorRT-LLM 1.0 trtllm-serve",
            False,
        ),
    ],
)
def test_a_rows_scheduler_flags_decide_the_extra_step(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, case: tuple[str, str, bool]
) -> None:
    """The flag the row's server ran with turns the extra step on or off, and the row says so
    (``case``: the source with the flag, without it, whether the flag makes the TTFT longer)."""
    flagged, plain, longer = case
    with_flag = _ttft_row(tmp_path, catalog, models, flagged)
    without = _ttft_row(tmp_path, catalog, models, plain)
    assert with_flag.predicted is not None
    assert without.predicted is not None
    assert (with_flag.predicted > without.predicted) == longer
    assert any("schedules" in note for note in with_flag.assumptions)


def test_a_row_turning_the_scheduler_both_on_and_off_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _ttft_row(tmp_path, catalog, models, "vLLM 0.23 --async-scheduling --no-async-scheduling")
    assert row.predicted is None
    assert "both on (--async-scheduling) and off (--no-async-scheduling)" in row.reason
