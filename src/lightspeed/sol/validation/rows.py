"""Turn a published training row into a model, a cluster and candidate plans.

Rules for what a row leaves unsaid (documented in ``docs/sol.md``):

* **Software stack** (:func:`lightspeed.sol.core.stacks.stack_for`): the
  framework the row names (``torchtitan``, ``Megatron-Bridge``, ``llm-foundry``,
  ...) in the year of its software (:func:`row_year`: a ``YY.MM`` release or
  container, else the source's year, else 2020 for Ampere/Volta and 2024 for
  later); a row naming none takes the Megatron profile of its year. The stack
  sets attention kernel, dropout, sequence parallelism, overlap, FP8 storage and
  what "selective" recomputation means; the row's own words override
  (:func:`_stated_settings`).
* **Unreported micro-batch, interleaving depth or recomputation**: the fastest
  plan that fits among the valid values (published runs report tuned setups); a
  VPP cell of ``n/a`` or a dash is no interleaving (:func:`_interleaving`).
* **Sharding** (:func:`zero_stage_of`): ``ZeRO-k`` (or DeepSpeed's ``stage: k``) -> k, FSDP -> 3
  (with PP: 2, or the stage of the predicting stack that keeps as much; HSDP approximated so, said),
  ``distributed optimizer`` or a bare ``ZeRO`` -> 1, ``none``, ``DDP`` -> 0, unreported -> 1.
* **Parallel degrees** (:func:`_stated_degrees`): a cell's number or label, or a label or
  framework flag in another parallel cell (``TP4 PP16 CP2``, ``--tensor-model-parallel-size 8``);
  no GPU count anywhere: the product of the stated degrees (:func:`_row_gpus`), else, for a
  figure per GPU, the GPUs that run the global batch at its micro-batch without accumulation
  (:func:`_gpus_filled_by_batch`, said in the assumptions).
* **Unreported TP or PP**: every split of the GPUs (:func:`_free_splits`), the fastest
  that fits kept with the other unreported settings.
* **Recomputation** (:func:`_recompute`) and **precision** (:func:`_precision`): the policy or
  format the cell names as frameworks spell it; a precision it leaves unsaid is the
  accelerator's 16-bit format.
* **A global batch that does not split over DP** (TP and PP stated): the degrees the row
  leaves unstated (CP, DP cells empty) are searched for a split
  (:func:`lightspeed.sol.train.batch.split_batch`).
* **FLOP convention** of a TFLOP/s or MFU figure (:func:`flop_convention`):
  ``96-form`` -> Megatron's with the recompute pass, ``72-form`` -> without,
  ``model TFLOP/s`` -> 6N + causal attention; else as the named stack counts its
  own figures; a row naming no framework -> 6N + 12·L·h·s (PaLM).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, Cluster
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.hardware import fp32_runs_on_tf32
from lightspeed.sol.core.stacks import Stack, load_stack, stack_for
from lightspeed.sol.train.batch import candidate_splits, split_batch
from lightspeed.sol.train.plan import TRAINING_PRECISIONS, TrainingPlan
from lightspeed.sol.train.recipes import recipe_for
from lightspeed.sol.validation.hardware_text import (
    HardwareSpec,
    cluster_of,
    one_named_system,
    read_hardware,
    row_gpus,
)
from lightspeed.sol.validation.published import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    DEGREE_FLAGS,
    PublishedRow,
    degree_cell,
    first_number,
    format_keys,
    integer_cell,
    is_missing,
    parenthesized_number,
    size_cell,
)
from lightspeed.sol.validation.readings import (
    Reading,
    RowError,
    not_predicted_reason,
    read_cell,
    with_magnitude_letters,
)
from lightspeed.workload import AttentionSpec, ModelEntry, ModelRegistry, TransformerSpec, parameter_counts

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
    the software the run used (``docs/sol.md``)."""

    plan: PlanSpec
    flops: FlopCount
    stack: str
    num_tokens: float | None = None
    peak_flop_per_s: float | None = None


# a release (``v25.04``), a container or image (``25.11 NeMo Container``, ``26.02.01 NeMo
# Container``, ``NeMo 24.07-based image``) or an NGC tag (``nvcr.io/nvidia/nemo:24.07``,
# ``pytorch:24.05-py3``)
_CONTAINER: Final = re.compile(
    r"\b(2\d)\.(?:0[1-9]|1[0-2])(?:\.\d{1,2})?(?:-based)?\s+\w*\s*(?:container|image)"
    r"|\bv(2\d)\.(?:0[1-9]|1[0-2])\b"
    r"|\b(?:nemo|pytorch|nemo-framework|tritonserver|megatron)[:_](2\d)\.(?:0[1-9]|1[0-2])\b",
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


def _heads(text: str) -> tuple[int | None, int | None]:
    """(heads, KV heads) of a heads cell: ``64 (8 kv)``, or NeMo's and Megatron's ``64 (8 query
    groups)`` / ``32 (Query Groups: 4)`` (``num_query_groups``: the KV heads)."""
    heads = integer_cell(text)
    kv_match = re.search(
        r"\((\d+)\s*(?:kv|query[\s_-]+groups?)\b|\((?:kv(?:[\s_-]+heads)?|query[\s_-]+groups?)\s*[:=]\s*(\d+)",
        text,
        re.IGNORECASE,
    )
    return heads, (int(kv_match.group(1) or kv_match.group(2)) if kv_match else heads)


# a vocabulary named by its tokenizer: ``n/r (Llama 2 tokenizer)``, ``GPT-2 BPE tokenizer``
_TOKENIZER: Final = re.compile(r"([a-z][\w .-]*?)\s+(?:bpe\s+)?tokenizer", re.IGNORECASE)


def _tokenizer_vocab(registry: ModelRegistry, row: PublishedRow) -> int | None:
    """The vocabulary of the catalog model whose tokenizer the vocab cell names (``n/r (Llama 2
    tokenizer)``: Llama 2's 32,000), else ``None``."""
    named = _TOKENIZER.search(row.text("vocab"))
    if named is None:
        return None
    words = re.sub(r"^\W+", "", named.group(1)).strip()
    family = registry.find(words) or next(
        (entry for entry in registry.entries.values() if _family(entry.spec.name) == _family(words)), None
    )
    return family.spec.vocab_size if family is not None else None


def _family(name: str) -> str:
    """A model name without its size: ``llama-2-7b`` and ``Llama 2`` are ``llama2``."""
    return re.sub(r"[\s_-]+", "", re.sub(r"[\s_-]*\d+(?:\.\d+)?[bm]\b.*$", "", name.lower()))


def model_from_dims(row: PublishedRow, vocab_size: int | None = None) -> TransformerSpec:
    """A GPT-style model (MHA, 4h GELU MLP, learned positions, LayerNorm, biases) from a
    row's dimensions, or a Llama-style one (SwiGLU, RoPE, RMSNorm) when the row has KV heads;
    with no heads, MHA of 128-wide heads, which :func:`resolve_model` confirms by the row's
    parameter count (:func:`_confirmed_mha`)."""
    layers = integer_cell(row.text("layers"))
    hidden = integer_cell(row.text("hidden"))
    heads, kv_heads = _heads(row.text("heads(kv)"))
    ffn_text = row.text("ffn")
    ffn = parenthesized_number(ffn_text) or first_number(ffn_text) if not is_missing(ffn_text) else None
    vocab_text = row.text("vocab")
    vocab = first_number(vocab_text) if not is_missing(vocab_text) else vocab_size
    missing = [
        name
        for name, value in (("layers", layers), ("hidden", hidden), ("heads(kv)", heads), ("vocab", vocab))
        if value is None
    ]
    if missing == ["heads(kv)"] and hidden is not None and hidden % _MHA_HEAD_DIM == 0:
        # an MHA model's weights and FLOPs do not depend on how its width is cut into heads:
        # taken so when the row's parameter count confirms the shape (_confirmed_mha)
        heads = kv_heads = hidden // _MHA_HEAD_DIM
        missing = []
    if missing or layers is None or hidden is None or heads is None or vocab is None:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog and the row lacks {', '.join(missing)}"
        )
    gqa = kv_heads is not None and kv_heads != heads
    # a Llama-style block (SwiGLU, RoPE, RMSNorm) where the heads are grouped or the FFN cell says
    # SwiGLU (Llama 2 7B has as many KV heads as heads)
    llama = gqa or bool(_LLAMA_MLP.search(ffn_text.lower()))
    seq = integer_cell(row.text("seq"), 2048) or 2048
    ffn_size = int(ffn) if ffn and ffn > 16 else 4 * hidden
    return TransformerSpec(
        name=row.text("model").lower().replace(" ", "-"),
        display_name=row.text("model"),
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn_size,
        vocab_size=int(vocab),
        attention=AttentionSpec(
            "gqa" if gqa else "mha", heads, kv_heads or heads, hidden // heads, qkv_bias=not llama
        ),
        mlp="swiglu" if llama else "gelu",
        position_embedding="rope" if llama else "learned",
        max_seq_len=seq,
        norm="rmsnorm" if llama else "layernorm",
        mlp_bias=not llama,
    )


# the head width an MHA model is cut into when a row gives its width but not its heads (GPT-3's,
# Llama's, Megatron's GPT configurations: 128)
_MHA_HEAD_DIM: Final = 128
# how near the row's parameter count the MHA shape built from its dimensions must come
_PARAMS_AGREE: Final = 0.10


def _confirmed_mha(row: PublishedRow, spec: TransformerSpec) -> str:
    """The note on a model built without its heads (:func:`model_from_dims`), refused unless the
    row's parameter count (``params_B``) is the MHA shape's within 10%: grouped KV heads or a gated
    MLP would count fewer or more."""
    stated_b = first_number(row.text("params_B")) if not is_missing(row.text("params_B")) else None
    built_b = parameter_counts(spec).total_params / 1e9
    if stated_b is None or not math.isfinite(stated_b) or stated_b <= 0:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog and the row lacks heads(kv) and a "
            "parameter count (params_B) that would confirm multi-head attention"
        )
    if abs(built_b / stated_b - 1) > _PARAMS_AGREE:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog and the row lacks heads(kv): with "
            f"multi-head attention its dimensions make {built_b:.3g}B parameters, not the row's "
            f"{stated_b:g}B; fill the heads(kv) cell"
        )
    return (
        f"; heads not given: {spec.attention.num_heads} heads of {_MHA_HEAD_DIM} (an MHA model's weights "
        f"and FLOPs do not depend on its head count; its {built_b:.3g}B parameters match the row's "
        f"{stated_b:g}B)"
    )


_LLAMA_MLP: Final = re.compile(r"swiglu|silu|swish")


_NO_MTP: Final = re.compile(r"\b(?:w/o|without|no)\s+(?:the\s+)?mtp\b|\bmtp\s+disabled\b", re.IGNORECASE)


def _mtp_not_trained(row: PublishedRow) -> bool:
    """Whether the model cell says the run trains no MTP module (``without MTP``), or the source
    does (torchtitan's table titled ``PP1, MTP disabled``) and the model cell names no MTP."""
    model = row.text("model")
    if _NO_MTP.search(model):
        return True
    return not re.search(r"\bmtp", model, re.IGNORECASE) and bool(_NO_MTP.search(row.text("source")))


def _architecture_named(registry: ModelRegistry, cell: str) -> tuple[str, ModelEntry | None]:
    """(name, registry entry) of the model a cell names: the text before any parenthesis, else a
    catalog model a parenthesis names as the architecture (``LlamaT 7B (Llama 2 7B
    architecture)``, a run's own name for a known model)."""
    name = re.split(r"[(]", cell)[0].strip()
    found = registry.find(name) if name else None
    if found is None and name:  # a framework's name before the model's: ``Maxtext Llama3 70b``
        bare = _FRAMEWORK_PREFIX.sub("", name).strip()
        found = registry.find(bare) if bare and bare != name else None
        name = bare if found is not None else name
    if found is None and name:  # a run's label after the size: ``DeepSeek V3 671B DistMoE, MTP1``
        sized = _LABEL_AFTER_SIZE.match(name.split(",")[0].strip())
        found = registry.find(sized.group(1)) if sized else None
        name = sized.group(1) if sized and found is not None else name
    if found is not None:
        return name, found
    for inside in re.findall(r"\(([^)]*)\)", cell):
        candidate = _ARCHITECTURE_WORDS.sub(" ", inside).strip(" ,;:-")
        named = registry.find(candidate) if candidate else None
        if named is not None and _ARCHITECTURE_WORDS.search(inside):
            return candidate, named
    whole = registry.find(cell)  # a bare size and its architecture: ``70B (Meta Llama3 architecture)``
    if whole is not None and _ARCHITECTURE_WORDS.search(cell):
        return cell, whole
    return name, None


# a training framework's name written before the model's (dgxc-benchmarking's ``Maxtext Llama3
# 70b``, ``Paxml GPT175B``)
_FRAMEWORK_PREFIX: Final = re.compile(
    r"^(?:maxtext|paxml|pax|nemo|megatron(?:[\s-]lm)?|torchtitan|jax)[\s_-]+", re.IGNORECASE
)
# a name whose words after its parameter count hold no digit (an implementation's or a run's label,
# torchtitan's ``DeepSeek V3 671B DistMoE``): group 1 ends at the count, so the label is never read
# as a smaller model's name (``GPT3 5B`` keeps its ``5B``)
_LABEL_AFTER_SIZE: Final = re.compile(
    r"^(.*?\b(?:\d+x)?\d+(?:\.\d+)?[bmt])(?:[\s_-]+[^\d\s_-]+)+$", re.IGNORECASE
)
# words that say a parenthesis names a model's architecture, not a variant or a framework
_ARCHITECTURE_WORDS: Final = re.compile(
    r"\b(?:architecture|arch|config|shapes|same\s+as|like)\b", re.IGNORECASE
)


def resolve_model(registry: ModelRegistry, row: PublishedRow) -> tuple[TransformerSpec, str]:
    """The catalog model a row names (text before any parenthesis, or the architecture a
    parenthesis names), else one built from its dims."""
    name, found = _architecture_named(registry, row.text("model"))
    if found is not None:
        note = f"model '{row.text('model')}' -> catalog model {found.spec.name}"
        if found.spec.num_mtp_modules and _mtp_not_trained(row):
            return dataclasses.replace(found.spec, num_mtp_modules=0), f"{note}, its MTP modules not trained"
        return found.spec, note
    unsupported = registry.unsupported_model(name) if name else None
    if unsupported is not None:  # never a plain transformer built from its dimensions
        raise RowError(unsupported.refusal(name))
    tokenizer_vocab = _tokenizer_vocab(registry, row)
    spec = model_from_dims(row, tokenizer_vocab)
    vocab_note = f", the vocabulary of its named tokenizer ({tokenizer_vocab:,})" if tokenizer_vocab else ""
    heads_note = _confirmed_mha(row, spec) if is_missing(row.text("heads(kv)")) else ""
    return (
        spec,
        f"model '{row.text('model')}' built from the row's dimensions ({spec.mlp}, {spec.attention.kind})"
        + vocab_note
        + heads_note,
    )


def zero_stage_of(text: str, pp: int = 1, stack: Stack | None = None) -> tuple[int, str]:
    """(ZeRO stage, note) of a sharding cell.

    ``ZeRO-k`` is k, and so is the stage DeepSpeed's config and docs write
    (``zero_optimization.stage=3``, ``ZeRO-Infinity (stage 3)``: :func:`_written_stage`);
    FSDP (v1's default FULL_SHARD, FSDP2's ``fully_shard``,
    Megatron-FSDP, ``FSDP=N`` with N > 1, torchtitan's ``data_parallel_shard_degree`` other than 1)
    shards everything: 3, except with
    pipeline parallelism, where FSDP keeps parameters gathered across the
    micro-batches (torchtitan's ``reshard_after_forward=False``, Llama 3's
    FSDP) and accumulates fp32 gradients whole until the last one (Llama 3
    paper, section 3.3.2): ZeRO-2 in FSDP's terms, and under a ``stack`` with
    other memory rules the stage that keeps the same (the distributed
    optimizer's ZeRO-1 in Megatron's); HSDP is full sharding over every data-parallel rank, said
    in the note (lightspeed has no shard group); ``FSDP=0``, a distributed optimizer (``DDP +
    distributed optimizer``, Megatron's ``--use-distributed-optimizer``) or a bare ``ZeRO`` is 1;
    ``none``, ``DDP`` or a cell that only names what the run did without (``DDP (no ZeRO)``) is 0;
    unreported 1.
    """
    stated = _stated_sharding(text)
    stage = _written_stage(stated)
    if stage is not None:
        return stage, f"sharding '{text}' -> ZeRO-{stage}"
    if _KEEPS_PARAMETERS.search(stated):
        # FSDP's SHARD_GRAD_OP, FSDP2's reshard_after_forward=False: parameters stay gathered
        # between forward and backward, gradients and optimizer state sharded
        return 2, f"sharding '{text}' -> ZeRO-2 (FSDP keeps parameters gathered)"
    if _REPLICATED.search(stated):
        return 0, f"sharding '{text}' -> ZeRO-0 (DDP: every rank keeps everything)"
    if _is_fsdp(stated):
        stage, note = (
            _fsdp_under_pipeline(text, pp, stack)
            if pp > 1
            else (3, f"sharding '{text}' -> ZeRO-3 (FSDP full sharding)")
        )
        return stage, note + (_HYBRID_NOTE if _HYBRID.search(stated) else "")
    if _DISTRIBUTED_OPTIMIZER.search(stated) or "zero" in stated or "fsdp" in stated:
        return 1, f"sharding '{text}' -> ZeRO-1 (distributed optimizer)"
    if stated.startswith("none"):
        return 0, "sharding none -> ZeRO-0 (DDP)"
    if is_missing(text):  # ``n/r (no FSDP column in the table)``: a note on why, not a setting
        return 1, "sharding not reported -> ZeRO-1"
    if stated != text.lower():  # all the cell names is a sharding the run did without
        return 0, f"sharding '{text}' -> ZeRO-0 (DDP: no sharding the run used is named)"
    return 1, f"sharding '{text}' names nothing lightspeed reads -> ZeRO-1, as if not reported"


def _stated_sharding(text: str) -> str:
    """A sharding cell in lower case without the sharding it says the run did without."""
    return _NEGATED.sub(" ", text.lower()).strip()


def _written_stage(lowered: str) -> int | None:
    """The ZeRO stage a lower-case sharding cell writes (:data:`_ZERO_STAGE`, :data:`_STAGE`)."""
    match = _ZERO_STAGE.search(lowered) or (_STAGE.search(lowered) if _DEEPSPEED.search(lowered) else None)
    return int(match.group(1)) if match else None


# ``ZeRO-3``, ``ZeRO3``, ``ZeRO stage 3``, ``ZeRO (stage 2)``, ``ZeRO stage-3``, Megatron-DeepSpeed's
# ``--zero-stage 3``, ``zero_stage: 3``, ``zero_stage=3``
_ZERO_STAGE: Final = re.compile(r"zero[\s_-]*(?:\(?\s*stage[\s_:=-]*)?(\d)")
# the stage as DeepSpeed's config and docs write it, in a cell that names ZeRO or DeepSpeed (the
# ``zero_optimization`` section's ``stage`` key, 0-3, deepspeed/runtime/zero/config.py):
# ``zero_optimization.stage=3``, ``"zero_optimization": {"stage": 3}``, ``ZeRO-Infinity (stage 3,
# CPU offload)``, ``ZeRO++ (stage 3)``, ``DeepSpeed stage 3``, ``stage-3 ZeRO``
_DEEPSPEED: Final = re.compile(r"zero|deepspeed")
_STAGE: Final = re.compile(r"(?<![a-z])stage[\s_:=\"'-]*(\d)\b")
# a sharding the cell says the run did without: ``DDP (no ZeRO)``, ``without FSDP``, ``w/o ZeRO-3``,
# ``use_distributed_optimizer: false``
_NEGATED: Final = re.compile(
    r"\b(?:no|without|w/o)\s+(?:zero(?:[\s_-]*\d)?|fsdp\d?)\b|\buse[_-]distributed[_-]optimizer\W*false\b"
)
_KEEPS_PARAMETERS: Final = re.compile(r"shard_grad_op|reshard_after_forward\W*(?:false|never)\b")
# plain data parallelism: ``DDP``, ``no sharding``, ``none``, FSDP's ``NO_SHARD`` strategy, torchtitan's
# ``data_parallel_shard_degree=1`` (``FSDP + DDP`` shards, and ``DDP + distributed optimizer`` shards
# the optimizer state, so not here)
_REPLICATED: Final = re.compile(
    r"^\s*(?:ddp|no sharding|none|not sharded)\b(?!.*(?:fsdp|zero|shard_|distributed[\s_-]optimizer))"
    r"|\bno_shard\b|\b(?:data_parallel_shard_degree|dp_shard)\s*[=:]\s*1\b"
)
# Megatron's distributed optimizer (optimizer state sharded over DP: ZeRO-1): ``distributed optimizer``,
# ``--use-distributed-optimizer``, ``use_distributed_optimizer: true``
_DISTRIBUTED_OPTIMIZER: Final = re.compile(r"distributed[\s_-]optimizer")
# an FSDP degree: Megatron-Bridge's ``FSDP=8`` (``FSDP=0``: off), ``FSDP 8``, MaxText's
# ``ici_fsdp_parallelism=8``, torchtitan's ``data_parallel_shard_degree=64`` / ``dp_shard=8`` (-1:
# every rank left, 1: no FSDP); never FSDP's version (``FSDP2``)
_FSDP_DEGREE: Final = re.compile(
    r"(?:fsdp(?:_parallelism)?|data_parallel_shard_degree|dp_shard)(?:\s*[=:]\s*|\s+)(-?\d+)\b"
)
# hybrid sharding, FSDP within a group and replicas across groups: HSDP, PyTorch FSDP's
# ``HYBRID_SHARD``, torchtitan's ``data_parallel_replicate_degree`` (``dp_replicate``) above 1
_HYBRID: Final = re.compile(
    r"hsdp|hybrid[\s_]shard|(?:dp_replicate|data_parallel_replicate_degree)\s*[=:]\s*(?:[2-9]|\d\d)"
)
_HYBRID_NOTE: Final = (
    "; HSDP approximated as full sharding over every DP rank (lightspeed has no shard group: less "
    "memory per GPU, parameter gathers over the whole DP group)"
)


def _is_fsdp(lowered: str) -> bool:
    """Whether a lower-case sharding cell names full FSDP sharding (not ``FSDP=0``, not ZeRO-k):
    FSDP, FULL_SHARD, FSDP2's ``fully_shard``, torchtitan's ``data_parallel_shard_degree`` other
    than 1, or HSDP (full sharding within each replica group)."""
    if _written_stage(lowered) is not None:
        return False
    sized = _FSDP_DEGREE.search(lowered)
    fsdp = ("fsdp" in lowered and not sized) or (sized is not None and int(sized.group(1)) not in (0, 1))
    named = ("full_shard", "full shard", "fully_shard", "fully shard", "hsdp", "hybrid_shard", "hybrid shard")
    return fsdp or any(word in lowered for word in named)


def _fsdp_under_pipeline(text: str, pp: int, stack: Stack | None) -> tuple[int, str]:
    """FSDP under PP in the stack's terms: the stage keeping parameters and gradients whole."""
    kept = {"weights": "whole", "gradients": "whole", "optimizer": "sharded"}
    stage = None if stack is None else stack.sharding.stage_keeping(**kept, pipeline=True)
    if stack is None or stage is None or stage == 2:
        return 2, f"sharding '{text}' with pp={pp} -> ZeRO-2 (FSDP keeps parameters gathered under PP)"
    return stage, (
        f"sharding '{text}' with pp={pp} -> ZeRO-{stage} under {stack.name}: FSDP under PP keeps parameters "
        f"gathered and fp32 gradients whole until the last micro-batch, as the "
        f"{stack.sharding_rule(stage, pipeline=True).name} does"
    )


def _recompute(text: str) -> tuple[str, str]:
    """(policy, note) a recompute cell names (``selective``: the predicting stack's selective one;
    torchtitan's ``SAC`` and Megatron-LM's ``--recompute-activations``, which sets
    ``recompute_granularity='selective'`` in megatron/training/arguments.py, are selective);
    activation or gradient checkpointing said with no policy is full recomputation (PyTorch's
    ``checkpoint`` of whole blocks, Hugging Face's ``gradient_checkpointing``), said to be off
    (``AC: none``, ``gradient_checkpointing=False``) none. A fixed count of whole layers
    (:data:`_BLOCK_METHOD`, :data:`_LAYER_SAC`) is read as the engine's ``partial``, which chooses
    the count itself: the note says so."""
    lowered = text.lower()
    if _DISABLED.search(lowered):
        return "none", ""
    layer_sac = _LAYER_SAC.search(lowered)
    if layer_sac and int(layer_sac.group(1)) <= 1:  # every block checkpointed
        return "full", f"recompute '{text}' -> full (torchtitan's layer SAC of every block)"
    if layer_sac or _BLOCK_METHOD.search(lowered):
        return "partial", (
            f"recompute '{text}' -> partial: the run recomputes a fixed count of whole layers, "
            "lightspeed's partial policy the fewest per stage that fit memory (none when all fit), "
            "so recomputation may be undercounted"
        )
    if _PER_OP.search(lowered):
        return "op", ""
    jax_policy = _jax_remat_policy(lowered)
    if jax_policy is not None:
        return jax_policy, f"recompute '{text}' -> {jax_policy} (MaxText's / JAX's remat policy)"
    if _SELECTIVE.search(lowered) or _RECOMPUTE_MODULES.fullmatch(lowered):
        return "selective", ""
    if _NO_RECOMPUTE.search(lowered):
        return "none", ""
    if _SAID_ON.fullmatch(_PARENTHESES.sub("", lowered)):  # said to be on, no policy named: full
        return "full", f"recompute '{text}' -> full (on, with no policy named)"
    if re.search(r"\bfull\b", lowered) or _CHECKPOINTING.search(lowered):
        return "full", ""
    return "none", ""


# a cell that only lists Megatron-Core's recompute modules (``norm, act``, ``core_attn, mlp``):
# the modules of selective granularity (transformer_config.py ``recompute_modules``)
_RECOMPUTE_MODULES: Final = re.compile(
    r"\s*(?:(?:core_attn|moe_act|act|layernorm|norm|mla_up_proj|up_proj|mlp|moe|shared_experts)[\s,;/+&]*)+"
)
# a cell that only says yes: ``yes``, ``true``, ``on``, ``enabled``
_SAID_ON: Final = re.compile(r"\s*(?:yes|y|true|on|enabled?)\s*")
# ``none``, ``no AC``, ``no recompute``, ``off``, ``disabled``, ``without checkpointing``
_NO_RECOMPUTE: Final = re.compile(r"^\s*(?:none|no|off|false|disabled?|without)\b")
# checkpointing said to be off: ``AC: none``, ``AC off``, torchtitan's ``activation_checkpoint.mode =
# "none"``, Hugging Face's ``gradient_checkpointing=False``, ``activation checkpointing disabled``
_DISABLED: Final = re.compile(
    r"(?:checkpoint\w*|\bs?ac\b|recomput\w*|\bremat\w*|\bmode\b|granularity)[\s:=\"'._-]*"
    r"(?:none|null|off|false|disabled?|no)\b"
)
# a fixed count of whole layers: Megatron-LM's ``--recompute-method block --recompute-num-layers N``
# (the first N layers of each pipeline stage, megatron/core/transformer/transformer_block.py);
# torchtitan's layer SAC ``selective_ac_option=N`` (every Nth block, 1 every block:
# torchtitan's apply_ac in its models' parallelize.py)
_BLOCK_METHOD: Final = re.compile(r"recompute[-_]method[\s=:\"']*block")
_LAYER_SAC: Final = re.compile(r"selective[-_]ac[-_]option[\s=:\"']*(\d+)")
# torchtitan's per-op selective policy: ``selective (per-op)``, ``selective AC (op)``, ``op-level
# SAC``, ``selective_ac_option="op"``
_PER_OP: Final = re.compile(r"per[\s-]*op\b|\(op\b|\bop[\s-]+level\b|[=:]\s*[\"']?op\b")
# the stack's selective policy: ``selective``, ``partial``, torchtitan's ``SAC``, Megatron-LM's
# ``--recompute-activations`` and ``--recompute-modules mlp up_proj`` (the modules of selective
# granularity: megatron/core/transformer/transformer_config.py ``recompute_modules``)
_SELECTIVE: Final = re.compile(r"selective|partial|\bsac\b|recompute[-_](?:activations|modules)")
# MaxText's and JAX's remat policies (``remat_policy``, ``jax.checkpoint_policies``): ``full`` and
# ``nothing_saveable`` recompute the whole block; ``everything_saveable`` nothing; the policies that
# save the matmuls' outputs and recompute the rest (``minimal``, ``minimal_flash``, ``save_dot_*``,
# ``save_qkv_proj``, ``qkv_proj_offloaded``, a ``custom`` one that offloads or saves projections)
# are selective recomputation
_JAX_FULL: Final = re.compile(r"\bfull\b|nothing_saveable")
_JAX_SAVES_MATMULS: Final = re.compile(r"minimal|save_|saveable|offload|custom|qkv|dots")


def _jax_remat_policy(lowered: str) -> str | None:
    """The policy a lower-case cell naming a JAX remat policy means, else ``None``."""
    if "remat" not in lowered and "checkpoint_policies" not in lowered:
        return None
    if _JAX_FULL.search(lowered):
        return "full"
    if "everything_saveable" in lowered:
        return "none"
    return "selective" if _JAX_SAVES_MATMULS.search(lowered) else None


# checkpointing or recomputation said without a policy: ``activation checkpointing``, ``AC``,
# ``gradient checkpointing``, ``recompute all layers``
_CHECKPOINTING: Final = re.compile(r"checkpoint|\bac\b|recomput|\bremat|\bre-materiali[sz]")
_PARENTHESES: Final = re.compile(r"\([^)]*\)")


def _precision(text: str, accelerator: Accelerator | None = None) -> tuple[str, str]:
    """(training precision, note) a cell names, spelled as frameworks do or not (``torchao
    Float8``: fp8; :data:`_FRAMEWORK_PRECISIONS`); block-scaled formats (``MXFP8``) before their
    family, TF32 before FP32. A cell naming none is the ``accelerator``'s 16-bit format (bf16, fp16
    where it has no bf16: V100). A block-scaled format on an accelerator without block-scaled tensor
    cores, or fp64, is refused."""
    named = _named_precision(text)
    if named is None:
        return _unstated_precision(text, accelerator)
    key, how = named
    if key not in TRAINING_PRECISIONS:
        raise RowError(
            f"precision '{text.strip()}' is {key}{how}, which lightspeed does not model for training"
        )
    if accelerator is not None and key in _BLOCK_SCALED and not _has_block_scaled_tensor_cores(accelerator):
        raise RowError(
            f"precision '{text.strip()}' is {key}, a block-scaled format: {accelerator.name} "
            f"({accelerator.architecture}) has no block-scaled tensor cores (Transformer Engine's MXFP8 and "
            "NVFP4 recipes need Blackwell); write the format the run used"
        )
    return key, f"precision '{text.strip()}' -> {key}{how}{_fp32_remark(key, accelerator)}"


def _named_precision(text: str) -> tuple[str, str] | None:
    """(format, how it was named) a precision cell names, ``None`` when it names none."""
    lowered = format_keys(text)
    for key in ("mxfp8", "nvfp4", "mxfp4", "fp8", "fp4", "fp16", "bf16", "tf32", "fp32"):
        if key in lowered:
            return key, ""
    for pattern, key, how in _FRAMEWORK_PRECISIONS:
        if pattern.search(lowered):
            return key, f" ({how})"
    return None


# Precisions named by a framework's setting, not a format: PyTorch Lightning's ``precision`` values
# (``16-mixed``, ``16-true``, ``32-true``, ``64-true``; ``bf16-mixed`` names its format:
# lightning/fabric/connector.py), apex AMP's opt levels (``O0`` fp32, ``O1``-``O3`` fp16:
# apex/amp/frontend.py), a bare ``AMP`` or ``autocast`` (torch.autocast's default CUDA dtype is
# float16: torch/amp/autocast_mode.py)
_FRAMEWORK_PRECISIONS: Final = (
    (re.compile(r"(?<![\w.])16-(?:mixed|true)\b"), "fp16", "PyTorch Lightning's 16-bit: float16"),
    (re.compile(r"(?<![\w.])32-true\b"), "fp32", "PyTorch Lightning's 32-true"),
    (re.compile(r"(?<![\w.])64-true\b"), "fp64", "PyTorch Lightning's 64-true"),
    (re.compile(r"\bo0\b"), "fp32", "apex AMP opt level O0"),
    (re.compile(r"\bo[123]\b"), "fp16", "apex AMP opt levels O1-O3: float16"),
    (re.compile(r"\b(?:amp|autocast)\b"), "fp16", "AMP: torch.autocast's default CUDA dtype is float16"),
)
# formats whose scales are per block of elements (OCP MX's 32, NVFP4's 16), not per tensor
_BLOCK_SCALED: Final = frozenset({"mxfp8", "mxfp4", "nvfp4"})


def _has_block_scaled_tensor_cores(accelerator: Accelerator) -> bool:
    """Whether the tensor cores take block scales (MXFP8, NVFP4): the generation that brought them
    brought FP4 too (NVIDIA Blackwell, AMD CDNA 4), so the catalog's parts with an FP4 compute row.
    Hopper's FP8 takes per-tensor scales only: Transformer Engine's MXFP8BlockScaling recipe asks
    for compute capability 10.0."""
    return "fp4" in accelerator.compute


def _unstated_precision(text: str, accelerator: Accelerator | None) -> tuple[str, str]:
    """(16-bit format, note) of a precision cell naming no format: bf16, or fp16 on an accelerator
    with fp16 but no bf16 compute (V100)."""
    fp16_only = (
        accelerator is not None and "bf16" not in accelerator.compute and "fp16" in accelerator.compute
    )
    key = "fp16" if fp16_only else "bf16"
    why = f" ({accelerator.name} has no bf16: its 16-bit format)" if fp16_only and accelerator else ""
    if is_missing(text):
        return key, f"precision not stated: {key}{why}"
    return key, f"precision '{text.strip()}' names no format lightspeed reads: {key}{why}"


def _fp32_remark(key: str, accelerator: Accelerator | None) -> str:
    """What an fp32 run is predicted at: the TF32 tensor-core row where the accelerator has one, as
    :func:`lightspeed.sol.core.hardware.hardware_for` runs fp32 GEMMs (PyTorch's ``allow_tf32``)."""
    if key != "fp32" or accelerator is None or not fp32_runs_on_tf32(accelerator):
        return ""
    return ", predicted at the TF32 tensor-core rate (lightspeed runs fp32 GEMMs in TF32, as allow_tf32 does)"


def _global_batch(text: str, dp: int, seq_len: int) -> int | None:
    """Sequences a global-batch cell states: labelled (``gbs 512``), ``32/DP`` per replica,
    ``ramp to N``, sequences times their length (``2048 x 8192 tokens``), a token count
    (:func:`_sequences_of_tokens`), or a count of sequences (``2K`` is 2,048)."""
    lowered = with_magnitude_letters(text.lower())  # ``2 million tokens``: 2m
    labelled = _LABELLED_GLOBAL_BATCH.search(lowered)
    if labelled:
        return int(labelled.group(1))
    per_dp = re.search(r"(\d+)\s*(?:/|per)\s*dp\b", lowered)
    if per_dp:
        return int(per_dp.group(1)) * dp
    ramp = _RAMP.search(lowered)
    if ramp:
        return int(ramp.group(1) or ramp.group(2))
    first = _SEQUENCES_FIRST.search(lowered)
    if first and "token" in lowered:  # ``512 (1M tokens)``: the tokens say what the sequences hold
        return size_cell(first.group(1) + first.group(2))
    if "token" in lowered:
        product = _SEQUENCES_TIMES_LENGTH.search(lowered)
        if product:
            return int(product.group(1).replace(",", ""))
        return _sequences_of_tokens(lowered, dp, seq_len)
    return size_cell(text)


# a global batch written with its label: ``gbs 512``, ``GBS=512``, Megatron-LM's ``--global-batch-size
# 512``, ``global_batch_size: 512`` (not a token count: ``GBS 4M tokens``)
_LABELLED_GLOBAL_BATCH: Final = re.compile(
    r"\b(?:gbs|global[_-]batch[_-]size)\b[\s=:]*(\d+)(?![\d.,]|\s*(?:[kmb]\b|tok))"
)
# a batch ramped up to its final size: ``ramp to 15360``, ``ramped from 3072 to 15360``, ``3072 ->
# 15360 (ramp)``: the final size, the one the run spent its steps at
_RAMP: Final = re.compile(
    r"ramp(?:ed)?(?:[\s-]+up)?\s+(?:from\s+\d[\d,]*\s+)?to\s+(\d+)|\d+\s*(?:->|→|to)\s*(\d+)\s*\(?\s*(?:ramp|warm)"
)
# a count of sequences first, the tokens they hold after it: ``512 (1M tokens)``, ``1536 sequences
# (3.1M tokens)``, ``2048, 4M tokens``
_SEQUENCES_FIRST: Final = re.compile(
    r"^\s*(\d{1,3}(?:,\d{3})+|\d+)(?!\d|,\d)(k?)\s*(?:sequences?|seqs?|samples?)?\s*(?:\(|[,;]\s)"
)
# ``2048 x 8192 tokens``, ``512 sequences x 8192 tokens``: sequences times their length
_SEQUENCES_TIMES_LENGTH: Final = re.compile(
    r"(\d[\d,]*)\s*(?:(?:sequences?|seqs?|samples?)\s*)?[x×*]\s*\d[\d,]*k?\s*(?:-?\s*token)"
)
_TOKEN_COUNT: Final = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*([km])?(?![a-z])")
# how far a token count may sit from a whole batch that splits over DP (a figure rounded to
# three digits, ``16.8M``, is 0.1% from 2,048 x 8,192)
_BATCH_ROUNDING: Final = 0.03


def _sequences_of_tokens(lowered: str, dp: int, seq_len: int) -> int | None:
    """Sequences a token count makes at ``seq_len``: ``16M`` read as 16 x 2^20 or 16 x 10^6,
    whichever gives a batch that splits over ``dp`` within rounding, the rounder in binary first
    (batches are powers of two or near them: ``16.8M`` at 8,192 is 2,048, not 2,152); an exact
    count (``16,777,216``) divided as it is."""
    match = _TOKEN_COUNT.search(lowered)
    if match is None:
        return None
    number = float(match.group(1).replace(",", ""))
    if not math.isfinite(number) or number <= 0:
        raise RowError(f"a global batch of {match.group(0)!r} tokens is not a positive number")
    suffix = match.group(2)
    readings = (number * BINARY_SUFFIXES[suffix], number * DECIMAL_SUFFIXES[suffix]) if suffix else (number,)
    batches = []
    for tokens in readings:
        sequences = tokens / seq_len
        nearest = max(dp, round(sequences / dp) * dp)
        distance = abs(sequences - nearest) / nearest
        if distance <= _BATCH_ROUNDING:
            batches.append((-_twos(nearest), distance, nearest))
    return min(batches)[2] if batches else round(readings[0] / seq_len)


def _twos(count: int) -> int:
    """How many times 2 divides ``count`` (``2048`` -> 11)."""
    return (count & -count).bit_length() - 1


@dataclass(frozen=True)
class _Degrees:
    """The parallel degrees of a row; ``free``: those of TP, PP, CP and DP no cell states (searched)."""

    tp: int
    pp: int
    dp: int
    ep: int
    cp: int
    etp: int = 1
    free: tuple[str, ...] = ()


# The cells a parallel layout is written in; a row may write several degrees in one (``TP8 PP8 CP2``).
_PLAN_CELLS: Final = ("TP", "PP", "CP", "DP", "EP", "VPP", "sharding")


def _degree_pattern(name: str) -> re.Pattern[str]:
    """A degree with its label (``TP8``, ``tp=8``, ``VPP 8``, the ``pp16`` of ``tp4pp16cp2`` and of
    ``TP4xPP16``) or its flag (:data:`~lightspeed.sol.validation.published.DEGREE_FLAGS`)."""
    # (the experts' own TP, ``expert TP 4``, is not TP)
    label = rf"(?:(?<![a-z])|(?<=\dx))(?<!expert[\s_-]){name}\s*[=:]?\s*(\d+)(?![\d.])"
    flag = DEGREE_FLAGS.get(name)
    return re.compile(label + (rf"|(?:{flag})[\s=:\"']*(\d+)" if flag else ""), re.IGNORECASE)


_LABELLED_DEGREES: Final = {
    name: _degree_pattern(name) for name in ("tp", "pp", "cp", "dp", "ep", "etp", "vpp")
}
# degrees listed without their names, ``(8,8,2)`` or ``8, 8, 2`` (which is TP, which PP?); a count
# with thousands separators (``1,024``) is one number
_UNNAMED_DEGREES: Final = re.compile(r"\d+(?:\s*,\s*\d+)+")
_THOUSANDS: Final = re.compile(r"\d{1,3}(?:,\d{3})+")


def _labelled_degree(row: PublishedRow, name: str) -> int | None:
    """The degree ``name`` (``tp``, ``vpp`` ...) written with its label or flag in any parallel cell
    (``TP8 PP8 CP2`` in the TP cell, ``VPP=8`` or ``--expert-model-parallel-size 64`` in the sharding
    cell), else ``None``."""
    for column in _PLAN_CELLS:
        found = _LABELLED_DEGREES[name].search(row.text(column))
        if found is not None:
            return int(found.group(1) or found.group(2))
    return None


def _check_named_degrees(row: PublishedRow) -> None:
    """Refuse degrees listed without their names (:data:`_UNNAMED_DEGREES`): never one number."""
    for column in ("TP", "PP", "CP", "DP", "EP", "VPP"):
        text = row.text(column)
        for run in _UNNAMED_DEGREES.finditer(text):
            if not _THOUSANDS.fullmatch(run.group(0)):
                raise RowError(
                    f"{column} {text!r} lists degrees without their names; write each in its column "
                    "or with its label (TP8 PP8 CP2)"
                )


def _stated_degrees(row: PublishedRow) -> dict[str, int | None]:
    """Each degree the row states, ``None`` where it states none: a cell's leading number or
    label (:func:`lightspeed.sol.validation.published.degree_cell`), else the label or flag written
    in another parallel cell (:func:`_labelled_degree`). A DP cell is its degree only when it starts
    with a number (``ZeRO-1`` names sharding)."""
    _check_named_degrees(row)
    stated = {
        name: degree_cell(row, name.upper()) or _labelled_degree(row, name)
        for name in ("tp", "pp", "cp", "ep")
    }
    dp_text = row.text("DP")
    stated["dp"] = integer_cell(dp_text) if re.match(r"\s*\d", dp_text) else _labelled_degree(row, "dp")
    stated["etp"] = _labelled_degree(row, "etp")  # Megatron's expert tensor parallelism: "8 (ETP 4)"
    return stated


def _degrees(row: PublishedRow, num_gpus: int) -> _Degrees:
    """The row's degrees (:func:`_stated_degrees`; 1 where unstated, DP what fills the GPUs)."""
    stated = _stated_degrees(row)
    tp, pp, cp, ep, etp = (stated[name] or 1 for name in ("tp", "pp", "cp", "ep", "etp"))
    dp = stated["dp"]
    if dp is not None and tp * pp * cp * dp != num_gpus:
        dp = _dp_times_fsdp(row, tp * pp * cp, dp, num_gpus)
    if dp is not None and tp * pp * cp * dp != num_gpus:
        raise RowError(
            f"TP x PP x CP x DP = {tp} x {pp} x {cp} x {dp} = {tp * pp * cp * dp} GPUs, "
            f"not the {num_gpus} GPUs reported"
        )
    if dp is None:
        if num_gpus % (tp * pp * cp):
            raise RowError(f"{num_gpus} GPUs do not split into TP x PP x CP = {tp * pp * cp}")
        dp = num_gpus // (tp * pp * cp)
    free = tuple(name for name in ("tp", "pp", "cp", "dp") if stated[name] is None)
    return _Degrees(tp, pp, dp, ep, cp, etp, free)


# a shard group written with its size beside copies of it in the DP cell (BloombergGPT's ``ZeRO
# stage 3 over 128 GPUs`` with ``4 model copies``: MiCS)
_SHARD_GROUP: Final = re.compile(r"(?:zero|fsdp|shard)[^;]*?\bover\s+(\d+)\s+(?:gpus|ranks|devices)\b")


def _dp_times_fsdp(row: PublishedRow, model_parallel: int, dp: int, num_gpus: int) -> int:
    """The data-parallel size of a row that writes FSDP as a mesh axis of its own beside DP
    (MaxText's and JAX's ``ici_fsdp_parallelism`` x ``ici_data_parallelism``; both replicate the
    batch, and an axis of -1 takes the devices the others leave): DP x FSDP when that fills the
    GPUs, else the DP cell's."""
    sharding = row.text("sharding").lower()
    found = _FSDP_DEGREE.search(sharding) or _SHARD_GROUP.search(sharding)
    fsdp = int(found.group(1)) if found else 0
    if fsdp == -1 and num_gpus % (model_parallel * dp) == 0:  # MaxText's -1: every chip left over
        fsdp = num_gpus // (model_parallel * dp)
    return dp * fsdp if fsdp > 1 and model_parallel * dp * fsdp == num_gpus else dp


def _gpus_from_degrees(row: PublishedRow) -> tuple[int, str] | None:
    """(GPUs, note) of a row whose GPUs no cell counts but which states TP, PP, CP and DP: their
    product; ``None`` when one is unstated."""
    stated = _stated_degrees(row)
    degrees = [stated[name] for name in ("tp", "pp", "cp", "dp")]
    if any(degree is None for degree in degrees):
        return None
    product = math.prod(degree or 1 for degree in degrees)
    written = " x ".join(str(degree) for degree in degrees)
    return product, f"GPUs not reported: TP x PP x CP x DP = {written} = {product}"


def _row_gpus(catalog: Catalog, row: PublishedRow) -> tuple[int, str]:
    """(GPUs, note) of a training row: :func:`lightspeed.sol.validation.hardware_text.row_gpus`, or
    with no count in the GPUs and hardware cells the product of the degrees the row states, else one
    system the hardware cell names (:func:`one_named_system`) where the degrees it states fit in it."""
    try:
        return row_gpus(catalog, row)
    except RowError:
        if not is_missing(row.text("GPUs")):
            raise
        from_degrees = _gpus_from_degrees(row) or _one_system_holding_the_degrees(catalog, row)
        if from_degrees is None:
            raise
        return from_degrees


def _one_system_holding_the_degrees(catalog: Catalog, row: PublishedRow) -> tuple[int, str] | None:
    """:func:`one_named_system`, where the degrees the row states divide its GPUs (TP 8 PP 8 CP 2
    on a DGX H100 ran on more than one of them, how many the row does not say)."""
    system = one_named_system(catalog, row)
    degrees = _stated_degrees(row)
    stated = math.prod(degrees[name] or 1 for name in ("tp", "pp", "cp", "dp"))
    return system if system is not None and system[0] % stated == 0 else None


# sequence parallelism said to be off: ``no sequence parallelism``, ``without SP``,
# ``sequence_parallel=False``, ``SP off``, ``sequence parallel: disabled``, Megatron's ``--no-...``, and
# a ``TP all-reduce`` (TP without SP's all-gather and reduce-scatter)
_NO_SEQUENCE_PARALLEL: Final = re.compile(
    r"tp all-reduce|\b(?:no|without|w/o)[\s-]+(?:sequence[\s_-]*parallel\w*|sp)\b"
    r"|\b(?:sequence[\s_-]*parallel\w*|sp)[\s\"':=]*(?:false|off|disabled?)\b"
)


# TP said to run without overlap: torchtitan's ``Vanilla TP`` (its async-TP table's baseline), ``no
# async TP``, ``without AsyncTP``
_PLAIN_TP: Final = re.compile(r"vanilla[\s_-]*tp\b|\b(?:no|without|w/o)[\s_-]+async[\s_-]*tp\b")


# the MoE token dispatcher a run names: DeepEP (Megatron-Core's flex dispatcher with its deepep
# backend, torchtitan's and NeMo-AutoModel's DeepEP kernels), HybridEP, or the plain all-to-all
_ALL_TO_ALL_DISPATCHER: Final = re.compile(
    r"(?:dispatcher[\s_-]*(?:type)?[\s\"':=]*|--moe-token-dispatcher-type[\s=]+)all[\s_-]?to[\s_-]?all\b"
)
_DISPATCHERS: Final = (
    ("hybridep", re.compile(r"hybrid[\s_-]?ep\b")),
    ("deepep", re.compile(r"\bdeep[\s_-]?ep\b")),
    ("alltoall", _ALL_TO_ALL_DISPATCHER),
)


def stated_dispatcher(text: str) -> str | None:
    """The MoE token dispatcher the row's own words name (:data:`_DISPATCHERS`), or ``None``.

    >>> stated_dispatcher("fsdp 64 (fsdp2); kernels te + deepep")
    'deepep'
    >>> stated_dispatcher("--moe-token-dispatcher-type alltoall"), stated_dispatcher("ep 8")
    ('alltoall', None)
    """
    for name, pattern in _DISPATCHERS:
        if pattern.search(text):
            return name
    return None


def _stated_settings(text: str) -> dict[str, bool]:
    """What the row's own words change from its stack's defaults (no sequence parallelism:
    :data:`_NO_SEQUENCE_PARALLEL`; ``AsyncTP``, unless the figure is said to be plain TP's,
    :data:`_PLAIN_TP`, as a row from a page comparing the two says)."""
    settings = {}
    if _NO_SEQUENCE_PARALLEL.search(text):
        settings["sequence_parallel"] = False
    if _PLAIN_TP.search(text):
        settings["tp_overlap"] = False
    elif "asynctp" in text.replace(" ", "").replace("-", "") and "with asynctp" not in text:
        settings["tp_overlap"] = True
    return settings


SEARCHED_MICRO_BATCH_SIZES: Final = (1, 2, 4, 8, 16)
# Megatron-LM's ``--num-layers-per-virtual-pipeline-stage`` (layers per model chunk, not chunks)
_LAYERS_PER_VIRTUAL_STAGE: Final = re.compile(r"layers[\s_-]+per[\s_-]+virtual")
SEARCHED_VPPS: Final = (2, 3, 4, 6, 8)
SEARCHED_RECOMPUTES: Final = ("none", "selective", "partial", "full")
# a micro-batch written with its label, in the micro-batch or the global-batch cell: ``mbs 1``,
# ``MBS=1``, Megatron-LM's ``--micro-batch-size 1``, ``micro_batch_size: 1``, torchtitan's
# ``local_batch_size`` / ``Local batch size: 10`` (its JobConfig's training.local_batch_size, the
# batch each data-parallel rank runs a step)
_LABELLED_MICRO_BATCH: Final = re.compile(
    r"\b(?:mbs|micro[\s_-]*batch[\s_-]*size|local[\s_-]*batch[\s_-]*size)\b[\s=:]*(\d+)(?![\d.,])"
)
# a micro-batch written as its tokens (Fast-LLM's ``micro_batch_size`` counts tokens): ``8192 tokens``
_MICRO_BATCH_TOKENS: Final = re.compile(r"^\s*\d[\d,]*\s*k?\s*tokens?\b")
# FSDP's float8 all-gather (torchao's ``enable_fsdp_float8_all_gather``, torchtitan's float8
# config) and Megatron's ``--fp8-param-gather``: parameters gathered in one byte each
_FLOAT8_GATHER: Final = re.compile(r"(?:float8|fp8)[\s_-]*(?:all[\s_-]*gather|param[\s_-]*gather)")
_FLOAT8_GATHER_NOTE: Final = (
    "float8 parameter all-gather: lightspeed gathers parameters in 16 bits, twice the bytes the run sends"
)


def _micro_batch(row: PublishedRow, seq_len: int) -> int | None:
    """The micro-batch a row states (:func:`_written_micro_batch`), refused outside 1 to
    :data:`MAX_MICRO_BATCH` sequences (it may set the global batch too: a huge one would pass)."""
    micro = _written_micro_batch(row, seq_len)
    if micro is not None and not 1 <= micro <= MAX_MICRO_BATCH:
        raise RowError(
            f"micro_batch {row.text('micro_batch')!r} is {micro} sequences; "
            f"write a whole number from 1 to {MAX_MICRO_BATCH:,}"
        )
    return micro


MAX_MICRO_BATCH: Final = 65_536
# MaxText's ``per_device_batch_size``: sequences per JAX device, and a chip that software sees as
# several devices (TPU7x: two TensorCores without megacore, JAX's ``ChipVersion`` table) runs that
# many times as many
_PER_DEVICE_BATCH: Final = re.compile(r"per[\s_-]*device[\s_-]*batch[\s_-]*size")


def _per_device_micro_batch(
    row: PublishedRow, micro: int | None, accelerator: Accelerator | None
) -> tuple[int | None, str]:
    """(micro-batch per GPU or chip, note): a micro-batch written per device (MaxText's
    ``per_device_batch_size``) times the devices one ``accelerator`` package shows
    (``num_logical_devices``), else ``micro`` as written."""
    devices = accelerator.num_logical_devices if accelerator is not None else 1
    written = any(
        _PER_DEVICE_BATCH.search(row.text(cell).lower()) for cell in ("micro_batch", "global_batch")
    )
    if micro is None or devices == 1 or not written:
        return micro, ""
    assert accelerator is not None
    note = (
        f"per_device_batch_size counts devices, and a {accelerator.display_name} shows {devices}: "
        f"{micro} x {devices} = {micro * devices} sequences a chip"
    )
    return micro * devices, note


def _written_micro_batch(row: PublishedRow, seq_len: int) -> int | None:
    """The micro-batch a row writes: labelled (:data:`_LABELLED_MICRO_BATCH`) in its micro-batch
    or global-batch cell, else its tokens over the sequence length when the cell counts tokens
    (:data:`_MICRO_BATCH_TOKENS`, a whole number of sequences), else the micro-batch cell's number."""
    for column in ("micro_batch", "global_batch"):
        found = _LABELLED_MICRO_BATCH.search(row.text(column).lower())
        if found is not None:
            return int(found.group(1))
    cell = row.text("micro_batch")
    count = size_cell(cell) if _MICRO_BATCH_TOKENS.search(cell.lower()) else None  # 8k tokens: 8,192
    if count is not None:
        if count % seq_len:
            raise RowError(f"micro_batch {cell!r} is not a whole number of {seq_len}-token sequences")
        return count // seq_len
    return integer_cell(cell)


def _interleaving(row: PublishedRow, model: TransformerSpec, pp: int) -> tuple[tuple[int, ...], str]:
    """(interleaving depths, schedule): the VPP cell's depth, not the schedule's name
    (``interleaved 1F1B (v=6)`` is 6), else a depth labelled in another parallel cell (``PP8 VPP8``,
    ``VPP=8``), else every depth searched when the row says interleaved, else, with pipeline
    stages and a depth not reported (``n/r``, an empty cell), every depth and none (the fastest
    that fits, as for a micro-batch left unsaid), else 1 (``n/a``, ``-``: not used)."""
    vpp_text = row.text("VPP").lower()
    schedule = "dualpipe" if "dualpipe" in vpp_text else "1f1b"
    if is_missing(vpp_text):
        labelled = _labelled_degree(row, "vpp")
        if labelled:
            return (labelled,), schedule
        if "interleav" in row.text("PP").lower():
            return SEARCHED_VPPS, schedule
        unreported = pp > 1 and not _NOT_USED.match(vpp_text) and not _PLAIN_SCHEDULE.search(vpp_text)
        return ((1, *SEARCHED_VPPS) if unreported else (1,)), schedule
    vpp_number = re.sub(r"\b1f1b\b", "", vpp_text)
    fixed_vpp = integer_cell(vpp_number) if "yes" not in vpp_text else None
    if fixed_vpp and _LAYERS_PER_VIRTUAL_STAGE.search(vpp_text):
        # Megatron's --num-layers-per-virtual-pipeline-stage N: a stage's whole layers in chunks of N
        fixed_vpp = max(1, model.num_layers // (pp * fixed_vpp))
    if fixed_vpp:
        return (fixed_vpp,), schedule
    interleaved = ("yes" in vpp_text or "interleav" in vpp_text) and not _NOT_INTERLEAVED.search(vpp_text)
    return (SEARCHED_VPPS if interleaved else (1,)), schedule


# a VPP cell saying the column does not apply to the row (``n/a``, a dash): no interleaving
_NOT_USED: Final = re.compile(r"\s*(?:n/a|[-\u2013\u2014])\s*$")
# a VPP cell naming a schedule that does not interleave (``n/r (PipeDream-Flush)``, ``GPipe``)
_PLAIN_SCHEDULE: Final = re.compile(r"pipedream|gpipe")
# interleaving said to be off: ``non-interleaved``, ``no interleaving``, ``not interleaved``
_NOT_INTERLEAVED: Final = re.compile(r"\bnon[\s-]*interleav|\bno(?:t)?\s+interleav")


# Metrics a run's global batch does not set: rates per GPU or over the job (a step time, the hours
# or time to a token budget scale with it).
_BATCH_FREE_METRICS: Final = frozenset(
    {"tflop_per_s_per_gpu", "mfu", "tokens_per_s", "tokens_per_s_per_gpu", "samples_per_s", "pflop_per_s"}
)


def _unreported_global_batch(micro: int | None, degrees: _Degrees, metric: str | None) -> tuple[int, str]:
    """(global batch, note) for a row that leaves it out: one micro-batch per data-parallel rank
    (no gradient accumulation) where that cannot change the figure much, i.e. a rate without
    pipeline parallelism (no bubble to fill); the gradient sync and the optimizer step are then
    paid on every micro-batch, the slowest reading of the rate. With the micro-batch unreported too,
    the largest one searched sets the batch and the smaller ones accumulate up to it."""
    if metric not in _BATCH_FREE_METRICS:
        raise RowError(f"global_batch is not reported and the row's {metric or 'figure'} scales with it")
    if degrees.pp > 1:
        raise RowError(
            f"global_batch is not reported; with pipeline parallelism (PP {degrees.pp}) the bubble "
            "depends on it: write it in the global_batch cell"
        )
    if micro is None:
        # the micro-batches searched all divide the largest one's batch: the largest runs one per
        # DP rank, the others accumulate up to it
        batch = max(SEARCHED_MICRO_BATCH_SIZES) * degrees.dp
        return batch, (
            f"global batch and micro-batch not reported: the batch taken as {batch} (the largest "
            f"micro-batch searched, {max(SEARCHED_MICRO_BATCH_SIZES)}, x DP {degrees.dp}); without "
            "pipeline parallelism the rate barely depends on it"
        )
    batch = micro * degrees.dp
    return batch, (
        f"global batch not reported: taken as {batch} (micro-batch {micro} x DP {degrees.dp}, no "
        "gradient accumulation; without pipeline parallelism the rate barely depends on it, and "
        "syncing gradients on every micro-batch is its slowest reading)"
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
    global batch it leaves unsaid, :func:`_unreported_global_batch` (``metric``: the reading's key)."""
    degrees = _degrees(row, num_gpus)
    seq_len = _row_seq_len(row, model)
    micro, device_note = _per_device_micro_batch(row, _micro_batch(row, seq_len), accelerator)
    batch = _global_batch(row.text("global_batch"), degrees.dp, seq_len)
    batch_note = ""
    if batch is None:
        batch, batch_note = _unreported_global_batch(micro, degrees, metric)
        # the assumed batch holds without pipeline parallelism only: an unstated PP stays 1
        degrees = dataclasses.replace(degrees, free=tuple(name for name in degrees.free if name != "pp"))
    if batch < 1:
        raise RowError(
            f"global_batch {row.text('global_batch')!r} is less than one sequence of {seq_len} tokens"
        )
    vpps, schedule = _interleaving(row, model, degrees.pp)
    vpp_note = ""
    if degrees.pp == 1 and "pp" not in degrees.free and len(vpps) == 1 and vpps[0] > 1:
        vpp_note = f"VPP {vpps[0]} with PP 1: one pipeline stage has nothing to interleave; priced with vpp=1"
        vpps = (1,)
    recompute_text = row.text("recompute")
    recompute, recompute_note = ("", "") if is_missing(recompute_text) else _recompute(recompute_text)
    zero_stage, zero_note = zero_stage_of(row.text("sharding"), degrees.pp, stack)
    precision, precision_note = _precision(row.text("precision"), accelerator)
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
        fsdp_under_pipeline=degrees.pp > 1 and _is_fsdp(_stated_sharding(row.text("sharding"))),
        free_degrees=degrees.free,
        etp=degrees.etp,
        ep_dispatcher=stated_dispatcher(row.described()) if degrees.ep > 1 else None,
        **_stated_settings(row.described()),
    )
    gathers = _FLOAT8_GATHER_NOTE if _FLOAT8_GATHER.search(row.described()) else ""
    notes = (device_note, batch_note, precision_note, zero_note, recompute_note, vpp_note, gathers)
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
    stage, note = _fsdp_under_pipeline("FSDP", spec.pp, stack)
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
        bases = [{**base, **split} for split in splits]
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
    first = plans[0]
    notes.append(
        f"{stack.name}: attention {first.attention_impl}, dropout {first.dropout}, sequence parallel "
        f"{first.sequence_parallel}, DP overlap {first.dp_overlap}, TP overlap {first.tp_overlap}"
    )
    if len(plans) > 1:
        notes.append(
            f"unreported settings searched over {len(plans)} plans (micro-batch "
            f"{list(spec.micro_batch_sizes)}, vpp {list(spec.vpps)}, recompute {recomputes}): "
            "the fastest that fits"
        )
    return plans, notes


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
    batch, dp, pp = spec.global_batch_size, int(str(base["dp"])), int(str(base["pp"]))
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


TRAIN_METRICS_NEEDING_TOKENS = ("gpu_hours", "time_to_train_s")


# the most GPUs a "node" of a per-node figure may hold: a rack-scale NVLink domain (NVL576)
MAX_NODE_GPUS: Final = 576


def choose_reading(
    readings: tuple[Reading, ...], keys: tuple[str, ...], num_gpus: int, node_gpus: int
) -> Reading:
    """The first reading whose quantity the engine predicts (per-node values made per GPU).

    Readings of a token-budget metric without the budget in the text are skipped
    (a GPU-hours figure needs ``for 14.8T tokens``); aggregate PFLOP/s becomes TFLOP/s per GPU.
    """
    skipped = []
    for reading in readings:
        size = reading.gpus_per_scope
        if reading.scope == "node" and size is not None and not 1 <= size <= MAX_NODE_GPUS:
            raise RowError(
                f"metric {reading.metric_text!r} counts {size:,} GPUs a node: a node holds 1 to "
                f"{MAX_NODE_GPUS:,} (an NVL576 rack the most)"
            )
        reading = reading.per_gpu(node_gpus)
        if reading.value is None or reading.key not in keys:
            skipped.append(reading)
            continue
        if reading.key in TRAIN_METRICS_NEEDING_TOKENS and reading.num_tokens is None:
            skipped.append(reading)
            continue
        if reading.key == "pflop_per_s":
            return _replace_reading(
                reading, "tflop_per_s_per_gpu", reading.value / num_gpus, "aggregate / GPUs"
            )
        return reading
    texts = "; ".join(f"'{r.metric_text}'" for r in skipped) or "(empty)"
    needs_budget = [r for r in skipped if r.key in TRAIN_METRICS_NEEDING_TOKENS]
    if needs_budget and len(needs_budget) == len(skipped):
        raise RowError(
            "a GPU-hours or time-to-train row must name its token budget in the metric "
            "(e.g. 'for 14.8T tokens')"
        )
    reasons = [reason for r in skipped if (reason := not_predicted_reason(r.metric_text))]
    if reasons:
        raise RowError(f"metric {texts} is not predicted: {reasons[0]}")
    raise RowError(f"metric {texts} is not one lightspeed can predict ({', '.join(keys)})")


# The abbreviations torchtitan's metric log prints (``tps``, its older ``wps``): tokens per second
# per device (torchtitan/components/metrics.py: tokens / (time x the non-data-parallel size)).
_LOG_TOKEN_RATE: Final = re.compile(r"^\s*(?:tps|wps)\b(?!.*\b(?:total|global|aggregate|cluster|job)\b)")


def _log_rate_per_device(reading: Reading, stack: Stack) -> Reading:
    """A bare ``tps`` / ``wps`` of a torchtitan row is its log's rate per device, not the job's."""
    if (
        reading.key != "tokens_per_s"
        or not stack.name.startswith("torchtitan")
        or not _LOG_TOKEN_RATE.search(reading.metric_text.lower())
        or reading.value is None
    ):
        return reading
    return _replace_reading(
        reading,
        "tokens_per_s_per_gpu",
        reading.value,
        "torchtitan's log prints tps per device (tokens over time x the non-data-parallel size)",
    )


# a job's token rate is labelled so when a source means it (``total``, ``global``, ``aggregate``)
_JOB_RATE_WORDS: Final = re.compile(r"\b(?:total|global|aggregate|cluster|job|all\s+gpus|combined)\b")
# model FLOP/s as a share of the GPU's dense BF16 peak: below the first no training run reads (no
# job-level rate of the repository's 1,100 published rows falls under it); the second bounds what a
# per-GPU reading may imply
_IMPLAUSIBLE_MFU: Final = 0.05
_PLAUSIBLE_MFU: Final = (0.03, 1.0)


# FLOPs each token costs at the least: a training step's forward and backward matmuls (6 per active
# parameter), a served token's forward matmuls (2); attention only adds to them
TRAIN_FLOP_PER_TOKEN_PER_PARAM: Final = 6.0
SERVE_FLOP_PER_TOKEN_PER_PARAM: Final = 2.0


def check_below_peak(
    reading: Reading, flop_per_s_per_gpu: float | None, accelerator: Accelerator, flop_basis: str
) -> None:
    """Refuse a reading whose rate, at the fewest FLOPs the work can cost (``flop_basis`` says
    which), is more than one GPU's fastest dense peak in any floating-point format: no run reaches
    it, so the unit or the scope was misread (a job's rate under a per-GPU label, ``k`` for ``M``).
    ``flop_per_s_per_gpu`` is ``None`` where the reading is no rate."""
    peaks = [figure.dense_per_s for key, figure in accelerator.compute.items() if not key.startswith("int")]
    if flop_per_s_per_gpu is None or not peaks or flop_per_s_per_gpu <= max(peaks):
        return
    peak = max(peaks)
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' is {flop_per_s_per_gpu / peak:.3g}x one "
        f"{accelerator.name}'s fastest dense peak ({peak / 1e12:,.0f} TFLOP/s) at {flop_basis}: no run "
        "reaches that; check the unit and whether the figure is per GPU or the job's"
    )


def _training_flop_per_s_per_gpu(
    reading: Reading, model: TransformerSpec, num_gpus: int, seq_len: int
) -> float | None:
    """The FLOP/s per GPU a training reading implies at 6 FLOPs per active parameter per token
    (its own figure for TFLOP/s); ``None`` for a reading that is no rate."""
    value = reading.value
    if value is None:
        return None
    per_token = TRAIN_FLOP_PER_TOKEN_PER_PARAM * parameter_counts(model).active_params
    per_gpu_tokens = {
        "tokens_per_s": value / num_gpus,
        "tokens_per_s_per_gpu": value,
        "samples_per_s": value * seq_len / num_gpus,
        "samples_per_s_per_gpu": value * seq_len,
    }
    if reading.key == "tflop_per_s_per_gpu":
        return value * 1e12
    tokens = per_gpu_tokens.get(reading.key)
    return None if tokens is None else tokens * per_token


def _unlabelled_rate_per_gpu(
    reading: Reading, model: TransformerSpec, num_gpus: int, accelerator: Accelerator
) -> Reading:
    """A bare token rate (``tokens/sec``, no word that makes it the job's) that would put the job
    below 5% of its GPUs' dense BF16 peak in model FLOPs (6 x active parameters per token), but one
    GPU at a plausible share of it, is that GPU's rate: torchtitan's, torchao's and MaxText's
    tables print their logs' per-device rate under such a label (torchao's ``Median
    tokens/second`` of Llama 3 8B on 8 H100, 6,150: 3.7% of the job's peak, 30% of one GPU's)."""
    peak = accelerator.compute.get("bf16")
    if (
        reading.key != "tokens_per_s"
        or reading.value is None
        or num_gpus <= 1
        or peak is None
        or _JOB_RATE_WORDS.search(reading.metric_text.lower())
    ):
        return reading
    per_gpu_share = 6.0 * parameter_counts(model).active_params * reading.value / peak.dense_per_s
    low, high = _PLAUSIBLE_MFU
    if per_gpu_share / num_gpus >= _IMPLAUSIBLE_MFU or not low <= per_gpu_share <= high:
        return reading
    return _replace_reading(
        reading,
        "tokens_per_s_per_gpu",
        reading.value,
        f"'{reading.metric_text}' read per GPU: over the {num_gpus} GPUs it would be "
        f"{100 * per_gpu_share / num_gpus:.2g}% of their BF16 peak in model FLOPs, on one GPU "
        f"{100 * per_gpu_share:.0f}%",
    )


def _replace_reading(reading: Reading, key: str, value: float, note: str) -> Reading:
    data = reading.to_dict()
    data.update(key=key, value=value, scope="gpu", notes=(*reading.notes, note))
    return Reading(**data)


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
    full = not is_missing(cell) and _recompute(cell)[0] == "full"
    if "96-form" in joined:
        return "megatron", True, False, "FLOPs by Megatron's 96-form (recompute pass included)"
    if "72-form" in joined:
        return "megatron", False, "non-causal" not in joined, "FLOPs by Megatron's 72-form"
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


def registry_name(registry: ModelRegistry, model: TransformerSpec) -> str | None:
    """``model``'s registry name when it is the registry's model, else ``None`` (built from dims)."""
    try:
        return model.name if registry.get(model.name) == model else None
    except UserInputError:
        return None


def _row_seq_len(row: PublishedRow, model: TransformerSpec) -> int:
    """The sequence length the row's seq cell states, else the one the model was pre-trained at
    (Llama 3.1's 8,192, not the 131,072 RoPE scaling extends it to)."""
    return size_cell(row.text("seq"), model.pretraining_seq_len) or model.pretraining_seq_len


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
    stated = _stated_degrees(row)
    pipelined = (stated["pp"] or 1) > 1  # a pipeline's bubble hangs on its micro-batches per step
    per_gpu = bool(readings) and all(reading.key in _PER_GPU_METRICS for reading in readings)
    if stated["dp"] is not None or pipelined or not per_gpu:
        raise unread
    seq_len = _row_seq_len(row, model)
    micro = _micro_batch(row, seq_len)
    sequences = _global_batch(row.text("global_batch"), 1, seq_len)
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
        num_gpus, gpus_note = _row_gpus(catalog, row)
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
    reading = choose_reading(readings, (*METRICS, "pflop_per_s"), num_gpus, cluster.system.num_accelerators)
    reading = _log_rate_per_device(reading, stack)
    reading = _unlabelled_rate_per_gpu(reading, model, num_gpus, cluster.system.accelerator)
    assert reading.value is not None
    implied = _training_flop_per_s_per_gpu(reading, model, num_gpus, _row_seq_len(row, model))
    check_below_peak(reading, implied, cluster.system.accelerator, "6 FLOPs per active parameter per token")
    plan, plan_notes = read_plan(row, model, num_gpus, stack, cluster.system.accelerator, metric=reading.key)
    named = "names no framework" not in stack_note
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
    )


def training_setup(spec: TrainingRowSpec, catalog: Catalog, *, stack: Stack | None = None) -> RowSetup:
    """Cluster and candidate plans of a typed training row, on its own stack or on ``stack``."""
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
    )


def row_setup(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> RowSetup:
    """Model, cluster, candidate plans and metric of a training row of a table."""
    return training_setup(read_training_row(row, catalog, registry), catalog)
