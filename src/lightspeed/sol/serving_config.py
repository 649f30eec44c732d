"""The serving jobs' configurations: a deployment (``plan infer``, ``simulate``) and its search
(``search infer``), on :class:`~lightspeed.sol.config.JobConfig` (the fields, the options, the
plan files and their checks are declared there once for every job).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict
from lightspeed.sol.config import JobConfig, setting
from lightspeed.sol.infer.plan import (
    INFERENCE_PRECISIONS,
    KV_PRECISIONS,
    PLAN_FAMILIES,
    InferencePlan,
    PoolShape,
    ServingLoad,
    SpeculativeDecoding,
)
from lightspeed.sol.infer.serving import BATCHING_MODES
from lightspeed.units import counted
from lightspeed.workload import TransformerSpec
from lightspeed.workload.recurrent import STATE_PRECISIONS

DEFAULT_SIMULATED_REQUESTS: Final = 2000  # enough for p99 latencies to settle (docs/serving.md)


@dataclass(frozen=True)
class ServingJob(JobConfig):
    """What every serving prediction needs besides the deployment's degrees."""

    precision: str = setting(
        "released",
        choices=(*INFERENCE_PRECISIONS, "auto", "released"),
        help="Weight format (nvfp4/mxfp4 include block scales); released = the format the model's "
        "checkpoint is published in (DeepSeek-V3 and Kimi K2 fp8, gpt-oss mxfp4, most others bf16; "
        "'lightspeed model show' says it); auto = the narrowest the GPU computes in.",
    )
    attention_weights: str | None = setting(
        None,
        choices=INFERENCE_PRECISIONS,
        help="Format of the attention projections' weights when the checkpoint keeps them apart "
        "(default: the model's published checkpoint in --precision, e.g. gpt-oss MXFP4 with BF16 "
        "attention; see sol/data/checkpoints.toml; else --precision).",
    )
    effective_bits: float | None = setting(
        None,
        option_type="EFFECTIVE_BITS",
        help="A per-layer mixed checkpoint (ModelOpt AutoQuantize): mean bits per linear weight, the "
        "layers split between --precision and the next wider format (nvfp4/mxfp4 with fp8: 4-8; "
        "fp8 with 16-bit: 8-16), e.g. 7.25 for NVIDIA's MLPerf Mixtral on B200 (default: none).",
    )
    state_precision: str | None = setting(
        None,
        choices=tuple(STATE_PRECISIONS),
        help="Format a hybrid's recurrent (Mamba-2, Gated DeltaNet) state is held in: vLLM's "
        "--mamba-ssm-cache-dtype, SGLang's --mamba-ssm-dtype (default: the model's, from its "
        "config.json's mamba_ssm_dtype; FP32 for Mamba-2).",
    )
    input_tokens: int = setting(
        1024, flags=("--isl",), option_type="SEQ_LEN", help="Input (prompt) tokens per request."
    )
    output_tokens: int = setting(
        1024, flags=("--osl",), option_type="SEQ_LEN", help="Output tokens per request."
    )
    draft_tokens: int | None = setting(
        None, option_type="DRAFT_TOKENS", help="Speculative decoding: draft tokens per iteration."
    )
    acceptance: tuple[float, ...] = setting(
        (0.7,),
        option_type="ACCEPTANCE",
        help="Chance each draft token is kept given the ones before it were: one rate, or one per "
        "draft position (e.g. 0.8,0.6,0.4).",
    )
    draft_cost: float = setting(
        0.05, option_type="FRACTION", help="Cost of one draft step relative to one decode step."
    )
    serving: str | None = setting(
        None,
        help="Serving-stack profile (kernel efficiency, host time, attention-DP pace; sol/data/stacks.toml): "
        "trtllm-2025 (default), vllm-2026 (0.14+), vllm-2025 (0.8-0.13), vllm-2024 (V0), sglang-2025, "
        "sglang-2024 (0.1-0.3), deepseek-2025, trtllm-2024 (0.8-0.21, TensorRT engines), "
        "trtllm-2023 (0.5-0.6), trtllm-2023-xqa (0.7)",
    )
    num_requests: int = setting(
        DEFAULT_SIMULATED_REQUESTS,
        flags=("--requests",),
        option_type="REQUESTS",
        help="Requests to simulate (under a load; see docs/serving.md).",
    )
    seed: int = setting(0, option_type="SEED", help="Seed of the simulated request generator.")
    warmup_requests: int = setting(
        0,
        flags=("--warmup",),
        option_type="WARMUP_REQUESTS",
        help="Simulated requests that warm the server up and are left out of the figures (the first "
        "to arrive; a steady-state measurement, as AIPerf's --warmup-request-count).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        count = len(self.acceptance)
        if self.draft_tokens is not None and count not in (1, self.draft_tokens):
            raise UserInputError(
                f"--acceptance gives {count} rates and --draft-tokens is {self.draft_tokens}: give one "
                f"rate (every draft position alike) or {self.draft_tokens}, one per draft position"
            )
        # the acceptance and draft cost as speculative decoding holds them (acceptance below 1)
        SpeculativeDecoding.per_position(self.acceptance, self.draft_tokens, self.draft_cost)

    def to_dict(self) -> JsonDict:
        """The fields, a single acceptance rate as a number (as plan files have always held it),
        rates per draft position as a list."""
        data = super().to_dict()
        if len(self.acceptance) == 1:
            data["acceptance"] = self.acceptance[0]
        return data

    def speculative_decoding(self) -> SpeculativeDecoding | None:
        """The speculation the job names (``None`` without draft tokens)."""
        if self.draft_tokens is None:
            return None
        return SpeculativeDecoding.per_position(self.acceptance, self.draft_tokens, self.draft_cost)

    def served_model(self, model: TransformerSpec) -> TransformerSpec:
        """``model`` with its recurrent state in the job's ``state_precision`` (unchanged without
        one; a model with no recurrent blocks is refused, :meth:`TransformerSpec.with_state_dtype`)."""
        if self.state_precision is None:
            return model
        return model.with_state_dtype(STATE_PRECISIONS[self.state_precision])


@dataclass(frozen=True)
class ServingConfig(ServingJob):
    """One serving deployment on one system: ``lightspeed plan infer``."""

    KIND: ClassVar[str] = "serving-plan"
    TABLES: ClassVar[tuple[str, ...]] = ("simulate",)

    tp: int = setting(1, option_type="DEGREE", help="Tensor parallel size.")
    pp: int = setting(1, option_type="DEGREE", help="Pipeline stages.")
    ep: int = setting(1, option_type="DEGREE", help="Expert parallel size.")
    dp_attention: int = setting(1, option_type="DEGREE", help="Attention groups per stage.")
    replicas: int | None = setting(
        None, option_type="DEGREE", help="Model copies (default: GPUs / replica size)."
    )
    activation_precision: str | None = setting(
        None,
        choices=INFERENCE_PRECISIONS,
        help="GEMM input format (default: the weights' own where the GPU computes in it, else its "
        "16-bit format); bf16 with --precision int8 or int4 is weight-only quantization (W8A16, W4A16).",
    )
    kv_precision: str | None = setting(None, choices=KV_PRECISIONS, help="KV cache format.")
    kv_replication: bool = setting(False, help="Allow TP above the KV heads by replicating heads.")
    concurrency: int | None = setting(
        None,
        option_type="SEQUENCES",
        help="Requests in flight, a closed loop (plan infer: default the KV-cache limit; simulate: "
        "without it or --arrival-rate the run is offline).",
    )
    arrival_rate: float | None = setting(None, option_type="PER_SECOND", help="Requests per second.")
    batching: str = setting("continuous", choices=BATCHING_MODES, help="Batching of requests.")
    disaggregated: tuple[int, int] | None = setting(
        None, option_type="POOL_SPLIT", help="P prefill and D decode replicas (P:D)."
    )
    prefill_tp: int | None = setting(
        None,
        option_type="DEGREE",
        help="Prefill replicas' tensor parallel size (default: --tp; with --disaggregated).",
    )
    prefill_pp: int | None = setting(
        None,
        option_type="DEGREE",
        help="Prefill replicas' pipeline stages (default: --pp; with --disaggregated).",
    )
    prefill_ep: int | None = setting(
        None,
        option_type="DEGREE",
        help="Prefill replicas' expert parallel size (default: --ep; with --disaggregated).",
    )
    prefill_dp_attention: int | None = setting(
        None,
        option_type="DEGREE",
        help="Prefill replicas' attention groups per stage (default: --dp-attention; with --disaggregated).",
    )
    max_batch: int | None = setting(None, option_type="SEQUENCES", help="Cap on sequences per replica.")
    expert_imbalance: float | None = setting(
        None,
        option_type="EXPERT_IMBALANCE",
        help="Busiest EP rank's routed tokens over the mean rank's (default: the routing skew "
        "measured on DeepSeek-R1 at the plan's EP size, sol/data/routing.toml; 1 = perfectly even; "
        "--expert-load measures it).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.expert_load and self.expert_imbalance is not None:
            raise UserInputError("give --expert-load or --expert-imbalance, not both")

    def serving_load(self) -> ServingLoad:
        """The request shape and load."""
        return ServingLoad(
            self.input_tokens,
            self.output_tokens,
            concurrency=self.concurrency,
            arrival_rate_per_s=self.arrival_rate,
        )

    def inference_plan(self, *, num_gpus: int, precision: str) -> InferencePlan:
        """The :class:`InferencePlan` on ``num_gpus`` GPUs with weights in ``precision`` (``auto``
        resolved by the caller, who knows the GPU)."""
        return InferencePlan(
            tp=self.tp,
            pp=self.pp,
            ep=self.ep,
            dp_attention=self.dp_attention,
            replicas=self._replicas(num_gpus),
            precision=precision,
            activation_precision=self.activation_precision,
            kv_precision=self.kv_precision,
            attention_weights=self.attention_weights,
            effective_bits=self.effective_bits,
            kv_replication=self.kv_replication,
            speculative=self.speculative_decoding(),
            disaggregated=self.disaggregated,
            max_batch=self.max_batch,
            expert_imbalance=self.expert_imbalance,
            prefill_shape=self._prefill_shape(),
        )

    def _prefill_shape(self) -> PoolShape | None:
        """The prefill replicas' own degrees (``--prefill-tp`` ...), each unset one the decode
        replicas'; ``None`` when none is set."""
        given = (self.prefill_tp, self.prefill_pp, self.prefill_ep, self.prefill_dp_attention)
        if all(value is None for value in given):
            return None
        return PoolShape(
            tp=self.prefill_tp or self.tp,
            pp=self.prefill_pp or self.pp,
            ep=self.prefill_ep or self.ep,
            dp_attention=self.prefill_dp_attention or self.dp_attention,
        )

    def _replicas(self, num_gpus: int) -> int:
        if self.disaggregated is not None or self.replicas is not None:
            return self.replicas or 1
        per_replica = self.tp * self.dp_attention * self.pp
        if num_gpus % per_replica:
            raise UserInputError(self._split_problem(num_gpus, per_replica))
        return num_gpus // per_replica

    def _split_problem(self, num_gpus: int, per_replica: int) -> str:
        """Why ``num_gpus`` GPUs do not split into replicas of ``per_replica`` GPUs, and what does:
        a replica larger than the GPUs needs more of them (--replicas cannot help), a smaller one
        a multiple of it (or, when --gpus was not given, --replicas to use part of the system)."""
        degrees = f"tp x dp-attention x pp = {self.tp} x {self.dp_attention} x {self.pp} = {per_replica}"
        if per_replica > num_gpus:
            return (
                f"one replica of {degrees} GPUs does not fit on {counted(num_gpus, 'GPU')}; "
                f"give --gpus {per_replica} (or a multiple of it), or smaller degrees (--tp, --pp, "
                f"--dp-attention) whose product divides {num_gpus}"
            )
        below = num_gpus // per_replica * per_replica
        part = f", or --replicas N to use N x {per_replica} of them" if self.num_gpus is None else ""
        return (
            f"{num_gpus} GPUs do not split into replicas of {degrees} GPUs; give --gpus a multiple of "
            f"{per_replica} (e.g. {below} or {below + per_replica}), or degrees whose product divides "
            f"{num_gpus}{part}"
        )


@dataclass(frozen=True)
class ServingSearchConfig(ServingJob):
    """The best deployment under latency bounds: ``lightspeed search infer``."""

    KIND: ClassVar[str] = "serving-search"

    max_ttft_s: float | None = setting(
        None,
        flags=("--max-ttft",),
        option_type="LATENCY_BOUND",
        help="Time-to-first-token bound, with its unit (e.g. 5s, 500ms).",
    )
    max_tpot_s: float | None = setting(
        None,
        flags=("--max-tpot",),
        option_type="LATENCY_BOUND",
        help="Time-per-output-token bound, with its unit (e.g. 50ms).",
    )
    disaggregated: bool = setting(False, help="Also try separate prefill and decode pools.")
    plan_family: str = setting(
        "wide-ep",
        choices=PLAN_FAMILIES,
        help="tp-ep-pp: TP, EP and PP only; wide-ep: also attention data parallelism (MoE).",
    )
    allow_cross_domain_tp: bool = setting(False, help="Also try TP groups larger than the scale-up domain.")
    slo: str | None = setting(
        None,
        option_type="SLO_TEXT",
        help="Latency SLO, each limit with its unit, e.g. ttft=2s,tpot=50ms[,attainment=90%] (DistServe: "
        "the share meeting both): the finalists are simulated and ranked by goodput per GPU.",
    )
    rate_per_s: float | None = setting(
        None,
        flags=("--rate",),
        option_type="PER_SECOND",
        help="Rank by goodput per GPU at this rate (req/s).",
    )
    max_rate_at_slo: bool = setting(
        False,
        help="Rank by the highest rate each finalist sustains at --slo (the default without --rate; "
        "not with --rate).",
    )
    finalists: int = setting(6, option_type="FINALISTS", help="Deployments to simulate.")
    search_draft_tokens: int | None = setting(
        None,
        option_type="SEARCHED_DRAFT_TOKENS",
        help="Also try speculative decoding with 1 to N draft tokens a step (each accepted at "
        "one --acceptance rate, drafted at --draft-cost) beside none: the depth whose best deployment has "
        "the most tokens/s per GPU under the bounds wins.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.search_draft_tokens is not None and self.draft_tokens is not None:
            raise UserInputError(
                "give --draft-tokens (one depth) or --search-draft-tokens (every depth up to N), not both"
            )
        if self.search_draft_tokens is not None and len(self.acceptance) > 1:
            rates = ",".join(f"{rate:g}" for rate in self.acceptance)
            raise UserInputError(
                f"--search-draft-tokens tries every depth at one --acceptance rate, not one per draft "
                f"position ({rates}): give one rate, or --draft-tokens {len(self.acceptance)} for these"
            )
        if self.rate_per_s is not None and self.max_rate_at_slo:
            raise UserInputError(
                "give --rate or --max-rate-at-slo, not both: --rate ranks the finalists by goodput at "
                "that rate, --max-rate-at-slo by the highest rate each sustains at --slo"
            )

    def serving_load(self) -> ServingLoad:
        """The request shape (the search finds the batch)."""
        return ServingLoad(self.input_tokens, self.output_tokens)


__all__ = ["ServingConfig", "ServingJob", "ServingSearchConfig"]
