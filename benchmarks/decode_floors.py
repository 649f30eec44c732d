"""Low-concurrency decode against published rows: what the latency floors predict.

Usage:
    python benchmarks/decode_floors.py [--out benchmarks/results/decode_floors.json]

At one request in flight a decode step reads the weights once and pays, per
kernel, the fixed GPU time a kernel costs and, per tensor-parallel all-reduce,
the small-message latency of the collective; without CUDA graphs the host
must also issue every kernel. These rows measure exactly that regime and are
*judged* here, never fitted: none of the floors' constants (``sol/data/runtime.toml``
``[launch]`` and ``[collectives]``, the serving profiles' ``cuda_graphs``) was
set from them.

Rows (tokens/s of one user, batch 1):

* gpt-fast (pytorch-labs/gpt-fast README, "Benchmarks" and "Tensor
  Parallelism" tables): Llama-2-7B and -70B in bf16 on 8 x A100-80GB (power
  limited to 330 W, hybrid cube mesh), ``torch.compile(mode="reduce-overhead")``
  (CUDA graphs), a 5-token prompt and ``--max_new_tokens`` 200 (generate.py's
  default). Judged with the ``vllm-2025`` profile: the same launch mode
  (compiled, CUDA graphs, no PDL); at batch 1 nothing fitted in a profile
  moves a memory-bound step.
* TensorRT-LLM v0.5.0 (docs/source/blogs/H100vsA100.md, "Max Throughput & Min
  Latency" table): GPT-J 6B at batch 1, ISL 128, on one H100 (FP8) and one A100
  (FP16); the C++ session runtime of that release runs without CUDA graphs
  (``cudaGraphMode`` defaults to false).
* TensorRT-LLM tech blog 1 ("Pushing Latency Boundaries: Optimizing DeepSeek-R1
  Performance on NVIDIA B200 GPUs", Autoregressive MTP table, "Without MTP"):
  DeepSeek-R1 on 8 x B200, TP 8 with EP 4 (the blog's configuration of that
  table), NVFP4 experts, ISL/OSL 1K/2K, CUDA graphs and PDL: 111 tokens/s.

A second table checks speculative decoding's cost apart from the floors: the same blog's
"Autoregressive MTP" table gives, for 1 to 5 MTP draft positions on the same deployment, the
mean tokens a verify pass yields (its "Acceptance Rate" column: 1.92, 2.58, 2.82, 2.99, 3.01)
and the speed-up over no MTP (1.78x, 2.25x, 2.28x, 2.21x, 2.15x). The engine predicts each with
an acceptance rate that yields that mean (``SpeculativeDecoding``: independent positions; only
the mean matters to a batch-1 speed) and the default draft cost (``--draft-cost``, 0.05 of a
decode step per draft position); the ratio to its own no-MTP speed leaves the floors' error out.

The script prints one line per row and writes the figures (and each
prediction's iteration breakdown) to ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference
from lightspeed.sol.infer.plan import SpeculativeDecoding
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "decode_floors.json"
GPT_FAST = "pytorch-labs/gpt-fast README (8 x A100-80GB at 330 W, batch 1, compiled with CUDA graphs)"
TRTLLM_05 = "NVIDIA/TensorRT-LLM docs/source/blogs/H100vsA100.md (TensorRT-LLM v0.5.0, batch 1, ISL 128)"
TRTLLM_R1 = (
    "NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog1_Pushing_Latency_Boundaries_Optimizing_"
    "DeepSeek-R1_Performance_on_NVIDIA_B200_GPUs.md (Autoregressive MTP table, without MTP)"
)


@dataclass(frozen=True)
class DecodeRow:
    """One published batch-1 decode figure and the deployment it ran."""

    row_id: str
    model: str
    system: str
    gpus: int
    plan: InferencePlan
    input_tokens: int
    output_tokens: int
    serving: str
    measured_tokens_per_s_per_user: float
    source: str


def _gpt_fast(row_id: str, model: str, tp: int, measured: float) -> DecodeRow:
    return DecodeRow(
        row_id, model, "dgx-a100", tp, InferencePlan(tp=tp), 6, 200, "vllm-2025", measured, GPT_FAST
    )


ROWS = (
    _gpt_fast("gpt-fast 7B tp1", "llama-2-7b", 1, 104.9),
    _gpt_fast("gpt-fast 7B tp2", "llama-2-7b", 2, 168.84),
    _gpt_fast("gpt-fast 7B tp4", "llama-2-7b", 4, 254.02),
    _gpt_fast("gpt-fast 7B tp8", "llama-2-7b", 8, 328.43),
    _gpt_fast("gpt-fast 70B tp2", "llama-2-70b", 2, 21.32),
    _gpt_fast("gpt-fast 70B tp4", "llama-2-70b", 4, 38.01),
    _gpt_fast("gpt-fast 70B tp8", "llama-2-70b", 8, 62.50),
    DecodeRow(
        "trtllm-0.5 GPT-J H100",
        "gpt-j-6b",
        "dgx-h100",
        1,
        InferencePlan(precision="fp8"),
        128,
        128,
        "trtllm-2023",
        185.0,
        TRTLLM_05,
    ),
    DecodeRow(
        "trtllm-0.5 GPT-J A100",
        "gpt-j-6b",
        "dgx-a100",
        1,
        InferencePlan(precision="fp16"),
        128,
        128,
        "trtllm-2023",
        111.0,
        TRTLLM_05,
    ),
    DecodeRow(
        "trtllm R1 B200 no MTP",
        "deepseek-v3",
        "dgx-b200",
        8,
        InferencePlan(tp=8, ep=4, precision="nvfp4", kv_precision="bf16"),
        1024,
        2048,
        "trtllm-2025",
        111.0,
        TRTLLM_R1,
    ),
)


# The blog's Autoregressive MTP table: draft positions -> (mean tokens per verify pass, tokens/s of
# one user); no MTP: 111 tokens/s.
MTP_TABLE = {1: (1.92, 198.0), 2: (2.58, 250.0), 3: (2.82, 253.0), 4: (2.99, 245.0), 5: (3.01, 239.0)}
R1_B200 = ROWS[-1]


def _estimate(row: DecodeRow, plan: InferencePlan) -> Any:
    catalog, models = load_catalog(), load_models()
    return estimate_inference(
        model=models.get(row.model),
        cluster=catalog.resolve_cluster(row.system),
        plan=plan,
        load=ServingLoad(input_tokens=row.input_tokens, output_tokens=row.output_tokens, concurrency=1),
        num_gpus=row.gpus,
        serving=row.serving,
    )


def acceptance_for(tokens_per_pass: float, drafts: int) -> float:
    """The acceptance rate whose ``drafts`` independent positions yield ``tokens_per_pass`` tokens a
    pass on average (:meth:`SpeculativeDecoding.from_acceptance_length`)."""
    return SpeculativeDecoding.from_acceptance_length(drafts, tokens_per_pass).acceptance_rate


def mtp_speedups(row: DecodeRow = R1_B200) -> list[dict[str, Any]]:
    """Per MTP depth of the blog's table: the measured and predicted speed-up over no MTP."""
    plain = _estimate(row, row.plan).output_tokens_per_s_per_user
    out = []
    for drafts, (tokens_per_pass, measured) in MTP_TABLE.items():
        speculative = SpeculativeDecoding(drafts, acceptance_for(tokens_per_pass, drafts))
        speculating = dataclasses.replace(row.plan, speculative=speculative)
        predicted = _estimate(row, speculating).output_tokens_per_s_per_user / plain
        published = measured / row.measured_tokens_per_s_per_user
        out.append(
            {
                "draft_tokens": drafts,
                "tokens_per_pass": tokens_per_pass,
                "acceptance_rate": speculative.acceptance_rate,
                "draft_cost_fraction": speculative.draft_cost_fraction,
                "measured_speedup": published,
                "predicted_speedup": predicted,
                "error": predicted / published - 1.0,
            }
        )
    return out


def predict(row: DecodeRow) -> dict[str, Any]:
    """lightspeed's tokens/s of one user for ``row``, and the breakdown of its decode step."""
    estimate = _estimate(row, row.plan)
    predicted = estimate.output_tokens_per_s_per_user
    return {
        "row": row.row_id,
        "model": row.model,
        "system": row.system,
        "plan": row.plan.describe(),
        "serving": row.serving,
        "source": row.source,
        "measured_tokens_per_s_per_user": row.measured_tokens_per_s_per_user,
        "predicted_tokens_per_s_per_user": predicted,
        "error": predicted / row.measured_tokens_per_s_per_user - 1.0,
        "tpot_s": estimate.tpot_s,
        "iteration_breakdown_s": estimate.iteration_breakdown_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    results = [predict(row) for row in ROWS]
    for result in results:
        parts = result["iteration_breakdown_s"]
        floors = ", ".join(
            f"{name} {parts[name] * 1e3:.2f} ms" for name in ("launch", "tp_comm", "host") if parts.get(name)
        )
        print(
            f"{result['row']:<24} measured {result['measured_tokens_per_s_per_user']:8.2f}  "
            f"predicted {result['predicted_tokens_per_s_per_user']:8.2f}  "
            f"{result['error']:+7.1%}  TPOT {result['tpot_s'] * 1e3:6.2f} ms ({floors})"
        )
    summary = {}
    for group in ("gpt-fast", "trtllm-0.5", "trtllm R1"):
        errors = [abs(result["error"]) for result in results if result["row"].startswith(group)]
        median, largest = statistics.median(errors), max(errors)
        summary[group] = {"n": len(errors), "median_abs_error": median, "max_abs_error": largest}
        print(f"{group}: {len(errors)} rows, median |error| {median:.1%}, max {largest:.1%}")
    speedups = mtp_speedups()
    for entry in speedups:
        print(
            f"MTP {entry['draft_tokens']} ({entry['tokens_per_pass']:.2f} tokens a pass): measured "
            f"{entry['measured_speedup']:.2f}x, predicted {entry['predicted_speedup']:.2f}x "
            f"({entry['error']:+.1%})"
        )
    largest = max(abs(entry["error"]) for entry in speedups)
    summary["mtp speed-ups"] = {"n": len(speedups), "max_abs_error": largest}
    print(f"MTP speed-ups: {len(speedups)} depths, max |error| {largest:.1%}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {"rows": results, "mtp_speedups": speedups, "summary": summary}
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
