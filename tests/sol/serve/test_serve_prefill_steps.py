"""Separate prefill steps: vLLM V0's default scheduler runs prompts in steps of their own
(``_schedule_default``: "Don't schedule decodes if prefills are scheduled"), whole, with a
budget of max(max_model_len, 2048) tokens; chunked prefill, which mixes them, is on by default
only above a 32K context on NVIDIA GPUs. SGLang runs a prefill batch whenever it can form one
and decodes otherwise (mixing needs --enable-mixed-chunk), its prompts cut to the chunk size
(issue 27, point 1: the vLLM and SGLang schedulers)."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol.infer.estimate import estimate_inference
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    SchedulerConfig,
    ServingWorkload,
    SimulatedDeployment,
    SimulationResult,
    simulate_deployment,
    simulated_deployment,
)
from lightspeed.sol.serve.workload import Requests
from lightspeed.workload import ModelRegistry


def _deployment(
    catalog: Catalog,
    models: ModelRegistry,
    model: str,
    system: str = "dgx-h100",
    *,
    tp: int = 1,
    serving: str = "vllm-2024",
    **scheduler: object,
) -> SimulatedDeployment:
    return simulated_deployment(
        model=models.get(model),
        cluster=catalog.cluster(system),
        plan=InferencePlan(tp=tp, precision="fp8"),
        serving=serving,
        scheduler=SchedulerConfig(**scheduler),  # type: ignore[arg-type]
        num_gpus=tp,
    )


def _run(
    deployment: SimulatedDeployment, arrivals: list[float], inputs: list[int], outputs: list[int]
) -> SimulationResult:
    count = len(inputs)
    requests = Requests(
        arrival_s=np.asarray(arrivals, dtype=np.float64),
        input_tokens=np.asarray(inputs, dtype=np.int64),
        output_tokens=np.asarray(outputs, dtype=np.int64),
        cached_tokens=np.zeros(count),
        concurrency=None,
    )
    workload = ServingWorkload(
        ArrivalProcess.offline(),
        LengthDistribution.fixed(inputs[0]),
        LengthDistribution.fixed(outputs[0]),
        count,
    )
    return simulate_deployment(deployment, workload, requests=requests)


def test_vllm_v0_separates_prompt_steps_below_32k_and_always_on_amd(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Llama 2 70B (4,096-token context) and Llama 3 8B (8,192) run V0's separate steps with a
    budget of their context; Qwen3 8B (40,960) gets chunked prefill on an H100 (V0's budget
    then: 2,048 tokens) but not on an MI300X, where V0 never turns it on."""
    llama2 = _deployment(catalog, models, "llama-2-70b", tp=4)
    assert (llama2.separate_prefill, llama2.max_batched_tokens_per_rank) == (True, 4096)
    llama3 = _deployment(catalog, models, "llama-3-8b")
    assert (llama3.separate_prefill, llama3.max_batched_tokens_per_rank) == (True, 8192)
    assert llama3.whole_prompts
    long_h100 = _deployment(catalog, models, "qwen3-8b")
    assert (long_h100.separate_prefill, long_h100.max_batched_tokens_per_rank) == (False, 2048)
    long_mi300 = _deployment(catalog, models, "qwen3-8b", system="mi300x-x8")
    assert (long_mi300.separate_prefill, long_mi300.max_batched_tokens_per_rank) == (True, 40960)
    # the user's choice wins, and later servers mix
    assert not _deployment(catalog, models, "llama-3-8b", prefill_steps="mixed").separate_prefill
    assert not _deployment(catalog, models, "llama-3-8b", serving="vllm-2025").separate_prefill


def test_a_prompt_step_runs_no_decode_and_advances_none(catalog: Catalog, models: ModelRegistry) -> None:
    """Request A (100-token prompt, 50 tokens out) is decoding when B (2,000-token prompt, 2 out)
    arrives halfway. Separate: A's prefill and B's prompt are steps of their own, so the decode
    steps are A's 49 (B's one decode rides in one of them); mixed: B's prompt shares one of A's
    steps, and A's own prefill step counts one more: 50. No separate step holds both prompts and
    decodes; the mixed run has exactly one."""
    arrivals, inputs, outputs = [0.0, 0.1], [100, 2000], [50, 2]
    separate = _run(_deployment(catalog, models, "llama-3-8b"), arrivals, inputs, outputs)
    mixed = _run(_deployment(catalog, models, "llama-3-8b", prefill_steps="mixed"), arrivals, inputs, outputs)
    both = (separate.outcome.iteration_decode_sequences > 0) & (separate.outcome.iteration_prefill_tokens > 0)
    assert not both.any()
    assert separate.outcome.iteration_steps.sum() == 49
    assert mixed.outcome.iteration_steps.sum() == 50
    mixed_both = (mixed.outcome.iteration_decode_sequences > 0) & (mixed.outcome.iteration_prefill_tokens > 0)
    assert mixed_both.sum() == 1
    assert separate.num_completed == mixed.num_completed == 2


def test_the_pause_is_in_the_next_token_gap(catalog: Catalog, models: ModelRegistry) -> None:
    """A waits through B's prompt step: its longest token gap is that step plus the decode step
    after it, and its time per output token grows by the step over its 49 gaps."""
    deployment = _deployment(catalog, models, "llama-3-8b")
    result = _run(deployment, [0.0, 0.1], [100, 2000], [50, 2])
    outcome = result.outcome
    prompt_step = int(np.flatnonzero(outcome.iteration_prefill_tokens == 2000)[0])
    pause = float(outcome.iteration_s[prompt_step])
    after = prompt_step + 1
    gap_after = float(outcome.iteration_s[after] / outcome.iteration_steps[after])
    assert float(outcome.iteration_pause_s[after]) == pytest.approx(pause)
    assert result.itl.max_s == pytest.approx(pause + gap_after)
    # of the two sequences decoding after the pause, only A waited through it: B's prompt was it
    assert float(outcome.iteration_decode_sequences[after]) == 2.0
    assert float(outcome.iteration_paused_sequences[after]) == pytest.approx(1.0)
    alone = _run(deployment, [0.0], [100], [50])
    tpot_a = (outcome.finish_s[0] - outcome.first_token_s[0]) / 49
    tpot_alone = (alone.outcome.finish_s[0] - alone.outcome.first_token_s[0]) / 49
    # B's decode step joins one of A's (two sequences instead of one: a little slower)
    assert tpot_a - tpot_alone == pytest.approx(pause / 49, rel=0.05)


def test_prompts_are_admitted_whole(catalog: Catalog, models: ModelRegistry) -> None:
    """Five 1,000-token prompts at once under a 4,096-token budget: separate steps take four
    whole prompts and leave the fifth for the next step (4,000 then 1,000 tokens); chunked
    prefill fills the budget and splits the fifth (4,096 then 904)."""
    arrivals, inputs, outputs = [0.0] * 5, [1000] * 5, [1] * 5
    separate = _run(
        _deployment(catalog, models, "llama-3-8b", max_batched_tokens_per_rank=4096),
        arrivals,
        inputs,
        outputs,
    )
    mixed = _run(
        _deployment(catalog, models, "llama-3-8b", max_batched_tokens_per_rank=4096, prefill_steps="mixed"),
        arrivals,
        inputs,
        outputs,
    )
    assert list(separate.outcome.iteration_prefill_tokens) == [4000.0, 1000.0]
    assert list(mixed.outcome.iteration_prefill_tokens) == [4096.0, 904.0]


def test_sglang_separates_prompt_steps_in_chunks(catalog: Catalog, models: ModelRegistry) -> None:
    """SGLang's prefill batches run apart from its decode batches but cut prompts to the chunk
    size (8,192 tokens on an 80 GB H100): five 1,000-token prompts under a 4,096-token chunk run
    as 4,096 then 904 tokens, and A's decodes still pause for B's prompt (49 decode steps)."""
    deployment = _deployment(catalog, models, "llama-3-8b", serving="sglang-2025")
    assert (deployment.separate_prefill, deployment.whole_prompts) == (True, False)
    assert deployment.max_batched_tokens_per_rank == 8192
    chunked = _deployment(
        catalog, models, "llama-3-8b", serving="sglang-2025", max_batched_tokens_per_rank=4096
    )
    five = _run(chunked, [0.0] * 5, [1000] * 5, [1] * 5)
    assert list(five.outcome.iteration_prefill_tokens) == [4096.0, 904.0]
    interrupted = _run(deployment, [0.0, 0.1], [100, 2000], [50, 2])
    assert interrupted.outcome.iteration_steps.sum() == 49


def test_an_unknown_prefill_step_mode_is_refused() -> None:
    with pytest.raises(UserInputError, match="prefill steps 'interleaved' is not one of mixed, separate"):
        SchedulerConfig(prefill_steps="interleaved")


def test_the_analytic_steady_state_says_it_mixes_where_the_server_does_not(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """plan infer's steady state folds prompt chunks into decode steps; under a profile whose
    scheduler separates them it says so and points at the simulation, under one that mixes it
    says nothing."""

    def notes(serving: str) -> str:
        estimate = estimate_inference(
            model=models.get("llama-3-8b"),
            cluster=catalog.cluster("dgx-h100"),
            plan=InferencePlan(tp=1, precision="fp8"),
            load=ServingLoad(1000, 200),
            num_gpus=1,
            serving=serving,
        )
        return " ".join(estimate.assumptions)

    assert "vllm-2024's scheduler runs prompts in steps of their own" in notes("vllm-2024")
    assert "sglang-2025's scheduler runs prompts in steps of their own" in notes("sglang-2025")
    assert "steps of their own" not in notes("trtllm-2025")


def test_the_gaps_add_up_to_the_requests_decode_times(catalog: Catalog, models: ModelRegistry) -> None:
    """Eight users of 2,000/100 tokens on vLLM V0: every prompt pauses the other streams, never
    its own. The gaps between tokens sum to the requests' decode times, so with one output
    length the mean gap is the mean TPOT (each request has 99 gaps); with the pause also given
    to the sequences whose prompt made it, the mean gap came out 12% above. The percentiles a
    run reports are the ones ``percentile_s`` computes over the same gaps."""
    deployment = _deployment(catalog, models, "llama-3-8b")
    workload = ServingWorkload(
        ArrivalProcess.closed(8), LengthDistribution.fixed(2000), LengthDistribution.fixed(100), 200
    )
    result = simulate_deployment(deployment, workload)
    assert result.itl.mean_s == pytest.approx(result.tpot.mean_s, rel=1e-9)
    assert result.itl.max_s > 2.0 * result.itl.mean_s  # the longest gap holds a 2,000-token prompt
    reported = {50.0: result.itl.p50_s, 99.0: result.itl.p99_s, 100.0: result.itl.max_s}
    assert {q: result.percentile_s("itl", q) for q in reported} == reported
