"""One call from a job configuration to its prediction: what ``plan`` and ``search`` run.

:func:`run` takes one of the configurations of :mod:`lightspeed.sol.config`
(a training plan, a serving deployment, or a search over either), resolves the
model and the system against the catalog, applies a measured expert load when the
configuration names one (:mod:`lightspeed.moe`), and calls the engine. The CLI
commands are this call plus rendering, so a plan file, the command line and the
Python API give the same numbers.

>>> from lightspeed.sol.config import TrainingConfig
>>> prediction = run(TrainingConfig(model="llama-3-8b", system="dgx-h100", tp=2, global_batch_size=64))
>>> prediction.estimate.plan.dp, prediction.expert_load is None
(4, True)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, overload

from lightspeed.api import default_catalog, default_models
from lightspeed.catalog import Catalog, Cluster
from lightspeed.errors import UserInputError
from lightspeed.limits import check_kind
from lightspeed.moe import (
    ExpertLoadBalance,
    ExpertLoadEffect,
    expert_load_balance,
    inference_load_effect,
    inference_plan_with_load,
    plan_with_load,
    read_expert_loads,
    training_load_effect,
)
from lightspeed.records import JsonDict, Record
from lightspeed.sol.config import (
    JobConfig,
    TrainingConfig,
    TrainingJob,
    TrainingSearchConfig,
    parse_plan_text,
)
from lightspeed.sol.core import EfficiencyModel, default_serving_stack, default_stack_name, load_calibration
from lightspeed.sol.infer import (
    InferenceEstimate,
    InferencePlan,
    InferenceSearchResult,
    SpeculativeDecoding,
    estimate_inference,
    search_draft_depths,
    search_inference,
)
from lightspeed.sol.infer.search import serving_precision
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ScaledRuns,
    ServingWorkload,
    SimulationResult,
    band_under_load,
    simulate_deployment,
    simulated_deployment,
)
from lightspeed.sol.serving_config import ServingConfig, ServingJob, ServingSearchConfig
from lightspeed.sol.train import (
    SearchResult,
    TrainingEstimate,
    TrainingPlan,
    estimate_training,
    search_training,
)
from lightspeed.workload import (
    ModelRegistry,
    TransformerSpec,
    load_model_file,
    resolve_model,
    spec_from_hf_config,
)

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingPrediction(Record):
    """A training plan's estimate, with what a measured expert load costs it (``None`` without one)."""

    config: TrainingConfig
    estimate: TrainingEstimate
    expert_load: ExpertLoadEffect | None


@dataclass(frozen=True)
class TrainingSearchPrediction(Record):
    """Every training plan ranked, with the expert-load effect on the best one."""

    config: TrainingSearchConfig
    result: SearchResult
    expert_load: ExpertLoadEffect | None


@dataclass(frozen=True)
class ServingPrediction(Record):
    """A serving deployment's estimate, with the expert-load effect; under a concurrency or an
    arrival rate (continuous batching) also the run simulated request by request at that load
    (``simulated``, what ``plan infer`` shows) and the runs that bound its latencies under an
    arrival rate (``load_band``); ``not_simulated`` says why there is none."""

    config: ServingConfig
    estimate: InferenceEstimate
    expert_load: ExpertLoadEffect | None
    simulated: SimulationResult | None = None
    not_simulated: str | None = None
    load_band: ScaledRuns | None = None

    def to_dict(self) -> JsonDict:
        """The fields as JSON; ``load_band`` as its latency intervals (:meth:`ScaledRuns.intervals`)."""
        payload = Record.to_dict(replace(self, load_band=None))
        payload["load_band"] = None if self.load_band is None else self.load_band.intervals()
        return payload


@dataclass(frozen=True)
class ServingSearchPrediction(Record):
    """The best deployment under the bounds and the frontier, with the expert-load effect."""

    config: ServingSearchConfig
    result: InferenceSearchResult
    expert_load: ExpertLoadEffect | None


@dataclass(frozen=True)
class _Resolved:
    model: TransformerSpec
    cluster: Cluster
    efficiency: EfficiencyModel | None
    balance: ExpertLoadBalance | None


@overload
def run(
    config: TrainingConfig, *, catalog: Catalog | None = None, models: ModelRegistry | None = None
) -> TrainingPrediction: ...
@overload
def run(
    config: TrainingSearchConfig, *, catalog: Catalog | None = None, models: ModelRegistry | None = None
) -> TrainingSearchPrediction: ...
@overload
def run(
    config: ServingConfig, *, catalog: Catalog | None = None, models: ModelRegistry | None = None
) -> ServingPrediction: ...
@overload
def run(
    config: ServingSearchConfig, *, catalog: Catalog | None = None, models: ModelRegistry | None = None
) -> ServingSearchPrediction: ...
def run(
    config: JobConfig, *, catalog: Catalog | None = None, models: ModelRegistry | None = None
) -> TrainingPrediction | TrainingSearchPrediction | ServingPrediction | ServingSearchPrediction:
    """The prediction of ``config`` (see the module docstring); ``catalog`` and ``models`` default to
    the shipped records plus ``$LIGHTSPEED_CATALOG`` files."""
    check_kind(
        "run's configuration",
        config,
        JobConfig,
        "TrainingConfig(**settings) or ServingConfig(**settings); a plan file: TrainingConfig.from_file",
        what="a job configuration",
    )
    config.check_complete()
    if isinstance(config, TrainingConfig):
        return _train(config, _resolve(config, config.gpus_asked, catalog, models))
    if isinstance(config, TrainingSearchConfig):
        return _search_train(config, _resolve(config, config.num_gpus, catalog, models))
    if isinstance(config, ServingConfig):
        return _serve(config, _resolve(config, config.num_gpus, catalog, models))
    if isinstance(config, ServingSearchConfig):
        return _search_serve(config, _resolve(config, config.num_gpus, catalog, models))
    raise UserInputError(f"cannot run a {type(config).__name__}")


def _resolve(
    config: JobConfig, num_gpus: int | None, catalog: Catalog | None, models: ModelRegistry | None
) -> _Resolved:
    if config.model_config is not None:
        path = Path(config.model_config)  # a model data file, or a Hugging Face config.json
        model = load_model_file(path, models).spec if path.suffix == ".toml" else spec_from_hf_config(path)
    else:
        model = resolve_model(str(config.model), models or default_models())  # a name or a path
    assert config.system is not None  # check_complete
    cluster = (catalog or default_catalog()).resolve_cluster(config.system, num_accelerators=num_gpus)
    efficiency = None
    if config.calibration is not None:
        efficiency = load_calibration(config.calibration, force=config.force_calibration)
        if config.force_calibration and efficiency.measured_on:
            LOG.warning(
                "calibration %r was measured on %s; --force applies it to other devices too",
                efficiency.name,
                efficiency.measured_on,
            )
    _log_profile(config, cluster.system.accelerator.vendor)
    if isinstance(config, TrainingJob):
        model = config.trained_model(model)
    if isinstance(config, ServingJob):
        model = config.served_model(model)
    return _Resolved(model, cluster, efficiency, _balance(config, model))


def _log_profile(config: JobConfig, vendor: str) -> None:
    """Which software profile the prediction uses (the user did not always name it; the serving
    default depends on whose accelerators run it)."""
    if isinstance(config, TrainingConfig | TrainingSearchConfig):
        named = config.stack
        LOG.info("training stack profile %s", named or f"{default_stack_name()} (the default)")
    elif isinstance(config, ServingConfig | ServingSearchConfig):
        named = config.serving
        LOG.info(
            "serving stack profile %s", named or f"{default_serving_stack(vendor)[0].name} (the default)"
        )


def _balance(config: JobConfig, model: TransformerSpec) -> ExpertLoadBalance | None:
    """The balance of the configuration's ``expert_load`` files, or ``None``."""
    if not config.expert_load:
        if config.expert_replicas is not None:
            raise UserInputError("--expert-replicas needs --expert-load FILE (the load to balance)")
        return None
    experts = model.moe.num_routed_experts if model.moe is not None else None
    load = read_expert_loads(config.expert_load, num_experts=experts)
    LOG.info("expert load from %s", ", ".join(config.expert_load))
    return expert_load_balance(
        load=load.array(),
        model=model,
        num_physical_experts=config.expert_replicas,
        source=", ".join(config.expert_load),
    )


def _train(config: TrainingConfig, resolved: _Resolved) -> TrainingPrediction:
    num_gpus = config.gpus_asked
    kept = config.kept_in_bf16(resolved.model)
    plan = config.training_plan(num_gpus=num_gpus or resolved.cluster.num_accelerators, bf16_layers=kept)
    if resolved.balance is not None:
        plan = plan_with_load(plan, balance=resolved.balance, cluster=resolved.cluster)
    estimate = estimate_training(
        model=resolved.model,
        cluster=resolved.cluster,
        plan=plan,
        efficiency=resolved.efficiency,
        num_tokens=config.num_tokens,
        check_fit=config.check_fit,
        sharp=config.sharp,
        num_gpus=num_gpus,
        stack=config.stack,
        free_settings=config.free_settings(),
        flop_convention=config.flop_convention,
    )
    effect = None
    if resolved.balance is not None:
        effect = training_load_effect(
            estimate=estimate,
            balance=resolved.balance,
            model=resolved.model,
            cluster=resolved.cluster,
            efficiency=resolved.efficiency,
            sharp=config.sharp,
        )
    return TrainingPrediction(config=config, estimate=estimate, expert_load=effect)


def _search_template(config: TrainingSearchConfig, model: TransformerSpec) -> TrainingPlan:
    """The settings a training search does not vary: overlaps, precision, layers kept in BF16."""
    start, end = config.kept_in_bf16(model)
    return TrainingPlan(
        tp_overlap=config.tp_overlap,
        dp_overlap=config.dp_overlap,
        precision=config.precision,
        bf16_layers_start=start,
        bf16_layers_end=end,
        ep_dispatcher=config.ep_dispatcher,
    )


def _search_train(config: TrainingSearchConfig, resolved: _Resolved) -> TrainingSearchPrediction:
    cluster = resolved.cluster
    compare_plan = None
    if config.compare_plan is not None:
        compare_plan = TrainingPlan(
            **parse_plan_text(config.compare_plan, cluster.num_accelerators, stack=config.stack)
        )
    result = search_training(
        model=resolved.model,
        cluster=cluster,
        global_batch_size=config.global_batch_size or 1,
        seq_len=config.seq_len,
        precision=config.precision,
        top=config.top,
        efficiency=resolved.efficiency,
        num_tokens=config.num_tokens,
        template=_search_template(config, resolved.model),
        schedules=config.schedule_names(),
        max_tp=cluster.num_accelerators if config.allow_cross_domain_tp else None,  # None: NVLink
        sharp=config.sharp,
        num_gpus=config.num_gpus,
        require_fit=True,
        expert_balance=resolved.balance,
        stack=config.stack,
        compare_plan=compare_plan,
        flop_convention=config.flop_convention,
    )
    effect = None
    if resolved.balance is not None and result.plans:
        effect = training_load_effect(
            estimate=result.plans[0],
            balance=resolved.balance,
            model=resolved.model,
            cluster=cluster,
            efficiency=resolved.efficiency,
            sharp=config.sharp,
        )
    return TrainingSearchPrediction(config=config, result=result, expert_load=effect)


def _precision(precision: str, cluster: Cluster, model: TransformerSpec) -> str:
    """A serving job's weight format: as given, ``auto`` the narrowest the GPU computes in,
    ``released`` the format ``model``'s checkpoint is published in
    (:func:`~lightspeed.sol.infer.search.serving_precision`, the rule the Python API follows)."""
    return serving_precision(precision, model=model, cluster=cluster)


@dataclass(frozen=True)
class ServingParts:
    """What a serving configuration resolves to: the model, the cluster, the calibration and (for
    a deployment) the plan, with a measured expert load applied (what the simulator needs)."""

    model: TransformerSpec
    cluster: Cluster
    efficiency: EfficiencyModel | None
    plan: InferencePlan | None


def serving_parts(
    config: ServingConfig | ServingSearchConfig,
    *,
    catalog: Catalog | None = None,
    models: ModelRegistry | None = None,
) -> ServingParts:
    """Resolve ``config`` against the catalog (see :class:`ServingParts`)."""
    config.check_complete()
    resolved = _resolve(config, config.num_gpus, catalog, models)
    plan = _serving_plan(config, resolved) if isinstance(config, ServingConfig) else None
    return ServingParts(resolved.model, resolved.cluster, resolved.efficiency, plan)


def _serving_plan(config: ServingConfig, resolved: _Resolved) -> InferencePlan:
    cluster = resolved.cluster
    plan = config.inference_plan(
        num_gpus=config.num_gpus or cluster.num_accelerators,
        precision=_precision(config.precision, cluster, resolved.model),
    )
    if resolved.balance is not None:
        plan = inference_plan_with_load(plan, balance=resolved.balance, cluster=cluster)
    return plan


def _serve(config: ServingConfig, resolved: _Resolved) -> ServingPrediction:
    cluster = resolved.cluster
    plan = _serving_plan(config, resolved)
    estimate = estimate_inference(
        model=resolved.model,
        cluster=cluster,
        plan=plan,
        load=config.serving_load(),
        efficiency=resolved.efficiency,
        batching=config.batching,
        num_gpus=config.num_gpus,
        serving=config.serving,
    )
    reason = not_simulated_reason(config)
    simulated, band = (None, None) if reason is not None else _simulated_under_load(config, resolved, plan)
    return ServingPrediction(
        config=config,
        estimate=estimate,
        expert_load=_inference_effect(estimate, resolved),
        simulated=simulated,
        not_simulated=reason,
        load_band=band,
    )


# Why no run is simulated under the load, by batching (the simulator models continuous batching of
# whole requests, as 'simulate' does).
_NOT_SIMULATED_BATCHING: Final = {
    "static": "--batching static is predicted analytically only: the request-level simulator models "
    "continuous batching (as 'lightspeed simulate'), so no run is simulated under the load; leave "
    "--batching out to simulate it",
    "decode": "--batching decode (a decode pool alone) is predicted analytically only: the request-level "
    "simulator models continuous batching of whole requests (as 'lightspeed simulate'), so no run is "
    "simulated under the load; --disaggregated P:D simulates prefill and decode pools",
}
_NO_LOAD: Final = (
    "no load given: the analytic steady state only; --concurrency C or --arrival-rate R also "
    "simulates the deployment under that load"
)


def not_simulated_reason(config: ServingConfig) -> str | None:
    """Why a serving deployment is not simulated under its load (``None`` where it is): no
    concurrency or arrival rate, or a batching the simulator does not model (static, decode)."""
    if config.batching in _NOT_SIMULATED_BATCHING:
        return _NOT_SIMULATED_BATCHING[config.batching]
    return None if load_given(config) else _NO_LOAD


def load_given(config: ServingConfig) -> bool:
    """Whether the configuration names a load to simulate (a concurrency or an arrival rate)."""
    return config.concurrency is not None or config.arrival_rate is not None


def _simulated_under_load(
    config: ServingConfig, resolved: _Resolved, plan: InferencePlan
) -> tuple[SimulationResult, ScaledRuns | None]:
    """The deployment simulated at the configuration's concurrency or arrival rate (its
    ``num_requests``, ``warmup_requests`` and ``seed``), with the runs that bound its latencies
    under an arrival rate."""
    if config.concurrency is not None:
        arrivals = ArrivalProcess.closed(config.concurrency)
    else:
        arrivals = ArrivalProcess.poisson(float(config.arrival_rate or 0.0))
    lengths = (LengthDistribution.fixed(config.input_tokens), LengthDistribution.fixed(config.output_tokens))
    deployment = simulated_deployment(
        model=resolved.model,
        cluster=resolved.cluster,
        plan=plan,
        efficiency=resolved.efficiency,
        serving=config.serving,
        num_gpus=config.num_gpus,
    )
    workload = ServingWorkload(
        arrivals, *lengths, config.num_requests, warmup_requests=config.warmup_requests
    )
    result = simulate_deployment(deployment, workload, seed=config.seed)
    return result, band_under_load(deployment, workload, seed=config.seed)


def _inference_effect(estimate: InferenceEstimate, resolved: _Resolved) -> ExpertLoadEffect | None:
    if resolved.balance is None:
        return None
    return inference_load_effect(
        estimate=estimate,
        balance=resolved.balance,
        model=resolved.model,
        cluster=resolved.cluster,
        efficiency=resolved.efficiency,
    )


def _search_serve(config: ServingSearchConfig, resolved: _Resolved) -> ServingSearchPrediction:
    cluster = resolved.cluster
    precision = _precision(config.precision, cluster, resolved.model)

    def search(speculative: SpeculativeDecoding | None) -> InferenceSearchResult:
        return search_inference(
            model=resolved.model,
            cluster=cluster,
            load=config.serving_load(),
            precision=precision,
            max_ttft_s=config.max_ttft_s,
            max_tpot_s=config.max_tpot_s,
            efficiency=resolved.efficiency,
            speculative=speculative,
            disaggregated=config.disaggregated,
            attention_dp=config.plan_family == "wide-ep",
            max_tp=cluster.num_accelerators if config.allow_cross_domain_tp else None,
            num_gpus=config.num_gpus,
            expert_balance=resolved.balance,
            serving=config.serving,
            attention_weights=config.attention_weights,
            effective_bits=config.effective_bits,
        )

    if config.search_draft_tokens is not None:  # every depth at the job's acceptance and draft cost
        # one rate for every depth (the configuration refuses rates per position beside a search)
        (rate,) = config.acceptance
        template = SpeculativeDecoding(1, rate, config.draft_cost)
        result = search_draft_depths(search, template, config.search_draft_tokens)
    else:
        result = search(config.speculative_decoding())
    effect = _inference_effect(result.best, resolved)
    return ServingSearchPrediction(config=config, result=result, expert_load=effect)


__all__ = [
    "ServingParts",
    "ServingPrediction",
    "ServingSearchPrediction",
    "TrainingPrediction",
    "TrainingSearchPrediction",
    "run",
    "serving_parts",
]
