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

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

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
    MAX_STATIC_BATCH_OVER_KV,
    RowSimulation,
    load_simulation,
    reading_percentile,
    simulate_row,
)
from lightspeed.sol.validation.infer_rows import InferenceRowSpec, read_inference_row
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.readings import Reading, RowError
from lightspeed.sol.validation.validate import RowLabel, ValidationRow, predicted_row
from lightspeed.units import format_memory
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
    caveat = ""
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
            predicted, plan, assumptions, caveat = _analytic(setup, cluster, efficiency)
    except UserInputError as error:
        raise RowError(str(error)) from None
    row = predicted_row(
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
    # a predicted row's reason is its caveat (status stays ok: the figure is predicted and counted)
    return replace(row, reason=caveat) if caveat else row


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
) -> tuple[float, dict[str, object], tuple[str, ...], str]:
    """(figure, plan, assumptions, caveat) of the analytic steady state; the caveat flags a static
    batch the KV cache cannot hold (:func:`_static_batch_cap`), ``''`` otherwise."""
    estimate = _estimate(setup, cluster, efficiency)
    plan: dict[str, object] = {
        **setup.plan.to_dict(),
        "batch_per_replica": estimate.batch_per_replica,
        "max_batch": estimate.max_batch,
        "ttft_s": estimate.ttft_s,
        "tpot_s": estimate.tpot_s,
        "bound": estimate.bound,
    }
    assumptions = setup.assumptions
    cap = _static_batch_cap(setup, estimate)
    if cap is None:
        return _value(estimate, setup.metric), plan, assumptions + estimate.assumptions, ""
    stated, note, caveat = cap
    plan["stated_batch_per_replica"] = stated
    # the row's own "static batch of N" line says at once that N was not what was predicted
    assumptions = tuple(f"{line}: {note}" if _STATIC_BATCH_LINE.match(line) else line for line in assumptions)
    if assumptions == setup.assumptions:
        assumptions = (*assumptions, note)
    return _value(estimate, setup.metric), plan, assumptions + estimate.assumptions, caveat


# The row reader's line for a static batch (infer_rows: ``static batch of 192``)
_STATIC_BATCH_LINE: Final = re.compile(r"static batch of \d")


def _static_batch_cap(setup: InferenceRowSetup, estimate: InferenceEstimate) -> tuple[int, str, str] | None:
    """(stated batch per replica, assumption, caveat) of a static batch more than the KV cache holds,
    which the engine runs at what it holds (the rest waits): ``None`` when it fits or is no static
    batch. Refused past :data:`MAX_STATIC_BATCH_OVER_KV` times what fits."""
    load, plan = setup.load, setup.plan
    if setup.batching != "static" or load.concurrency is None or plan.disaggregated is not None:
        return None
    stated = load.concurrency / plan.replicas
    if stated <= estimate.max_batch:
        return None
    if estimate.max_batch_limit != "kv cache":  # the row's or the server's own cap, not memory
        held = f"the {estimate.max_batch_limit} of {estimate.max_batch}"
        return (
            round(stated),
            f"over {held}: predicted at {estimate.max_batch}, not {stated:g}",
            f"static batch of {stated:g} capped to {held}",
        )
    memory = estimate.memory_bytes
    per_request = memory["kv_cache_per_request"]
    needs = (
        f"{stated:g} requests of {load.input_tokens + load.output_tokens:,} tokens need "
        f"{format_memory(stated * per_request)} of {estimate.precisions.kv_cache} KV cache per GPU "
        f"({format_memory(per_request)} each) beside {format_memory(memory['weights'])} of weights; the "
        f"{format_memory(memory['kv_capacity'])} left for it holds {estimate.max_batch}"
    )
    ratio = stated / max(estimate.max_batch, 1)
    batch = f"static batch of {stated:g}" + (" per replica" if plan.replicas > 1 else "")
    if ratio > MAX_STATIC_BATCH_OVER_KV:
        raise RowError(
            f"the {batch} does not fit: {needs} ({ratio:.1f}x over; past {MAX_STATIC_BATCH_OVER_KV:g}x no "
            "KV cache setting holds it): check the row's GPUs, precision (KV cache format) and lengths, or "
            "write the batch the run held"
        )
    over = f"{ratio:.2f}x over"
    return (
        round(stated),
        f"more than the KV cache holds ({needs}): predicted at {estimate.max_batch}, not {stated:g} ({over})",
        f"{batch} capped to {estimate.max_batch}: {needs} ({over})",
    )


__all__ = [
    "InferenceRowSetup",
    "inference_predictor",
    "inference_row_setup",
    "inference_setup",
    "predict_inference_setup",
]
