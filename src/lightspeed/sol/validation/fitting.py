"""Fit the few fitted numbers of the software-stack profiles on the structured published rows.

Everything else the engines use is a cited kernel ceiling or a framework
default (``sol/data/efficiency.toml``, ``sol/data/stacks.toml``). Fitted:

* ``kernel_efficiency`` of the named training stacks: the share of the kernel
  ceilings a stack sustains in a whole step, one value per group of profiles
  that a :class:`Variant` says share it (one per framework lineage, one per era,
  or one for all; nested cross-validation chooses, :mod:`.crossval`);
* the default profile's ``kernel_efficiency``: not a best fit but the median
  published run: the value at which half of the training rows from 2023-26
  stacks, each predicted on the default profile, ran faster than predicted;
* ``overlap_contention``: one for every training stack;
* per serving group, ``kernel_efficiency`` (on its dense-model rows where it has
  some) and ``attention_dp_efficiency`` (on its attention-data-parallel rows);
  ``iteration_overhead_s`` of serving stacks from before CUDA graphs (2023).

Each value minimizes the interquartile mean plus a quarter of the mean of
``|log(predicted / measured)|`` over its rows (robust to one row the physics
does not explain, symmetric in over- and under-prediction), on a grid of 0.05
refined to 0.0125, never above the ceilings (1.0). The interquartile mean, not
the median: a median jumps from one row to the next as a value moves, so the
best value jumped too (0.7875 or 0.8375 for the named training stacks as four
of 40 rows moved by a few percent, docs/benchmarks.md); the mean of the middle
half is as robust to the worst rows and moves smoothly. Predictions are cached
by row and values: the grids repeat across folds.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from lightspeed.catalog import Catalog, Cluster
from lightspeed.errors import LightspeedError
from lightspeed.records import Record
from lightspeed.sol.core.serving_stacks import ServingStack, load_serving_stacks
from lightspeed.sol.core.stacks import Stack, caps_off, default_stack_name, load_stack, load_stacks
from lightspeed.sol.core.uncertainty import family_name, speed_residual
from lightspeed.sol.validation.infer_predict import (
    InferenceRowSetup,
    inference_setup,
    predict_inference_setup,
)
from lightspeed.sol.validation.predict_runs import label_of
from lightspeed.sol.validation.rows import RowSetup, training_setup
from lightspeed.sol.validation.structured import PublishedRun
from lightspeed.sol.validation.validate import predict_training_setup

KERNEL_GRID: Final = tuple(round(0.30 + 0.05 * step, 4) for step in range(15))  # 0.30 .. 1.00
# Attention-DP pace, 0.20 .. 1.00: its loss over six rows has basins narrower than 0.05 (the
# report names the rival), so the coarse grid is twice as fine as the kernels'.
ADP_GRID: Final = tuple(round(0.20 + 0.025 * step, 4) for step in range(33))
CONTENTION_GRID: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
# Host time per iteration: half-millisecond steps where a batch-1 decode step lives (3-10 ms), so
# the fit is not forced to choose between none and 2 ms. Never none: the profiles whose host time
# is fitted (the 2023 runtimes, _has_host_overhead) run a serial step loop that synchronizes on
# each step before it samples, checks stop conditions and sets up the next (their launch_source in
# sol/data/stacks.toml), so every step pays some host time; the grid starts at a quarter of a
# millisecond. (With 0 allowed, the four rows that fit it moved between 0 and 0.5 ms as other
# costs moved, a coin flip on four rows the held-out tables read as real host time.)
OVERHEAD_GRID_S: Final = (
    0.00025,
    0.0005,
    0.001,
    0.0015,
    0.002,
    0.003,
    0.004,
    0.005,
    0.0075,
    0.010,
    0.015,
    0.020,
    0.030,
)
FINE_STEP: Final = 0.0125
MISS_PENALTY: Final = 5.0  # |log error| charged for a row the engine refuses under some values
START_CONTENTION: Final = 0.2
# Serving stacks of these years ran without CUDA graphs or overlapping schedulers: their host
# time per iteration is a fitted number; later stacks hide it.
HOST_OVERHEAD_TO_YEAR: Final = 2023


@dataclass(frozen=True)
class FitRow:
    """One structured row ready to be predicted under fitted values: its setup on its own profile
    and, for a training row of a 2023-26 stack, on the default profile too."""

    run: PublishedRun
    family: str
    setup: RowSetup | InferenceRowSetup
    default_setup: RowSetup | None = None
    cluster: Cluster | None = None

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def kind(self) -> str:
        return self.run.kind

    @property
    def publisher(self) -> str:
        return self.run.publisher

    @property
    def profile(self) -> str:
        return self.run.stack

    @property
    def metric(self) -> str:
        return self.run.metric

    @property
    def measured(self) -> float:
        return self.run.measured

    @property
    def dense(self) -> bool:
        return self.setup.model.moe is None

    @property
    def attention_dp(self) -> bool:
        return isinstance(self.setup, InferenceRowSetup) and self.setup.plan.dp_attention > 1


def fit_rows(runs: Iterable[PublishedRun], catalog: Catalog) -> tuple[list[FitRow], list[str]]:
    """The rows the engines can set up, and ``id: reason`` for those they refuse."""
    default = load_stack()
    rows, refused = [], []
    for run in runs:
        try:
            rows.append(_fit_row(run, catalog, default))
        except LightspeedError as error:
            refused.append(f"{run.id}: {error}")
    return rows, refused


def _fit_row(run: PublishedRun, catalog: Catalog, default: Stack) -> FitRow:
    spec = run.spec
    architecture = catalog.system(spec.hardware.system).accelerator.architecture
    family = family_name(
        run.kind,
        moe=spec.model.moe is not None,
        architecture=architecture,
        hybrid=spec.model.recurrent is not None,
    )
    if run.training is not None:
        setup = training_setup(run.training, catalog)
        assert setup.stack is not None
        modern = setup.stack.from_year >= default.from_year
        default_setup = training_setup(run.training, catalog, stack=default) if modern else None
        return FitRow(run, family, setup, default_setup)
    assert run.inference is not None
    inference, cluster = inference_setup(run.inference, catalog)
    return FitRow(run, family, inference, cluster=cluster)


@dataclass(frozen=True)
class Variant(Record):
    """One way of sharing fitted values between profiles: ``groups`` maps a profile to the group
    whose kernel efficiency (and, serving, attention-DP pace) it takes (a profile not named is
    its own group); ``kernel_from_training`` gives serving stacks the default training
    profile's kernel efficiency instead of one fitted on serving rows."""

    name: str
    kind: str
    description: str
    groups: tuple[tuple[str, str], ...] = ()
    kernel_from_training: bool = False

    def group(self, profile: str) -> str:
        """The group whose values ``profile`` takes."""
        return dict(self.groups).get(profile, profile)


def training_variants(stacks: Mapping[str, Stack] | None = None) -> tuple[Variant, ...]:
    """The training sharings nested cross-validation chooses among (the default profile is
    always fitted on its own, as the median run)."""
    named = [stack for stack in (stacks or load_stacks()).values() if stack.name != default_stack_name()]
    lineage = tuple((stack.name, stack.group) for stack in named)
    era = tuple((stack.name, "before-2023" if stack.to_year < 2023 else "2023-on") for stack in named)
    one = tuple((stack.name, "all") for stack in named)
    return (
        Variant("lineage", "train", "one kernel efficiency per framework lineage (fit_group)", lineage),
        Variant("era", "train", "one kernel efficiency before 2023, one from 2023", era),
        Variant("one", "train", "one kernel efficiency for every named stack", one),
    )


def inference_variants(stacks: Mapping[str, ServingStack] | None = None) -> tuple[Variant, ...]:
    """The serving sharings nested cross-validation chooses among."""
    serving = list((stacks or load_serving_stacks()).values())
    one = tuple((stack.name, "all") for stack in serving)
    return (
        Variant(
            "lineage",
            "infer",
            "kernel efficiency per kind of kernels (kernel_fit_group), attention-DP pace per server",
            tuple((stack.name, stack.kernel_group) for stack in serving),
        ),
        Variant("one", "infer", "one kernel efficiency and one attention-DP pace for every server", one),
        Variant(
            "training",
            "infer",
            "the default training profile's kernel efficiency, one attention-DP pace for every server",
            one,
            kernel_from_training=True,
        ),
    )


def adp_group(variant: Variant, profile: str) -> str:
    """The attention-DP group: the server's own under ``lineage`` (SGLang's two-batch overlap and
    TensorRT-LLM's mixed prefill differ in pace), one for all otherwise."""
    if variant.name != "lineage":
        return "all"
    stacks = load_serving_stacks()
    return stacks[profile].group if profile in stacks else profile


@dataclass
class Values:
    """The fitted numbers: per training group, the default profile, contention; per serving group
    the kernel efficiency and attention-DP pace; host time per iteration per old serving stack."""

    kernel: dict[str, float] = field(default_factory=dict)
    default: float = 0.8
    contention: float = START_CONTENTION
    serving_kernel: dict[str, float] = field(default_factory=dict)
    attention_dp: dict[str, float] = field(default_factory=dict)
    overhead_s: dict[str, float] = field(default_factory=dict)

    def copy(self) -> Values:
        return dataclasses.replace(
            self,
            kernel=dict(self.kernel),
            serving_kernel=dict(self.serving_kernel),
            attention_dp=dict(self.attention_dp),
            overhead_s=dict(self.overhead_s),
        )


class Predictor:
    """Predictions of fit rows under candidate values, cached (the grids repeat across folds)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[object, ...], float | None] = {}

    def training(
        self, row: FitRow, kernel: float, contention: float, *, on_default: bool = False
    ) -> float | None:
        """``row`` predicted with ``kernel`` efficiency and ``contention`` (``None``: refused)."""
        key = (row.id, on_default, round(kernel, 6), round(contention, 6))
        if key not in self._cache:
            setup = row.default_setup if on_default else row.setup
            assert isinstance(setup, RowSetup)
            assert setup.stack is not None
            stack = setup.stack.with_fitted(kernel_efficiency=kernel, overlap_contention=contention)
            self._cache[key] = self._predict(
                lambda: (
                    predict_training_setup(
                        label_of(row.run), dataclasses.replace(setup, stack=stack)
                    ).predicted
                )
            )
        return self._cache[key]

    def inference(self, row: FitRow, kernel: float, attention_dp: float, overhead_s: float) -> float | None:
        """``row`` predicted with a serving stack of these values (``None``: refused)."""
        key = (row.id, round(kernel, 6), round(attention_dp, 6), round(overhead_s, 6))
        if key not in self._cache:
            setup = row.setup
            assert isinstance(setup, InferenceRowSetup)
            assert setup.serving is not None
            assert row.cluster is not None
            serving = dataclasses.replace(
                setup.serving,
                kernel_efficiency=kernel,
                attention_dp_efficiency=attention_dp,
                iteration_overhead_s=overhead_s,
            )
            cluster = row.cluster
            self._cache[key] = self._predict(
                lambda: (
                    predict_inference_setup(
                        label_of(row.run),
                        dataclasses.replace(setup, serving=serving),
                        cluster,
                        load_bands=False,
                    ).predicted
                )
            )
        return self._cache[key]

    @staticmethod
    def _predict(call: Callable[[], float | None]) -> float | None:
        try:
            with caps_off():
                return call()
        except LightspeedError:
            return None


def log_error(row: FitRow, predicted: float | None) -> float:
    """``|log(predicted / measured)|`` (:data:`MISS_PENALTY` for a refused row)."""
    if predicted is None or not predicted > 0:
        return MISS_PENALTY
    return abs(math.log(predicted / row.measured))


def central_mean(values: Sequence[float]) -> float:
    """The mean of the middle half of ``values`` (the interquartile mean; all of them under 4).

    >>> central_mean([0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 5.0])
    0.045
    """
    ordered = sorted(values)
    cut = len(ordered) // 4
    return statistics.fmean(ordered[cut : len(ordered) - cut])


def loss(errors: Sequence[float]) -> float:
    """The interquartile mean plus a quarter of the mean of the absolute log errors (0 for no rows)."""
    if not errors:
        return 0.0
    return central_mean(errors) + 0.25 * statistics.fmean(errors)


def _search(candidates: Iterable[float], objective: Callable[[float], float]) -> float:
    return min((objective(value), value) for value in candidates)[1]


def grid_fit(objective: Callable[[float], float], coarse: Sequence[float] = KERNEL_GRID) -> float:
    """The best value of the :data:`FINE_STEP` grid around every local minimum of a coarse grid
    (within 0.05..1): a loss with two basins is refined in both, so a basin whose bottom falls
    between two coarse points is not lost to the other's coarse point.

    >>> coarse = {0.5: 0.9, 0.55: 0.7, 0.6: 0.8, 0.65: 0.6, 0.7: 0.9}  # basins at 0.55 and 0.65
    >>> grid_fit(lambda x: coarse.get(x, 0.4 if x == 0.5625 else 0.95), tuple(coarse))
    0.5625
    """
    losses = [objective(value) for value in coarse]
    minima = [
        value
        for index, value in enumerate(coarse)
        if (index == 0 or losses[index - 1] >= losses[index])
        and (index == len(coarse) - 1 or losses[index + 1] >= losses[index])
    ]
    fine = {round(best + FINE_STEP * offset, 4) for best in minima for offset in range(-4, 5)}
    return _search(sorted(value for value in fine if 0.05 < value <= 1.0), objective)


# --- training ------------------------------------------------------------------------------


def training_kernel(values: Values, variant: Variant, row: FitRow) -> float:
    """The kernel efficiency ``row`` is predicted with under ``values``."""
    if row.profile == default_stack_name():
        return values.default
    return values.kernel.get(variant.group(row.profile), values.default)


def _training_errors(
    rows: Sequence[FitRow], values: Values, variant: Variant, predictor: Predictor
) -> list[float]:
    return [
        log_error(row, predictor.training(row, training_kernel(values, variant, row), values.contention))
        for row in rows
    ]


def median_fit(rows: Sequence[FitRow], contention: float, predictor: Predictor) -> float:
    """The default profile's kernel efficiency: the value at which the median row, predicted on
    the default profile, is predicted exactly (half of the runs are faster)."""

    def off_median(kernel: float) -> float:
        residuals = [
            speed_residual(row.metric, row.measured, predicted)
            for row in rows
            if (predicted := predictor.training(row, kernel, contention, on_default=True)) is not None
            and predicted > 0
        ]
        return abs(statistics.median(residuals)) if residuals else MISS_PENALTY

    return grid_fit(off_median)


def fit_training(
    rows: Sequence[FitRow],
    variant: Variant,
    predictor: Predictor,
    start: Values | None = None,
    passes: int = 2,
) -> Values:
    """Coordinate descent: the default profile (median), each group's kernel efficiency on its
    rows, then the contention shared by all; a group without rows takes the default's value."""
    values = (start or Values()).copy()
    train = [row for row in rows if row.kind == "train"]
    modern = [row for row in train if row.default_setup is not None]
    named = [row for row in train if row.profile != default_stack_name()]
    groups = sorted({variant.group(row.profile) for row in named})
    for _ in range(passes):
        if modern:
            values.default = median_fit(modern, values.contention, predictor)
        for group in groups:
            mine = [row for row in named if variant.group(row.profile) == group]

            def kernel_loss(kernel: float, group: str = group, mine: list[FitRow] = mine) -> float:
                trial = values.copy()
                trial.kernel[group] = kernel
                return loss(_training_errors(mine, trial, variant, predictor))

            values.kernel[group] = grid_fit(kernel_loss)

        def contention_loss(contention: float) -> float:
            return loss(
                _training_errors(
                    train, dataclasses.replace(values, contention=contention), variant, predictor
                )
            )

        values.contention = _search(CONTENTION_GRID, contention_loss)
    return values


# --- inference -----------------------------------------------------------------------------


def _median_or(values: Iterable[float], fallback: float) -> float:
    listed = list(values)
    return statistics.median(listed) if listed else fallback


def serving_values(values: Values, variant: Variant, row: FitRow) -> tuple[float, float, float]:
    """(kernel efficiency, attention-DP pace, host seconds per iteration) of ``row`` under ``values``.

    A kernel group without dense-model rows of its own takes the median of the fitted groups, or
    the default training profile's value when none was fitted (rows with attention data
    parallelism cannot tell the kernels from the pace of the slowest rank); an attention-DP group
    without rows takes the median of the fitted ones, else 1.
    """
    kernel = None if variant.kernel_from_training else values.serving_kernel.get(variant.group(row.profile))
    if kernel is None:
        fitted = [] if variant.kernel_from_training else list(values.serving_kernel.values())
        kernel = _median_or(fitted, values.default)
    adp = values.attention_dp.get(adp_group(variant, row.profile))
    if adp is None:
        adp = _median_or(values.attention_dp.values(), 1.0)
    return kernel, adp, values.overhead_s.get(overhead_group(row.profile), 0.0)


def _inference_errors(
    rows: Sequence[FitRow], values: Values, variant: Variant, predictor: Predictor
) -> list[float]:
    return [log_error(row, predictor.inference(row, *serving_values(values, variant, row))) for row in rows]


def _has_host_overhead(profile: str) -> bool:
    stacks = load_serving_stacks()
    return profile in stacks and stacks[profile].to_year <= HOST_OVERHEAD_TO_YEAR


def overhead_group(profile: str) -> str:
    """Whose host time per iteration ``profile`` takes: its ``host_fit_group``'s or ``fit_group``'s
    (a later release of the same runtime, as TensorRT-LLM 0.7 of 0.5-0.6, is not fitted on its own
    rows alone; the 0.8-0.21 C++ executor, which has no fitted rows, takes the 0.5-0.7 runtime's)."""
    stacks = load_serving_stacks()
    return stacks[profile].host_group if profile in stacks else profile


def fit_inference(
    rows: Sequence[FitRow],
    variant: Variant,
    predictor: Predictor,
    start: Values | None = None,
    passes: int = 2,
) -> Values:
    """Coordinate descent: each kernel group on its dense-model rows (a group without any is not
    fitted, :func:`serving_values`), each attention-DP group on its rows, then old stacks' host time."""
    values = (start or Values()).copy()
    infer = [row for row in rows if row.kind == "infer"]
    dense = [row for row in infer if row.dense]
    kernel_groups = (
        [] if variant.kernel_from_training else sorted({variant.group(row.profile) for row in dense})
    )
    adp_groups = sorted({adp_group(variant, row.profile) for row in infer if row.attention_dp})
    overhead_groups = sorted(
        {overhead_group(row.profile) for row in infer if _has_host_overhead(row.profile)}
    )
    for _ in range(passes):
        for group in kernel_groups:
            mine = [row for row in dense if variant.group(row.profile) == group]
            objective = _objective(
                mine, values, "serving_kernel", group, variant=variant, predictor=predictor
            )
            values.serving_kernel[group] = grid_fit(objective)
        for group in adp_groups:
            mine = _attention_dp_rows(infer, variant, group)
            objective = _objective(mine, values, "attention_dp", group, variant=variant, predictor=predictor)
            values.attention_dp[group] = grid_fit(objective, ADP_GRID)
        for group in overhead_groups:
            mine = [row for row in infer if overhead_group(row.profile) == group]
            objective = _objective(mine, values, "overhead_s", group, variant=variant, predictor=predictor)
            values.overhead_s[group] = _search(OVERHEAD_GRID_S, objective)
    return values


def _objective(
    rows: Sequence[FitRow], values: Values, table: str, key: str, *, variant: Variant, predictor: Predictor
) -> Callable[[float], float]:
    """The loss of ``rows`` as a function of the serving value ``table[key]``, the others held."""

    def objective(value: float) -> float:
        return loss(_inference_errors(rows, _with(values, table, key, value), variant, predictor))

    return objective


def rival_minimum(
    landscape: Sequence[tuple[float, float]], best: float, *, apart: float
) -> tuple[float, float] | None:
    """(value, loss) of the lowest local minimum of a sampled loss ``landscape`` ((value, loss)
    pairs in increasing value) at least ``apart`` from the fitted ``best``, or ``None``: a second
    basin that a small change to the rows or the engine could make the fit jump to.

    >>> bowl = [(x / 10, (x - 3) ** 2 * (x - 8) ** 2 / 100 + (0.1 if x > 5 else 0.0)) for x in range(11)]
    >>> rival_minimum(bowl, 0.3, apart=0.2)
    (0.8, 0.1)
    >>> rival_minimum([(0.1, 3.0), (0.2, 2.0), (0.3, 1.0)], 0.3, apart=0.05) is None
    True
    """
    minima = [
        (value, cost)
        for index, (value, cost) in enumerate(landscape[1:-1], start=1)
        if abs(value - best) >= apart and landscape[index - 1][1] > cost <= landscape[index + 1][1]
    ]
    return min(minima, key=lambda pair: (pair[1], pair[0])) if minima else None


def attention_dp_landscape(
    rows: Sequence[FitRow], values: Values, variant: Variant, predictor: Predictor, group: str
) -> list[tuple[float, float]]:
    """The loss of ``group``'s attention-DP rows at every :data:`FINE_STEP` pace across
    :data:`ADP_GRID`'s span, the other fitted values held: where the fit's minimum sits and what
    else is nearly as low."""
    mine = _attention_dp_rows(rows, variant, group)
    objective = _objective(mine, values, "attention_dp", group, variant=variant, predictor=predictor)
    low, high = ADP_GRID[0], ADP_GRID[-1]
    paces = (round(low + FINE_STEP * step, 4) for step in range(round((high - low) / FINE_STEP) + 1))
    return [(value, objective(value)) for value in paces]


def _attention_dp_rows(rows: Sequence[FitRow], variant: Variant, group: str) -> list[FitRow]:
    """The inference rows with attention data parallelism whose pace ``group`` fits."""
    return [
        row
        for row in rows
        if row.kind == "infer" and row.attention_dp and adp_group(variant, row.profile) == group
    ]


def _with(values: Values, table: str, key: str, value: float) -> Values:
    trial = values.copy()
    getattr(trial, table)[key] = value
    return trial


# --- both ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitChoice(Record):
    """The sharing of each kind the fit uses."""

    train: Variant
    infer: Variant


def fit(rows: Sequence[FitRow], choice: FitChoice, predictor: Predictor) -> Values:
    """Every fitted number on ``rows`` under ``choice``."""
    values = fit_training(rows, choice.train, predictor)
    return fit_inference(rows, choice.infer, predictor, start=values)


def predict(row: FitRow, values: Values, choice: FitChoice, predictor: Predictor) -> float | None:
    """``row`` predicted under fitted ``values`` (``None``: the engine refuses it)."""
    if row.kind == "train":
        return predictor.training(row, training_kernel(values, choice.train, row), values.contention)
    return predictor.inference(row, *serving_values(values, choice.infer, row))


def fitted_rows(rows: Sequence[FitRow], choice: FitChoice) -> dict[str, list[str]]:
    """Per fitted number (``train kernel <group>``, ``default``, ...), the ids of the rows it is
    fitted on under ``choice``."""
    train = [row for row in rows if row.kind == "train"]
    infer = [row for row in rows if row.kind == "infer"]
    result: dict[str, list[str]] = {
        "default": [row.id for row in train if row.default_setup is not None],
        "overlap_contention": [row.id for row in train],
    }
    for row in train:
        if row.profile != default_stack_name():
            result.setdefault(f"kernel {choice.train.group(row.profile)}", []).append(row.id)
    groups = (
        [] if choice.infer.kernel_from_training else sorted({choice.infer.group(r.profile) for r in infer})
    )
    for group in groups:
        mine = [row for row in infer if choice.infer.group(row.profile) == group]
        result[f"serving kernel {group}"] = [row.id for row in ([r for r in mine if r.dense] or mine)]
    for row in infer:
        if row.attention_dp:
            result.setdefault(f"attention_dp {adp_group(choice.infer, row.profile)}", []).append(row.id)
        if _has_host_overhead(row.profile):
            result.setdefault(f"iteration_overhead_s {overhead_group(row.profile)}", []).append(row.id)
    return result


__all__ = [
    "FitChoice",
    "FitRow",
    "Predictor",
    "Values",
    "Variant",
    "attention_dp_landscape",
    "fit",
    "fit_inference",
    "fit_rows",
    "fit_training",
    "fitted_rows",
    "grid_fit",
    "inference_variants",
    "log_error",
    "loss",
    "median_fit",
    "predict",
    "rival_minimum",
    "serving_values",
    "training_kernel",
    "training_variants",
]
