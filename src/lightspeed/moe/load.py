"""Expert load: tokens routed to each expert of each MoE layer, and the files that hold it.

lightspeed's own file is JSON (``lightspeed moe`` and the recorder write it)::

    {
      "format": "lightspeed-expert-load",
      "schema_version": 1,
      "model": "mixtral-tiny",          # optional
      "top_k": 2,                       # experts per token, optional
      "num_steps": 16,                  # steps summed into the counts
      "window_steps": 16,               # the recorder's window, optional
      "layers": [
        {"name": "model.layers.0.mlp.gate", "counts": [812, 1290, ...]},
        ...
      ],
      "step_counts": [[[...], ...], ...]  # optional: [steps][layers][experts], adding up to counts
    }

``step_counts`` keeps each step's counts (the recorder's ``save(path, steps=True)``,
``moe synth --steps N``), so a load can be split in time: placed on the earlier
steps and scored on the later ones (:func:`split_steps`).

Files from other frameworks are read too:

* CSV in long form, one row per (layer, expert): a header naming a layer
  column (``layer``, ``layer_id``, ``layer_idx``), an expert column
  (``expert``, ``expert_id``, ``expert_idx``) and a count column (``count``,
  ``tokens``, ``load``, ``num_tokens``, or the first column starting with
  ``count``). SGLang's expert-distribution dump (``layer_id,expert_id,count``)
  is this form; missing rows are zero.
* CSV in wide form: one row per layer, one number per expert (an optional
  header row and an optional leading layer-name column).
* JSON: a bare ``[layers][experts]`` list (EPLB's ``weight``); an object with
  such a list under ``counts``, ``weight``, ``load``, ``expert_load`` or
  ``tokens_per_expert``; or an object mapping each layer name to its list.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lightspeed.datafile import load_json, read_text
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.files import check_output, write_failed
from lightspeed.moe.placement import as_load_array
from lightspeed.records import JsonDict, Record

FORMAT: Final = "lightspeed-expert-load"
SCHEMA_VERSION: Final = 1
MAX_LOAD_FILE_BYTES: Final = 64 * 2**20
MAX_EXPERTS: Final = 65_536
MAX_LAYERS: Final = 4_096
MAX_STEPS: Final = 100_000
LAYER_COLUMNS: Final = ("layer", "layer_id", "layer_idx", "layer_index")
EXPERT_COLUMNS: Final = ("expert", "expert_id", "expert_idx", "expert_index")
COUNT_COLUMNS: Final = ("count", "tokens", "load", "num_tokens")
TABLE_KEYS: Final = ("counts", "weight", "load", "expert_load", "tokens_per_expert")
# counts this close (relative) are the same numbers written another way (a CSV of six significant
# digits, 1234 as 1.234e3): two windows of real routing never agree this closely in every cell
SAME_COUNTS_RELATIVE: Final = 1e-6


@dataclass(frozen=True)
class ExpertLoad(Record):
    """Tokens routed to each expert of each MoE layer, summed over ``num_steps`` steps.

    ``counts[layer][expert]`` counts token-expert pairs (a token routed to
    ``top_k`` experts counts once at each). ``tokens_per_step`` is the moving
    average over the window (counts / steps). ``step_counts[step][layer][expert]``
    holds each step's counts when they were kept (empty otherwise); they add up to
    ``counts``.

    >>> load = ExpertLoad(counts=((3.0, 1.0), (2.0, 2.0)), layer_names=("0", "1"), num_steps=2)
    >>> load.num_layers, load.num_experts, load.tokens_per_step().tolist()
    (2, 2, [[1.5, 0.5], [1.0, 1.0]])
    """

    counts: tuple[tuple[float, ...], ...]
    layer_names: tuple[str, ...]
    model: str = ""
    top_k: int | None = None
    num_steps: int = 1
    window_steps: int | None = None
    source: str = ""
    step_counts: tuple[tuple[tuple[float, ...], ...], ...] = ()

    def __post_init__(self) -> None:
        total = as_load_array(self.counts)  # finite, >= 0, rectangular
        if len(self.layer_names) != len(self.counts):
            raise UserInputError(
                f"{len(self.layer_names)} layer names for {len(self.counts)} layers of counts"
            )
        if self.num_steps < 1:
            raise UserInputError(f"an expert load sums >= 1 steps (got {self.num_steps})")
        if self.step_counts:
            _check_steps(self.steps_array(), total, self.num_steps)

    @property
    def num_layers(self) -> int:
        """MoE layers."""
        return len(self.counts)

    @property
    def num_experts(self) -> int:
        """Routed experts per layer."""
        return len(self.counts[0])

    def array(self) -> npt.NDArray[np.float64]:
        """The counts as a ``[layers, experts]`` float array."""
        return np.asarray(self.counts, dtype=np.float64)

    def tokens_per_step(self) -> npt.NDArray[np.float64]:
        """Token-expert pairs per step, ``[layers, experts]``: the window's moving average."""
        return self.array() / self.num_steps

    def steps_array(self) -> npt.NDArray[np.float64]:
        """Each step's counts, ``[steps, layers, experts]`` (empty when they were not kept)."""
        return np.asarray(self.step_counts, dtype=np.float64)

    def same_counts(self, other: ExpertLoad) -> bool:
        """Whether ``other`` holds the same counts (the same layers x experts, every cell equal to
        :data:`SAME_COUNTS_RELATIVE`), whatever file format, layout or layer names either was read
        from: one window written twice is no later window.

        >>> load = expert_load_from_array([[6, 2, 4, 4]])
        >>> load.same_counts(expert_load_from_array([[6.0, 2.0, 4.0, 4.0]], layer_names=("gate",)))
        True
        >>> load.same_counts(expert_load_from_array([[6, 6, 2, 2]]))
        False
        """
        counts, others = self.array(), other.array()
        if counts.shape != others.shape:
            return False
        return bool(np.allclose(counts, others, rtol=SAME_COUNTS_RELATIVE, atol=0.0))


def _check_steps(steps: npt.NDArray[np.float64], total: npt.NDArray[np.float64], num_steps: int) -> None:
    """Per-step counts: one table per step, each the shape of ``total``, finite, >= 0, adding up to it."""
    if steps.ndim != 3 or steps.shape[1:] != total.shape:
        raise UserInputError(
            f"step counts must be [steps][{total.shape[0]} layers][{total.shape[1]} experts], "
            f"got shape {list(steps.shape)}"
        )
    if steps.shape[0] != num_steps:
        raise UserInputError(f"{steps.shape[0]} steps of counts for a load of {num_steps} steps")
    if not np.isfinite(steps).all() or (steps < 0).any():
        raise UserInputError("step counts must be finite and >= 0")
    if not np.allclose(steps.sum(axis=0), total, rtol=1e-9, atol=1e-6):
        raise UserInputError("the step counts do not add up to the counts")


def expert_load_from_array(
    counts: npt.ArrayLike,
    *,
    layer_names: Sequence[str] | None = None,
    model: str = "",
    top_k: int | None = None,
    num_steps: int = 1,
    window_steps: int | None = None,
    source: str = "",
    step_counts: npt.ArrayLike | None = None,
) -> ExpertLoad:
    """An :class:`ExpertLoad` from a ``[layers, experts]`` table (layers named 0, 1, ... by default);
    ``step_counts`` (``[steps, layers, experts]``) keeps each step's counts.

    >>> expert_load_from_array([[4, 0], [1, 3]]).layer_names
    ('0', '1')
    """
    array = as_load_array(counts)
    names = tuple(layer_names) if layer_names is not None else tuple(str(i) for i in range(array.shape[0]))
    steps = () if step_counts is None else _nested(np.asarray(step_counts, dtype=np.float64))
    return ExpertLoad(
        counts=tuple(tuple(float(value) for value in row) for row in array),
        layer_names=names,
        model=model,
        top_k=top_k,
        num_steps=num_steps,
        window_steps=window_steps,
        source=source,
        step_counts=steps,
    )


def _nested(steps: npt.NDArray[np.float64]) -> tuple[tuple[tuple[float, ...], ...], ...]:
    if steps.ndim != 3:
        raise UserInputError(f"step counts must be [steps][layers][experts], got {steps.ndim} dimensions")
    return tuple(tuple(tuple(row) for row in step.tolist()) for step in steps)


def split_steps(load: ExpertLoad, *, holdout_fraction: float) -> tuple[ExpertLoad, ExpertLoad]:
    """``load`` split in time: the earlier steps, and the last ``holdout_fraction`` of them (at least
    one each), each with its own counts and steps. Needs the per-step counts.

    >>> load = expert_load_from_array([[3, 1]], num_steps=2, step_counts=[[[2, 0]], [[1, 1]]])
    >>> [part.counts for part in split_steps(load, holdout_fraction=0.5)]
    [((2.0, 0.0),), ((1.0, 1.0),)]
    """
    if not 0.0 < holdout_fraction < 1.0:
        raise UserInputError(f"the holdout fraction must be between 0 and 1 (got {holdout_fraction:g})")
    if not load.step_counts:
        raise UserInputError(
            f"{load.source or 'the load'} has no per-step counts, only their sum over {load.num_steps} "
            "steps: record with ExpertLoadRecorder(...).save(path, steps=True), make one with "
            "moe synth --steps N, or give a later window's file with --holdout FILE"
        )
    steps = load.steps_array()
    if steps.shape[0] < 2:
        raise UserInputError("splitting a load in time needs at least 2 steps of counts")
    num_later = min(steps.shape[0] - 1, max(1, round(steps.shape[0] * holdout_fraction)))
    return _window(load, steps[:-num_later], "earlier"), _window(load, steps[-num_later:], "later")


def _window(load: ExpertLoad, steps: npt.NDArray[np.float64], which: str) -> ExpertLoad:
    return expert_load_from_array(
        steps.sum(axis=0),
        layer_names=load.layer_names,
        model=load.model,
        top_k=load.top_k,
        num_steps=steps.shape[0],
        window_steps=load.window_steps,
        source=f"{load.source} ({which} {steps.shape[0]} steps)" if load.source else f"{which} steps",
        step_counts=steps,
    )


def _number(value: object, path: Path, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise DataFileError(path, "expected a token count >= 0", field=where, value=value)
    return float(value)


def _row(values: object, path: Path, where: str) -> list[float]:
    if not isinstance(values, list) or not values:
        raise DataFileError(path, "expected a non-empty list of token counts", field=where, value=values)
    if len(values) > MAX_EXPERTS:
        raise DataFileError(path, f"more than {MAX_EXPERTS} experts", field=where)
    return [_number(value, path, f"{where}[{index}]") for index, value in enumerate(values)]


def _table(rows: Sequence[Sequence[float]], names: Sequence[str], path: Path, **fields: Any) -> ExpertLoad:
    if not rows:
        raise DataFileError(path, "no layers", fix="give one row of counts per MoE layer")
    if len(rows) > MAX_LAYERS:
        raise DataFileError(path, f"more than {MAX_LAYERS} layers")
    widths = {len(row) for row in rows}
    if widths == {0}:
        raise DataFileError(
            path, "the rows hold no expert counts", fix="give every layer one count per expert after its name"
        )
    if len(widths) > 1:
        raise DataFileError(
            path,
            f"layers have different numbers of experts ({', '.join(str(w) for w in sorted(widths))})",
            fix="give every layer one count per expert",
        )
    for name, row in zip(names, rows, strict=True):
        if not any(row):  # no tokens is no load at all, not an even one (its busiest over mean is 0/0)
            raise DataFileError(
                path,
                f"layer {name} recorded no tokens",
                fix="record a window in which tokens reach every MoE layer, or leave the layer out",
            )
    return expert_load_from_array(rows, layer_names=names, source=str(path), **fields)


def _own_format(data: Mapping[str, Any], path: Path) -> ExpertLoad:
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise DataFileError(
            path,
            "unsupported schema_version",
            field="schema_version",
            value=version,
            fix=f"write {SCHEMA_VERSION}",
        )
    layers = data.get("layers")
    if not isinstance(layers, list) or not layers:
        raise DataFileError(
            path, "expected a non-empty list of layers", field="layers", fix="see docs/moe.md"
        )
    names, rows = [], []
    for index, layer in enumerate(layers):
        if not isinstance(layer, Mapping):
            raise DataFileError(path, "expected an object with name and counts", field=f"layers[{index}]")
        name = layer.get("name", str(index))
        if not isinstance(name, str):
            raise DataFileError(path, "expected a string", field=f"layers[{index}].name", value=name)
        names.append(name)
        rows.append(_row(layer.get("counts"), path, f"layers[{index}].counts"))
    fields = _metadata(data, path)
    if data.get("step_counts") is not None:
        fields["step_counts"] = _steps(data["step_counts"], path)
    try:
        return _table(rows, names, path, **fields)
    except UserInputError as error:
        raise DataFileError(path, str(error), field="step_counts") from None


def _steps(value: object, path: Path) -> list[list[list[float]]]:
    if not isinstance(value, list) or not value or len(value) > MAX_STEPS:
        raise DataFileError(
            path, f"expected 1 to {MAX_STEPS} steps of [layers][experts] counts", field="step_counts"
        )
    steps = []
    for step, tables in enumerate(value):
        if not isinstance(tables, list) or not tables or len(tables) > MAX_LAYERS:
            raise DataFileError(path, "expected a [layers][experts] table", field=f"step_counts[{step}]")
        steps.append([_row(row, path, f"step_counts[{step}][{layer}]") for layer, row in enumerate(tables)])
    return steps


def _metadata(data: Mapping[str, Any], path: Path) -> JsonDict:
    fields: JsonDict = {}
    model = data.get("model")
    if model is not None:
        if not isinstance(model, str):
            raise DataFileError(path, "expected a string", field="model", value=model)
        fields["model"] = model
    for key in ("top_k", "num_steps", "window_steps"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise DataFileError(path, "expected a whole number >= 1", field=key, value=value)
        fields[key] = value
    return fields


def _json_load(data: Any, path: Path) -> ExpertLoad:
    if isinstance(data, Mapping) and data.get("format") == FORMAT:
        return _own_format(data, path)
    if isinstance(data, list):
        return _table([_row(row, path, f"[{i}]") for i, row in enumerate(data)], _names(len(data)), path)
    if isinstance(data, Mapping):
        for key in TABLE_KEYS:
            if isinstance(data.get(key), list):
                table = data[key]
                rows = [_row(row, path, f"{key}[{i}]") for i, row in enumerate(table)]
                return _table(rows, _names(len(rows)), path)
        if data and all(isinstance(value, list) for value in data.values()):
            return _table([_row(row, path, str(name)) for name, row in data.items()], list(data), path)
    raise DataFileError(
        path,
        "not an expert-load document",
        fix=f"write lightspeed's format, a [layers][experts] list, or an object with {TABLE_KEYS[0]!r} "
        "(see docs/moe.md)",
    )


def _names(count: int) -> list[str]:
    return [str(index) for index in range(count)]


def _column(header: list[str], names: tuple[str, ...], prefix: str | None = None) -> int | None:
    lowered = [name.strip().lower() for name in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    if prefix is not None:
        for index, name in enumerate(lowered):
            if name.startswith(prefix):
                return index
    return None


def _integer_cell(text: str, path: Path, line: int, what: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise DataFileError(path, f"{what} is not a whole number", line=line, value=text) from None
    if value < 0:
        raise DataFileError(path, f"{what} is negative", line=line, value=value)
    return value


def _count_cell(text: str, path: Path, line: int) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise DataFileError(path, "count is not a number", line=line, value=text) from None
    return _number(value, path, f"line {line}")


def _long_csv(
    rows: list[list[str]], columns: tuple[int, int, int], path: Path, num_experts: int | None
) -> ExpertLoad:
    layer_column, expert_column, count_column = columns
    cells: dict[int, dict[int, float]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(columns):
            raise DataFileError(path, "row has too few columns", line=line, value=",".join(row))
        layer = _integer_cell(row[layer_column], path, line, "layer")
        expert = _integer_cell(row[expert_column], path, line, "expert")
        if expert >= MAX_EXPERTS:
            raise DataFileError(path, f"expert id above {MAX_EXPERTS}", line=line, value=expert)
        per_layer = cells.setdefault(layer, {})
        per_layer[expert] = per_layer.get(expert, 0.0) + _count_cell(row[count_column], path, line)
    if not cells:
        raise DataFileError(path, "no rows of counts", fix="one row per layer and expert under the header")
    if len(cells) > MAX_LAYERS:
        raise DataFileError(path, f"more than {MAX_LAYERS} layers")
    width = max(max(per_layer) for per_layer in cells.values()) + 1
    if num_experts is not None:
        if width > num_experts:
            raise DataFileError(path, f"expert id {width - 1} is beyond the {num_experts} experts given")
        width = num_experts
    table = [[cells[layer].get(expert, 0.0) for expert in range(width)] for layer in sorted(cells)]
    return _table(table, [str(layer) for layer in sorted(cells)], path)


def _wide_csv(rows: list[list[str]], path: Path) -> ExpertLoad:
    """One row per layer (see :func:`_wide_header` for when the first row is a header and
    :func:`_wide_labelled` for when the first column names the layers)."""
    lines = [(line, row) for line, row in enumerate(rows, start=1) if any(cell.strip() for cell in row)]
    header = _wide_header(lines, path)
    body = lines[1:] if header is not None else lines
    labelled = _wide_labelled(header, [row for _, row in body])
    if header is not None and body:
        _check_header_width(header, body[0][1], labelled, path, lines[0][0])
    names, table = [], []
    for index, (line, row) in enumerate(body):
        cells = row[1:] if labelled else row
        names.append(row[0].strip() if labelled else str(index))
        table.append([_count_cell(cell, path, line) for cell in cells])
    return _table(table, names, path)


# first cells of a wide CSV's header row above a column of layer names (``""``: pandas' corner)
WIDE_LAYER_HEADINGS: Final = ("", *LAYER_COLUMNS, "layer_name", "name")


def _wide_header(lines: list[tuple[int, list[str]]], path: Path) -> list[str] | None:
    """The first row when it is a header, else ``None``. It is one when a cell after its first is
    text (expert names), when its first cell is empty (pandas' corner), or when its numbers are
    the expert ids 0..E-1 or 1..E and the file says so: its first cell is a layer heading
    (``layer``, ``layer_id``, ``name``...), or it is a text label above rows labelled with
    numbers, or the rows below it have one more cell (their layer names). A row of numbers that
    are not the ids in order is always a layer's counts; one that is, with none of these signs,
    could be either and is refused."""
    if len(lines) < 2:
        return None
    line, first = lines[0]
    cells = [cell.strip() for cell in first]
    if cells[0] == "" or any(not _numeric(cell) for cell in cells[1:]):
        return first
    text_corner = not _numeric(cells[0])
    if not _expert_ids(cells[1:] if text_corner else cells):
        return None  # a layer's counts
    body = [row for _, row in lines[1:]]
    if text_corner and (
        cells[0].lower() in WIDE_LAYER_HEADINGS or all(_numeric(row[0].strip()) for row in body)
    ):
        return first
    if not text_corner and all(len(row) == len(first) + 1 for row in body):
        return first
    raise DataFileError(
        path,
        "the first row reads both as expert ids (a header) and as a layer's counts",
        line=line,
        value=",".join(first),
        fix="start a header with 'layer' (layer,0,1,...) or name the experts (e0,e1,...); "
        "if the row is a layer's counts, put such a header above it",
    )


def _expert_ids(cells: list[str]) -> bool:
    """Whether ``cells`` are the numbers 0..E-1 or 1..E in order (expert ids, not counts)."""
    try:
        values = [float(cell) for cell in cells]
    except ValueError:
        return False
    return bool(values) and values in (
        [float(index) for index in range(len(values))],
        [float(index) for index in range(1, len(values) + 1)],
    )


def _wide_labelled(header: list[str] | None, body: list[list[str]]) -> bool:
    """Whether the first column holds layer names: text there, or a header that puts a layer
    heading (or pandas' empty corner) above it, or one cell fewer than the rows."""
    if not body:
        return False
    if not _numeric(body[0][0].strip()):
        return True
    if header is None:
        return False
    corner = header[0].strip()
    return (
        len(body[0]) == len(header) + 1
        or corner.lower() in WIDE_LAYER_HEADINGS
        or (not _numeric(corner) and _expert_ids([cell.strip() for cell in header[1:]]))
    )


def _check_header_width(header: list[str], row: list[str], labelled: bool, path: Path, line: int) -> None:
    """A header has a cell per column, or, above layer names, may leave out the corner."""
    allowed = {len(row), len(row) - 1} if labelled else {len(row)}
    if len(header) not in allowed:
        raise DataFileError(
            path,
            f"the header has {len(header)} cells but the rows have {len(row)}",
            line=line,
            fix="give the header one cell per expert (and one above the layer names, if any)",
        )


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv_load(text: str, path: Path, num_experts: int | None) -> ExpertLoad:
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as error:
        raise DataFileError(path, f"invalid CSV ({error})") from None
    if not rows:
        raise DataFileError(path, "file is empty", fix="write a header and one row per layer and expert")
    header = rows[0]
    columns = (
        _column(header, LAYER_COLUMNS),
        _column(header, EXPERT_COLUMNS),
        _column(header, COUNT_COLUMNS, prefix="count"),
    )
    if all(column is not None for column in columns):
        return _long_csv(rows, columns, path, num_experts)  # type: ignore[arg-type]
    return _wide_csv(rows, path)


def read_expert_load(path: Path, *, num_experts: int | None = None) -> ExpertLoad:
    """Read an expert-load file: lightspeed's JSON, or CSV/JSON from other frameworks (see the
    module docstring). ``num_experts`` pads a sparse long CSV whose last experts got no tokens.

    Raises :class:`~lightspeed.errors.DataFileError` naming the file, the line or field and the fix.
    """
    path = Path(path)
    if path.suffix.lower() in (".csv", ".tsv", ".txt"):
        text = read_text(path, max_bytes=MAX_LOAD_FILE_BYTES, what="expert-load file")
        if not text.strip():
            raise DataFileError(path, "file is empty", fix="write a header and one row per layer and expert")
        load = _csv_load(text.replace("\t", ","), path, num_experts)
    else:
        load = _json_load(load_json(path, max_bytes=MAX_LOAD_FILE_BYTES, what="expert-load file"), path)
    if num_experts is not None and load.num_experts != num_experts:
        raise DataFileError(
            path,
            f"{load.num_experts} experts per layer, not the {num_experts} expected",
            fix="record the model the prediction is for",
        )
    return load


def read_expert_loads(paths: Sequence[Path | str], *, num_experts: int | None = None) -> ExpertLoad:
    """Several ranks' expert-load files read (:func:`read_expert_load`) and added
    (:func:`combine_loads`). A file named twice, also as ``./load.json`` or through a link, is
    refused: its tokens would count twice."""
    seen: set[str] = set()
    for path in paths:
        resolved = os.path.realpath(path)  # Path.resolve raises on a symlink loop: reading says why
        if resolved in seen:
            raise DataFileError(Path(path), "the same file is named twice", fix="name each file once")
        seen.add(resolved)
    return combine_loads([read_expert_load(Path(path), num_experts=num_experts) for path in paths])


def _width_fix(first: ExpertLoad, other: ExpertLoad) -> str:
    """How to add loads of the same layers whose expert counts differ: a long CSV lists only the
    experts that got tokens, so a rank's file can be narrower; the model's expert count pads them."""
    if first.num_layers != other.num_layers:
        return ""
    widest = max(first.num_experts, other.num_experts)
    return (
        "; if they are one model's per-rank long CSVs (a CSV lists only the experts that got tokens), "
        f"give the model's experts per layer, at least {widest}: num_experts={widest} (--experts {widest})"
    )


def combine_loads(loads: Sequence[ExpertLoad]) -> ExpertLoad:
    """Several ranks' loads of the same layers and steps, added (each rank counts its own tokens).

    >>> a = expert_load_from_array([[1, 2]]); b = expert_load_from_array([[3, 0]])
    >>> combine_loads([a, b]).counts
    ((4.0, 2.0),)
    """
    if not loads:
        raise UserInputError("no expert loads to combine")
    first = loads[0]
    for other in loads[1:]:
        if (other.num_layers, other.num_experts) != (first.num_layers, first.num_experts):
            raise UserInputError(
                f"{other.source or 'a load'} has {other.num_layers} layers x {other.num_experts} experts, "
                f"{first.source or 'the first'} {first.num_layers} x {first.num_experts}: "
                f"they cannot be added{_width_fix(first, other)}"
            )
    if len(loads) == 1:
        return first
    total = sum((load.array() for load in loads), start=np.zeros((first.num_layers, first.num_experts)))
    shapes = {load.steps_array().shape for load in loads}
    kept = all(load.step_counts for load in loads) and len(shapes) == 1  # ranks of the same steps
    return expert_load_from_array(
        total,
        layer_names=first.layer_names,
        model=first.model,
        top_k=first.top_k,
        num_steps=max(load.num_steps for load in loads),
        window_steps=first.window_steps,
        source=" + ".join(load.source for load in loads if load.source),
        step_counts=sum(load.steps_array() for load in loads) if kept else None,
    )


def expert_load_document(load: ExpertLoad) -> JsonDict:
    """``load`` as lightspeed's JSON document (whole counts written as integers)."""
    document: JsonDict = {"format": FORMAT, "schema_version": SCHEMA_VERSION}
    if load.model:
        document["model"] = load.model
    if load.top_k is not None:
        document["top_k"] = load.top_k
    document["num_steps"] = load.num_steps
    if load.window_steps is not None:
        document["window_steps"] = load.window_steps
    document["layers"] = [
        {"name": name, "counts": _numbers(row)}
        for name, row in zip(load.layer_names, load.counts, strict=True)
    ]
    if load.step_counts:
        document["step_counts"] = [[_numbers(row) for row in step] for step in load.step_counts]
    return document


def _numbers(row: Sequence[float]) -> list[float | int]:
    """Whole counts as integers (shorter files), the rest as they are."""
    return [int(value) if float(value).is_integer() else value for value in row]


def write_expert_load(load: ExpertLoad, path: Path) -> Path:
    """Write ``load`` in lightspeed's JSON format, one layer per line (atomically: a reader never
    sees half a file)."""
    path = Path(path)
    check_output(path, what="expert load", example="load.json")
    document = expert_load_document(load)
    layers = document.pop("layers")
    steps = document.pop("step_counts", None)
    header = ",\n".join(f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in document.items())
    rows = ",\n".join(f"    {json.dumps(layer, allow_nan=False)}" for layer in layers)  # a layer per line
    text = "{\n" + header + ',\n  "layers": [\n' + rows + "\n  ]"
    if steps is not None:  # a step per line
        text += ',\n  "step_counts": [\n' + ",\n".join(f"    {json.dumps(step)}" for step in steps) + "\n  ]"
    text += "\n}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise write_failed(path, "expert load", error) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text + "\n")
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise write_failed(path, "expert load", error) from None
        raise
    return path


__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "ExpertLoad",
    "combine_loads",
    "expert_load_document",
    "expert_load_from_array",
    "read_expert_load",
    "split_steps",
    "write_expert_load",
]
