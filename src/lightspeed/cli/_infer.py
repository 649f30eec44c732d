"""``lightspeed plan infer`` and ``lightspeed search infer`` (registered by ``plan`` and ``search``)."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._config import config_options, configuration, field_options
from lightspeed.cli._serve_options import resolve_slo, slo_of_text
from lightspeed.cli._sol_options import refuse_given, refuse_on_dense, with_expert_load
from lightspeed.cli.text_options import OutputPath
from lightspeed.errors import UserInputError
from lightspeed.jobs import load_given, not_simulated_reason, run, serving_parts
from lightspeed.report import (
    render_expert_load_effect,
    render_goodput_ranking,
    render_inference_estimate,
    render_inference_search,
    render_load_band,
    render_simulated_against_analytic,
    render_simulation,
    save_pareto_plot,
    simulated_against_analytic,
)
from lightspeed.sol import (
    InferenceEstimate,
    InferenceSearchResult,
    ServingConfig,
    ServingJob,
    ServingSearchConfig,
    SpeculativeDecoding,
)
from lightspeed.sol.serve import (
    GoodputSearchResult,
    SimulationResult,
    search_goodput,
)

# ``--isl`` and ``--osl`` for commands that take a request shape without a whole deployment
load_options = field_options(
    ServingJob, "input_tokens", "output_tokens", rename={"input_tokens": "isl", "output_tokens": "osl"}
)


@click.command("infer")
@config_options(ServingConfig)
@json_option
def plan_infer(*, as_json: bool, **values: Any) -> None:
    """Predict TTFT, TPOT, throughput and the KV-limited batch of one serving deployment; under
    a concurrency or an arrival rate, also the simulated latency percentiles."""
    config = configuration(ServingConfig, values)
    check_deployment(config)
    not_simulated = not_simulated_reason(config)
    if not_simulated is not None:
        refuse_given(
            ("num_requests", "seed", "warmup_requests"),
            "only the run simulated under a load uses {it}, which plan infer makes for continuous "
            "batching with --concurrency or --arrival-rate: give one, or leave {it} out",
        )
    prediction = run(config, catalog=get_context().catalog(), models=get_context().models())
    simulated, band = prediction.simulated, prediction.load_band
    if not_simulated is not None and load_given(config):  # a load asked for, and no simulated run
        click.echo(f"lightspeed: note: {not_simulated}", err=True)
    if as_json:
        payload = with_expert_load(infer_json(prediction.estimate), prediction.expert_load)
        payload["simulated"] = None
        if simulated is not None:
            payload["simulated"] = {
                **simulated.summary(),
                **simulated.to_dict(),
                "interval_under_load": None if band is None else band.intervals(),
                "against_analytic": _against_analytic(prediction.estimate, simulated),
            }
        payload["not_simulated"] = not_simulated
        print_json({**payload, "config": config.to_file_dict()})
        return
    render_inference_estimate(
        prediction.estimate,
        simulated_ttft_p50_s=None if simulated is None else simulated.ttft.p50_s,
        simulated_tpot_p50_s=None if simulated is None else simulated.tpot.p50_s,
    )
    if simulated is not None:
        render_simulation(simulated, title="simulated under this load (request by request)")
        render_simulated_against_analytic(_against_analytic(prediction.estimate, simulated))
    if band is not None:
        render_load_band(band)
    if prediction.expert_load is not None:
        render_expert_load_effect(prediction.expert_load)


def _against_analytic(estimate: InferenceEstimate, simulated: SimulationResult) -> dict[str, float]:
    return simulated_against_analytic(
        analytic_ttft_s=estimate.ttft_s,
        analytic_tokens_per_s=estimate.output_tokens_per_s,
        simulated=simulated,
        analytic_tpot_s=estimate.tpot_s,
        analytic_in_flight=estimate.concurrency,
    )


def check_deployment(config: ServingConfig) -> None:
    """Refuse the deployment settings that would be ignored (``plan infer`` and ``simulate``):
    speculation's acceptance and draft cost without draft tokens (given on the command line; a
    plan file holds their defaults), a batching mode beside --disaggregated, and --expert-imbalance
    on a dense model (as ``--ep``)."""
    if config.draft_tokens is None:
        refuse_given(
            ("acceptance", "draft_cost"),
            "speculative decoding only: give --draft-tokens K too, or leave {it} out",
        )
    if config.disaggregated is not None and config.batching != "continuous":
        raise UserInputError(
            f"--batching {config.batching}: a disaggregated deployment (--disaggregated) batches its "
            "prefill and decode pools itself; leave --batching out"
        )
    refuse_on_dense(config, {"--expert-imbalance": config.expert_imbalance is not None})


def infer_json(estimate: Any) -> dict[str, Any]:
    """``plan infer --json``: the headline keys, then the whole estimate. A request of one output
    token has no time between tokens: its TPOT and tokens/s per user (and their error bars) are
    null, as the table shows n/a (its one token's time is the TTFT)."""
    payload = {**estimate.summary(), **estimate.to_dict()}
    if estimate.load.output_tokens <= 1:
        payload.update(dict.fromkeys(_BETWEEN_TOKENS))
        if isinstance(payload.get("intervals"), dict):
            payload["intervals"] = {**payload["intervals"], **dict.fromkeys(_BETWEEN_TOKENS)}
    return payload


# the figures of the time between output tokens, which a one-token request does not have
_BETWEEN_TOKENS = ("tpot_s", "output_tokens_per_s_per_user")


@click.command("infer")
@config_options(ServingSearchConfig)
@click.option(
    "--plot", "plot_path", type=OutputPath(example="pareto.png"), help="Write the Pareto plot (PNG/SVG)."
)
@json_option
def search_infer(*, plot_path: Path | None, as_json: bool, **values: Any) -> None:
    """Best deployment (TP/EP/PP per replica, replicas, batch) under latency bounds, and the Pareto
    frontier of tokens/s per GPU against tokens/s per user; with --slo, the finalists simulated
    under load and ranked by goodput per GPU (at --rate, or at the highest rate each sustains)."""
    config = configuration(ServingSearchConfig, values)
    _check_search(config)
    prediction = run(_bounded_by_slo(config), catalog=get_context().catalog(), models=get_context().models())
    result = prediction.result
    written = save_pareto_plot(result, plot_path) if plot_path is not None else []
    goodput = _goodput_ranking(config, result)
    command = None if goodput is None else simulate_command(config, goodput)
    if as_json:
        payload = {**search_infer_json(result), "plots": [str(path) for path in written]}
        payload["goodput"] = None if goodput is None else {**goodput.to_dict(), "simulate_command": command}
        payload["recommended"] = recommended_json(result, goodput)
        print_json({**with_expert_load(payload, prediction.expert_load), "config": config.to_file_dict()})
        return
    render_inference_search(result, ranked_below=goodput is not None)
    if goodput is not None:
        render_goodput_ranking(goodput)
        if command is not None:
            click.echo(
                f"the best finalist's run, to repeat or vary (add --seed N for another sample of the "
                f"arrivals): {command}"
            )
    if prediction.expert_load is not None:
        render_expert_load_effect(prediction.expert_load)
    for path in written:
        click.echo(f"wrote {path}")


def recommended_json(analytic: InferenceSearchResult, goodput: GoodputSearchResult | None) -> dict[str, Any]:
    """``search infer --json``'s ``recommended``: the deployment to run, the goodput ranking's
    winner (``goodput.ranking[0]``) where the finalists were simulated at an SLO, else the analytic
    best (``best``), and where it comes from (``source``)."""
    if goodput is None:
        return {
            "source": "best",
            "plan": analytic.best.plan.to_dict(),
            "deployment": analytic.best.plan.describe(),
        }
    winner = goodput.best
    return {
        "source": "goodput.ranking[0]",
        "plan": winner.plan.to_dict(),
        "deployment": winner.plan.describe(),
        "meets": winner.meets,
    }


def _check_search(config: ServingSearchConfig) -> None:
    """Refuse the search options that would be ignored (given on the command line: a plan file holds
    their defaults): speculation's acceptance and draft cost without draft tokens, and the size of
    the goodput ranking's simulated runs without --slo."""
    if config.draft_tokens is None and config.search_draft_tokens is None:
        refuse_given(
            ("acceptance", "draft_cost"),
            "speculative decoding only: give --draft-tokens K or --search-draft-tokens N too, "
            "or leave {it} out",
        )
    if config.slo is None:
        if config.rate_per_s is not None or config.max_rate_at_slo:  # before any search runs
            raise UserInputError("--rate and --max-rate-at-slo rank by goodput at an SLO: give --slo too")
        refuse_given(
            ("num_requests", "seed", "warmup_requests", "finalists"),
            "only the goodput ranking's simulated runs use {it}, which --slo asks for: give --slo "
            "too, or leave {it} out",
        )


def _bounded_by_slo(config: ServingSearchConfig) -> ServingSearchConfig:
    """The analytic search under the SLO's limits where --max-ttft / --max-tpot leave them open, so
    the best deployment shown is one that can meet the SLO the finalists are ranked by."""
    slo = resolve_slo(slo_of_text(config.slo))
    if slo is None:
        return config
    return dataclasses.replace(
        config,
        max_ttft_s=config.max_ttft_s if config.max_ttft_s is not None else slo.ttft_s,
        max_tpot_s=config.max_tpot_s if config.max_tpot_s is not None else slo.tpot_s,
    )


def _goodput_ranking(
    config: ServingSearchConfig, analytic: InferenceSearchResult
) -> GoodputSearchResult | None:
    """The finalists of ``analytic`` (the search under the SLO's limits, :func:`_bounded_by_slo`)
    ranked by goodput per GPU at ``--slo`` (``None`` without it)."""
    slo = resolve_slo(slo_of_text(config.slo))
    if slo is None:
        return None
    parts = serving_parts(config, catalog=get_context().catalog(), models=get_context().models())
    return search_goodput(
        model=parts.model,
        cluster=parts.cluster,
        load=config.serving_load(),
        slo=slo,
        rate_per_s=config.rate_per_s,
        precision=analytic.best.plan.precision,
        num_requests=config.num_requests,
        seed=config.seed,
        finalists=config.finalists,
        warmup_requests=config.warmup_requests,
        efficiency=parts.efficiency,
        speculative=config.speculative_decoding(),
        disaggregated=config.disaggregated,
        attention_dp=config.plan_family == "wide-ep",
        num_gpus=config.num_gpus,
        serving=config.serving,
        analytic=analytic,
        attention_weights=analytic.best.plan.attention_weights,
        effective_bits=analytic.best.plan.effective_bits,
    )


# search infer's settings a simulate run takes as they are (the plan's come from the finalist)
_SIMULATE_KEEPS = (
    "model",
    "model_config",
    "system",
    "num_gpus",
    "calibration",
    "force_calibration",
    "expert_replicas",
    "state_precision",
    "input_tokens",
    "output_tokens",
    "serving",
)


def simulate_command(config: ServingSearchConfig, goodput: GoodputSearchResult) -> str | None:
    """The ``lightspeed simulate`` command line that repeats the best finalist's run: its plan, its
    rate, the same requests (warm-up and measured) and seed, at the same SLO (``None`` where no rate
    was found to run at)."""
    best = goodput.best
    if config.slo is None or best.rate_per_s <= 0.0:
        return None
    plan = best.plan
    shape = plan.prefill_shape
    speculative = plan.speculative
    serving = ServingConfig(
        **{name: getattr(config, name) for name in _SIMULATE_KEEPS},
        precision=plan.precision,
        attention_weights=plan.attention_weights,
        effective_bits=plan.effective_bits,
        draft_tokens=None if speculative is None else speculative.num_draft_tokens,
        acceptance=config.acceptance if speculative is None else _rates_of(speculative),
        draft_cost=config.draft_cost if speculative is None else speculative.draft_cost_fraction,
        num_requests=best.warmup_requests + best.measured_requests,
        warmup_requests=best.warmup_requests,
        seed=goodput.seed,
        tp=plan.tp,
        pp=plan.pp,
        ep=plan.ep,
        dp_attention=plan.dp_attention,
        replicas=plan.replicas,
        activation_precision=plan.activation_precision,
        kv_precision=plan.kv_precision,
        kv_replication=plan.kv_replication,
        arrival_rate=best.rate_per_s,
        disaggregated=plan.disaggregated,
        prefill_tp=None if shape is None else shape.tp,
        prefill_pp=None if shape is None else shape.pp,
        prefill_ep=None if shape is None else shape.ep,
        prefill_dp_attention=None if shape is None else shape.dp_attention,
        max_batch=plan.max_batch,
        expert_imbalance=plan.expert_imbalance,
    )
    words = ["lightspeed", "simulate", *_options_of(serving), "--slo", config.slo]
    return shlex.join(words)


def _rates_of(speculative: SpeculativeDecoding) -> tuple[float, ...]:
    """The acceptance as ``--acceptance`` gives it: one rate, or one per draft position where they
    differ (:attr:`SpeculativeDecoding.position_rates`)."""
    rates = speculative.position_rates
    return rates if len(set(rates)) > 1 else (speculative.acceptance_rate,)


def _options_of(config: ServingConfig) -> list[str]:
    """The command-line options that give ``config``'s values other than the defaults (a pair as
    ``P:D``, values per position as ``A1,A2,...``)."""
    words: list[str] = []
    for item in config.settings():
        value = getattr(config, item.name)
        if value == item.default or value is None:
            continue
        flag = (item.metadata.get("flags") or (f"--{item.name.replace('_', '-')}",))[0]
        if isinstance(value, bool):
            words.append(flag)
        elif isinstance(value, tuple):
            separator = "," if isinstance(item.default, tuple) else ":"
            words.extend([flag, separator.join(_option_text(part) for part in value)])
        else:
            words.extend([flag, _option_text(value)])
    return words


def _option_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def search_infer_json(result: Any) -> dict[str, Any]:
    """The ``search infer --json`` contract."""
    best = result.best
    return {
        "best": {**best.summary(), "plan": best.plan.to_dict(), "batch_per_replica": best.batch_per_replica},
        "frontier": [point.to_dict() for point in result.frontier],
        "num_points_evaluated": result.num_points_evaluated,
        "num_points_feasible": result.num_points_feasible,
        "elapsed_s": result.elapsed_s,
        "constraints": list(result.constraints),
        "draft_depths": [depth.to_dict() for depth in result.draft_depths],
        "estimate": best.to_dict(),
    }
