"""Inference deployments: how a model is split over GPUs and what the requests look like.

An :class:`InferencePlan` names one *replica* of the model (the GPUs that hold
one copy of the weights) and how many replicas serve side by side:

* ``tp`` splits attention heads and dense MLPs (Megatron column/row split);
* ``dp_attention`` runs that many attention groups of ``tp`` GPUs side by side
  inside one stage, each on its own sequences (DeepSeek-style attention data
  parallelism, MoE models only); a stage has ``tp x dp_attention`` GPUs;
* ``ep`` spreads the routed experts of a stage over ``ep`` of its GPUs, each
  expert split over the remaining ``stage GPUs / ep`` (TensorRT-LLM's
  ``moe_ep x moe_tp = tp`` rule, widened by attention data parallelism); when
  ``ep`` does not divide the experts every GPU holds ``ceil(experts / ep)``
  slots and the spare ones hold redundant copies (DeepSeek's 256 + 32 on 144
  GPUs, EPLB);
* ``pp`` cuts the layers into stages that pass activations on.

A replica has ``tp x dp_attention x pp`` GPUs. ``disaggregated=(P, D)`` runs P
replicas that only prefill and D that only decode, with the KV cache sent from
one pool to the other; otherwise every replica does both (continuous batching).

>>> plan = InferencePlan(tp=8, pp=2, replicas=4, precision="fp8")
>>> plan.gpus_per_replica, plan.num_gpus
(16, 64)

The serving engine's twin of :mod:`lightspeed.sol.train.plan` (the same concept for training).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from lightspeed import limits
from lightspeed.catalog import Accelerator
from lightspeed.errors import InvalidPlanError, PlanMismatchError, UserInputError
from lightspeed.limits import (
    MAX_ACCELERATORS,
    MAX_RATE_PER_S,
    MAX_SEQ_LEN,
    MAX_SEQUENCES,
    MIN_RATE_PER_S,
    check_number,
    check_whole,
)
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.factors import divisors, nearest
from lightspeed.units import bytes_per_element, compute_precision, element_bits
from lightspeed.workload import TransformerSpec

INFERENCE_PRECISIONS: Final = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "mxfp8",
    "int8",
    "nvfp4",
    "mxfp4",
    "fp4",
    "int4",
)
KV_PRECISIONS: Final = ("fp32", "bf16", "fp16", "fp8", "int8", "nvfp4", "fp4")
# Per-layer mixed checkpoints (ModelOpt AutoQuantize): the next wider format a layer can keep,
# by the width of the narrow one (4-bit floats with FP8 layers, FP8 with 16-bit layers); bits as
# ModelOpt counts them, the element alone (block scales not counted)
MIXABLE_PRECISIONS: Final = ("nvfp4", "mxfp4", "fp4", "fp8")
_WIDER_BITS: Final = {4: 8, 8: 16}
# layer kinds beyond the attention projections a published checkpoint may keep as it keeps those
# (``kept_layers`` in sol/data/checkpoints.toml): a MoE layer's shared experts, a dense layer's MLP
KEPT_LAYER_KINDS: Final = ("shared_experts", "dense_mlp")
_INTEGER_FORMATS: Final = ("int8", "int4")
_KEPT_LAYER_NAMES: Final = {"shared_experts": "shared experts", "dense_mlp": "dense-layer MLPs"}
# deployment families the search tries: TP/EP/PP only, or also attention data parallelism (MoE)
PLAN_FAMILIES: Final = ("tp-ep-pp", "wide-ep")


# The most draft tokens a step speculative decoding is modelled with (the bound of the CLI's
# --draft-tokens, cli/options.DRAFT_TOKENS; EAGLE-2's widest draft tree holds 60).
MAX_DRAFT_TOKENS: Final = limits.MAX_DRAFT_TOKENS
# The most requests in flight (a batch, a concurrency) a load may hold; the CLI's --concurrency
# and --max-batch bound is the same (docs/limits.md).
MAX_IN_FLIGHT: Final = MAX_SEQUENCES


def check_acceptance_rate(rate: object, *, error: type[UserInputError] = InvalidPlanError) -> float:
    """``rate`` as a float where it is a chance a draft token is kept that speculation can model:
    0 to 1, 1 itself excluded (every draft kept makes a verify pass of ``k + 1`` tokens a certainty,
    which no draft model reaches), else ``error`` saying so.

    >>> check_acceptance_rate(1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.InvalidPlanError: acceptance rate 1.0 must be in [0, 1): ...
    """
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate < 1.0:
        raise error(f"acceptance rate {rate!r} must be in [0, 1): the chance that one draft token is kept")
    return float(rate)


def _check_rates_count(rates: tuple[float, ...], num_draft_tokens: int) -> None:
    """Refuse rates per draft position whose count is neither 1 (every position alike) nor
    ``num_draft_tokens`` (none: one rate for all)."""
    if len(rates) in (0, 1, num_draft_tokens):
        return
    raise InvalidPlanError(
        f"{len(rates)} acceptance rates for {num_draft_tokens} draft tokens: give one rate (every "
        f"position alike) or one per draft position ({num_draft_tokens})"
    )


@dataclass(frozen=True)
class SpeculativeDecoding(Record):
    """Draft-then-verify decoding (Leviathan et al. 2023, Chen et al. 2023), and MTP.

    Each iteration drafts ``num_draft_tokens`` tokens per sequence, each draft
    step costing ``draft_cost_fraction`` of one target decode step at the same
    batch, then the target model verifies all of them in one pass. Draft position
    ``i`` is kept with probability ``a_i`` given that every position before it was
    kept (EAGLE's and DeepSeek's MTP papers report acceptance so, falling with the
    position): ``acceptance_rates`` holds one rate per position, or is empty for
    ``acceptance_rate`` (the first position's) at every one. An iteration yields
    ``1 + sum_i prod_{j<=i} a_j`` tokens per sequence, ``(1 - a^(k+1)) / (1 - a)``
    at one rate.

    >>> round(SpeculativeDecoding(num_draft_tokens=3, acceptance_rate=0.8).tokens_per_iteration, 3)
    2.952
    >>> round(SpeculativeDecoding.per_position((0.8, 0.6, 0.4)).tokens_per_iteration, 3)
    2.472
    """

    num_draft_tokens: int
    acceptance_rate: float
    draft_cost_fraction: float = 0.05
    acceptance_rates: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.num_draft_tokens <= MAX_DRAFT_TOKENS:
            raise InvalidPlanError(
                f"speculative decoding needs 1 to {MAX_DRAFT_TOKENS:,} draft tokens a step "
                f"(got {self.num_draft_tokens:,})"
            )
        for rate in (self.acceptance_rate, *self.acceptance_rates):
            check_acceptance_rate(rate, error=InvalidPlanError)
        _check_rates_count(self.acceptance_rates, self.num_draft_tokens)
        if self.acceptance_rates and self.acceptance_rates[0] != self.acceptance_rate:
            raise InvalidPlanError(
                f"acceptance rate {self.acceptance_rate:g} is the first draft position's, and the rates per "
                f"position start at {self.acceptance_rates[0]:g}: give the same first rate "
                "(SpeculativeDecoding.per_position builds both from the list)"
            )
        if not 0.0 <= self.draft_cost_fraction <= 1.0:
            raise InvalidPlanError(
                f"draft cost fraction {self.draft_cost_fraction} must be in [0, 1] "
                "(one draft step relative to one target decode step)"
            )

    @classmethod
    def per_position(
        cls, rates: Sequence[float], num_draft_tokens: int | None = None, draft_cost_fraction: float = 0.05
    ) -> SpeculativeDecoding:
        """The decoding whose draft positions are kept at ``rates`` (each given the ones before it
        were): one rate for every one of ``num_draft_tokens`` positions, or one per position
        (``num_draft_tokens`` then defaults to their count; another count is refused)."""
        values = tuple(float(rate) for rate in rates)
        if not values:
            raise InvalidPlanError(
                "speculative decoding needs an acceptance rate: give one, or one per draft token"
            )
        count = len(values) if num_draft_tokens is None else num_draft_tokens
        return cls(count, values[0], draft_cost_fraction, values if len(values) > 1 else ())

    @property
    def position_rates(self) -> tuple[float, ...]:
        """The acceptance rate of each draft position, first to last (``num_draft_tokens`` values)."""
        if len(self.acceptance_rates) == self.num_draft_tokens:
            return self.acceptance_rates
        return (self.acceptance_rate,) * self.num_draft_tokens

    @property
    def tokens_per_iteration(self) -> float:
        """Expected tokens each sequence gains per verify pass (accepted drafts + one):
        ``1 + sum_i P(the first i drafts kept)``."""
        kept, total = 1.0, 1.0
        for rate in self.position_rates:
            kept *= rate
            total += kept
        return total

    def to_dict(self) -> JsonDict:
        """The record, with ``acceptance_rates`` one rate per draft position (the same value at
        every position where one rate was given)."""
        return {**super().to_dict(), "acceptance_rates": list(self.position_rates)}

    @classmethod
    def from_acceptance_length(
        cls, num_draft_tokens: int, tokens_per_pass: float, draft_cost_fraction: float = 0.05
    ) -> SpeculativeDecoding:
        """The decoding whose ``num_draft_tokens`` independent positions yield ``tokens_per_pass``
        tokens a verify pass on average (the "acceptance length" servers report): bisection on
        :attr:`tokens_per_iteration`, which increases with the rate.

        >>> round(SpeculativeDecoding.from_acceptance_length(3, 2.952).acceptance_rate, 3)
        0.8
        """
        if not 1.0 <= tokens_per_pass < num_draft_tokens + 1.0:
            raise InvalidPlanError(
                f"{tokens_per_pass:g} tokens a verify pass is not possible with {num_draft_tokens} draft "
                f"tokens: it lies between 1 (none accepted) and {num_draft_tokens + 1} (all accepted)"
            )
        low, high = 0.0, 1.0 - 1e-12
        for _ in range(200):
            middle = (low + high) / 2.0
            if cls(num_draft_tokens, middle).tokens_per_iteration < tokens_per_pass:
                low = middle
            else:
                high = middle
        return cls(num_draft_tokens, (low + high) / 2.0, draft_cost_fraction)


@dataclass(frozen=True)
class ServingLoad(Record):
    """What requests look like and how many arrive.

    ``input_tokens``/``output_tokens`` per request (ISL/OSL). Give at most one
    of ``concurrency`` (requests in flight over the whole deployment, a closed
    loop: a user sends the next request when the last one ends) and
    ``arrival_rate_per_s`` (requests per second, an open loop). With neither,
    the deployment runs at its KV-cache-limited maximum batch (offline maximum
    throughput).
    """

    input_tokens: int = 1024
    output_tokens: int = 1024
    concurrency: int | None = None
    arrival_rate_per_s: float | None = None

    def __post_init__(self) -> None:
        # the bounds of --isl/--osl, --concurrency and --arrival-rate (docs/limits.md)
        for label in ("input_tokens", "output_tokens"):
            check_whole(label, getattr(self, label), maximum=MAX_SEQ_LEN, error=InvalidPlanError)
        if self.concurrency is not None and self.arrival_rate_per_s is not None:
            raise InvalidPlanError("give a concurrency or an arrival rate, not both")
        if self.concurrency is not None:
            check_whole("concurrency", self.concurrency, maximum=MAX_IN_FLIGHT, error=InvalidPlanError)
        if self.arrival_rate_per_s is not None:
            check_number(
                "arrival_rate_per_s",
                self.arrival_rate_per_s,
                minimum=MIN_RATE_PER_S,
                maximum=MAX_RATE_PER_S,
                error=InvalidPlanError,
            )

    @property
    def offline(self) -> bool:
        """Whether the load is 'as many requests as fit' (neither concurrency nor rate given)."""
        return self.concurrency is None and self.arrival_rate_per_s is None


@dataclass(frozen=True)
class PoolShape(Record):
    """The parallel degrees of one replica of a disaggregated deployment's prefill pool, where it
    differs from the decode pool's (the plan's own degrees): NVIDIA Dynamo's and vLLM's P/D
    recipes run prefill at TP 1 or with attention data parallelism beside decode at TP 4 or 8."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp_attention: int = 1

    def __post_init__(self) -> None:
        _check_degrees("prefill ", tp=self.tp, pp=self.pp, ep=self.ep, dp_attention=self.dp_attention)

    @property
    def gpus(self) -> int:
        """GPUs of one prefill replica."""
        return self.tp * self.dp_attention * self.pp

    def describe(self) -> str:
        """``tp=1 pp=1 ep=4 dp-attention=4`` (:func:`_degrees_text`)."""
        return " ".join(_degrees_text(self.tp, self.pp, self.ep, self.dp_attention))


def _degrees_text(tp: int, pp: int, ep: int, dp_attention: int) -> list[str]:
    """``tp=T``, ``pp=P`` and, above 1, ``ep=E`` and ``dp-attention=A``."""
    parts = [f"tp={tp}", f"pp={pp}"]
    if ep > 1:
        parts.append(f"ep={ep}")
    if dp_attention > 1:
        parts.append(f"dp-attention={dp_attention}")
    return parts


def _check_degrees(prefix: str, **degrees: int) -> None:
    """Refuse a parallel degree that is not a whole number from 1 to the most accelerators
    (``prefix`` names whose, e.g. ``prefill ``)."""
    for label, value in degrees.items():
        check_whole(f"{prefix}{label}", value, maximum=MAX_ACCELERATORS, error=InvalidPlanError)


@dataclass(frozen=True)
class InferencePlan(Record):
    """One serving deployment (see the module docstring for what each degree splits).

    ``precision`` is how weights are stored (``nvfp4`` and ``mxfp4`` include
    their block scales); ``activation_precision`` the format GEMM inputs run in
    (default: the weights' format when the GPU computes in it, else bf16 as in
    weight-only quantization); ``kv_precision`` the KV cache format (default:
    fp8 when weights are 8-bit or narrower and the GPU has FP8, else the
    activation format). ``attention_weights`` stores the attention projections in
    another format than ``precision`` (default: the model's published checkpoint in
    ``precision`` when it keeps them apart, ``sol/data/checkpoints.toml``, else
    ``precision``). ``kv_replication`` allows ``tp`` above the number of KV
    heads by storing each head on several GPUs. ``max_batch`` caps sequences
    in flight per replica (the server's ``max_batch_size``). ``expert_imbalance``
    multiplies the routed-expert work of the busiest GPU of a stage (1.0 = balanced;
    :mod:`lightspeed.moe.effect` derives it from a recorded load; ``None``: the routing skew
    measured on DeepSeek-R1 at the plan's EP size, ``sol/data/routing.toml``);
    ``num_physical_experts`` counts the routed experts with their redundant replicas
    over a stage's ``ep`` GPUs (``None``: no replicas). ``effective_bits`` describes a per-layer
    mixed checkpoint (ModelOpt AutoQuantize, as NVIDIA's MLPerf Mixtral submissions build): the
    linear layers stored in ``precision`` average that many bits per weight, a share
    (:attr:`wider_share`) of them kept in the next wider format (FP8 beside a 4-bit float, 16-bit
    beside FP8) and computed in it; ``None``: every such layer in ``precision``.
    ``prefill_shape`` gives a disaggregated deployment's prefill replicas degrees of their own
    (:class:`PoolShape`); ``None``: the plan's, as the decode replicas have.
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp_attention: int = 1
    replicas: int = 1
    precision: str = "bf16"
    activation_precision: str | None = None
    kv_precision: str | None = None
    attention_weights: str | None = None
    kv_replication: bool = False
    speculative: SpeculativeDecoding | None = None
    disaggregated: tuple[int, int] | None = None
    max_batch: int | None = None
    expert_imbalance: float | None = None
    num_physical_experts: int | None = None
    effective_bits: float | None = None
    prefill_shape: PoolShape | None = None

    def __post_init__(self) -> None:
        _check_degrees(
            "", tp=self.tp, pp=self.pp, ep=self.ep, dp_attention=self.dp_attention, replicas=self.replicas
        )
        _check_choice("precision", self.precision, INFERENCE_PRECISIONS)
        if self.activation_precision is not None:
            _check_choice("activation precision", self.activation_precision, INFERENCE_PRECISIONS)
            _check_activation(self.precision, self.activation_precision)
        if self.kv_precision is not None:
            _check_choice("KV cache precision", self.kv_precision, KV_PRECISIONS)
        if self.attention_weights is not None:
            _check_choice("attention weight precision", self.attention_weights, INFERENCE_PRECISIONS)
        if self.disaggregated is not None:
            prefill, decode = self.disaggregated
            if prefill < 1 or decode < 1:
                raise InvalidPlanError(
                    "disaggregated P:D needs at least one prefill and one decode replica "
                    f"(got {prefill}:{decode})"
                )
        if self.prefill_shape is not None and self.disaggregated is None:
            raise InvalidPlanError(
                "a prefill pool's own degrees need a disaggregated deployment: give the pools (P:D) too"
            )
        if self.max_batch is not None:
            check_whole("max_batch", self.max_batch, maximum=MAX_IN_FLIGHT, error=InvalidPlanError)
        if self.expert_imbalance is not None and not 1.0 <= self.expert_imbalance < math.inf:
            raise InvalidPlanError("expert_imbalance is a slowdown factor and must be a finite number >= 1.0")
        if self.effective_bits is not None:
            _check_effective_bits(self.precision, self.effective_bits)

    @property
    def wider_share(self) -> float:
        """Share of the linear weights stored in ``precision`` that a per-layer mixed checkpoint
        (``effective_bits``) keeps in the next wider format instead (0 without one): the split of
        the two formats whose parameter-weighted mean width is ``effective_bits``."""
        if self.effective_bits is None:
            return 0.0
        narrow = element_bits(self.precision)
        return (self.effective_bits - narrow) / (_WIDER_BITS[round(narrow)] - narrow)

    @property
    def stage_gpus(self) -> int:
        """GPUs of one pipeline stage: ``tp x dp_attention``."""
        return self.tp * self.dp_attention

    @property
    def gpus_per_replica(self) -> int:
        """GPUs holding one copy of the model."""
        return self.stage_gpus * self.pp

    @property
    def num_replicas(self) -> int:
        """Replicas serving (prefill + decode pools when disaggregated)."""
        if self.disaggregated is not None:
            return self.disaggregated[0] + self.disaggregated[1]
        return self.replicas

    @property
    def num_gpus(self) -> int:
        """GPUs of the whole deployment (a prefill pool of its own shape counted at its size)."""
        if self.disaggregated is not None and self.prefill_shape is not None:
            prefill, decode = self.disaggregated
            return prefill * self.prefill_shape.gpus + decode * self.gpus_per_replica
        return self.gpus_per_replica * self.num_replicas

    @property
    def prefill_plan(self) -> InferencePlan:
        """One prefill replica of a disaggregated deployment as a plan of its own: the prefill
        shape's degrees where it has one, else the plan's."""
        shape = self.prefill_shape or PoolShape(self.tp, self.pp, self.ep, self.dp_attention)
        return replace(
            self,
            tp=shape.tp,
            pp=shape.pp,
            ep=shape.ep,
            dp_attention=shape.dp_attention,
            disaggregated=None,
            prefill_shape=None,
            replicas=1,
        )

    def with_changes(self, **changes: object) -> InferencePlan:
        """A copy with some fields replaced."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> str:
        """Compact text such as ``tp=8 pp=2 ep=8 x4 replicas fp8``."""
        parts = _degrees_text(self.tp, self.pp, self.ep, self.dp_attention)
        if self.disaggregated is not None:
            parts.append(f"disaggregated {self.disaggregated[0]}P:{self.disaggregated[1]}D")
            if self.prefill_shape is not None:
                parts.append(f"(prefill {self.prefill_shape.describe()})")
        else:
            parts.append(f"x{self.replicas} replica{'s' if self.replicas > 1 else ''}")
        parts.append(self.precision)
        if self.effective_bits is not None:
            parts.append(f"({self.effective_bits:g} effective bits)")
        if self.attention_weights is not None and self.attention_weights != self.precision:
            parts.append(f"(attention {self.attention_weights})")
        return " ".join(parts)


def _check_effective_bits(precision: str, effective_bits: float) -> None:
    """Refuse effective bits that no mix of ``precision`` and its next wider format gives."""
    if precision not in MIXABLE_PRECISIONS:
        raise InvalidPlanError(
            f"effective bits mix a 4-bit float format with FP8 layers or FP8 with 16-bit layers "
            f"(ModelOpt AutoQuantize); precision {precision!r} is neither: use --precision "
            f"{' or '.join(MIXABLE_PRECISIONS)}, or drop --effective-bits"
        )
    narrow = element_bits(precision)
    wider = _WIDER_BITS[round(narrow)]
    if not narrow <= effective_bits <= wider:
        other = (
            " (a checkpoint of FP8 and 16-bit layers is --precision fp8 with 8 to 16)" if wider == 8 else ""
        )
        raise InvalidPlanError(
            f"effective bits {effective_bits:g} is not between {narrow:g} and {wider:g}, the widths of "
            f"{precision} and the {'FP8' if wider == 8 else '16-bit'} layers it mixes with: give a "
            f"value in [{narrow:g}, {wider:g}]{other}"
        )


def pairs_with(weights: str, activation: str) -> bool:
    """Whether a GEMM takes weights stored in ``weights`` with inputs in ``activation``.

    A tensor-core GEMM runs both operands in one format, so its inputs are as wide as the weights
    or wider: the same tensor cores (FP8 and MXFP8; NVFP4, MXFP4 and FP4), 16-bit inputs beside
    narrower weights dequantized in the GEMM (W8A16, W4A16), or 8-bit inputs beside 4-bit weights
    of their own family (an FP4 weight with FP8 inputs, Blackwell's mixed FP8/FP6/FP4 MMA; INT4
    with INT8, QServe's W4A8), and INT4 weights with FP8 inputs (TensorRT-LLM's ``w4a8_awq``,
    docs/source/precision.md). Nothing pairs integer inputs with float weights, or FP8 inputs
    with INT8 weights.

    >>> pairs_with("int4", "fp8"), pairs_with("bf16", "fp8"), pairs_with("fp8", "int8")
    (True, False, False)
    """
    inputs_bits, weight_bits = element_bits(activation), element_bits(weights)
    if compute_precision(activation) == compute_precision(weights):
        return True
    if inputs_bits < weight_bits or (inputs_bits == weight_bits and inputs_bits < 16):
        return False
    if inputs_bits >= 16:
        return True
    integer_weights, integer_inputs = weights in _INTEGER_FORMATS, activation in _INTEGER_FORMATS
    if integer_inputs:
        return integer_weights
    return not integer_weights or weights == "int4"


def _check_activation(weights: str, activation: str) -> None:
    """Refuse GEMM inputs in ``activation`` that no GEMM pairs with ``weights`` (:func:`pairs_with`)."""
    if pairs_with(weights, activation):
        return
    narrower = element_bits(activation) < element_bits(weights)
    why = "is narrower than" if narrower else "is of another family than"
    allowed = [name for name in INFERENCE_PRECISIONS if pairs_with(weights, name)]
    raise InvalidPlanError(
        f"activation precision {activation} {why} the {weights} weights: a tensor-core GEMM takes "
        f"both operands in one format, so no kernel runs them (W8A16, W4A16, W4A8 and NVFP4 with "
        f"FP8 inputs are as wide or wider); with --precision {weights} give --activation-precision "
        f"one of {', '.join(allowed)}, or drop it"
    )


def _check_choice(label: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidPlanError(f"{label} {value!r} is not one of {', '.join(allowed)}")


@dataclass(frozen=True)
class Precisions(Record):
    """The formats one deployment runs in, resolved against the GPU."""

    weights: str
    compute: str
    kv_cache: str
    weight_bytes_per_element: float
    input_bytes_per_element: float
    kv_bytes_per_element: float
    # the attention projections' formats (the same as the others unless the plan or the
    # model's published checkpoint keeps them apart)
    attention_weights: str
    attention_compute: str
    attention_weight_bytes_per_element: float
    attention_input_bytes_per_element: float
    notes: tuple[str, ...]
    # a per-layer mixed checkpoint: the share of the linear weights stored in ``weights`` kept in
    # the wider format ``wider`` (0: none), and the formats those layers compute and read in
    wider_share: float = 0.0
    wider: str = ""
    wider_compute: str = ""
    wider_weight_bytes_per_element: float = 0.0
    wider_input_bytes_per_element: float = 0.0
    # layer kinds (``KEPT_LAYER_KINDS``) a published checkpoint keeps as its attention projections:
    # stored in ``attention_weights``, GEMMs in ``attention_compute`` (Kimi K2's shared experts and
    # dense layer in BF16 beside INT4 routed experts; ``sol/infer/checkpoints.py``)
    kept_layers: tuple[str, ...] = ()

    def as_attention(self, kind: str) -> bool:
        """Whether linear layers of ``kind`` (``attention``, one of ``KEPT_LAYER_KINDS``, or any
        other) are stored and computed as the attention projections are."""
        return kind == "attention" or kind in self.kept_layers

    def layer_bytes_per_element(self, kind: str) -> float:
        """Mean bytes per weight of the linear layers of ``kind`` (see :meth:`as_attention`)."""
        return self.stored_bytes_per_element(attention=self.as_attention(kind))

    def stored_bytes_per_element(self, attention: bool = False) -> float:
        """Mean bytes per weight of the attention projections (``attention``) or the other linear
        layers, the mixed checkpoint's wider layers included."""
        narrow = self.attention_weight_bytes_per_element if attention else self.weight_bytes_per_element
        share = self.mixed_share(attention)
        return (1.0 - share) * narrow + share * self.wider_weight_bytes_per_element

    def mixed_share(self, attention: bool = False) -> float:
        """Share of the attention projections (``attention``) or the other linear layers kept in
        the wider format: the mixed share where they are stored in ``weights``, else 0."""
        if attention and self.attention_weights != self.weights:
            return 0.0
        return self.wider_share


def kept_layers_text(kept_layers: tuple[str, ...]) -> str:
    """The layers stored as the attention projections, in words.

    >>> kept_layers_text(("shared_experts", "dense_mlp"))
    'attention projections, shared experts and dense-layer MLPs'
    """
    names = ["attention projections", *(_KEPT_LAYER_NAMES[kind] for kind in kept_layers)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _compute_row(accelerator: Accelerator, precision: str) -> str | None:
    row = compute_precision(precision)
    return row if row in accelerator.compute else None


def sixteen_bit_format(accelerator: Accelerator) -> str:
    """The 16-bit format ``accelerator`` runs GEMMs in when the weights' own format has no tensor
    cores there or is weight-only: bf16 where it has it, else fp16."""
    return "bf16" if "bf16" in accelerator.compute else "fp16"


def resolve_precisions(
    plan: InferencePlan, accelerator: Accelerator, *, kv_cache_default: str = "quantized"
) -> Precisions:
    """Weights, GEMM-input and KV-cache formats of ``plan`` on ``accelerator`` (see
    :class:`InferencePlan` for the defaults); the compute row must exist on the GPU, and so must
    that of a 4-bit KV cache the plan names (else :class:`InvalidPlanError` names the narrowest
    the GPU holds). A server
    whose ``kv_cache_default`` is ``model`` (``ServingStack.kv_cache_default_on``: vLLM's and
    SGLang's ``--kv-cache-dtype auto``) keeps an unnamed cache in the 16-bit format beside 8-bit or
    narrower weights, with a note, where ``quantized`` (TensorRT-LLM's checkpoints) takes FP8.

    >>> from lightspeed.catalog import load_catalog
    >>> formats = resolve_precisions(InferencePlan(precision="nvfp4"), load_catalog().accelerator("b200"))
    >>> formats.compute, formats.kv_cache, formats.weight_bytes_per_element
    ('fp4', 'fp8', 0.5625)
    """
    notes: list[str] = []
    fallback = sixteen_bit_format(accelerator)
    activation = _activation(accelerator, plan.precision, plan.activation_precision, fallback, notes)
    narrow = bytes_per_element(plan.precision) <= 1.0
    if plan.kv_precision is not None:
        kv = plan.kv_precision
        _check_kv_format(accelerator, kv)
    elif narrow and kv_cache_default == "model":
        kv = fallback
        notes.append(
            f"KV cache {fallback}: the server keeps the model's dtype unless asked "
            "(--kv-cache-dtype auto; --kv-precision fp8 for an FP8 cache)"
        )
    elif narrow and "fp8" in accelerator.compute:
        kv = "fp8"
    else:
        kv = fallback if bytes_per_element(activation) < 2.0 else activation
    attention = plan.attention_weights or plan.precision
    attention_activation = (
        activation
        if attention == plan.precision
        else _activation(accelerator, attention, None, fallback, notes)
    )
    wider = _wider_format(plan, fallback)
    wider_activation = _activation(accelerator, wider, None, fallback, notes) if wider else ""
    return Precisions(
        weights=plan.precision,
        compute=compute_precision(activation),
        kv_cache=kv,
        weight_bytes_per_element=bytes_per_element(plan.precision),
        input_bytes_per_element=min(bytes_per_element(activation), 2.0),
        kv_bytes_per_element=bytes_per_element(kv),
        notes=tuple(notes),
        attention_weights=attention,
        attention_compute=compute_precision(attention_activation),
        attention_weight_bytes_per_element=bytes_per_element(attention),
        attention_input_bytes_per_element=min(bytes_per_element(attention_activation), 2.0),
        wider_share=plan.wider_share,
        wider=wider,
        wider_compute=compute_precision(wider_activation) if wider else "",
        wider_weight_bytes_per_element=bytes_per_element(wider) if wider else 0.0,
        wider_input_bytes_per_element=min(bytes_per_element(wider_activation), 2.0) if wider else 0.0,
    )


def _check_kv_format(accelerator: Accelerator, kv: str) -> None:
    """Refuse a 4-bit KV cache on a GPU with no compute row for it (the catalog's rule for what a
    device supports, as ``goodput report --precision`` applies it): only TensorRT-LLM keeps one
    (NVFP4, Blackwell's FP4 attention kernels); vLLM and SGLang have none. An 8-bit cache passes:
    vLLM and SGLang dequantize an FP8 cache in their attention kernels on GPUs without FP8 (Ampere)."""
    if element_bits(kv) > 4 or _compute_row(accelerator, kv) is not None:
        return
    held = [name for name in KV_PRECISIONS if _compute_row(accelerator, name) is not None]
    narrowest = min(held, key=bytes_per_element) if held else sixteen_bit_format(accelerator)
    raise InvalidPlanError(
        f"KV cache {kv}: a 4-bit KV cache needs {compute_precision(kv)} support, which "
        f"{accelerator.name} lacks (it computes in {', '.join(sorted(accelerator.compute))}); its "
        f"narrowest KV format is {narrowest}: use --kv-precision {narrowest}"
    )


def _wider_format(plan: InferencePlan, sixteen_bit: str) -> str:
    """The format a mixed checkpoint's wider layers keep: FP8 beside a 4-bit float, the GPU's
    16-bit format beside FP8; ``''`` for a plan without ``effective_bits``."""
    if plan.effective_bits is None:
        return ""
    return "fp8" if _WIDER_BITS[round(element_bits(plan.precision))] == 8 else sixteen_bit


def _activation(
    accelerator: Accelerator, weights: str, requested: str | None, fallback: str, notes: list[str]
) -> str:
    """The format GEMMs on ``weights`` take their inputs in: ``requested``, else the weights'
    own when the GPU computes in it, else ``fallback`` (weight-only quantization, noted)."""
    if requested is not None:
        return requested
    if _compute_row(accelerator, weights) is not None:
        return weights
    notes.append(
        f"{accelerator.name} has no {compute_precision(weights)} tensor cores: weights stored in "
        f"{weights}, GEMMs in {fallback} (weight-only quantization)"
    )
    return fallback


def validate_inference_plan(plan: InferencePlan, model: TransformerSpec, num_gpus: int | None = None) -> None:
    """Raise :class:`InvalidPlanError` with the reason and what would work if ``plan``
    cannot serve ``model`` (on exactly ``num_gpus`` GPUs when given)."""
    _check_heads(plan, model)
    _check_experts(plan, model)
    if plan.pp > model.num_layers:
        raise InvalidPlanError(
            f"pp={plan.pp} exceeds the {model.num_layers} layers of {model.name}: a pipeline stage holds "
            f"at least one layer; give --pp {model.num_layers} or fewer"
        )
    if plan.prefill_shape is not None:
        try:
            validate_inference_plan(plan.prefill_plan, model)
        except InvalidPlanError as error:
            raise InvalidPlanError(f"the prefill pool: {error}") from None
    if num_gpus is not None and plan.num_gpus != num_gpus and plan.prefill_shape is not None:
        assert plan.disaggregated is not None
        prefill, decode = plan.disaggregated
        raise PlanMismatchError(
            f"the plan uses {plan.num_gpus} GPUs ({prefill} prefill replicas of {plan.prefill_shape.gpus} "
            f"and {decode} decode replicas of {plan.gpus_per_replica}), not the {num_gpus} requested",
            nearest_plan=None,
            no_match_hint="change the prefill and decode replicas (P:D) or the prefill pool's degrees",
        )
    if num_gpus is not None and plan.num_gpus != num_gpus:
        per_replica = plan.gpus_per_replica
        fits = num_gpus % per_replica == 0 and (plan.disaggregated is None or num_gpus >= 2 * per_replica)
        raise PlanMismatchError(
            f"the plan uses {plan.num_gpus} GPUs ({plan.num_replicas} replicas of tp x dp-attention x pp = "
            f"{plan.tp} x {plan.dp_attention} x {plan.pp}), not the {num_gpus} requested",
            nearest_plan={"replicas": num_gpus // per_replica}
            if fits and plan.disaggregated is None
            else None,
            no_match_hint=(
                f"split the {num_gpus // per_replica} replicas between prefill and decode (P + D)"
                if fits
                else f"use a multiple of the {per_replica} GPUs per replica"
                + (", two replicas at least (one prefill, one decode)" if plan.disaggregated else "")
            ),
        )


def _check_heads(plan: InferencePlan, model: TransformerSpec) -> None:
    attention = model.attention
    heads = attention.num_heads
    if heads % plan.tp:
        raise InvalidPlanError(
            f"tp={plan.tp} does not divide the {heads} attention heads of {model.name}; "
            f"try tp={nearest(plan.tp, divisors(heads))}"
        )
    if attention.kind == "mla":
        return  # the latent KV cache is not split by heads: every TP rank holds it
    kv_heads = attention.num_kv_heads
    if plan.tp > kv_heads:
        if not plan.kv_replication:
            raise InvalidPlanError(
                f"tp={plan.tp} exceeds the {kv_heads} KV heads of {model.name}: a GPU would hold part of a "
                f"KV head; use tp<={kv_heads}, add attention data parallelism (MoE models), or allow "
                f"--kv-replication (each head stored on {-(-plan.tp // kv_heads)} GPUs, more KV memory)"
            )
        if plan.tp % kv_heads:
            raise InvalidPlanError(
                f"tp={plan.tp} is not a multiple of the {kv_heads} KV heads of {model.name}, so heads "
                "cannot be replicated evenly; "
                f"try tp={nearest(plan.tp, [kv_heads * d for d in (1, 2, 4, 8)])}"
            )
    elif kv_heads % plan.tp:
        raise InvalidPlanError(
            f"tp={plan.tp} does not divide the {kv_heads} KV heads of {model.name}; "
            f"try tp={nearest(plan.tp, divisors(kv_heads))}"
        )


def _check_experts(plan: InferencePlan, model: TransformerSpec) -> None:
    if model.moe is None:
        if plan.ep > 1 or plan.dp_attention > 1:
            raise InvalidPlanError(
                f"ep and dp-attention split mixture-of-experts layers; {model.name} is dense: "
                "use --replicas for more copies"
            )
        return
    experts = model.moe.num_routed_experts
    if plan.ep > experts:
        raise InvalidPlanError(
            f"ep={plan.ep} exceeds the {experts} routed experts of {model.name}; "
            f"try ep={nearest(plan.ep, divisors(experts))}"
        )
    if plan.stage_gpus % plan.ep:
        raise InvalidPlanError(
            f"ep={plan.ep} must divide the {plan.stage_gpus} GPUs of a stage (tp x dp-attention = "
            f"{plan.tp} x {plan.dp_attention}); try ep={nearest(plan.ep, divisors(plan.stage_gpus))}"
        )
    _check_replicas(plan, experts)
    expert_tp = plan.stage_gpus // plan.ep
    if model.moe.expert_ffn_hidden_size % expert_tp:
        raise InvalidPlanError(
            f"each expert would be split over {expert_tp} GPUs, which does not divide its MLP size "
            f"{model.moe.expert_ffn_hidden_size}; raise ep"
        )


def _check_replicas(plan: InferencePlan, num_experts: int) -> None:
    physical = plan.num_physical_experts
    if physical is None:
        return
    if physical < num_experts:
        raise InvalidPlanError(
            f"{physical} physical experts cannot hold the {num_experts} routed experts; "
            f"use at least {num_experts}"
        )
    if physical % plan.ep:
        raise InvalidPlanError(
            f"{physical} physical experts do not split over ep={plan.ep}; "
            f"use a multiple of {plan.ep} (e.g. {-(-physical // plan.ep) * plan.ep})"
        )


__all__ = [
    "INFERENCE_PRECISIONS",
    "KEPT_LAYER_KINDS",
    "KV_PRECISIONS",
    "PLAN_FAMILIES",
    "InferencePlan",
    "PoolShape",
    "Precisions",
    "ServingLoad",
    "SpeculativeDecoding",
    "check_acceptance_rate",
    "kept_layers_text",
    "pairs_with",
    "resolve_precisions",
    "validate_inference_plan",
]
