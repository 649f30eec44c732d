"""Issue 27 area, expert check S2: the analytic serving engine and the serving report.

Each test states its expected value from a hand calculation in its docstring or comments.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.jobs import run, serving_parts
from lightspeed.report.serving import against_analytic_text
from lightspeed.sol import ServingConfig
from lightspeed.sol.infer.estimate import deployments_of, estimate_inference
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.plan import ServingLoad, SpeculativeDecoding
from lightspeed.sol.infer.serving import ServingContext, continuous
from lightspeed.sol.serve.speculation import AcceptanceProcess

# --- 1: prompts folded into decode steps do not blend their expert reads into every step -------


def _deepseek_decode(output_tokens: int) -> tuple[float, float]:
    """(TPOT, weight-read seconds of the steady step) of DeepSeek-V3 on one DGX H200, wide EP, 4 users."""
    config = ServingConfig(
        model="deepseek-v3",
        system="dgx-h200",
        tp=1,
        ep=8,
        dp_attention=8,
        input_tokens=1000,
        output_tokens=output_tokens,
        concurrency=4,
    )
    estimate = run(config).estimate
    return estimate.tpot_s, estimate.iteration_breakdown_s["weight_reads"]


def test_s2_small_batch_moe_decode_reads_the_experts_its_tokens_reach() -> None:
    """Hand: a 4-token decode step of DeepSeek-V3 (FP8, one GPU per attention rank, 32 experts of
    3 x 7,168 x 2,048 = 44 MB per rank and layer) reads the attention, dense and shared weights
    (~15 GB), the experts 4 tokens x top-8 reach on the busiest of the 8 ranks (each expert reached
    with p = 1 - (1 - 8/256)^4 = 0.1195; the expected maximum of eight Binomial(32, p) counts,
    computed below: 6.56, where the mean rank holds 3.8) x 58 layers x 44 MB = 16.7 GB, and the LM
    head (7,168 x 129,280 x 2 B = 1.85 GB). The three other users' prompts (one per 200-token
    request each) each read all 32 experts of a rank once: 3/200 x (32 - 6.56) x 58 x 44 MB =
    0.97 GB a step amortized. ~34.6 GB at 4.8 TB/s x 0.8 (H200 streaming) = 9.0 ms. Blending 15
    prompt tokens into every step instead reaches 45% of the experts a step (the defect)."""
    p = 1 - (1 - 8 / 256) ** 4

    def below(j: int) -> float:  # P(a rank's count <= j)
        return sum(math.comb(32, i) * p**i * (1 - p) ** (32 - i) for i in range(j + 1))

    busiest = sum(1 - below(j - 1) ** 8 for j in range(1, 33))
    assert busiest == pytest.approx(6.56, abs=0.01)
    step_bytes = 15e9 + busiest * 58 * 44e6 + 1.85e9 + 3 / 200 * (32 - busiest) * 58 * 44e6
    _, reads_s = _deepseek_decode(200)
    assert reads_s == pytest.approx(step_bytes / 3.84e12, rel=0.25)


def test_s2_small_batch_moe_tpot_barely_depends_on_how_rarely_prompts_arrive() -> None:
    """Hand (as above): going from 200 to 5,000 output tokens a request only drops the amortized
    prompt experts, 1.1 GB -> 0.04 GB a step, ~0.28 ms of a ~17 ms step: TPOT within 10%. The
    blended step made them 28.6 ms and 17.1 ms."""
    short, _ = _deepseek_decode(200)
    long, _ = _deepseek_decode(5000)
    assert short == pytest.approx(long, rel=0.10)


def test_s2_dense_model_step_is_the_blended_iteration() -> None:
    """A dense model has no routed experts: the steady step is decode with the other requests'
    prompts spread over it, ``(B - 1) / n`` prompts a step, ``n = (OSL - 1) + chunks`` iterations a
    request holds its slot; rebuilt here from those rules (4 sequences, 1,000-token prompts in one
    chunk, 200 output tokens: 3 / 200 prompts a step, contexts 1,000 + 200 / 2 spread over 200)."""
    parts = serving_parts(ServingConfig(model="llama-3-8b", system="h100-sxm"))
    assert parts.plan is not None
    hardware = inference_hardware_for(parts.cluster, parts.plan, parts.efficiency, model=parts.model)
    ctx = ServingContext(parts.model, hardware, ServingLoad(input_tokens=1000, output_tokens=200))
    deployments = deployments_of(parts.plan, np.asarray([4.0]))
    others = 3.0 / 200.0
    expected = deployments.grid(
        decode_sequences=4.0 - others,
        query_tokens=1.0,
        decode_context=1100.0,
        decode_context_span=200.0,
        prefill_tokens=others * 1000.0,
        prefill_context=500.0,
        prefill_requests=others,
    )
    assert float(continuous(deployments, ctx).tpot_s[0]) == pytest.approx(
        float(ctx.cost(expected).time_s[0]), rel=1e-12
    )


# --- 3: acceptance per draft position --------------------------------------------------------------


def test_s2_tokens_per_pass_with_acceptance_per_position() -> None:
    """Hand: a = (0.8, 0.6, 0.4): 1 + 0.8 + 0.8 x 0.6 + 0.8 x 0.6 x 0.4 = 1 + 0.8 + 0.48 + 0.192 = 2.472."""
    decoding = SpeculativeDecoding.per_position((0.8, 0.6, 0.4))
    assert decoding.num_draft_tokens == 3
    assert decoding.tokens_per_iteration == pytest.approx(2.472, abs=1e-12)
    assert decoding.acceptance_rate == 0.8  # the first position's, as the single rate was
    assert decoding.to_dict()["acceptance_rates"] == [0.8, 0.6, 0.4]
    # the simulator's process is the same one
    assert AcceptanceProcess.from_speculative(decoding).acceptance == (0.8, 0.6, 0.4)


def test_s2_one_rate_is_every_position() -> None:
    """Hand: a = 0.5 at 2 positions: 1 + 0.5 + 0.25 = 1.75; the list has it twice."""
    decoding = SpeculativeDecoding.per_position((0.5,), num_draft_tokens=2)
    assert decoding.tokens_per_iteration == pytest.approx(1.75, abs=1e-12)
    assert decoding.position_rates == (0.5, 0.5)
    assert SpeculativeDecoding(2, 0.5).to_dict()["acceptance_rates"] == [0.5, 0.5]


@pytest.mark.parametrize(
    "build",
    [
        lambda: SpeculativeDecoding.per_position((0.8, 0.6), num_draft_tokens=3),  # 2 rates, 3 drafts
        lambda: SpeculativeDecoding.per_position((0.8, 1.0)),  # a certain draft
        lambda: SpeculativeDecoding.per_position((0.8, -0.1)),
    ],
)
def test_s2_acceptance_per_position_refused(build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidPlanError):
        build()


def test_s2_acceptance_process_refuses_a_certain_draft_as_the_plan_does() -> None:
    """A rate of 1 is refused by the plan ([0, 1)); the simulator's process refuses it too."""
    with pytest.raises(UserInputError, match=r"\[0, 1\)"):
        AcceptanceProcess(acceptance=(0.9, 1.0))


def test_s2_analytic_tpot_uses_the_acceptance_per_position() -> None:
    """The verify step is the same for 3 drafts whatever the rates, so TPOT x tokens a pass is
    the same: TPOT(0.8, 0.6, 0.4) x 2.472 = TPOT(0.8 x 3) x 2.952 (1 + 0.8 + 0.64 + 0.512)."""
    parts = serving_parts(ServingConfig(model="llama-3-8b", system="h100-sxm", max_batch=1))
    assert parts.plan is not None
    load = ServingLoad(input_tokens=2000, output_tokens=256)

    def tpot(decoding: SpeculativeDecoding) -> float:
        plan = replace(parts.plan, speculative=decoding)
        return estimate_inference(model=parts.model, cluster=parts.cluster, plan=plan, load=load).tpot_s

    per_position = tpot(SpeculativeDecoding.per_position((0.8, 0.6, 0.4)))
    uniform = tpot(SpeculativeDecoding(3, 0.8))
    assert per_position * 2.472 == pytest.approx(uniform * 2.952, rel=1e-9)


# --- 4: the draft steps are a part of the iteration ------------------------------------------------


def test_s2_iteration_breakdown_includes_the_draft_steps(run_cli) -> None:  # type: ignore[no-untyped-def]
    """One sequence, 3 drafts at 0.7: a pass yields 1 + 0.7 + 0.49 + 0.343 = 2.533 tokens, so the
    step (the parts' sum) is TPOT x 2.533, drafting included."""
    result = run_cli(
        *("plan", "infer", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--precision", "fp8"),
        *("--isl", "2000", "--osl", "256", "--max-batch", "1", "--draft-tokens", "3", "--json"),
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    parts = payload["iteration_breakdown_s"]
    assert parts["draft"] > 0
    assert sum(parts.values()) == pytest.approx(payload["iteration_s"], rel=1e-12)
    assert payload["iteration_s"] == pytest.approx(payload["tpot_s"] * 2.533, rel=1e-9)


# --- 2: the analytic-vs-simulated note -------------------------------------------------------------


def test_s2_note_names_a_tpot_and_batch_gap() -> None:
    """Llama 3 70B at 10 req/s: headline TPOT 54.7 ms and 109.6 in flight, simulated 37.5 ms and
    75.3: 37.5 / 54.7 = 0.69 and 75.3 / 109.6 = 0.69, both past the 20% band; fewer in flight with a
    faster TPOT at the same rate is Little's law, and the note says so."""
    text = against_analytic_text(
        {
            "ttft_p50_over_analytic": 1.0,
            "output_tokens_per_s_over_analytic": 0.99,
            "tpot_mean_over_analytic": 37.5 / 54.7,
            "in_flight_over_analytic": 75.3 / 109.6,
        }
    )
    assert text is not None
    for said in (
        "simulated mean TPOT is 0.69x and requests in flight 0.69x",
        "Little's law",
        "fewer",
        "faster",
    ):
        assert said in text


def test_s2_note_gives_no_slow_simulation_cause_for_a_faster_one() -> None:
    """Throughput served 1.64x the headline with the TTFT matching: the gap is stated, but the
    cause the old note gave (requests waiting for each other, which slows a simulation) is not."""
    text = against_analytic_text({"ttft_p50_over_analytic": 1.05, "output_tokens_per_s_over_analytic": 1.64})
    assert text is not None
    assert "simulated throughput served is 1.64x the analytic headline" in text
    for cause in ("wait for each other", "prefill together"):
        assert cause not in text
    assert "TTFT" not in text  # within the band: not a gap


def test_s2_note_silent_when_everything_agrees() -> None:
    ratios = {
        "ttft_p50_over_analytic": 1.1,
        "output_tokens_per_s_over_analytic": 0.95,
        "tpot_mean_over_analytic": 1.19,
        "in_flight_over_analytic": 0.81,
    }
    assert against_analytic_text(ratios) is None


# --- 6: one output token has no TPOT ---------------------------------------------------------------


def test_s2_one_output_token_shows_no_tpot(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--isl", "4096", "--osl", "1"
    )
    assert result.code == 0, result.err
    tpot_row = next(line for line in result.out.splitlines() if "TPOT" in line and "error bar" not in line)
    assert "n/a (1 output token" in tpot_row
    assert "tok/s per user" not in result.out


# --- 7: a length the distribution overrides is refused ---------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--isl", "8000", "--isl-dist", "uniform:100-3000"),
        ("--osl", "300", "--osl-dist", "uniform:10-50"),
    ],
)
def test_s2_length_overridden_by_its_distribution_is_refused(run_cli, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *(
            "simulate",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100-sxm",
            "--arrival-rate",
            "0.1",
            "--requests",
            "5",
        ),
        *args,
    )
    assert result.code == 2
    flag = args[0]
    assert f"{flag}-dist" in result.err
    assert "ignored" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    "args",
    [
        ("--isl-dist", "uniform:100-300"),  # --isl left at its default
        ("--isl", "300", "--isl-dist", "lognormal:20"),  # lognormal centres on --isl
    ],
)
def test_s2_length_used_with_its_distribution_runs(run_cli, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *(
            "simulate",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100-sxm",
            "--arrival-rate",
            "0.1",
            "--requests",
            "5",
        ),
        *("--osl", "8", "--json"),
        *args,
    )
    assert result.code == 0, result.err
