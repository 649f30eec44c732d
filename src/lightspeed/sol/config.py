"""One typed configuration per job: a training plan, a serving deployment, and their searches.

Each configuration is a frozen dataclass whose fields are the whole job: the
model and system, the plan's degrees and choices, the workload and the engine
options. Every other form is generated from these fields, so a field is
declared once:

* the command-line options of ``plan train``, ``plan infer``, ``search train`` and
  ``search infer`` (each field's metadata names its flags, help text and the
  option type of :mod:`lightspeed.cli.options` that bounds it);
* the keywords of the Python API (``TrainingConfig(model="llama-3-70b", ...)``
  passed to :func:`lightspeed.api.predict_training`);
* the ``"config"`` object of each command's ``--json`` output;
* a plan file (TOML, ``kind = "training-plan"``), which
  ``plan train --config plan.toml`` runs again; the JSON output is a plan file too.

Fields left ``None`` take the engine's defaults (the data-parallel size fills
the GPUs, the stack's overlaps apply). A file is validated like the command
line: unknown keys and wrong types are one error naming the key and the file.
Every numeric field is held to the bounds of its option type at construction
(:data:`lightspeed.limits.OPTION_BOUNDS`, the bounds of the CLI's option types), so ``tp=0`` from
Python is refused as ``--tp 0`` is; ``None`` in an optional field means "unset".

>>> config = TrainingConfig(model="llama-3-70b", system="dgx-h100", num_gpus=64, tp=8, pp=2,
...                         global_batch_size=256)
>>> config.training_plan(num_gpus=64).dp
4
>>> TrainingConfig.from_toml_text(config.to_toml()) == config
True
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, ClassVar, Final, TypeVar

import msgspec
import tomllib

from lightspeed.datafile import load_json, load_toml, toml_value, too_many_digits
from lightspeed.errors import DataFileError, InvalidPlanError, UserInputError
from lightspeed.files import check_input
from lightspeed.limits import OPTION_BOUNDS
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.stacks import PIPELINE_SCHEDULES, Stack, load_stack
from lightspeed.sol.train.plan import (
    ATTENTION_IMPLEMENTATIONS,
    EP_DISPATCHERS,
    RECOMPUTE,
    SCHEDULES,
    TRAINING_PRECISIONS,
    TrainingPlan,
    data_parallel_degree,
)
from lightspeed.sol.train.recipes import recipe_for
from lightspeed.units import parse_items
from lightspeed.workload import CONVENTIONS, MFU_CONVENTION, TransformerSpec
from lightspeed.workload.registry import HARDWARE_KINDS, MODEL_KIND

SCHEMA_VERSION: Final = 1
# the command that runs each kind of plan file (the ``KIND`` of each configuration)
_COMMANDS: Final = {
    "training-plan": "plan train",
    "training-search": "search train",
    "serving-plan": "plan infer",
    "serving-search": "search infer",
}
# the configuration that reads each kind from Python (``ls.run(ServingConfig.from_file(path))``)
_CLASSES: Final = {
    "training-plan": "TrainingConfig",
    "training-search": "TrainingSearchConfig",
    "serving-plan": "ServingConfig",
    "serving-search": "ServingSearchConfig",
}
C = TypeVar("C", bound="JobConfig")


def setting(
    default: Any,
    *,
    help: str,  # the word click uses
    flags: tuple[str, ...] = (),
    option_type: str = "",
    choices: tuple[str, ...] = (),
    negative_flag: str = "",
    required: bool = False,
    show_default: bool = True,
) -> Any:
    """A configuration field and how it appears on the command line.

    ``flags`` are the option's names (default ``--field-name``); ``option_type`` names a
    shared option type of :mod:`lightspeed.cli.options` (``"DEGREE"``) that parses and
    bounds the value; ``choices`` the allowed words; ``negative_flag`` an ``--no-...``
    flag that sets a ``True`` default to ``False``; ``required`` that the job cannot run
    without it (from the command line or a plan file).
    """
    metadata = {
        "help": help,
        "flags": flags,
        "option_type": option_type,
        "choices": choices,
        "negative_flag": negative_flag,
        "required": required,
        "show_default": show_default,
    }
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class JobConfig(Record):
    """Fields every job has: what model, on what system, with which calibration."""

    KIND: ClassVar[str] = ""
    # tables a plan file of this kind may hold for one command's own options (``[simulate]``: the
    # simulated workload and scheduler of ``lightspeed simulate``); the configuration sets them aside
    TABLES: ClassVar[tuple[str, ...]] = ()

    model: str | None = setting(
        None,
        help="Model name (see 'lightspeed model list'), or a path to a config.json, its folder or a "
        "model TOML.",
    )
    model_config: str | None = setting(
        None,
        flags=("--model-config",),
        help="Hugging Face config.json or model TOML file, instead of --model (--config takes one too).",
    )
    system: str | None = setting(
        None,
        flags=("--system", "--gpu"),
        required=True,
        help="System name, cluster spec (e.g. 9xdgx-h100@ib-ndr), cluster TOML file, "
        "or one GPU or MIG slice (--gpu h100-sxm/3g.40gb).",
    )
    num_gpus: int | None = setting(
        None, flags=("--gpus",), option_type="GPUS", help="GPUs to use (default: one node or rack)."
    )
    calibration: str | None = setting(
        None, help="Calibration profile from 'lightspeed calibrate' (default: family defaults)."
    )
    force_calibration: bool = setting(
        False,
        flags=("--force",),
        help="Apply a --calibration measured on another device anyway (the output says so).",
    )
    expert_load: tuple[str, ...] = setting(
        (),
        option_type="path",
        help="Recorded expert load (lightspeed JSON, SGLang CSV, ...; see docs/moe.md), repeatable: "
        "the per-layer imbalance after balancing replaces --expert-imbalance.",
    )
    expert_replicas: int | None = setting(
        None,
        option_type="PHYSICAL_EXPERTS",
        help="Physical experts with redundant replicas over the EP group (default: no replicas).",
    )

    def __post_init__(self) -> None:
        self._check_bounds()
        if self.model is not None and self.model_config is not None:
            raise UserInputError("give one of model or model_config (--model or --config), not both")
        if self.model_config is not None and not self.model_config.strip():
            raise UserInputError(
                "the model config path is empty: give --model-config PATH (a config.json or a model "
                "TOML file), or --model NAME (see 'lightspeed model list')"
            )

    def _check_bounds(self) -> None:
        """Hold each numeric field to its option type's bounds
        (:data:`lightspeed.limits.OPTION_BOUNDS`; ``None`` is "unset" where the field is
        optional); a NumPy integer is kept as an ``int``."""
        for item in self.settings():
            bounds = OPTION_BOUNDS.get(item.metadata.get("option_type", ""))
            value = getattr(self, item.name)
            if bounds is None or (value is None and item.default is None):
                continue
            if _takes_a_list(item):
                checked: object = _checked_list(item.name, value, bounds)
            else:
                checked = bounds.check(item.name, value)
            if checked != value or type(checked) is not type(value):
                object.__setattr__(self, item.name, checked)  # 2 -> 2.0 for a float field, [1, 3] -> (1, 3)

    # -- generated forms ------------------------------------------------------------------------

    @classmethod
    def settings(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The configuration fields, in declaration order (base fields first)."""
        return dataclasses.fields(cls)

    @classmethod
    def settings_by_name(cls) -> dict[str, dataclasses.Field[Any]]:
        """The configuration fields by name."""
        return {item.name: item for item in dataclasses.fields(cls)}

    def check_complete(self) -> None:
        """:class:`UserInputError` naming the first required field left empty."""
        if self.model is None and self.model_config is None:
            raise UserInputError(
                "name the model: --model NAME or --config config.json (or model = in the file)"
            )
        for item in self.settings():
            if item.metadata.get("required") and getattr(self, item.name) is None:
                flag = (item.metadata.get("flags") or (f"--{item.name.replace('_', '-')}",))[0]
                raise UserInputError(
                    f"{item.name} is required: give {flag} or {item.name} = ... in the plan file"
                )

    def changed(self: C, **changes: Any) -> C:
        """A copy with some fields replaced (checked as a new configuration)."""
        return dataclasses.replace(self, **changes)

    def to_file_dict(self) -> JsonDict:
        """What a plan file holds: ``schema_version``, ``kind`` and every field that is set."""
        values = {key: value for key, value in self.to_dict().items() if value is not None and value != []}
        return {"schema_version": SCHEMA_VERSION, "kind": self.KIND, **values}

    @staticmethod
    def command_for(kind: str) -> str:
        """The command that runs a plan file of ``kind`` (``"serving-plan"`` -> ``"plan infer"``).

        >>> JobConfig.command_for("training-search")
        'search train'
        """
        return _command_of(kind)

    def to_toml(self, *, command: str | None = None) -> str:
        """The configuration as a TOML plan file (``None`` fields left out: TOML has no null);
        ``command``: the command that runs it again (default: the plan or search command of its
        kind; ``simulate`` saves a serving plan too)."""
        rerun = command or _command_of(self.KIND)
        lines = [f"# lightspeed {self.KIND}: run it with 'lightspeed {rerun} --config FILE'"]
        lines.extend(f"{key} = {toml_value(value)}" for key, value in self.to_file_dict().items())
        return "\n".join(lines) + "\n"

    # -- reading --------------------------------------------------------------------------------

    @classmethod
    def from_mapping(cls: type[C], data: Mapping[str, Any], *, where: str = "plan file") -> C:
        """A configuration from plan-file keys; one error naming the key for anything unknown or
        mistyped (``schema_version`` and ``kind`` are checked when present)."""
        values = dict(data)
        _check_header(values, cls.KIND, where)
        for table in cls.TABLES:
            if not isinstance(values.pop(table, {}), Mapping):
                raise DataFileError(
                    Path(where), f"{table} must be a table ([{table}] in TOML, an object in JSON)"
                )
        names = [item.name for item in cls.settings()]
        for item in cls.settings():  # one number where a list is taken: an older file's acceptance = 0.7
            if _takes_a_list(item) and _is_number(values.get(item.name)):
                values[item.name] = [values[item.name]]
        for key in values:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; keys: {', '.join(names)}"
                raise DataFileError(Path(where), f"unknown key {key!r} for a {cls.KIND}{hint}")
        try:
            return msgspec.convert(values, type=cls, strict=True)  # "2" is no int: docs/plan-files.md
        except msgspec.ValidationError as error:
            if isinstance(error.__cause__, UserInputError):  # the types are right, a value is not
                raise type(error.__cause__)(f"{where}: {error.__cause__}") from None
            raise DataFileError(
                Path(where), f"{error}", fix="see 'docs/plan-files.md' for each key"
            ) from None

    @classmethod
    def from_toml_text(cls: type[C], text: str, *, where: str = "plan file") -> C:
        """A configuration from the text of a TOML plan file."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise DataFileError(Path(where), f"not valid TOML ({error})") from None
        except ValueError:  # a whole number of more digits than Python reads
            raise too_many_digits(Path(where), text, "TOML") from None
        return cls.from_mapping(data, where=where)

    @classmethod
    def from_file(cls: type[C], path: str | PathLike[str]) -> C:
        """A configuration from a plan file (a path or its text): TOML, or the JSON a command
        printed with ``--json``; a missing file, a folder or a device is one error naming it."""
        if not isinstance(path, str | PathLike):
            raise UserInputError(f"from_file takes a path to a plan file (got a {type(path).__name__})")
        found = Path(path)
        check_input(found, what="plan file (TOML, or a command's --json output)")
        return cls.from_mapping(read_plan_file(found), where=str(found))


def _takes_a_list(item: dataclasses.Field[Any]) -> bool:
    """Whether a numeric field takes one value or a list of them (its default a tuple, its bounds
    one number's: ``acceptance``, one rate per draft position)."""
    bounds = OPTION_BOUNDS.get(item.metadata.get("option_type", ""))
    return isinstance(item.default, tuple) and bounds is not None and not bounds.pair


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _checked_list(name: str, value: object, bounds: Any) -> tuple[Any, ...]:
    """``value`` (a number, or a list or tuple of them) as a tuple, each held to ``bounds``: a
    single value is named as the field, one of several by its index (``acceptance[1]``)."""
    values = (value,) if _is_number(value) else value
    if not isinstance(values, tuple | list) or not values:
        raise UserInputError(f"{name} must be a number or a non-empty list of numbers (got {value!r})")
    if len(values) == 1:
        return (bounds.check(name, values[0]),)
    return tuple(bounds.check(f"{name}[{index}]", item) for index, item in enumerate(values))


def read_plan_file(path: Path) -> JsonDict:
    """The keys of a plan file: a TOML file, or a command's ``--json`` output (its ``"config"``)."""
    if path.suffix.lower() == ".json":
        document = load_json(path, what="plan file")
        if isinstance(document, dict) and isinstance(document.get("config"), dict):
            return dict(document["config"])
        if isinstance(document, dict) and "kind" in document:
            return dict(document)
        raise DataFileError(path, 'no "config" object', fix="give the output of 'lightspeed plan ... --json'")
    return load_toml(path, what="plan file")  # bounded in size and depth, a BOM accepted


def plan_file_kind(path: Path) -> str | None:
    """The ``kind`` of a plan file, or ``None`` when ``path`` is something else (a model config).

    A ``.toml`` or ``.json`` file that cannot be read is an error here, so that a broken plan file is
    never taken for a model config."""
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        return None
    data = read_plan_file(path) if suffix == ".toml" else load_json(path, what="plan or model config")
    if suffix == ".json" and isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) and kind in _COMMANDS else None


def check_plan_kind(path: Path, plan_kind: str) -> None:
    """Refuse a TOML file given as a plan whose ``kind`` is missing, not a string, or no plan's
    (a model or hardware file passes: ``--config`` also takes a model TOML), naming the file and
    the key, before the options it would have filled are reported missing."""
    if path.suffix.lower() != ".toml":
        return  # JSON: a config.json has no kind; a --json output without "config" fails on read
    data = read_plan_file(path)
    kind = data.get("kind")
    if isinstance(kind, str) and (kind in _COMMANDS or kind in (MODEL_KIND, *HARDWARE_KINDS)):
        return
    fix = f'write kind = "{plan_kind}" for a plan file (or kind = "model" for a model TOML)'
    if "kind" not in data:
        problem = "kind = ... is missing"
    elif isinstance(kind, dict):
        problem = "[kind] is a table, not a string"
    elif not isinstance(kind, str):
        problem = f"kind = {kind!r} is not a string"
    else:
        problem = f"kind = {kind[:80]!r} is not a plan file kind ({', '.join(sorted(_COMMANDS))})"
    raise DataFileError(path, problem, fix=fix)


def _check_header(values: dict[str, Any], kind: str, where: str) -> None:
    version = values.pop("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION or isinstance(version, bool):
        shown = f"{version!r} (a string)" if isinstance(version, str) else repr(version)
        raise DataFileError(
            Path(where),
            f"schema_version = {shown} is not supported",
            fix=f"write schema_version = {SCHEMA_VERSION} (the integer, no quotes)",
        )
    found = values.pop("kind", kind)
    if found != kind:
        command = _COMMANDS.get(str(found))
        fix = (
            f"run it with 'lightspeed {command} --config {where}', or from Python read it with "
            f"{_CLASSES[str(found)]}.from_file"
            if command
            else ""
        )
        raise DataFileError(Path(where), f"is a {found!r} file, not a {kind!r}", fix=fix)


# --- training -----------------------------------------------------------------------------------

_FREE = " (default 1; searched when the global batch does not split over the data-parallel size)"


@dataclass(frozen=True)
class TrainingJob(JobConfig):
    """What every training prediction needs besides the plan's degrees."""

    global_batch_size: int | None = setting(
        None, flags=("--global-batch",), option_type="SEQUENCES", required=True,
        help="Sequences per optimizer step.",
    )  # fmt: skip
    seq_len: int = setting(
        4096, flags=("--seq",), option_type="SEQ_LEN", help="Tokens per sequence (8k = 8,192)."
    )
    precision: str = setting("bf16", choices=TRAINING_PRECISIONS, help="Training precision.")
    num_tokens: float | None = setting(
        None, flags=("--tokens",), option_type="TOKENS",
        help="Token budget for time-to-train and GPU-hours (e.g. 15T).",
    )  # fmt: skip
    tp_overlap: bool | None = setting(None, help="Hide TP communication behind GEMMs (default: the stack's).")
    dp_overlap: bool | None = setting(None, help="Hide DP traffic behind compute (default: the stack's).")
    stack: str | None = setting(
        None,
        help="Software-stack profile (kernels, overlaps, recompute policy; sol/data/stacks.toml): "
        "published-median (default), megatron-2021, megatron-core-2024, megatron-core-2025, "
        "torchtitan-2024, torchtitan-2026, deepseek-2024, ...",
    )
    sharp: bool = setting(False, help="In-network reduction on the scale-out switches (InfiniBand SHARP).")
    flop_convention: str = setting(
        MFU_CONVENTION, flags=("--convention",), choices=tuple(CONVENTIONS),
        help="FLOP-counting convention of the MFU shown (docs/workload.md); goodput report measures "
        "MFU in the same one by default.",
    )  # fmt: skip
    mtp_modules: int | None = setting(
        None, option_type="MTP_MODULES",
        help="Multi-token-prediction modules trained, on the last pipeline stage (default: the model's, "
        "1 for DeepSeek-V3; 0 trains none).",
    )  # fmt: skip
    ep_dispatcher: str | None = setting(
        None, choices=EP_DISPATCHERS,
        help="MoE token dispatcher (Megatron-Core's --moe-token-dispatcher-type alltoall, or flex with "
        "--moe-flex-dispatcher-backend deepep / hybridep: one copy of a token per destination node; "
        "default: the stack's).",
    )  # fmt: skip
    bf16_layers: tuple[int, int] | None = setting(
        None, option_type="BF16_LAYERS",
        help="Layers an FP8/FP4 run keeps in BF16 at the model's start and end, START:END (Megatron's "
        "--num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16; default: the model's published "
        "recipe, e.g. 0:14 for Nemotron 3 Super in NVFP4, see sol/data/training_recipes.toml; "
        "0:0 keeps none).",
    )  # fmt: skip

    def kept_in_bf16(self, model: TransformerSpec) -> tuple[int, int]:
        """``(start, end)``: the layers this job keeps in BF16, as given, else the model's published
        recipe in this precision (``sol/data/training_recipes.toml``), else none."""
        if self.bf16_layers is not None:
            return self.bf16_layers
        recipe = recipe_for(model.name, self.precision)
        return recipe.bf16_layers if recipe is not None else (0, 0)

    def trained_model(self, model: TransformerSpec) -> TransformerSpec:
        """``model`` with the multi-token-prediction modules this job trains."""
        if self.mtp_modules is None or self.mtp_modules == model.num_mtp_modules:
            return model
        return dataclasses.replace(model, num_mtp_modules=self.mtp_modules)


@dataclass(frozen=True)
class TrainingConfig(TrainingJob):
    """One training plan on one system: ``lightspeed plan train``."""

    KIND: ClassVar[str] = "training-plan"

    tp: int | None = setting(None, option_type="DEGREE", help=f"Tensor parallel size{_FREE}.")
    pp: int | None = setting(None, option_type="DEGREE", help=f"Pipeline parallel size{_FREE}.")
    dp: int | None = setting(
        None, option_type="DEGREE", help="Data parallel size (default: GPUs / (tp x pp x cp))."
    )
    ep: int = setting(1, option_type="DEGREE", help="Expert parallel size.")
    etp: int = setting(
        1, option_type="DEGREE",
        help="Expert tensor parallel size: GPUs each routed expert's weights are split over "
        "(Megatron-Core's --expert-tensor-parallel-size).",
    )  # fmt: skip
    cp: int | None = setting(None, option_type="DEGREE", help=f"Context parallel size{_FREE}.")
    vpp: int = setting(1, option_type="VPP", help="Virtual pipeline chunks per GPU.")
    zero_stage: int | None = setting(
        None, flags=("--zero-stage", "--zero"), option_type="ZERO_STAGE",
        help="ZeRO stage (3 = FSDP full sharding; default: the stack's own sharding: 1, the distributed "
        "optimizer, under Megatron-Core and DeepSpeed stacks; 3, full sharding, under FSDP stacks "
        "(torchtitan, llm-foundry), 2 there with --pp above 1, torchtitan's policy under a pipeline).",
    )  # fmt: skip
    schedule: str | None = setting(
        None,
        choices=SCHEDULES,
        help="Pipeline schedule (default: 1f1b, or interleaved when --vpp is above 1; 1f1b named with "
        "--vpp above 1 is refused: it runs one chunk per stage).",
    )
    micro_batch_size: int | None = setting(
        None,
        flags=("--micro-batch-size", "--micro-batch"),
        option_type="SEQUENCES",
        help=f"Sequences per micro-batch{_FREE}.",
    )
    recompute: str = setting("none", choices=RECOMPUTE, help="Activation recomputation.")
    sequence_parallel: bool | None = setting(
        None,
        help="Megatron sequence parallelism with tp > 1 (default: the stack's; docs/sol.md lists them).",
    )
    ep_overlap: bool | None = setting(None, help="Hide EP all-to-all (default: only with DualPipe).")
    expert_imbalance: float = setting(
        1.0, option_type="EXPERT_IMBALANCE",
        help="Busiest-GPU expert load factor (a quick what-if; --expert-load measures it).",
    )  # fmt: skip
    uneven_pipeline: bool = setting(False, help="Allow layers not divisible by pp x vpp.")
    attention_impl: str | None = setting(
        None,
        flags=("--attention",),
        choices=ATTENTION_IMPLEMENTATIONS,
        help="Attention kernel: flash (the device's best fused kernel), flash2 (FlashAttention-2), unfused "
        "(default: the stack's).",
    )
    check_fit: bool = setting(
        True,
        negative_flag="--no-fit-check",
        help="Show the estimate even if the plan does not fit in memory.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.expert_load and self.expert_imbalance != 1.0:
            raise UserInputError("give --expert-load or --expert-imbalance, not both")
        if self.schedule == "1f1b" and self.vpp > 1:
            raise InvalidPlanError(
                f"schedule 1f1b runs one chunk per pipeline stage and vpp={self.vpp} splits each stage "
                "into virtual chunks: give schedule interleaved (or leave the schedule unset), or vpp=1"
            )

    def training_plan(self, *, num_gpus: int, bf16_layers: tuple[int, int] = (0, 0)) -> TrainingPlan:
        """The :class:`TrainingPlan` on ``num_gpus`` GPUs (``dp`` fills them when not set; degrees
        not set are 1; the ZeRO stage not set is the stack's own, :func:`default_zero_stage`),
        keeping ``bf16_layers`` (:meth:`kept_in_bf16`) in BF16."""
        tp, pp, cp = self.tp or 1, self.pp or 1, self.cp or 1
        zero_stage = self.zero_stage
        if zero_stage is None:
            zero_stage = default_zero_stage(load_stack(self.stack), pipeline=pp > 1)
        return TrainingPlan(
            tp=tp,
            pp=pp,
            dp=data_parallel_degree(num_gpus, tp=tp, pp=pp, cp=cp, dp=self.dp),
            ep=self.ep,
            etp=self.etp,
            cp=cp,
            vpp=self.vpp,
            zero_stage=zero_stage,
            schedule=self.schedule or "1f1b",  # unset: 1F1B, interleaved when vpp > 1
            micro_batch_size=self.micro_batch_size or 1,
            global_batch_size=self.global_batch_size or 1,
            seq_len=self.seq_len,
            precision=self.precision,
            recompute=self.recompute,
            sequence_parallel=self.sequence_parallel,
            attention_impl=self.attention_impl,
            tp_overlap=self.tp_overlap,
            dp_overlap=self.dp_overlap,
            ep_overlap=self.ep_overlap,
            expert_imbalance=self.expert_imbalance,
            uneven_pipeline=self.uneven_pipeline,
            bf16_layers_start=bf16_layers[0],
            bf16_layers_end=bf16_layers[1],
            ep_dispatcher=self.ep_dispatcher,
        )

    @property
    def gpus_asked(self) -> int | None:
        """The GPUs the configuration names: ``num_gpus``, else ``dp x tp x pp x cp`` when ``dp`` is set."""
        if self.num_gpus is None and self.dp is not None:
            return self.dp * (self.tp or 1) * (self.pp or 1) * (self.cp or 1)
        return self.num_gpus

    def free_settings(self) -> tuple[str, ...]:
        """The plan settings left unset: searched when the global batch does not split over the
        data-parallel size (:func:`~lightspeed.sol.train.estimate.estimate_training`)."""
        names = ("tp", "pp", "cp", "micro_batch_size", "dp")
        return tuple(name for name in names if getattr(self, name) is None)


# The ZeRO stage a plan takes when none is given, the first of these its stack runs: optimizer-only
# sharding where the framework has it, else the most sharded stage it runs.
_DEFAULT_ZERO_ORDER: Final = (1, 3, 2, 0)


def default_zero_stage(stack: Stack, *, pipeline: bool) -> int:
    """The ZeRO stage a plan runs under ``stack`` when none is given: the framework's own sharding.

    ZeRO-1 where it shards the optimizer alone (Megatron-Core's distributed optimizer, DeepSpeed's
    ZeRO-1); else the most sharded stage its memory rules let it run: FSDP's full sharding
    (torchtitan's ``fully_shard``, llm-foundry's ``FULL_SHARD``), and under a pipeline
    (``pipeline``: pp above 1) torchtitan's default of keeping parameters gathered, ZeRO-2.

    >>> default_zero_stage(load_stack("megatron-core-2025"), pipeline=True)
    1
    >>> default_zero_stage(load_stack("torchtitan-2024"), pipeline=False)
    3
    >>> default_zero_stage(load_stack("torchtitan-2024"), pipeline=True)
    2
    """
    for stage in _DEFAULT_ZERO_ORDER:
        if stack.sharding_rule(stage, pipeline=pipeline).allowed:
            return stage
    raise AssertionError(f"stack {stack.name} runs no ZeRO stage")  # stacks.toml: every family runs ZeRO-0


@dataclass(frozen=True)
class TrainingSearchConfig(TrainingJob):
    """Every plan of a model on a system, ranked: ``lightspeed search train``."""

    KIND: ClassVar[str] = "training-search"

    top: int = setting(5, option_type="ROWS", help="Plans to show.")
    schedules: str | None = setting(
        None,
        help="Pipeline schedules to try, comma-separated (1f1b, gpipe, zb1p, dualpipe, dualpipev); "
        "interleaving is tried through vpp (default: 1f1b, and the stack's own schedule where it has "
        "one, e.g. dualpipe under deepseek-2024).",
    )
    allow_cross_domain_tp: bool = setting(False, help="Also try TP groups larger than the NVLink domain.")
    compare_plan: str | None = setting(
        None, help="A plan to rank against the search, e.g. 'tp=8,pp=16,vpp=6,mb=1,recompute=partial'."
    )

    def schedule_names(self) -> tuple[str, ...] | None:
        """The schedules to try, from the comma-separated text (``None`` unset: the stack's
        defaults, :func:`~lightspeed.sol.train.search.default_schedules`); an empty item or a
        schedule named twice is refused (:func:`~lightspeed.units.parse_items`)."""
        if self.schedules is None:
            return None
        return parse_items(self.schedules, "--schedules", example="1f1b,gpipe")


# keys of a plan written as text (``--compare-plan tp=8,pp=16,...``) -> TrainingPlan fields
PLAN_KEYS: Final = {
    "tp": "tp",
    "pp": "pp",
    "dp": "dp",
    "cp": "cp",
    "ep": "ep",
    "etp": "etp",
    "vpp": "vpp",
    "zero": "zero_stage",
    "mb": "micro_batch_size",
    "micro-batch": "micro_batch_size",
    "recompute": "recompute",
    "schedule": "schedule",
}


def parse_plan_text(text: str, num_gpus: int, *, stack: str | None = None) -> JsonDict:
    """Plan fields from ``tp=8,pp=16,cp=1,vpp=6,mb=1,recompute=partial`` (``dp`` defaults to the
    GPUs left over); one clear error naming the bad part otherwise. With ``stack`` (a profile
    name), a plan that names no ``zero`` takes that stack's own stage (:func:`default_zero_stage`:
    3 under FSDP, where ZeRO-1 does not exist); without it ``zero_stage`` is left to
    :class:`TrainingPlan` (1, the default stack's).

    >>> parse_plan_text("tp=8,pp=16,vpp=6,mb=1,recompute=selective", 16384)["dp"]
    128
    >>> parse_plan_text("tp=2", 8, stack="torchtitan-2024")["zero_stage"]
    3
    """
    fields: dict[str, Any] = {}
    parts = [piece.strip() for piece in text.split(",")]
    if not text.strip() or not all(parts):
        raise UserInputError(
            f"--compare-plan {text[:80]!r}: {'names no plan' if not text.strip() else 'an empty item'}; "
            "write key=value pairs separated by single commas, e.g. tp=8,pp=16,vpp=6,mb=1"
        )
    named: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        name = PLAN_KEYS.get(key.strip().lower())
        if not sep or name is None:
            raise UserInputError(
                f"--compare-plan: cannot read {part[:80]!r}; "
                f"write key=value pairs with keys {', '.join(PLAN_KEYS)}"
            )
        if name in named:  # mb and micro-batch are one setting
            first = named[name]
            twice = (
                f"{first} is given twice"
                if first == key.strip()
                else f"{first} and {key.strip()} are one setting"
            )
            raise UserInputError(f"--compare-plan {text[:80]!r}: {twice}; give each setting once")
        named[name] = key.strip()
        value = value.strip()
        if name in ("recompute", "schedule"):
            allowed = RECOMPUTE if name == "recompute" else PIPELINE_SCHEDULES
            if value not in allowed:
                raise UserInputError(
                    f"--compare-plan: {key.strip()}={value[:40]!r} is not one of {', '.join(allowed)}"
                )
            fields[name] = value
            continue
        if not value.isdigit() or int(value) < (0 if name == "zero_stage" else 1):
            raise UserInputError(f"--compare-plan: {key.strip()} must be a whole number >= 1, not {value!r}")
        fields[name] = int(value)
    if fields.get("vpp", 1) > 1 and fields.get("pp", 1) == 1:
        raise UserInputError(
            f"--compare-plan: vpp={fields['vpp']} splits each pipeline stage into virtual chunks and "
            "pp=1 has none: give pp=2 or more with it, or leave vpp out"
        )
    other = fields.get("tp", 1) * fields.get("pp", 1) * fields.get("cp", 1)
    if "dp" not in fields:
        if num_gpus % other:
            raise UserInputError(
                f"--compare-plan: tp x pp x cp = {other} does not divide the {num_gpus} GPUs"
            )
        fields["dp"] = num_gpus // other
    if stack is not None and "zero_stage" not in fields:
        fields["zero_stage"] = default_zero_stage(load_stack(stack), pipeline=fields.get("pp", 1) > 1)
    return fields


def _command_of(kind: str) -> str:
    return _COMMANDS.get(kind, "plan")


__all__ = [
    "JobConfig",
    "TrainingConfig",
    "TrainingJob",
    "TrainingSearchConfig",
    "default_zero_stage",
    "parse_plan_text",
    "plan_file_kind",
    "read_plan_file",
    "setting",
]
