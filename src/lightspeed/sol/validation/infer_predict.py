"""Predict a published inference row: its setup (model, plan, load, serving profile) and the engine's
figure for it.

A row is read into an :class:`~lightspeed.sol.validation.infer_rows.InferenceRowSpec` by
:mod:`lightspeed.sol.validation.infer_rows` (a table's free text) or
:mod:`lightspeed.sol.validation.structured` (the shipped rows); :func:`inference_setup` puts it on
a cluster and a serving profile, and :func:`predict_inference_setup` predicts its figure: simulated
request by request where it depends on load (:mod:`lightspeed.sol.validation.infer_load`), else
the analytic steady state. :func:`inference_predictor` is the predictor
:func:`~lightspeed.sol.validation.validate.validate_published` takes for a table's ``infer`` rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lightspeed.catalog import Catalog, Cluster
from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_stacks import ServingStack, load_serving_stack
from lightspeed.sol.core.uncertainty import band_for, family_of
from lightspeed.sol.core.uncertainty import load_bands as shipped_bands
from lightspeed.sol.infer.estimate import InferenceEstimate, estimate_inference
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.validation.hardware_text import cluster_of
from lightspeed.sol.validation.infer_load import (
    RowSimulation,
    load_simulation,
    reading_percentile,
    simulate_row,
)
from lightspeed.sol.validation.infer_rows import InferenceRowSpec, read_inference_row
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.readings import Reading, RowError
from lightspeed.sol.validation.validate import RowLabel, ValidationRow, predicted_row
from lightspeed.workload import ModelRegistry, TransformerSpec


@dataclass(frozen=True)
class InferenceRowSetup(Record):
    """Everything needed to predict one inference row, plus what was assumed."""

    model: TransformerSpec
    plan: InferencePlan
    load: ServingLoad
    batching: str
    metric: str
    measured: float
    assumptions: tuple[str, ...]
    reading: Reading | None = None
    readings: tuple[Reading, ...] = ()
    serving: ServingStack | None = None
    simulation: RowSimulation | None = None


def inference_setup(
    spec: InferenceRowSpec, catalog: Catalog, *, serving: ServingStack | None = None
) -> tuple[InferenceRowSetup, Cluster]:
    """(setup, cluster) of a typed inference row, on its own serving profile or on ``serving``."""
    chosen = serving or load_serving_stack(spec.serving)
    if serving is None and spec.overlap_scheduler is not None:
        chosen = replace(chosen, overlap_scheduler=spec.overlap_scheduler)
    cluster, cluster_notes = cluster_of(catalog, spec.hardware, spec.num_gpus)
    notes = [*spec.assumptions, *cluster_notes]
    if chosen.name != spec.serving:
        notes.append(f"predicted on the serving profile {chosen.name}, not the run's own {spec.serving}")
    setup = InferenceRowSetup(
        spec.model,
        spec.plan,
        spec.load,
        spec.batching,
        spec.metric,
        spec.measured,
        tuple(notes),
        spec.reading,
        spec.readings,
        chosen,
        spec.simulation or load_simulation(spec.load, spec.batching),
    )
    return setup, cluster


def inference_row_setup(
    row: PublishedRow, catalog: Catalog, registry: ModelRegistry
) -> tuple[InferenceRowSetup, Cluster]:
    """(setup, cluster) of an inference row of a table (see the module docstring for the rules)."""
    return inference_setup(read_inference_row(row, catalog, registry), catalog)


def _value(estimate: InferenceEstimate, metric: str) -> float:
    load = estimate.load
    sides = {
        "total_tokens_per_s": load.input_tokens + load.output_tokens,
        "input_tokens_per_s": load.input_tokens,
    }
    side = sides.get(metric.removesuffix("_per_gpu"))
    if side is not None:
        rate = estimate.requests_per_s * side
        return rate / estimate.num_gpus if metric.endswith("_per_gpu") else rate
    if metric == "itl_s":  # every gap of a steady batch is one decode iteration
        return estimate.tpot_s
    if metric == "request_latency_s":
        return estimate.ttft_s + (load.output_tokens - 1) * estimate.tpot_s
    return float(getattr(estimate, metric))


def inference_predictor(
    efficiency: EfficiencyModel | None = None, *, load_bands: bool = True
) -> Callable[[PublishedRow, Catalog, ModelRegistry], ValidationRow]:
    """A predictor for :func:`~lightspeed.sol.validation.validate.validate_published`'s ``infer``
    argument; ``load_bands`` off skips the two runs that draw a latency under load its band (the
    family's band is drawn instead), for callers that read only the predictions."""

    def predict(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> ValidationRow:
        setup, cluster = inference_row_setup(row, catalog, registry)
        label = RowLabel(row.row_id, row.text("source"))
        return predict_inference_setup(label, setup, cluster, efficiency, load_bands=load_bands)

    return predict


def predict_inference_setup(
    label: RowLabel,
    setup: InferenceRowSetup,
    cluster: Cluster,
    efficiency: EfficiencyModel | None = None,
    *,
    load_bands: bool = True,
) -> ValidationRow:
    """The prediction of an inference row from its setup (the fit script swaps ``setup.serving``):
    simulated when the figure depends on load, else the analytic steady state. A latency measured
    at an arrival rate gets its band under that load (:mod:`lightspeed.sol.serve.load_band`: two
    more runs) unless ``load_bands`` is off (the fit script, which reads only the prediction)."""
    family = family_of("infer", setup.model, cluster.system.accelerator)
    band = band_for(shipped_bands(), family)
    interval: tuple[float, float] | None = None
    try:
        if setup.simulation is not None:
            percentile = (
                reading_percentile(setup.metric, setup.reading.metric_text) if setup.reading else None
            )
            predicted, reached = simulate_row(
                setup.simulation,
                model=setup.model,
                cluster=cluster,
                plan=setup.plan,
                metric=setup.metric,
                serving=setup.serving,
                efficiency=efficiency,
                percentile=percentile,
                band=band if load_bands else None,
            )
            notes = [setup.simulation.note]
            if percentile is not None and setup.reading is not None:
                notes.append(
                    f"'{setup.reading.metric_text}': percentile {percentile:g} of the simulated requests' "
                    f"{setup.metric}, not their mean"
                )
            if "settling_note" in reached:
                notes.append(str(reached.pop("settling_note")))
            if "interval_under_load" in reached:
                low, high = reached["interval_under_load"]
                interval = (min(low, predicted), max(high, predicted))
                notes.append(str(reached.pop("interval_note")))
            plan = {**setup.plan.to_dict(), "simulated": setup.simulation.mode, **reached}
            # the engine's own assumptions (weights and GEMMs, KV cache, efficiency), as plan infer
            # prints them for the same plan: the simulation prices its steps with that engine
            engine = _engine_assumptions(setup, cluster, efficiency)
            assumptions = tuple(dict.fromkeys((*setup.assumptions, *notes, *engine)))
        else:
            predicted, plan, assumptions = _analytic(setup, cluster, efficiency)
    except UserInputError as error:
        raise RowError(str(error)) from None
    return predicted_row(
        label,
        kind="infer",
        metric=setup.metric,
        measured=setup.measured,
        predicted=predicted,
        plan=plan,
        assumptions=assumptions,
        reading=setup.reading,
        readings=setup.readings,
        band=band,
        interval=interval,
        stack=setup.serving.name if setup.serving is not None else "",
        family=family,
    )


def _estimate(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> InferenceEstimate:
    """The analytic steady state of the row's plan and load."""
    return estimate_inference(
        model=setup.model,
        cluster=cluster,
        plan=setup.plan,
        load=setup.load,
        efficiency=efficiency,
        batching=setup.batching,
        serving=setup.serving,
    )


def _engine_assumptions(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> tuple[str, ...]:
    """The engine's assumptions on the row's plan (weights and GEMMs, KV cache, efficiency), with
    which the simulation prices its steps. A load the steady state refuses (an arrival rate above
    what the plan serves, which the simulation queues) is taken at the plan's own batch: these
    assumptions do not depend on it."""
    try:
        return _estimate(setup, cluster, efficiency).assumptions
    except UserInputError:
        unloaded = replace(setup.load, arrival_rate_per_s=None, concurrency=None)
        return _estimate(replace(setup, load=unloaded), cluster, efficiency).assumptions


def _analytic(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> tuple[float, dict[str, object], tuple[str, ...]]:
    estimate = _estimate(setup, cluster, efficiency)
    plan = {
        **setup.plan.to_dict(),
        "batch_per_replica": estimate.batch_per_replica,
        "max_batch": estimate.max_batch,
        "ttft_s": estimate.ttft_s,
        "tpot_s": estimate.tpot_s,
        "bound": estimate.bound,
    }
    return _value(estimate, setup.metric), plan, setup.assumptions + estimate.assumptions


__all__ = [
    "InferenceRowSetup",
    "inference_predictor",
    "inference_row_setup",
    "inference_setup",
    "predict_inference_setup",
]
