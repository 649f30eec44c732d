"""Fit the few fitted numbers of the software-stack profiles, with leave-one-source-out CV.

Usage:
    python benchmarks/fit_efficiency.py [--table FILE.tsv ...] [--out benchmarks/results/fit_efficiency.json]
        [--write]

What is fitted (everything else is a cited kernel ceiling or a framework
default, ``sol/data/efficiency.toml`` and ``sol/data/stacks.toml``):

* one ``kernel_efficiency`` per training-stack group and per serving-stack
  group: the share of the kernel ceilings that stack sustains;
* one global ``overlap_contention`` for training;
* ``iteration_overhead_s`` of the 2023 TensorRT-LLM profile (its host time per
  iteration: no CUDA graphs then).

Each is fitted on the published rows of its profile alone by a coarse grid
then a fine one, minimizing the mean absolute log error (robust to one bad
row, symmetric in over/under-prediction). Rows come from the tables (by
default both ``published-dev.tsv`` and ``published-dev-2025.tsv``); a row's
*source* is the first two words of its ``source`` cell (``pytorch/torchtitan
benchmarks/llama3_h100_202412_torchtitan.md``, ``Narayanan et al.``).

Leave-one-source-out: for every source, everything is fitted again on the
other sources' rows and that source's rows are predicted; a profile left
without rows takes the median of the other profiles' values. The report gives
the fitted and the cross-validated error side by side, per row, per source,
per file, per kind, and which rows each profile was fitted on. ``--write``
writes the fitted values into ``stacks.toml`` and the CV residual quantiles
per family into ``sol/data/uncertainty.toml`` (the error bars of every
estimate).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.errors import LightspeedError
from lightspeed.sol.core.stacks import ServingStack, Stack
from lightspeed.sol.core.uncertainty import family_of, write_uncertainty
from lightspeed.sol.validation.infer_rows import inference_row_setup, predict_inference_setup
from lightspeed.sol.validation.published import PublishedRow, read_table
from lightspeed.sol.validation.rows import row_setup
from lightspeed.sol.validation.validate import predict_training_setup
from lightspeed.workload import ModelRegistry, load_models

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "validation"
STACKS_FILE = ROOT / "src" / "lightspeed" / "sol" / "data" / "stacks.toml"
COARSE = [round(0.30 + 0.05 * step, 3) for step in range(15)]  # 0.30 .. 1.00: never above the ceilings
CONTENTION = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
OVERHEAD_S = [0.0, 0.002, 0.005, 0.010, 0.015, 0.020, 0.030]


@dataclasses.dataclass
class Row:
    """One predictable published row: its setup and how to predict it under fitted values."""

    row: PublishedRow
    file: str
    source: str
    kind: str
    group: str
    family: str
    setup: Any
    cluster: Any = None
    kernel_group: str = ""

    def __post_init__(self) -> None:
        self.kernel_group = self.kernel_group or self.group


def source_key(text: str) -> str:
    """The first two words of a source cell: the document a row comes from."""
    return " ".join(text.split()[:2])


def _load_rows(
    tables: Sequence[Path], catalog: Catalog, models: ModelRegistry
) -> tuple[list[Row], list[str]]:
    rows, skipped = [], []
    for table in tables:
        for row in read_table(table):
            try:
                if row.kind == "train":
                    setup = row_setup(row, catalog, models)
                    assert setup.stack is not None
                    family = family_of("train", setup.model, setup.cluster.system.accelerator)
                    rows.append(
                        Row(
                            row,
                            table.name,
                            source_key(row.text("source")),
                            "train",
                            setup.stack.group,
                            family,
                            setup,
                        )
                    )
                elif row.kind == "infer":
                    setup, cluster = inference_row_setup(row, catalog, models)
                    assert setup.serving is not None
                    family = family_of("infer", setup.model, cluster.system.accelerator)  # type: ignore[attr-defined]
                    rows.append(
                        Row(
                            row,
                            table.name,
                            source_key(row.text("source")),
                            "infer",
                            setup.serving.group,
                            family,
                            setup,
                            cluster,
                            setup.serving.kernel_group,
                        )
                    )
            except LightspeedError as error:
                skipped.append(f"{row.row_id}: {error}")
    return rows, skipped


@dataclasses.dataclass
class Values:
    """The fitted numbers: kernel efficiency per group, overlap contention, the 2023 TRT-LLM overhead."""

    kernel: dict[str, float]
    contention: float
    overhead_s: dict[str, float]
    moe: dict[str, float] = dataclasses.field(default_factory=dict)
    caps: dict[str, float] = dataclasses.field(default_factory=dict)


def predict(row: Row, values: Values, fallback: float) -> float | None:
    """The row's prediction under ``values`` (``None`` if the engine refuses the row)."""
    kernel = values.kernel.get(row.kernel_group, fallback)
    moe = values.moe.get(row.group, 1.0)
    try:
        if row.kind == "train":
            stack: Stack = row.setup.stack.with_fitted(
                kernel_efficiency=kernel, overlap_contention=values.contention, moe_efficiency=moe
            )
            result = predict_training_setup(row.row, dataclasses.replace(row.setup, stack=stack))
        else:
            serving: ServingStack = dataclasses.replace(
                row.setup.serving,
                kernel_efficiency=kernel,
                iteration_overhead_s=values.overhead_s.get(row.group, 0.0),
                attention_dp_efficiency=moe,
            )
            result = predict_inference_setup(
                row.row, dataclasses.replace(row.setup, serving=serving), row.cluster
            )
    except LightspeedError:
        return None
    return result.predicted


def _loss(rows: Sequence[Row], values: Values, fallback: float) -> float:
    """Median absolute log error plus a quarter of the mean: the majority of a profile's rows
    set its value, one row the physics does not explain cannot drag it far."""
    errors = []
    for row in rows:
        predicted = predict(row, values, fallback)
        measured = row.setup.measured
        errors.append(abs(math.log(predicted / measured)) if predicted and predicted > 0 else 5.0)
    if not errors:
        return 0.0
    return statistics.median(errors) + 0.25 * sum(errors) / len(errors)


def _search(candidates: Sequence[float], loss: Callable[[float], float]) -> float:
    scored = [(loss(value), value) for value in candidates]
    return min(scored)[1]


def _refine(coarse: Sequence[float], step: float, loss: Callable[[float], float]) -> float:
    best = _search(coarse, loss)
    fine = [round(best + step * offset, 4) for offset in range(-4, 5) if 0.05 < best + step * offset <= 1.0]
    return _search(fine, loss)


MOE_GRID = [round(0.20 + 0.05 * step, 3) for step in range(17)]  # 0.20 .. 1.00


def _is_moe(row: Row) -> bool:
    return row.setup.model.moe is not None


def fit(rows: Sequence[Row], start: Values, passes: int = 2) -> Values:
    """Coordinate descent: each kernel group's efficiency on its dense rows (all its rows if it has
    none), each group's MoE efficiency on its MoE rows where dense rows pin the kernels, then the
    global contention."""
    values = dataclasses.replace(
        start, kernel=dict(start.kernel), overhead_s=dict(start.overhead_s), moe=dict(start.moe)
    )
    kernel_groups = sorted({row.kernel_group for row in rows})
    groups = sorted({row.group for row in rows})
    for _ in range(passes):
        pinned = set()
        for kernel_group in kernel_groups:
            sharing = [row for row in rows if row.kernel_group == kernel_group]
            dense = [row for row in sharing if not _is_moe(row)]
            if dense:
                pinned.add(kernel_group)

            def kernel_loss(
                value: float, key: str = kernel_group, chosen: list[Row] = dense or sharing
            ) -> float:
                return _loss(chosen, dataclasses.replace(values, kernel={**values.kernel, key: value}), 0.9)

            values.kernel[kernel_group] = _refine(COARSE, 0.0125, kernel_loss)
        for group in groups:
            mine = [row for row in rows if row.group == group]
            moe = [row for row in mine if _is_moe(row)]
            if moe and mine[0].kernel_group in pinned:

                def moe_loss(value: float, group: str = group, chosen: list[Row] = moe) -> float:
                    return _loss(chosen, dataclasses.replace(values, moe={**values.moe, group: value}), 0.9)

                values.moe[group] = _refine(MOE_GRID, 0.0125, moe_loss)
            if group == "trtllm-2023":

                def overhead_loss(value: float, group: str = group, chosen: list[Row] = mine) -> float:
                    return _loss(chosen, dataclasses.replace(values, overhead_s={group: value}), 0.9)

                values.overhead_s[group] = _search(OVERHEAD_S, overhead_loss)
        train = [row for row in rows if row.kind == "train"]

        def contention_loss(value: float, train: list[Row] = train) -> float:
            return _loss(train, dataclasses.replace(values, contention=value), 0.9)

        values.contention = _search(CONTENTION, contention_loss)
    return values


def _caps(rows: Sequence[Row], values: Values) -> dict[str, float]:
    """Per architecture, the highest kernel efficiency fitted for a training stack with rows on it."""
    caps: dict[str, float] = {}
    for row in rows:
        if row.kind == "train" and row.kernel_group in values.kernel:
            architecture = row.family.split("/")[-1]
            caps[architecture] = max(caps.get(architecture, 0.0), values.kernel[row.kernel_group])
    return caps


def _fallback(values: Values, kind_groups: set[str]) -> float:
    known = [value for group, value in values.kernel.items() if group in kind_groups]
    return statistics.median(known) if known else 0.9


def cross_validate(rows: Sequence[Row], full: Values) -> dict[str, float | None]:
    """Leave-one-source-out predictions, by row id."""
    predictions: dict[str, float | None] = {}
    for source in sorted({row.source for row in rows}):
        held = [row for row in rows if row.source == source]
        rest = [row for row in rows if row.source != source]
        values = fit(rest, full, passes=1)
        present = {row.group for row in rest}
        present_kernels = {row.kernel_group for row in rest}
        values.kernel = {group: value for group, value in values.kernel.items() if group in present_kernels}
        values.moe = {group: value for group, value in values.moe.items() if group in present}
        for row in held:
            kind_groups = {r.group for r in rest if r.kind == row.kind}
            kind_kernels = {r.kernel_group for r in rest if r.kind == row.kind}
            filled = dataclasses.replace(values, kernel=dict(values.kernel), moe=dict(values.moe))
            if row.kernel_group not in filled.kernel:
                filled.kernel[row.kernel_group] = _fallback(values, kind_kernels)
            if row.group not in filled.moe and row.group not in present:
                # a profile left without rows borrows the others' MoE factor; one that kept rows
                # but had none fitted (no dense rows to separate it from the kernel efficiency)
                # keeps 1.0, as in the full fit
                moes = [value for group, value in values.moe.items() if group in kind_groups]
                filled.moe[row.group] = statistics.median(moes) if moes else 1.0
            predictions[row.row.row_id] = predict(row, filled, 0.9)
    return predictions


def _summary(errors: Sequence[float]) -> dict[str, float | int | None]:
    absolute = sorted(abs(error) for error in errors)
    if not absolute:
        return {"n": 0, "median_abs_error": None, "p90_abs_error": None}
    p90 = absolute[min(len(absolute) - 1, math.ceil(0.9 * len(absolute)) - 1)]
    return {"n": len(absolute), "median_abs_error": statistics.median(absolute), "p90_abs_error": p90}


def _rel(predicted: float | None, measured: float) -> float | None:
    return None if predicted is None else predicted / measured - 1.0


def report(rows: Sequence[Row], values: Values, cv: dict[str, float | None]) -> dict[str, Any]:
    table = []
    for row in rows:
        fitted = predict(row, values, 0.9)
        measured = row.setup.measured
        table.append(
            {
                "id": row.row.row_id,
                "file": row.file,
                "source": row.source,
                "kind": row.kind,
                "profile": row.group,
                "family": row.family,
                "metric": row.setup.metric,
                "measured": measured,
                "fitted": fitted,
                "fitted_error": _rel(fitted, measured),
                "cv": cv.get(row.row.row_id),
                "cv_error": _rel(cv.get(row.row.row_id), measured),
            }
        )
    summary: dict[str, Any] = {}
    for label, key in (("kind", "kind"), ("file", "file"), ("source", "source"), ("profile", "profile")):
        for value in sorted({entry[key] for entry in table}):
            chosen = [entry for entry in table if entry[key] == value]
            summary[f"{label}={value}"] = {
                "fitted": _summary([e["fitted_error"] for e in chosen if e["fitted_error"] is not None]),
                "cv": _summary([e["cv_error"] for e in chosen if e["cv_error"] is not None]),
                "rows": [e["id"] for e in chosen],
            }
    return {"values": dataclasses.asdict(values), "rows": table, "summary": summary}


def write_values(values: Values) -> None:
    """Put the fitted numbers into stacks.toml (each profile's ``kernel_efficiency`` line)."""
    text = STACKS_FILE.read_text()
    text = re.sub(r"(?m)^overlap_contention = .*$", f"overlap_contention = {values.contention:g}", text)
    caps = re.search(r"(?ms)^\[kernel_efficiency_cap\]\n(.*?)(?=^\[|\Z)", text)
    if caps is not None:  # only that table: other tables key by architecture too
        body = caps.group(1)
        for architecture, cap in values.caps.items():
            body = re.sub(rf"(?m)^{architecture} = .*$", f"{architecture} = {cap:.4g}", body)
        text = text[: caps.start(1)] + body + text[caps.end(1) :]
    for table, name in re.findall(r"(?m)^\[(stack|serving)\.([\w.-]+)\]", text):
        block = re.search(rf"(?ms)^\[{table}\.{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", text)
        assert block is not None
        group = re.search(r'(?m)^fit_group = "([\w.-]+)"', block.group(1))
        key = group.group(1) if group else name
        kernel_group = re.search(r'(?m)^kernel_fit_group = "([\w.-]+)"', block.group(1))
        kernel_key = kernel_group.group(1) if kernel_group else key
        if kernel_key not in values.kernel:
            continue
        body = re.sub(
            r"(?m)^kernel_efficiency = .*$",
            f"kernel_efficiency = {values.kernel[kernel_key]:.4g}",
            block.group(1),
        )
        moe = values.moe.get(key, 1.0)
        field = "moe_efficiency" if table == "stack" else "attention_dp_efficiency"
        if re.search(rf"(?m)^{field} = ", body):
            body = re.sub(rf"(?m)^{field} = .*$", f"{field} = {moe:.4g}", body)
        else:
            body = re.sub(r"(?m)^(kernel_efficiency = .*)$", rf"\1\n{field} = {moe:.4g}", body)
        if key in values.overhead_s:
            body = re.sub(
                r"(?m)^iteration_overhead_s = .*$", f"iteration_overhead_s = {values.overhead_s[key]:g}", body
            )
        text = text[: block.start(1)] + body + text[block.end(1) :]
    STACKS_FILE.write_text(text)


def _print(result: dict[str, Any]) -> None:
    print("fitted values:", json.dumps(result["values"]))
    print(f"{'id':6} {'profile':24} {'measured':>12} {'fitted':>9} {'cv':>9}")
    for entry in result["rows"]:
        fitted = "-" if entry["fitted_error"] is None else f"{entry['fitted_error']:+.1%}"
        cv = "-" if entry["cv_error"] is None else f"{entry['cv_error']:+.1%}"
        print(f"{entry['id']:6} {entry['profile']:24} {entry['measured']:12.5g} {fitted:>9} {cv:>9}")
    for key, entry in result["summary"].items():
        if key.startswith(("kind=", "file=", "profile=")):
            f, c = entry["fitted"], entry["cv"]
            med = lambda s: "-" if s["median_abs_error"] is None else f"{s['median_abs_error']:.1%}"  # noqa: E731
            print(f"{key:40} n={f['n']:3} fitted median {med(f):>6}  cv median {med(c):>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, action="append")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--write", action="store_true", help="write the fitted values into the data files")
    parser.add_argument("--from-json", type=Path, help="write the values of an earlier --out file, no refit")
    args = parser.parse_args()
    if args.from_json:
        earlier = json.loads(args.from_json.read_text())
        _write(Values(**earlier["values"]), earlier["rows"])
        return
    tables = args.table or [SHARED / "published-dev.tsv", SHARED / "published-dev-2025.tsv"]
    started = time.perf_counter()
    rows, skipped = _load_rows(tables, load_catalog(), load_models())
    start = Values(kernel={}, contention=0.2, overhead_s={})
    values = fit(rows, start)
    values.caps = _caps(rows, values)
    cv = cross_validate(rows, values)
    result = report(rows, values, cv)
    result["skipped"] = skipped
    result["elapsed_s"] = time.perf_counter() - started
    _print(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.write:
        _write(values, result["rows"])


def _write(values: Values, rows: list[dict[str, Any]]) -> None:
    write_values(values)
    write_uncertainty(
        [(entry["family"], entry["metric"], entry["measured"], entry["cv"]) for entry in rows],
        source=f"benchmarks/fit_efficiency.py, leave-one-source-out residuals of {len(rows)} rows",
    )
    print(f"wrote {STACKS_FILE} and the uncertainty table")


if __name__ == "__main__":
    main()
