"""A training row's settings as frameworks spell them: sharding (:func:`zero_stage_of`),
recomputation (:func:`recompute_of`), precision (:func:`precision_of`), sequence parallelism,
AsyncTP and the MoE token dispatcher (:func:`stated_settings`, :func:`stated_dispatcher`). What a
row leaves unsaid is ruled in :mod:`lightspeed.sol.validation.rows`."""

from __future__ import annotations

import re
from typing import Final

from lightspeed.catalog import Accelerator
from lightspeed.sol.core.hardware import fp32_runs_on_tf32
from lightspeed.sol.core.stacks import Stack
from lightspeed.sol.train.plan import TRAINING_PRECISIONS
from lightspeed.sol.validation.published import format_keys, is_missing
from lightspeed.sol.validation.readings import RowError


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
    stated = stated_sharding(text)
    stage = _written_stage(stated)
    if stage is not None:
        return stage, f"sharding '{text}' -> ZeRO-{stage}"
    if _KEEPS_PARAMETERS.search(stated):
        # FSDP's SHARD_GRAD_OP, FSDP2's reshard_after_forward=False: parameters stay gathered
        # between forward and backward, gradients and optimizer state sharded
        return 2, f"sharding '{text}' -> ZeRO-2 (FSDP keeps parameters gathered)"
    if _REPLICATED.search(stated):
        return 0, f"sharding '{text}' -> ZeRO-0 (DDP: every rank keeps everything)"
    if is_fsdp(stated):
        stage, note = (
            fsdp_under_pipeline(text, pp, stack)
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
    if _ONLY_DEGREES.fullmatch(stated):  # the layout, read by train_degrees.stated_degrees
        return 1, f"sharding '{text}' gives parallel degrees and no sharding -> ZeRO-1, as if not reported"
    return 1, f"sharding '{text}' names nothing lightspeed reads -> ZeRO-1, as if not reported"


# a sharding cell that only writes parallel degrees (``TP8 PP1 DP8``, ``tp=4, pp=2, dp=8``, ``4-way TP,
# 2-way PP``): the run's layout, which the degrees' reader takes from it, and no sharding
_DEGREE_WORDS: Final = r"(?:(?:tp|pp|dp|cp|ep|etp|vpp)\s*[=:]?\s*\d+|\d+[\s-]*way\s+(?:tp|pp|dp|cp|ep)\b)"
_ONLY_DEGREES: Final = re.compile(rf"\s*{_DEGREE_WORDS}(?:[\s,;/x×+]*{_DEGREE_WORDS})*[\s,;.]*")


def stated_sharding(text: str) -> str:
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
FSDP_DEGREE: Final = re.compile(
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


def is_fsdp(lowered: str) -> bool:
    """Whether a lower-case sharding cell names full FSDP sharding (not ``FSDP=0``, not ZeRO-k):
    FSDP, FULL_SHARD, FSDP2's ``fully_shard``, torchtitan's ``data_parallel_shard_degree`` other
    than 1, or HSDP (full sharding within each replica group)."""
    if _written_stage(lowered) is not None:
        return False
    sized = FSDP_DEGREE.search(lowered)
    fsdp = ("fsdp" in lowered and not sized) or (sized is not None and int(sized.group(1)) not in (0, 1))
    named = ("full_shard", "full shard", "fully_shard", "fully shard", "hsdp", "hybrid_shard", "hybrid shard")
    return fsdp or any(word in lowered for word in named)


def fsdp_under_pipeline(text: str, pp: int, stack: Stack | None) -> tuple[int, str]:
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


def recompute_of(text: str) -> tuple[str, str]:
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


def precision_of(text: str, accelerator: Accelerator | None = None) -> tuple[str, str]:
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


def stated_settings(text: str) -> dict[str, bool]:
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
