"""Turn a published training row into a model, a cluster and candidate plans.

Rules for what a row leaves unsaid (documented in ``docs/sol.md``):

* **Software stack** (:func:`lightspeed.sol.core.stacks.stack_for`): the
  framework the row names (``torchtitan``, ``Megatron-Bridge``, ``llm-foundry``,
  ...) in the year of its software (:func:`row_year`: a ``YY.MM`` release or
  container, else the source's year, else 2020 for Ampere/Volta and 2024 for
  later); a row naming none takes the Megatron profile of its year. The stack
  sets attention kernel, dropout, sequence parallelism, overlap, FP8 storage and
  what "selective" recomputation means; the row's own words override
  (:func:`train_settings.stated_settings`).
* **Unreported micro-batch, interleaving depth or recomputation**: the fastest
  plan that fits among the valid values (published runs report tuned setups); a
  VPP cell of ``n/a`` or a dash is no interleaving
  (:func:`train_degrees.interleaving_of`).
* **Sharding** (:func:`train_settings.zero_stage_of`): ``ZeRO-k`` (or DeepSpeed's
  ``stage: k``) -> k, FSDP -> 3 (with PP: 2, or the stage of the predicting stack that keeps
  as much; HSDP approximated so, said), ``distributed optimizer`` or a bare ``ZeRO`` -> 1,
  ``none``, ``DDP`` -> 0, unreported -> 1.
* **Parallel degrees** (:func:`train_degrees.stated_degrees`): a cell's number or label, or a
  label, framework flag or ``N-way`` in another parallel cell (``TP4 PP16 CP2``,
  ``--tensor-model-parallel-size 8``, ``4-way TP`` in the sharding cell: the assumptions say which
  cell); no GPU count anywhere: the product of the stated
  degrees (:func:`train_degrees.gpus_of_row`), else, for a figure per GPU, the GPUs that run
  the global batch at its micro-batch without accumulation (:func:`_gpus_filled_by_batch`,
  said in the assumptions).
* **Unreported TP or PP**: every split of the GPUs (:func:`_free_splits`), the fastest
  that fits kept with the other unreported settings.
* **Recomputation** (:func:`train_settings.recompute_of`) and **precision**
  (:func:`train_settings.precision_of`): the policy or format the cell names as frameworks
  spell it; a precision it leaves unsaid is the accelerator's 16-bit format.
* **A global batch that does not split over DP** (TP and PP stated): the degrees the row
  leaves unstated (CP, DP cells empty) are searched for a split
  (:func:`lightspeed.sol.train.batch.split_batch`).
* **FLOP convention** of a TFLOP/s or MFU figure (:func:`flop_convention`):
  ``96-form`` -> Megatron's with the recompute pass, ``72-form`` -> without,
  ``model TFLOP/s`` -> 6N + causal attention, ``6N``/``6ND`` or ``without attention`` in the
  metric -> 6N (``non-embedding``: Kaplan's); else as the named stack counts its own figures; a
  row naming no framework -> 6N + 12·L·h·s (PaLM).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, Cluster
from lightspeed.errors import InvalidPlanError
from lightspeed.records import Record
from lightspeed.sol.core.stacks import Stack, load_stack, stack_for
from lightspeed.sol.train.batch import candidate_splits, split_batch
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.train.recipes import recipe_for
from lightspeed.sol.validation.hardware_text import HardwareSpec, cluster_of, node_gpus, read_hardware
from lightspeed.sol.validation.plausibility import check_training_figure
from lightspeed.sol.validation.predicted_readings import (
    choose_reading,
    log_rate_per_device,
    other_readings,
    unlabelled_rate_per_gpu,
)
from lightspeed.sol.validation.published import PublishedRow, is_missing, size_cell
from lightspeed.sol.validation.readings import (
    Reading,
    RowError,
    read_cell,
)
from lightspeed.sol.validation.row_model import registry_name, resolve_model
from lightspeed.sol.validation.train_degrees import (
    SEARCHED_MICRO_BATCH_SIZES,
    SEARCHED_RECOMPUTES,
    borrowed_degrees_note,
    degrees_of,
    global_batch_of,
    gpus_of_row,
    interleaving_of,
    micro_batch_of,
    per_device_micro_batch,
    read_global_batch,
    stated_degrees,
    unreported_global_batch,
)
from lightspeed.sol.validation.train_settings import (
    fsdp_under_pipeline,
    is_fsdp,
    precision_of,
    recompute_of,
    stated_dispatcher,
    stated_settings,
    stated_sharding,
    zero_stage_of,
)
from lightspeed.workload import ModelRegistry, TransformerSpec

METRICS = (
    "tflop_per_s_per_gpu",
    "step_time_s",
    "gpu_hours",
    "time_to_train_s",
    "mfu",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "samples_per_s",
    "samples_per_s_per_gpu",
    "hfu",
    "memory_per_gpu_bytes",
)


@dataclass(frozen=True)
class RowSetup(Record):
    """Everything needed to predict one training row, plus what was assumed."""

    model: TransformerSpec
    cluster: Cluster
    plans: tuple[TrainingPlan, ...]
    metric: str
    measured: float
    flop_convention: str
    flop_recompute: bool
    flop_causal: bool
    num_tokens: float | None
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    reading: Reading | None = None
    readings: tuple[Reading, ...] = ()
    stack: Stack | None = None
    peak_flop_per_s: float | None = None
    also: tuple[Reading, ...] = ()


@dataclass(frozen=True)
class PlanSpec(Record):
    """A published run's parallel plan: what it reported, and for each setting it left unsaid the
    values searched (the fastest plan that fits wins). ``recompute`` values are policies, where
    ``selective`` is the predicting stack's own (Megatron's core attention, torchtitan's per-op).
    ``fsdp_under_pipeline``: FSDP with PP, whose ZeRO stage is the predicting stack's that keeps
    parameters and gradients whole (``zero_stage`` is the run's own stack's);
    ``free_degrees``: the degrees the source left unstated, searched if the batch does not split."""

    tp: int
    pp: int
    dp: int
    ep: int
    cp: int
    zero_stage: int
    schedule: str
    global_batch_size: int
    seq_len: int
    precision: str
    micro_batch_sizes: tuple[int, ...]
    vpps: tuple[int, ...]
    recomputes: tuple[str, ...]
    sequence_parallel: bool | None = None
    tp_overlap: bool | None = None
    ep_dispatcher: str | None = None
    fsdp_under_pipeline: bool = False
    free_degrees: tuple[str, ...] = ()
    etp: int = 1
    # the row leaves its global batch out: this many sequences per DP replica, whatever the split
    batch_per_replica: int | None = None


@dataclass(frozen=True)
class FlopCount(Record):
    """How the publisher counted the FLOPs of a TFLOP/s or MFU figure
    (:func:`lightspeed.workload.flops.flops_per_token`'s arguments)."""

    convention: str
    counts_recompute: bool
    causal: bool


@dataclass(frozen=True, kw_only=True)
class RunSpec(Record):
    """What every published run names: its row, model (``model_name`` when it is the registry's,
    else ``None``: built from the row's dimensions), hardware and GPUs, the quantity it reports
    (``measured`` in base units) and how it was read (``assumptions``, ``reading``)."""

    row_id: str
    model: TransformerSpec
    model_name: str | None
    hardware: HardwareSpec
    num_gpus: int
    metric: str
    measured: float
    assumptions: tuple[str, ...] = ()
    reading: Reading | None = None
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TrainingRowSpec(RunSpec):
    """A published training run in typed fields, nothing left to read from text: what the
    structured rows hold and what the TSV reader makes of a row. ``stack`` names the profile of
    the software the run used (``docs/sol.md``); ``also``: the other figures the run publishes
    that the engine predicts from the same plan (a peak memory beside a throughput), per GPU."""

    plan: PlanSpec
    flops: FlopCount
    stack: str
    num_tokens: float | None = None
    peak_flop_per_s: float | None = None
    also: tuple[Reading, ...] = ()


# a release (``v25.04``), a container or image (``25.11 NeMo Container``, ``26.02.01 NeMo
# Container``, ``NeMo 24.07-based image``), an NGC tag (``nvcr.io/nvidia/nemo:24.07``,
# ``pytorch:24.05-py3``) or a framework's YY.MM release after its name (``NeMo 25.04``, ``PyTorch
# 24.05``: NVIDIA's containers are numbered so; YY 19-30, MM 01-12, so ``PyTorch 2.7`` is no date)
_CONTAINER: Final = re.compile(
    r"\b(2\d)\.(?:0[1-9]|1[0-2])(?:\.\d{1,2})?(?:-based)?\s+\w*\s*(?:container|image)"
    r"|\bv(2\d)\.(?:0[1-9]|1[0-2])\b"
    r"|\b(?:nemo|pytorch|nemo-framework|tritonserver|megatron)[:_](2\d)\.(?:0[1-9]|1[0-2])\b"
    r"|\b(?:nemo(?:[\s-]framework)?|megatron(?:-lm)?|pytorch|tritonserver|jax|paxml)\s+"
    r"(19|2\d|30)\.(?:0[1-9]|1[0-2])(?:\.\d{1,2})?(?![\d.])",
    re.IGNORECASE,
)
# MLPerf rounds by their version: v1.x in 2021 ... v5.x in 2025 (Inference in spring and late
# summer, Training in early and late year; each major version within one year).
_MLPERF_ROUND: Final = re.compile(
    r"\bMLPerf\s*(?:Inference|Training)?\s*v?([1-9])\.[01]\b|(?:inference|training)_results_v([1-9])\.[01]\b",
    re.IGNORECASE,
)


# The PyTorch a run used (``pytorch 2.7.0a0``, ``torch==2.5.1``, ``PyTorch v2.4``): it dates the
# software better than a page's date (a 2026 commit of a table measured on 2.7).
_PYTORCH_RELEASE: Final = re.compile(
    r"\b(?:py)?torch\s*(?:==|v|version)?\s*([12])\.(\d{1,2})(?![\d])", re.IGNORECASE
)


def _pytorch_year(major: int, minor: int) -> int:
    """The year PyTorch ``major.minor`` was released: 2.0 and 2.1 in 2023, then four minor releases
    a year from 2.2 (January 2024; pytorch.org release notes: 2.6 January 2025, 2.10 January 2026);
    1.8-1.10 in 2021, 1.11-1.13 in 2022."""
    if major == 1:
        return 2021 if minor <= 10 else 2022
    return 2023 if minor < 2 else 2024 + (minor - 2) // 4


def row_year(row: PublishedRow, accelerator: Accelerator) -> tuple[int, str]:
    """(year of the software a row ran, where it was read): a ``YY.MM`` release or container
    (``v25.04``, ``25.11 NeMo Container``, ``26.02.01 NeMo Container``), else an MLPerf round
    (``MLPerf Inference v5.0``, ``inference_results_v4.1``: v4.x ran in 2024), else a PyTorch
    release (``pytorch 2.7.0a0``: 2025), else the first year the source names (``2024-12``,
    ``SC21``), else 2020 for Ampere/Volta and 2024 for later hardware."""
    source = row.text("source")
    release = _CONTAINER.search(source)
    if release:
        year = next(group for group in release.groups() if group)
        return 2000 + int(year), f"release {release.group(0)}"
    mlperf = _MLPERF_ROUND.search(source)
    if mlperf:
        return 2020 + int(mlperf.group(1) or mlperf.group(2)), f"MLPerf round {mlperf.group(0)}"
    torch = _PYTORCH_RELEASE.search(source)
    if torch:
        major, minor = int(torch.group(1)), int(torch.group(2))
        return _pytorch_year(major, minor), f"PyTorch {major}.{minor}"
    match = re.search(r"\b(20[12]\d)\b", source) or re.search(r"\bSC(\d\d)\b", source)
    if match:
        year = int(match.group(1))
        return (year if year > 100 else 2000 + year), f"'{match.group(0)}' in the source"
    if accelerator.architecture.lower() in ("ampere", "volta"):
        return 2020, "no year in the source: 2020 for Ampere"
    return 2024, f"no year in the source: 2024 for {accelerator.architecture}"


# FSDP's float8 all-gather (torchao's ``enable_fsdp_float8_all_gather``, torchtitan's float8
# config) and Megatron's ``--fp8-param-gather``: parameters gathered in one byte each
_FLOAT8_GATHER: Final = re.compile(r"(?:float8|fp8)[\s_-]*(?:all[\s_-]*gather|param[\s_-]*gather)")
_FLOAT8_GATHER_NOTE: Final = (
    "float8 parameter all-gather: lightspeed gathers parameters in 16 bits, twice the bytes the run sends"
)


def read_plan(
    row: PublishedRow,
    model: TransformerSpec,
    num_gpus: int,
    stack: Stack,
    accelerator: Accelerator | None = None,
    *,
    metric: str | None = None,
) -> tuple[PlanSpec, list[str]]:
    """The plan a row reports (ZeRO stage in ``stack``'s terms, precision on ``accelerator``); for a
    micro-batch, interleaving depth or recompute policy it leaves unsaid, the values searched; for a
    global batch it leaves unsaid, :func:`unreported_global_batch` (``metric``: the reading's key)."""
    degrees = degrees_of(row, num_gpus)
    seq_len = _row_seq_len(row, model)
    micro, device_note = per_device_micro_batch(row, micro_batch_of(row, seq_len), accelerator)
    batch, batch_note = read_global_batch(row.text("global_batch"), degrees.dp, seq_len)
    assumed_batch = batch is None
    if batch is None:
        batch, batch_note = unreported_global_batch(micro, degrees, metric)
        # the assumed batch holds without pipeline parallelism only: an unstated PP stays 1
        degrees = dataclasses.replace(degrees, free=tuple(name for name in degrees.free if name != "pp"))
    if batch < 1:
        raise RowError(
            f"global_batch {row.text('global_batch')!r} is less than one sequence of {seq_len} tokens"
        )
    vpps, schedule = interleaving_of(row, model, degrees.pp)
    vpp_note = ""
    if degrees.pp == 1 and "pp" not in degrees.free and len(vpps) == 1 and vpps[0] > 1:
        vpp_note = f"VPP {vpps[0]} with PP 1: one pipeline stage has nothing to interleave; priced with vpp=1"
        vpps = (1,)
    recompute_text = row.text("recompute")
    recompute, recompute_note = ("", "") if is_missing(recompute_text) else recompute_of(recompute_text)
    zero_stage, zero_note = zero_stage_of(row.text("sharding"), degrees.pp, stack)
    precision, precision_note = precision_of(row.text("precision"), accelerator)
    plan = PlanSpec(
        tp=degrees.tp,
        pp=degrees.pp,
        dp=degrees.dp,
        ep=degrees.ep,
        cp=degrees.cp,
        zero_stage=zero_stage,
        schedule=schedule,
        global_batch_size=batch,
        seq_len=seq_len,
        precision=precision,
        micro_batch_sizes=(micro,) if micro else SEARCHED_MICRO_BATCH_SIZES,
        vpps=vpps,
        recomputes=(recompute,) if recompute else SEARCHED_RECOMPUTES,
        fsdp_under_pipeline=degrees.pp > 1 and is_fsdp(stated_sharding(row.text("sharding"))),
        free_degrees=degrees.free,
        etp=degrees.etp,
        batch_per_replica=batch // degrees.dp if assumed_batch else None,
        ep_dispatcher=stated_dispatcher(row.described()) if degrees.ep > 1 else None,
        **stated_settings(row.described()),
    )
    gathers = _FLOAT8_GATHER_NOTE if _FLOAT8_GATHER.search(row.described()) else ""
    borrowed = borrowed_degrees_note(row)
    notes = (device_note, batch_note, precision_note, zero_note, borrowed, recompute_note, vpp_note, gathers)
    return plan, [note for note in notes if note]


def _plan_settings(spec: PlanSpec, stack: Stack) -> dict[str, bool]:
    """The settings a plan fixes against its stack's defaults: what the row says, no sequence
    parallelism where the stack has none, and DP overlap under ZeRO-3/FSDP (they prefetch
    parameters and overlap by design)."""
    settings: dict[str, bool] = {}
    if spec.sequence_parallel is False or not stack.sequence_parallel:
        settings["sequence_parallel"] = False
    if spec.zero_stage >= 3:
        settings["dp_overlap"] = True
    if spec.tp_overlap is not None:
        settings["tp_overlap"] = spec.tp_overlap
    return settings


def _zero_stage(spec: PlanSpec, stack: Stack) -> tuple[int, list[str]]:
    """The run's ZeRO stage on ``stack``: FSDP under PP takes the stage of ``stack`` that keeps as
    much (on another stack than the run's it may differ from ``spec.zero_stage``)."""
    if not spec.fsdp_under_pipeline:
        return spec.zero_stage, []
    stage, note = fsdp_under_pipeline("FSDP", spec.pp, stack)
    return stage, [note] if stage != spec.zero_stage else []


def _split(
    spec: PlanSpec, base: dict[str, object], model: TransformerSpec, stack: Stack
) -> tuple[dict[str, object], str]:
    """``base`` with the degrees the row leaves unstated chosen so that its global batch splits over
    DP, and the sentence saying what was chosen."""
    try:
        split = split_batch(TrainingPlan(**base), model, free=spec.free_degrees, stack=stack)  # type: ignore[arg-type]
    except InvalidPlanError as error:
        raise RowError(f"{error}; give the batch or the GPU split the run used") from None
    plan = split.plan
    changed = {"tp": plan.tp, "pp": plan.pp, "cp": plan.cp, "dp": plan.dp}
    return {**base, **changed, "uneven_pipeline": model.num_layers % plan.pp != 0}, split.note


def _recipe_layers(model: TransformerSpec, precision: str, notes: list[str]) -> dict[str, object]:
    """The layers the model's published recipe in ``precision`` keeps in BF16 (none when it has no
    such recipe), said in ``notes``."""
    recipe = recipe_for(model.name, precision)
    if recipe is None:
        return {}
    notes.append(f"the published recipe's layers kept in BF16 ({recipe.name})")
    return {"bf16_layers_start": recipe.bf16_layers_start, "bf16_layers_end": recipe.bf16_layers_end}


def candidate_plans(
    spec: PlanSpec, model: TransformerSpec, stack: Stack
) -> tuple[list[TrainingPlan], list[str]]:
    """Every plan ``spec`` allows on ``stack``: reported settings fixed, unreported ones enumerated
    (with TP or PP unreported, every split of the GPUs: :func:`_free_splits`)."""
    zero_stage, notes = _zero_stage(spec, stack)
    if spec.ep_dispatcher is not None:
        notes.append(f"MoE dispatcher {spec.ep_dispatcher}, as the row names it")
    base: dict[str, object] = dict(
        tp=spec.tp,
        pp=spec.pp,
        dp=spec.dp,
        ep=spec.ep,
        etp=spec.etp,
        cp=spec.cp,
        zero_stage=zero_stage,
        schedule=spec.schedule,
        global_batch_size=spec.global_batch_size,
        seq_len=spec.seq_len,
        precision=spec.precision,
        uneven_pipeline=model.num_layers % spec.pp != 0,
        ep_dispatcher=spec.ep_dispatcher,
        **_plan_settings(spec, stack),
        **_recipe_layers(model, spec.precision, notes),
    )
    splits = _free_splits(spec, base, model) if {"tp", "pp"} & set(spec.free_degrees) else []
    if splits:
        bases = [{**base, **split, **_split_batch(spec, split)} for split in splits]
        notes.append(
            f"TP/PP not reported: {len(splits)} splits of the GPUs searched (the batch dividing DP); "
            "the fastest that fits"
        )
    else:
        if spec.global_batch_size % spec.dp:  # search the degrees the row leaves unstated
            base, split_note = _split(spec, base, model, stack)
            notes.append(split_note)
        bases = [base]
    recomputes = [
        stack.selective_recompute if policy == "selective" else policy for policy in spec.recomputes
    ]
    plans = [
        plan for each in bases for plan in _settings_plans(spec, each, recomputes, stack, model.num_layers)
    ]
    if not plans:
        per_replica = spec.global_batch_size // int(str(bases[0]["dp"]))
        micros = list(spec.micro_batch_sizes)
        if any(per_replica % micro == 0 for micro in micros):
            # they divide, but an interleaved schedule needs its micro-batches in whole rounds of PP
            pp = int(str(bases[0]["pp"]))
            raise RowError(
                f"the {per_replica} sequences per replica split into no whole number of rounds of pp={pp} "
                f"micro-batches, which the interleaved schedule needs (micro-batch sizes {micros}); state "
                "the batch the run reached or its interleaving depth"
            )
        raise RowError(f"no micro-batch in {micros} divides the {per_replica} sequences per replica")
    notes.append(f"{stack.name}: {_settings_note(plans)}")
    if len(plans) > 1:
        searched = _searched(plans)
        notes.append(
            f"unreported settings searched over {len(plans)} plans ({searched}): the fastest that fits"
        )
    return plans, notes


def _settings_note(plans: list[TrainingPlan]) -> str:
    """The settings the stack gives the candidate plans, each as every plan has it, or as it varies
    over them (sequence parallelism only where TP > 1): the note holds for whichever plan wins.

    >>> from lightspeed.sol.core.stacks import load_stack
    >>> stack = load_stack("published-median")
    >>> plans = [TrainingPlan(tp=tp, dp=8 // tp, global_batch_size=8).resolved(stack) for tp in (1, 4)]
    >>> _settings_note(plans[1:]).split(", ")[2], _settings_note(plans).split(", ")[2]
    ('sequence parallel True', 'sequence parallel True where TP > 1 (False at TP 1)')
    """
    settings: dict[str, list[object]] = {
        "attention": [plan.attention_impl for plan in plans],
        "dropout": [plan.dropout for plan in plans],
        "sequence parallel": [plan.sequence_parallel for plan in plans],
        "DP overlap": [plan.dp_overlap for plan in plans],
        "TP overlap": [plan.tp_overlap for plan in plans],
    }
    return ", ".join(f"{name} {_setting_over_plans(values, plans)}" for name, values in settings.items())


def _setting_over_plans(values: list[object], plans: list[TrainingPlan]) -> str:
    """One setting's value over the candidate ``plans``: the one value they share; else, where it
    is on exactly at TP > 1 (the stack's sequence parallelism), that; else every value, by plan."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return str(distinct[0])
    if all(value is (plan.tp > 1) for value, plan in zip(values, plans, strict=True)):
        return "True where TP > 1 (False at TP 1)"
    return f"varying by plan ({', '.join(str(value) for value in distinct)})"


def _searched(plans: list[TrainingPlan]) -> str:
    """The values the searched plans take: ``micro-batch [1, 2, 4], vpp [1], recompute
    ['selective']`` (a value no split admits is not named; recompute in the order tried)."""

    micro_batches = sorted({plan.micro_batch_size for plan in plans})
    vpps = sorted({plan.vpp for plan in plans})
    recomputes = list(dict.fromkeys(plan.recompute for plan in plans))
    return f"micro-batch {micro_batches}, vpp {vpps}, recompute {recomputes}"


def _split_batch(spec: PlanSpec, split: dict[str, object]) -> dict[str, object]:
    """The global batch of a split where the row leaves it out: its sequences per replica x the
    split's DP (no gradient accumulation in any split), else nothing to change."""
    if spec.batch_per_replica is None:
        return {}
    return {"global_batch_size": spec.batch_per_replica * int(str(split["dp"]))}


def _free_splits(spec: PlanSpec, base: dict[str, object], model: TransformerSpec) -> list[dict[str, object]]:
    """The degrees of every split of the GPUs a row leaving TP or PP unstated allows
    (:func:`lightspeed.sol.train.batch.candidate_splits` over its free degrees; the plans a
    split makes invalid are dropped with the others when the fastest that fits is chosen)."""
    plan = TrainingPlan(**{**base, "micro_batch_size": 1})  # type: ignore[arg-type]
    return [
        {
            "tp": split.tp,
            "pp": split.pp,
            "cp": split.cp,
            "dp": split.dp,
            "uneven_pipeline": model.num_layers % split.pp != 0,
        }
        for split in candidate_splits(plan, model, spec.free_degrees)
    ]


def _settings_plans(
    spec: PlanSpec, base: dict[str, object], recomputes: list[str], stack: Stack, num_layers: int
) -> list[TrainingPlan]:
    """The plans of one split: every unreported micro-batch, interleaving depth and recompute. A
    searched depth keeps its chunks within the layers; only a stated one may count the embedding
    and the loss as chunks of their own (Megatron's accounting, ``_check_pipeline``)."""
    batch, dp, pp = int(str(base["global_batch_size"])), int(str(base["dp"])), int(str(base["pp"]))
    searched_vpp = len(spec.vpps) > 1
    plans = []
    for vpp, micro_batch, recompute in itertools.product(spec.vpps, spec.micro_batch_sizes, recomputes):
        if (batch // dp) % micro_batch or (searched_vpp and pp * vpp > num_layers):
            continue
        if vpp > 1 and (pp == 1 or (batch // dp // micro_batch) % pp):
            continue
        plan = TrainingPlan(vpp=vpp, micro_batch_size=micro_batch, recompute=recompute, **base)  # type: ignore[arg-type]
        plans.append(plan.resolved(stack))
    return plans


def tokens_per_step(plan: PlanSpec) -> float | None:
    """The tokens one step of ``plan`` trains on, ``None`` where its batch was assumed (the row
    leaves it out: no step time is checked against a batch the run may not have had)."""
    return None if plan.batch_per_replica is not None else float(plan.global_batch_size * plan.seq_len)


def parse_metric(row: PublishedRow) -> tuple[str, float]:
    """(metric key, measured value in base units) of a training row: the first metric
    piece lightspeed predicts, paired by position with its value (``docs/sol.md``)."""
    readings = read_cell(row.text("metric"), row.text("measured"), kind="train")
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    reading = choose_reading(readings, (*METRICS, "pflop_per_s"), 1, 8)
    assert reading.value is not None
    return reading.key, reading.value


def flop_convention(
    row: PublishedRow, stack: Stack, reading: Reading | None = None, *, framework_named: bool = True
) -> tuple[str, bool, bool, str]:
    """(convention, counts recompute, causal, note) that a row's FLOP figures use.

    What the row says wins (``96-form``, ``72-form``, ``model TFLOP/s``); else a
    framework's own figures count as its stack does (Megatron-LM 2021 counted the
    recompute pass); a row naming no framework counts as PaLM (6N + 12·L·h·s).
    """
    joined = row.joined()
    cell = row.text("recompute")
    full = not is_missing(cell) and recompute_of(cell)[0] == "full"
    if "96-form" in joined:
        return "megatron", True, False, "FLOPs by Megatron's 96-form (recompute pass included)"
    if "72-form" in joined:
        return "megatron", False, "non-causal" not in joined, "FLOPs by Megatron's 72-form"
    stated = _stated_6n(reading.metric_text if reading is not None else row.text("metric"))
    if stated is not None:
        return stated, False, False, f"FLOPs as the row states them: {_STATED_6N_NOTES[stated]}"
    if reading is not None and reading.flop_basis == "model":
        return "6N+causal-attention", False, False, "model FLOPs: 6N + causal attention (Megatron's count)"
    if framework_named:
        counts = stack.published_flop_counts_recompute and full
        return (
            stack.published_flop_convention,
            counts,
            False,
            f"FLOPs as {stack.name} counts them ({stack.published_flop_convention}"
            + (", recompute pass included)" if counts else ")"),
        )
    return "6N+attention", False, False, "FLOPs as 6N + 12·L·h·s (PaLM convention; the row states none)"


# A FLOP count a metric states as 6N (or 6ND) with no attention term: ``MFU (6N, without
# attention)``, ``MFU (6ND, no attention FLOPs)``, ``6N MFU``; ``6N + 12LHs`` / ``6N+attention`` add one
_SIX_N: Final = re.compile(r"\b6\s*[nN]\s*[dD]?\b(?!\s*[+(])")
_NO_ATTENTION: Final = re.compile(
    r"\b(?:without|no|excluding|excl\.?|w/o|ignoring)\s+(?:the\s+)?attention\b", re.IGNORECASE
)
_NON_EMBEDDING: Final = re.compile(r"non[\s-]?embedding", re.IGNORECASE)
_STATED_6N_NOTES: Final = {
    "6N": "6N, no attention term (N all active parameters)",
    "6N-nonembedding": "6N over the non-embedding parameters, no attention term (Kaplan et al.)",
}


def _stated_6n(metric_text: str) -> str | None:
    """The convention of a metric that counts FLOPs as ``6N`` with no attention term (``MFU (6N,
    without attention)``; ``6N-nonembedding`` where it says non-embedding), else ``None``."""
    if not (_SIX_N.search(metric_text) or _NO_ATTENTION.search(metric_text)):
        return None
    if re.search(r"\+\s*(?:12|6)\s*\W?\s*[lL]|\battention\s+(?:included|term)|\+\s*attention", metric_text):
        return None
    return "6N-nonembedding" if _NON_EMBEDDING.search(metric_text) else "6N"


def _row_seq_len(row: PublishedRow, model: TransformerSpec) -> int:
    """The sequence length the row's seq cell states, else the one the model was pre-trained at
    (Llama 3.1's 8,192, not the 131,072 RoPE scaling extends it to)."""
    seq_len = size_cell(row.text("seq"), model.pretraining_seq_len) or model.pretraining_seq_len
    if seq_len > MAX_SEQ_LEN:
        raise RowError(
            f"seq {seq_len:,} is beyond {model.name}'s context of {model.max_seq_len:,} tokens and any "
            f"model's (none trains past {MAX_SEQ_LEN:,}); write the sequence length the run used"
        )
    return seq_len


# The longest sequence a row may state: 16 Mi tokens, above the longest context of any model
# (Llama 4 Scout's 10,485,760, the registry's longest); beyond it the cell was misread or mistyped
MAX_SEQ_LEN: Final = 2**24


# Figures that one GPU's speed sets, whatever the job's size: a rate or utilization per GPU. A
# row giving one of them with no GPU count is predicted on the GPUs its batch fills.
_PER_GPU_METRICS: Final = frozenset({"tflop_per_s_per_gpu", "mfu", "hfu", "tokens_per_s_per_gpu"})


def _gpus_filled_by_batch(
    row: PublishedRow, model: TransformerSpec, readings: tuple[Reading, ...], unread: RowError
) -> tuple[int, str]:
    """(GPUs, note) of a row no cell counts the GPUs of, whose figure is per GPU
    (:data:`_PER_GPU_METRICS`) and which states its global batch and micro-batch and no pipeline:
    the GPUs that run the batch at that micro-batch without accumulation (TP x CP x global / micro,
    degrees left unstated 1; a pipeline's bubble hangs on how many micro-batches each GPU runs, so
    a row stating PP above 1 is not guessed). The count moves a per-GPU figure only through the
    data-parallel traffic and the optimizer shards, so the note says it was assumed. Otherwise
    ``unread`` is raised."""
    stated = stated_degrees(row)
    pipelined = (stated["pp"] or 1) > 1  # a pipeline's bubble hangs on its micro-batches per step
    per_gpu = bool(readings) and all(reading.key in _PER_GPU_METRICS for reading in readings)
    if stated["dp"] is not None or pipelined or not per_gpu:
        raise unread
    seq_len = _row_seq_len(row, model)
    micro = micro_batch_of(row, seq_len)
    sequences = global_batch_of(row.text("global_batch"), 1, seq_len)
    if micro is None or sequences is None or sequences % micro:
        raise unread
    model_parallel = math.prod(stated[name] or 1 for name in ("tp", "cp"))
    gpus = model_parallel * (sequences // micro)
    if gpus > MAX_ASSUMED_GPUS:
        raise unread
    return gpus, (
        f"GPUs not reported: the figure is per GPU, predicted on the {gpus:,} GPUs that run the global "
        f"batch of {sequences:,} at micro-batch {micro} without accumulation (TP x CP "
        f"{model_parallel} x DP {sequences // micro}; assumed: the count moves a per-GPU figure only "
        "through the data-parallel traffic and the optimizer's shards)"
    )


# The most GPUs a row's batch may be assumed to fill (the largest published training jobs, about
# 100,000 GPUs, no further)
MAX_ASSUMED_GPUS: Final = 131_072


def read_training_row(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> TrainingRowSpec:
    """A training row of a published-results table in typed fields (the rules in the module docs)."""
    model, model_note = resolve_model(registry, row)
    readings = read_cell(row.text("metric"), row.text("measured"), kind="train")
    try:
        num_gpus, gpus_note = gpus_of_row(catalog, row)
    except RowError as unread:
        num_gpus, gpus_note = _gpus_filled_by_batch(row, model, readings, unread)
    hardware, span = read_hardware(catalog, row.text("hardware"))
    cluster, _ = cluster_of(catalog, hardware, num_gpus)
    year, year_note = row_year(row, cluster.system.accelerator)
    stack, stack_note = stack_for(
        " ".join((row.text("source"), row.text("sharding"), row.text("precision"))), year
    )
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    keys, node = (*METRICS, "pflop_per_s"), node_gpus(cluster.system)
    reading = choose_reading(readings, keys, num_gpus, node)
    also = tuple(
        unlabelled_rate_per_gpu(
            log_rate_per_device(other, stack), model, num_gpus, cluster.system.accelerator
        )
        for other in other_readings(readings, reading, keys, num_gpus, node)
    )
    reading = log_rate_per_device(reading, stack)
    reading = unlabelled_rate_per_gpu(reading, model, num_gpus, cluster.system.accelerator)
    assert reading.value is not None
    plan, plan_notes = read_plan(row, model, num_gpus, stack, cluster.system.accelerator, metric=reading.key)
    check_training_figure(
        reading,
        model,
        cluster.system.accelerator,
        num_gpus,
        seq_len=plan.seq_len,
        tokens_per_step=tokens_per_step(plan),
    )
    # a framework with no profile (stack_for's "which has no profile") counts as PaLM, as none named
    named = "names no framework" not in stack_note and "has no profile" not in stack_note
    convention, recompute, causal, flop_note = flop_convention(row, stack, reading, framework_named=named)
    return TrainingRowSpec(
        row_id=row.row_id,
        model=model,
        model_name=registry_name(registry, model),
        hardware=hardware,
        num_gpus=num_gpus,
        plan=plan,
        metric=reading.key,
        measured=reading.value,
        flops=FlopCount(convention, recompute, causal),
        stack=stack.name,
        num_tokens=reading.num_tokens,
        peak_flop_per_s=reading.peak_flop_per_s,
        assumptions=(
            model_note,
            f"hardware '{row.text('hardware')}' -> '{span}'",
            f"{stack_note} ({year_note})",
            *plan_notes,
            flop_note,
            *([gpus_note] if gpus_note else []),
        ),
        reading=reading,
        readings=readings,
        also=also,
    )


def training_setup(spec: TrainingRowSpec, catalog: Catalog, *, stack: Stack | None = None) -> RowSetup:
    """Cluster and candidate plans of a typed training row, on its own stack or on ``stack``."""
    if spec.reading is not None and spec.reading.problem:  # a structured row's figure no run reaches
        raise RowError(spec.reading.problem)
    chosen = stack or load_stack(spec.stack)
    cluster, cluster_notes = cluster_of(catalog, spec.hardware, spec.num_gpus)
    plans, plan_notes = candidate_plans(spec.plan, spec.model, chosen)
    notes = [*spec.assumptions, *cluster_notes, *plan_notes]
    if chosen.name != spec.stack:
        notes.append(f"predicted on the stack {chosen.name}, not the run's own {spec.stack}")
    return RowSetup(
        model=spec.model,
        cluster=cluster,
        plans=tuple(plans),
        metric=spec.metric,
        measured=spec.measured,
        flop_convention=spec.flops.convention,
        flop_recompute=spec.flops.counts_recompute,
        flop_causal=spec.flops.causal,
        num_tokens=spec.num_tokens,
        assumptions=tuple(notes),
        reading=spec.reading,
        readings=spec.readings,
        stack=chosen,
        peak_flop_per_s=spec.peak_flop_per_s,
        also=spec.also,
    )


def row_setup(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> RowSetup:
    """Model, cluster, candidate plans and metric of a training row of a table."""
    return training_setup(read_training_row(row, catalog, registry), catalog)
