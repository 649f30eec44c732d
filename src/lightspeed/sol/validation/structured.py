"""Structured validation rows: published runs as typed data, each with its source and publisher.

``sol/validation/data/published-runs.toml`` holds the published training and
inference runs lightspeed is validated and fitted on, one ``[[row]]`` each,
nothing left to read from free text (the schema is documented at the top of
that file and in ``docs/sol.md``)::

    schema_version = 1
    [[row]]
    id = "T45"
    kind = "train"                     # train | infer
    publisher = "Meta"                 # who ran and reported it: cross-validation leaves one out
    source = "Llama Team 2024, The Llama 3 Herd of Models, Table 4"
    url = "https://arxiv.org/abs/2407.21783"
    stack = "published-median"         # the software profile (sol/data/stacks.toml)
    metric = "tflop_per_s_per_gpu"     # the quantity, in ``unit``
    unit = "TFLOP/s"
    value = 430.0
    [row.model]                        # a registry model, or [row.model.architecture] + [.attention]
    name = "llama-3-405b"
    [row.hardware]                     # a catalog system, GPUs, and optionally fabric/variant
    system = "dgx-h100"
    num_gpus = 8192
    [row.plan]                         # training: TrainingPlan fields; a list is "not reported:
    tp = 8                             # searched over these, the fastest that fits wins"
    pp = 16
    dp = 64                            # omitted: the GPUs over tp x pp x cp
    vpp = [2, 3, 4, 6, 8]
    global_batch_size = 2048           # required, as are seq_len, micro_batch_size, recompute
    seq_len = 8192
    micro_batch_size = [1, 2, 4, 8, 16]
    recompute = ["none", "selective", "full"]
    [row.flops]                        # how the publisher counted FLOPs
    convention = "6N+attention"

Inference rows have ``[row.deployment]`` (InferencePlan fields) and
``[row.workload]`` (``input_tokens``, ``output_tokens``, ``concurrency`` or
``arrival_rate_per_s``, ``batching``) instead of a plan; a latency's percentile is read from
``metric_text`` (``TTFT p99``; none said: the mean), as a table's metric cell is. A row whose figure
no run reaches (the checks a table's row gets) or whose value is not a number above 0 is read with
that problem on its reading and refused alone; a schema error refuses the file, naming the row by
its id and position (``runs.toml: row 'S2': ...; field 'row[1].unit'``).
:func:`load_published_runs` turns each row into the typed spec the engines predict (the same one the
free-text TSV reader produces); :mod:`lightspeed.sol.validation.structured_writer` writes rows back
in this format.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeVar

from lightspeed.catalog import Accelerator, Catalog
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, InvalidPlanError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.serving_stacks import load_serving_stacks
from lightspeed.sol.core.stacks import load_stacks
from lightspeed.sol.infer.plan import INFERENCE_PRECISIONS, KV_PRECISIONS, InferencePlan, ServingLoad
from lightspeed.sol.train.plan import EP_DISPATCHERS
from lightspeed.sol.validation.hardware_text import HardwareSpec
from lightspeed.sol.validation.infer_rows import InferenceRowSpec
from lightspeed.sol.validation.plausibility import check_serving_figure, check_training_figure
from lightspeed.sol.validation.predicted_readings import TRAIN_METRICS_NEEDING_TOKENS
from lightspeed.sol.validation.readings import (
    STRUCTURED_ROW,
    Reading,
    RowError,
    read_cell,
    split_pieces,
    utilization_problem,
)
from lightspeed.sol.validation.rows import METRICS as TRAIN_METRICS
from lightspeed.sol.validation.rows import (
    FlopCount,
    PlanSpec,
    TrainingRowSpec,
    tokens_per_step,
)
from lightspeed.workload import ModelRegistry, TransformerSpec
from lightspeed.workload.flops import get_convention
from lightspeed.workload.model_file import parse_model

SCHEMA_VERSION: Final = 1
_Spec = TypeVar("_Spec", TrainingRowSpec, InferenceRowSpec)
_Built = TypeVar("_Built")
KINDS: Final = ("train", "infer")
BATCHING: Final = ("continuous", "static", "decode")
# The unit each metric's value is written in (base units but for TFLOP/s and GPU-hours).
METRIC_UNITS: Final = {
    "tflop_per_s_per_gpu": "TFLOP/s",
    "step_time_s": "s",
    "gpu_hours": "GPU-hours",
    "time_to_train_s": "s",
    "mfu": "fraction",
    "hfu": "fraction",
    "tokens_per_s": "tokens/s",
    "tokens_per_s_per_gpu": "tokens/s",
    "samples_per_s": "samples/s",
    "samples_per_s_per_gpu": "samples/s",
    "memory_per_gpu_bytes": "bytes",
    "output_tokens_per_s": "tokens/s",
    "output_tokens_per_s_per_gpu": "tokens/s",
    "output_tokens_per_s_per_user": "tokens/s",
    "total_tokens_per_s": "tokens/s",
    "total_tokens_per_s_per_gpu": "tokens/s",
    "input_tokens_per_s": "tokens/s",
    "input_tokens_per_s_per_gpu": "tokens/s",
    "requests_per_s": "requests/s",
    "ttft_s": "s",
    "tpot_s": "s",
    "itl_s": "s",
    "request_latency_s": "s",
}
_ROW_KEYS: Final = {
    "id",
    "kind",
    "publisher",
    "source",
    "url",
    "stack",
    "metric",
    "unit",
    "value",
    "metric_text",
    "value_text",
    "confidence",
    "derived",
    "converted_from",
    "notes",
    "model",
    "hardware",
    "plan",
    "flops",
    "deployment",
    "workload",
    "also",
}
_PLAN_KEYS: Final = {
    "tp",
    "pp",
    "dp",
    "ep",
    "etp",
    "cp",
    "zero_stage",
    "schedule",
    "global_batch_size",
    "seq_len",
    "precision",
    "micro_batch_size",
    "vpp",
    "recompute",
    "sequence_parallel",
    "tp_overlap",
    "ep_dispatcher",
    "fsdp_under_pipeline",
    "free_degrees",
}
_FREE_DEGREES: Final = ("tp", "pp", "cp", "dp")
_DEPLOYMENT_KEYS: Final = {
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "replicas",
    "precision",
    "kv_precision",
    "attention_weights",
    "effective_bits",
    "kv_replication",
    "max_batch",
}


@dataclass(frozen=True)
class PublishedRun(Record):
    """One structured validation row: a published run in typed fields, with where it comes from.

    ``publisher`` is who ran and reported the figure (cross-validation leaves each one
    out in turn); ``metric_text``/``value_text`` are the words and number as the source
    printed them; ``derived`` what was derived from them or checked against them (a peer's
    estimate, an implied step time); exactly one of ``training`` and ``inference`` is set.
    """

    id: str
    kind: str
    publisher: str
    source: str
    url: str
    metric_text: str = ""
    value_text: str = ""
    confidence: str = ""
    derived: str = ""
    converted_from: str = ""
    training: TrainingRowSpec | None = None
    inference: InferenceRowSpec | None = None

    @property
    def spec(self) -> TrainingRowSpec | InferenceRowSpec:
        """The typed run the engines predict."""
        spec = self.training if self.training is not None else self.inference
        assert spec is not None  # the loader sets one of them
        return spec

    @property
    def metric(self) -> str:
        """The quantity the row reports (a key of :data:`METRIC_UNITS`)."""
        return self.spec.metric

    @property
    def measured(self) -> float:
        """The published value, in the metric's unit."""
        return self.spec.measured

    @property
    def stack(self) -> str:
        """The software profile of the run (a training or a serving stack)."""
        return self.training.stack if self.training is not None else self.spec.serving  # type: ignore[union-attr]


def builtin_runs_file() -> Path:
    """The shipped structured rows (``sol/validation/data/published-runs.toml``)."""
    return Path(str(resources.files("lightspeed.sol.validation") / "data" / "published-runs.toml"))


def load_published_runs(
    *, catalog: Catalog, models: ModelRegistry, path: Path | None = None
) -> tuple[PublishedRun, ...]:
    """Every row of a structured rows file (default: the shipped one), checked and typed.

    Raises :class:`~lightspeed.errors.DataFileError` naming the row and field of the first
    problem (no row at all; an unknown model, system, stack or metric; a ``metric_text`` that names
    another quantity; degrees that do not multiply to the GPUs; a load the engines refuse).
    """
    file = path or builtin_runs_file()
    fields = Fields(str(file), load_toml(file))
    _require(fields, "schema_version", f"schema_version = {SCHEMA_VERSION}, the file's first line")
    version = fields.integer("schema_version", minimum=1)
    if version != SCHEMA_VERSION:
        raise DataFileError(file, f"unsupported schema_version {version}", field="schema_version")
    rows = fields.array_of_tables("row")
    if not rows:
        raise DataFileError(
            file,
            "no rows: the file has no [[row]] table",
            field="row",
            fix="add one [[row]] table per published run under schema_version (its fields: docs/sol.md)",
        )
    runs = [_named_run(row, catalog, models) for row in rows]
    first: dict[str, int] = {}
    for index, run in enumerate(runs):
        if run.id in first:
            raise DataFileError(
                file,
                f"the same id as row[{first[run.id]}]",
                field=f"{rows[index].prefix}id",
                value=run.id,
                fix="give each row an id of its own",
            )
        first[run.id] = index
    return tuple(runs)


def _named_run(row: Fields, catalog: Catalog, models: ModelRegistry) -> PublishedRun:
    """:func:`_run`, whose file error names the row by its id as well as its position
    (``runs.toml: row 'S1': missing field; field 'row[0].plan.seq_len'``)."""
    try:
        return _run(row, catalog, models)
    except DataFileError as error:
        row_id = row.data.get("id")
        if not isinstance(row_id, str) or not row_id.strip():
            raise
        named = DataFileError(error.path, f"row {row_id!r}: {str(error).removeprefix(f'{error.path}: ')}")
        named.field, named.line = error.field, error.line
        raise named from None


def _fail(
    fields: Fields, message: str, key: str, value: object = None, fix: str | None = None
) -> DataFileError:
    return DataFileError(fields.path, message, field=f"{fields.prefix}{key}", value=value, fix=fix)


def _effective_bits(deployment: Fields) -> float | None:
    """A deployment's ``effective_bits`` (a per-layer mixed checkpoint), checked against its
    precision where the file says it; ``None`` when absent."""
    if not deployment.has("effective_bits"):
        return None
    bits = deployment.number("effective_bits")
    try:
        InferencePlan(
            precision=_choice(deployment, "precision", INFERENCE_PRECISIONS, "bf16"), effective_bits=bits
        )
    except InvalidPlanError as error:
        raise _fail(deployment, str(error), "effective_bits", bits) from None
    return bits


def _check_keys(fields: Fields, allowed: set[str]) -> None:
    unknown = fields.unknown_keys(allowed)
    if unknown:
        raise _fail(fields, "unknown field", unknown[0], fix=f"use one of: {', '.join(sorted(allowed))}")


def _choice(fields: Fields, key: str, allowed: Iterable[str], default: str | None = None) -> str:
    value = fields.string(key, default)
    options = list(allowed)
    if value not in options:
        raise _fail(fields, f"must be one of {', '.join(options)}", key, value)
    return value


def _optional_choice(fields: Fields, key: str, allowed: Iterable[str]) -> str | None:
    return _choice(fields, key, allowed) if fields.has(key) else None


def _run(fields: Fields, catalog: Catalog, models: ModelRegistry) -> PublishedRun:
    _check_keys(fields, _ROW_KEYS)
    kind = _choice(fields, "kind", KINDS)
    metric, unit = _metric_and_unit(fields, METRIC_UNITS)
    _check_metric_text(fields, metric, kind)
    source = fields.string("source")
    common: dict[str, Any] = {
        "id": fields.string("id"),
        "kind": kind,
        "publisher": fields.string("publisher"),
        "source": source,
        "url": fields.string("url", ""),
        "metric_text": fields.string("metric_text", ""),
        "value_text": fields.string("value_text", ""),
        "confidence": fields.string("confidence", ""),
        "derived": fields.string("derived", ""),
        "converted_from": fields.string("converted_from", ""),
    }
    model, model_name = _model(_table(fields, "model"), models, source)
    hardware, num_gpus = _hardware(_table(fields, "hardware"), catalog)
    reading = _reading(metric, unit, _value(fields), common["metric_text"], common["value_text"])
    base: dict[str, Any] = {
        "row_id": common["id"],
        "model": model,
        "model_name": model_name,
        "hardware": hardware,
        "num_gpus": num_gpus,
        "metric": metric,
        "measured": reading.value,
        "assumptions": fields.strings("notes"),
        "reading": reading,
        "readings": (reading,),
    }
    accelerator = catalog.system(hardware.system).accelerator
    if kind == "train":
        stack = _choice(fields, "stack", load_stacks())
        base["also"], left_out = _also(fields, reading)
        base["assumptions"] = (*base["assumptions"], *left_out)
        training = _training(fields, base, stack, num_gpus)
        return PublishedRun(**common, training=_checked_training(training, accelerator))
    if fields.has("also"):
        raise _fail(fields, "other figures are read of training rows only", "also", fix="remove [[row.also]]")
    serving = _choice(fields, "stack", load_serving_stacks())
    inference = _inference(fields, base, serving, num_gpus)
    return PublishedRun(**common, inference=_checked_inference(inference, accelerator))


def _value(fields: Fields) -> float:
    """The row's ``value``: a number (anything else is the file's error); one that is no
    measurement (not finite, not above 0) is the row's (:func:`_reading` says why)."""
    value = fields.data.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return fields.number("value")  # raises: missing, or not a number
    return float(value)


def _with_problem(spec: _Spec, problem: str) -> _Spec:
    """``spec`` whose reading carries ``problem`` (the row is refused with it, the file is read)."""
    reading = spec.reading
    if not problem or reading is None or reading.problem:
        return spec
    refused = replace(reading, problem=problem)
    return replace(spec, reading=refused, readings=(refused,))


def _checked_training(spec: TrainingRowSpec, accelerator: Accelerator) -> TrainingRowSpec:
    """``spec``, refused (its reading's problem) where its figure is one no run reaches: the check
    a table's row gets (:func:`~lightspeed.sol.validation.plausibility.check_training_figure`)."""
    assert spec.reading is not None
    try:
        check_training_figure(
            spec.reading,
            spec.model,
            accelerator,
            spec.num_gpus,
            seq_len=spec.plan.seq_len,
            tokens_per_step=tokens_per_step(spec.plan),
            syntax=STRUCTURED_ROW,
        )
    except RowError as error:
        return _with_problem(spec, str(error))
    return spec


def _checked_inference(spec: InferenceRowSpec, accelerator: Accelerator) -> InferenceRowSpec:
    """``spec``, refused where its figure is one no run reaches, as a table's row is
    (:func:`~lightspeed.sol.validation.plausibility.check_serving_figure`)."""
    assert spec.reading is not None
    try:
        check_serving_figure(
            spec.reading,
            spec.model,
            accelerator,
            spec.plan,
            spec.load,
            num_gpus=spec.num_gpus,
            syntax=STRUCTURED_ROW,
        )
    except RowError as error:
        return _with_problem(spec, str(error))
    return spec


def _table(fields: Fields, key: str) -> Fields:
    table = fields.table(key)
    assert table is not None  # required tables raise instead
    return table


# How a [[row.also]] entry's figure is fixed: its own value, or the entry left out (an entry that
# is no measurement is left out, with this fix in the row's notes: the row's own figure is kept)
_ALSO_ENTRY: Final = replace(
    STRUCTURED_ROW,
    value="field 'value' of its [[row.also]] entry",
    omit="remove that entry where the source does not give the figure",
)


def _reading(
    metric: str,
    unit: str,
    value: float,
    metric_text: str,
    value_text: str,
    *,
    position: int = 1,
    count: int = 1,
) -> Reading:
    scope = "gpu" if "_per_gpu" in metric else "user" if metric.endswith("_per_user") else "job"
    syntax = STRUCTURED_ROW if position == 1 else _ALSO_ENTRY
    # the problem quotes the value as field 'value' holds it, the one to fix (not value_text)
    problem = (
        f"value {value:g} is not a number above 0; fix {syntax.value}: write the value the source "
        f"reports, or {syntax.omit}"
        if not (math.isfinite(value) and value > 0)
        else utilization_problem(metric, value, f"{value:g}", syntax=syntax)
    )
    return Reading(
        key=metric,
        value=value,
        metric_text=metric_text or metric,
        value_text=value_text or f"{value:g}",
        unit=unit,
        scope=scope,
        position=position,
        num_pieces=count,
        problem=problem,
    )


# The figures a training row may publish beside its own metric (a GPU-hours or time-to-train
# figure with the token budget it counts, ``num_tokens``)
ALSO_METRICS: Final = tuple(metric for metric in TRAIN_METRICS if metric in METRIC_UNITS)


def _metric_and_unit(fields: Fields, allowed: Iterable[str]) -> tuple[str, str]:
    """The table's ``metric`` (one of ``allowed``) and its ``unit``, which must be the metric's."""
    metric = _choice(fields, "metric", allowed)
    unit = fields.string("unit")
    if unit != METRIC_UNITS[metric]:
        raise _fail(fields, f"{metric} is written in {METRIC_UNITS[metric]}", "unit", unit)
    return metric, unit


# The quantity a metric key measures, whatever its scope or unit: the FLOP rates (TFLOP/s per GPU,
# the job's PFLOP/s) one, a step rate a step time's inverse, the token rates one (which side a
# rate counts is the metric's to say: a text's unsided ``tokens/s`` reads as the output side).
_SAME_QUANTITY: Final = {
    "pflop_per_s": "tflop_per_s",
    "steps_per_s": "step_time_s",
    "output_tokens_per_s": "tokens_per_s",
    "input_tokens_per_s": "tokens_per_s",
    "total_tokens_per_s": "tokens_per_s",
}


def _quantity(key: str) -> str:
    """What ``key`` measures, without its scope (:data:`_SAME_QUANTITY`)."""
    bare = key.removesuffix("_per_gpu").removesuffix("_per_user")
    return _SAME_QUANTITY.get(bare, bare)


def _key_scope(key: str) -> str:
    """The scope of a metric key: one user's, one GPU's or the job's."""
    return "user" if key.endswith("_per_user") else "gpu" if "_per_gpu" in key else "job"


def _agrees(metric: str, reading: Reading) -> bool:
    """Whether a piece of a row's ``metric_text``, read as a table's metric cell is (``reading``),
    can be ``metric``: the same quantity, and no scope that excludes the metric's (per user against
    per GPU or the job's; per GPU against the job's). A node's or several GPUs' figure may be the
    job's or one GPU's once divided, and a text that names no scope any."""
    if _quantity(reading.key) != _quantity(metric):
        return False
    own, said = _key_scope(metric), reading.scope
    if "user" in (own, said):
        return said in (own, "job") if own == "user" else False
    return not (own == "job" and said == "gpu")


def _check_metric_text(fields: Fields, metric: str, kind: str) -> None:
    """Refuse a ``metric_text`` none of whose ``;``-pieces that name a quantity (as the free-text
    reader reads a metric cell, :func:`~lightspeed.sol.validation.readings.read_cell`) agrees with
    ``metric`` (:func:`_agrees`): ``TPOT p99 (ms)`` over ``ttft_s``, ``tokens/s/GPU`` over a per-user
    rate. A text that names no quantity (``decode, batch 8``) is not checked."""
    text = fields.string("metric_text", "")
    named = [
        reading for piece in split_pieces(text) for reading in read_cell(piece, "1", kind=kind) if reading.key
    ]
    if not named or any(_agrees(metric, reading) for reading in named):
        return
    said = named[0]
    scope = "" if said.scope in ("job", _key_scope(said.key)) else f" (per {said.scope})"
    raise _fail(
        fields,
        f"metric_text names {said.key}{scope}, not the row's metric {metric}",
        "metric_text",
        text,
        fix="set metric (and unit) to the quantity the source reports, or write the source's own words "
        f"for {metric} in metric_text",
    )


def _also(fields: Fields, reading: Reading) -> tuple[tuple[Reading, ...], tuple[str, ...]]:
    """A training row's ``[[row.also]]`` entries: the other figures its source publishes (a peak
    memory beside a throughput), each in the unit of its metric, per GPU where the metric says so;
    and the notes on the entries left out. An entry whose value is no measurement (``nan``, 0, a
    utilization of 100% or more) is left out, its note saying why and how to fix it; the row's own
    figure is still predicted. An entry the schema refuses (an unknown metric, a value that is no
    number) refuses the file, as a row's field does."""
    entries = fields.array_of_tables("also")
    readings, left_out = [], []
    for position, entry in enumerate(entries, start=2):
        _check_keys(entry, {"metric", "unit", "value", "metric_text", "value_text", "num_tokens"})
        metric, unit = _metric_and_unit(entry, ALSO_METRICS)
        if metric in TRAIN_METRICS_NEEDING_TOKENS and not entry.has("num_tokens"):
            raise _fail(entry, f"a {metric} figure needs its token budget", "num_tokens")
        if metric == reading.key:
            raise _fail(entry, "the row's own metric again", "metric", metric, fix="give each figure once")
        _check_metric_text(entry, metric, "train")
        texts = entry.string("metric_text", ""), entry.string("value_text", "")
        figure = _reading(metric, unit, _value(entry), *texts, position=position, count=len(entries) + 1)
        if figure.problem:
            left_out.append(
                f"other figure {position} of {len(entries) + 1} ({metric}, {entry.prefix}value) left out, "
                f"the row's own figure kept: {figure.problem}"
            )
            continue
        if entry.has("num_tokens"):
            figure = replace(figure, num_tokens=_positive(entry, "num_tokens"))
        readings.append(figure)
    return tuple(readings), tuple(left_out)


def _model(fields: Fields, models: ModelRegistry, source: str) -> tuple[TransformerSpec, str | None]:
    """A registry model by name, or one described by ``architecture``/``attention`` tables (the
    keys of a model file, ``docs/workload.md``)."""
    if not fields.has("architecture"):
        _check_keys(fields, {"name"})
        name = fields.string("name")
        try:
            model = models.get(name)
        except UserInputError as error:
            raise _fail(fields, str(error), "name", name) from None
        return model, model.name
    _check_keys(fields, {"name", "display_name", "architecture", "attention"})
    data = {
        "schema_version": 1,
        "kind": "model",
        "name": fields.string("name"),
        "display_name": fields.string("display_name", fields.string("name")),
        "source": "row",
        "architecture": fields.data["architecture"],
        "attention": fields.data.get("attention", {}),
        "sources": {"row": {"title": source}},
    }
    return parse_model(Path(fields.path), data).spec, None


def _hardware(fields: Fields, catalog: Catalog) -> tuple[HardwareSpec, int]:
    _check_keys(
        fields,
        {"system", "num_gpus", "fabric", "memory_gib", "power_limit_w", "nics_per_node", "nics_per_gpu"},
    )
    system = fields.string("system")
    try:
        catalog.system(system)
    except UserInputError as error:
        raise _fail(fields, str(error), "system", system) from None
    fabric = fields.string("fabric", "") or None
    if fabric is not None and fabric not in catalog.links:
        raise _fail(fields, "not a link of the catalog", "fabric", fabric, fix="see 'lightspeed hw list'")
    memory = fields.number("memory_gib") if fields.has("memory_gib") else None
    power = fields.number("power_limit_w") if fields.has("power_limit_w") else None
    per_node, per_gpu = (
        _whole(fields, key, "8") if fields.has(key) else None for key in ("nics_per_node", "nics_per_gpu")
    )
    if per_node is not None and per_gpu is not None:
        raise _fail(fields, "give the NICs per node or per GPU, not both", "nics_per_gpu", per_gpu)
    spec = HardwareSpec(system, memory, power, fabric, nics_per_node=per_node, nics_per_gpu=per_gpu)
    return spec, _whole(fields, "num_gpus", "64")


def _require(fields: Fields, key: str, example: str) -> None:
    """Refuse a table that lacks the required ``key``, saying so (not that the absent value has
    the wrong type); ``example``: the fix, a line to add."""
    if not fields.has(key):
        raise _fail(fields, "missing field", key, fix=f"add {example}")


def _integers(fields: Fields, key: str, default: int | None = None) -> tuple[int, ...]:
    """One integer, or a list of them (a setting the source left unsaid: the values searched)."""
    if default is None:
        _require(
            fields,
            key,
            f"{key} = 1, or the values to search where the source does not say ({key} = [1, 2, 4])",
        )
    value = fields.data.get(key, default)
    values = value if isinstance(value, list) else [value]
    if not values or not all(
        isinstance(item, int) and not isinstance(item, bool) and item >= 1 for item in values
    ):
        raise _fail(fields, "expected a whole number >= 1 or a list of them", key, value)
    return tuple(values)


def _strings(fields: Fields, key: str, examples: tuple[str, str]) -> tuple[str, ...]:
    """One name, or a list of them (the values searched); ``examples``: two names, for the fix."""
    first, second = examples
    _require(
        fields,
        key,
        f'{key} = "{second}", or the names to search where the source does not say '
        f'({key} = ["{first}", "{second}"])',
    )
    value = fields.data.get(key)
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(item, str) and item for item in values):
        raise _fail(fields, "expected a name or a list of names", key, value)
    return tuple(values)


def _positive(fields: Fields, key: str) -> float:
    """A required number above 0."""
    value = fields.number(key)
    if not value > 0:
        raise _fail(fields, "must be above 0", key, value)
    return value


def _whole(fields: Fields, key: str, example: str) -> int:
    """A required whole number >= 1 (``missing`` where the table lacks it)."""
    _require(fields, key, f"{key} = {example}")
    return fields.integer(key, minimum=1)


def _dp(plan: Fields, num_gpus: int) -> int:
    """The plan's ``dp``, else (omitted) the GPUs over tp x pp x cp, as a table's row is read."""
    if plan.has("dp"):
        return plan.integer("dp", minimum=1)
    model_parallel = math.prod(plan.integer(name, 1, minimum=1) for name in ("tp", "pp", "cp"))
    if num_gpus % model_parallel:
        raise _fail(
            plan,
            f"dp is omitted and tp x pp x cp = {model_parallel} does not divide the row's {num_gpus} GPUs",
            "dp",
            fix=_gpus_fix(model_parallel, num_gpus),
        )
    return num_gpus // model_parallel


def _gpus_fix(model_parallel: int, num_gpus: int) -> str:
    """The fix for degrees that do not fill the row's GPUs."""
    if num_gpus % model_parallel == 0:
        return f"write dp = {num_gpus // model_parallel} (the {num_gpus} GPUs over tp x pp x cp), or omit it"
    return f"make tp x pp x cp divide hardware.num_gpus ({num_gpus}), or correct num_gpus"


def _free_degrees(fields: Fields) -> tuple[str, ...]:
    degrees = fields.strings("free_degrees")
    unknown = [name for name in degrees if name not in _FREE_DEGREES]
    if unknown:
        raise _fail(fields, f"free degrees are among {', '.join(_FREE_DEGREES)}", "free_degrees", unknown[0])
    return degrees


def _optional_boolean(fields: Fields, key: str) -> bool | None:
    return fields.boolean(key) if fields.has(key) else None


def _dispatcher(fields: Fields) -> str | None:
    """The run's MoE token dispatcher (``EP_DISPATCHERS``), when the row names one."""
    return (
        fields.choice("ep_dispatcher", EP_DISPATCHERS, "MoE dispatcher")
        if fields.has("ep_dispatcher")
        else None
    )


def _training(fields: Fields, base: dict[str, Any], stack: str, num_gpus: int) -> TrainingRowSpec:
    plan_fields, flops = _table(fields, "plan"), _table(fields, "flops")
    _check_keys(plan_fields, _PLAN_KEYS)
    _check_keys(flops, {"convention", "counts_recompute", "causal", "peak_flop_per_s"})
    plan = PlanSpec(
        tp=plan_fields.integer("tp", 1, minimum=1),
        pp=plan_fields.integer("pp", 1, minimum=1),
        dp=_dp(plan_fields, num_gpus),
        ep=plan_fields.integer("ep", 1, minimum=1),
        cp=plan_fields.integer("cp", 1, minimum=1),
        zero_stage=plan_fields.integer("zero_stage", 1),
        schedule=plan_fields.string("schedule", "1f1b"),
        global_batch_size=_whole(plan_fields, "global_batch_size", "2048"),
        seq_len=_whole(plan_fields, "seq_len", "8192"),
        precision=plan_fields.string("precision", "bf16"),
        micro_batch_sizes=_integers(plan_fields, "micro_batch_size"),
        vpps=_integers(plan_fields, "vpp", 1),
        recomputes=_strings(plan_fields, "recompute", ("selective", "full")),
        sequence_parallel=_optional_boolean(plan_fields, "sequence_parallel"),
        tp_overlap=_optional_boolean(plan_fields, "tp_overlap"),
        ep_dispatcher=_dispatcher(plan_fields),
        fsdp_under_pipeline=plan_fields.boolean("fsdp_under_pipeline", False),
        free_degrees=_free_degrees(plan_fields),
        etp=plan_fields.integer("etp", 1, minimum=1),
    )
    gpus = plan.tp * plan.pp * plan.cp * plan.dp
    if gpus != num_gpus:
        model_parallel = plan.tp * plan.pp * plan.cp
        raise _fail(
            plan_fields,
            f"tp x pp x cp x dp = {gpus}, not the row's {num_gpus} GPUs",
            "dp",
            plan.dp,
            fix=_gpus_fix(model_parallel, num_gpus),
        )
    convention = flops.string("convention", "6N+attention")
    try:
        get_convention(convention)
    except UserInputError as error:
        raise _fail(flops, str(error), "convention", convention) from None
    workload = fields.table("workload", required=False)
    num_tokens = (
        workload.number("num_tokens") if workload is not None and workload.has("num_tokens") else None
    )
    if base["metric"] in ("gpu_hours", "time_to_train_s") and num_tokens is None:
        raise _fail(fields, f"a {base['metric']} row needs its token budget", "workload.num_tokens")
    return TrainingRowSpec(
        **base,
        plan=plan,
        flops=FlopCount(convention, flops.boolean("counts_recompute", False), flops.boolean("causal", False)),
        stack=stack,
        num_tokens=num_tokens,
        peak_flop_per_s=flops.number("peak_flop_per_s") if flops.has("peak_flop_per_s") else None,
    )


def _built(fields: Fields, build: Callable[[], _Built], keys: Iterable[str]) -> _Built:
    """``build()``, where the engines refuse a value (:class:`InvalidPlanError`) the file's error
    naming the field of ``keys`` the message opens with (``concurrency must be ...``), else the
    first of them the table writes."""
    try:
        return build()
    except InvalidPlanError as error:
        message = str(error)
        written = [key for key in keys if fields.has(key)] or list(keys)
        opening = message.split(" ", 1)[0]
        key = opening if opening in written else written[0]
        raise _fail(fields, message, key, fields.data.get(key)) from None


_LOAD_KEYS: Final = ("input_tokens", "output_tokens", "concurrency", "arrival_rate_per_s")


def _load(workload: Fields) -> ServingLoad:
    """The row's load: its lengths and at most one of a concurrency and an arrival rate."""
    if workload.has("concurrency") and workload.has("arrival_rate_per_s"):
        raise _fail(
            workload,
            "give concurrency or arrival_rate_per_s, not both",
            "arrival_rate_per_s",
            workload.data.get("arrival_rate_per_s"),
            fix="keep the one the source reports: concurrency (requests in flight) or "
            "arrival_rate_per_s (requests sent per second)",
        )
    concurrency = workload.integer("concurrency", minimum=1) if workload.has("concurrency") else None
    rate = workload.number("arrival_rate_per_s") if workload.has("arrival_rate_per_s") else None
    input_tokens = workload.integer("input_tokens", minimum=1)
    output_tokens = workload.integer("output_tokens", minimum=1)
    return _built(
        workload,
        lambda: ServingLoad(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            concurrency=concurrency,
            arrival_rate_per_s=rate,
        ),
        _LOAD_KEYS,
    )


def _inference(fields: Fields, base: dict[str, Any], serving: str, num_gpus: int) -> InferenceRowSpec:
    deployment, workload = _table(fields, "deployment"), _table(fields, "workload")
    _check_keys(deployment, _DEPLOYMENT_KEYS)
    _check_keys(workload, {"input_tokens", "output_tokens", "concurrency", "arrival_rate_per_s", "batching"})
    settings: dict[str, Any] = {
        "tp": deployment.integer("tp", 1, minimum=1),
        "pp": deployment.integer("pp", 1, minimum=1),
        "ep": deployment.integer("ep", 1, minimum=1),
        "dp_attention": deployment.integer("dp_attention", 1, minimum=1),
        "replicas": deployment.integer("replicas", 1, minimum=1),
        "precision": _choice(deployment, "precision", INFERENCE_PRECISIONS, "bf16"),
        "kv_precision": _optional_choice(deployment, "kv_precision", KV_PRECISIONS),
        "attention_weights": _optional_choice(deployment, "attention_weights", INFERENCE_PRECISIONS),
        "effective_bits": _effective_bits(deployment),
        "kv_replication": deployment.boolean("kv_replication", False),
        "max_batch": deployment.integer("max_batch", minimum=1) if deployment.has("max_batch") else None,
    }
    plan = _built(deployment, lambda: InferencePlan(**settings), tuple(settings))
    gpus = plan.tp * plan.pp * plan.dp_attention * plan.replicas
    if gpus != num_gpus:
        raise _fail(
            deployment,
            f"tp x pp x dp_attention x replicas = {gpus}, not the row's {num_gpus} GPUs",
            "replicas",
            plan.replicas,
        )
    load = _load(workload)
    return InferenceRowSpec(
        **base, plan=plan, load=load, batching=_choice(workload, "batching", BATCHING), serving=serving
    )


__all__ = [
    "KINDS",
    "METRIC_UNITS",
    "SCHEMA_VERSION",
    "PublishedRun",
    "builtin_runs_file",
    "load_published_runs",
]
