"""``lightspeed plan infer`` and ``lightspeed search infer`` (registered by ``plan`` and ``search``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from lightspeed.cli._common import json_option, print_json
from lightspeed.cli._sol_options import (
    calibration_option,
    expert_load_options,
    model_options,
    resolve_cluster,
    resolve_efficiency,
    resolve_expert_balance,
    resolve_model,
    serving_option,
    system_options,
    with_expert_load,
)
from lightspeed.cli.options import (
    DEGREE,
    DRAFT_TOKENS,
    FRACTION,
    LATENCY_BOUND,
    PER_SECOND,
    SEQ_LEN,
    SEQUENCES,
    Number,
    PoolSplit,
)
from lightspeed.errors import InvalidPlanError
from lightspeed.report import (
    render_expert_load_effect,
    render_inference_estimate,
    render_inference_search,
    save_pareto_plot,
)
from lightspeed.sol import (
    BATCHING_MODES,
    INFERENCE_PRECISIONS,
    KV_PRECISIONS,
    PLAN_FAMILIES,
    InferencePlan,
    ServingLoad,
    SpeculativeDecoding,
    auto_precision,
    estimate_inference,
    inference_load_effect,
    inference_plan_with_load,
    search_inference,
)

F = TypeVar("F", bound=Callable[..., Any])


def load_options(function: F) -> F:
    """``--isl`` and ``--osl``: tokens per request."""
    function = click.option(
        "--osl",
        type=SEQ_LEN,
        default=1024,
        show_default=True,
        help="Output tokens per request.",
    )(function)
    return click.option(
        "--isl",
        type=SEQ_LEN,
        default=1024,
        show_default=True,
        help="Input (prompt) tokens per request.",
    )(function)


def precision_option(function: F) -> F:
    """``--precision``: weight format, or ``auto`` (the narrowest the GPU computes in)."""
    return click.option(
        "--precision",
        type=click.Choice([*INFERENCE_PRECISIONS, "auto"]),
        default="bf16",
        show_default=True,
        help="Weight format (nvfp4/mxfp4 include block scales); auto = narrowest the GPU computes in.",
    )(function)


def speculative_options(function: F) -> F:
    """``--draft-tokens``, ``--acceptance``, ``--draft-cost``: speculative decoding."""
    function = click.option(
        "--draft-cost",
        type=FRACTION,
        default=0.05,
        show_default=True,
        help="Cost of one draft step relative to one decode step.",
    )(function)
    function = click.option(
        "--acceptance",
        type=Number(minimum=0.0, maximum=1.0, max_open=True),
        default=0.7,
        show_default=True,
        help="Probability that each draft token is accepted.",
    )(function)
    return click.option(
        "--draft-tokens", type=DRAFT_TOKENS, help="Speculative decoding: draft tokens per iteration."
    )(function)


def _speculative(
    draft_tokens: int | None, acceptance: float, draft_cost: float
) -> SpeculativeDecoding | None:
    if draft_tokens is None:
        return None
    return SpeculativeDecoding(draft_tokens, acceptance, draft_cost)


def _replicas(num_gpus: int, per_replica: int, pools: tuple[int, int] | None, replicas: int | None) -> int:
    if pools is not None or replicas is not None:
        return replicas or 1
    if num_gpus % per_replica:
        raise InvalidPlanError(
            f"{num_gpus} GPUs do not split into replicas of tp x dp-attention x pp = {per_replica}; "
            "choose degrees whose product divides the GPU count, or set --replicas"
        )
    return num_gpus // per_replica


@click.command("infer")
@model_options
@system_options
@click.option("--tp", type=DEGREE, default=1, show_default=True, help="Tensor parallel size.")
@click.option("--pp", type=DEGREE, default=1, show_default=True, help="Pipeline stages.")
@click.option("--ep", type=DEGREE, default=1, show_default=True, help="Expert parallel size.")
@click.option(
    "--dp-attention",
    type=DEGREE,
    default=1,
    show_default=True,
    help="Attention groups per stage.",
)
@click.option("--replicas", type=DEGREE, help="Model copies (default: GPUs / replica size).")
@precision_option
@click.option("--activation-precision", type=click.Choice(INFERENCE_PRECISIONS), help="GEMM input format.")
@click.option("--kv-precision", type=click.Choice(KV_PRECISIONS), help="KV cache format.")
@click.option("--kv-replication", is_flag=True, help="Allow TP above the KV heads by replicating heads.")
@load_options
@click.option("--concurrency", type=SEQUENCES, help="Requests in flight (default: KV-cache limit).")
@click.option("--arrival-rate", type=PER_SECOND, help="Requests per second.")
@click.option("--batching", type=click.Choice(BATCHING_MODES), default="continuous", show_default=True)
@click.option(
    "--disaggregated", "pools", type=PoolSplit(), metavar="P:D", help="P prefill and D decode replicas."
)
@click.option("--max-batch", type=SEQUENCES, help="Cap on sequences per replica.")
@speculative_options
@expert_load_options
@calibration_option
@serving_option
@json_option
def plan_infer(
    *,
    model_name: str | None,
    config_path: Path | None,
    system_text: str,
    num_gpus: int | None,
    tp: int,
    pp: int,
    ep: int,
    dp_attention: int,
    replicas: int | None,
    precision: str,
    activation_precision: str | None,
    kv_precision: str | None,
    kv_replication: bool,
    isl: int,
    osl: int,
    concurrency: int | None,
    arrival_rate: float | None,
    batching: str,
    pools: tuple[int, int] | None,
    max_batch: int | None,
    draft_tokens: int | None,
    acceptance: float,
    draft_cost: float,
    expert_load_paths: tuple[Path, ...],
    expert_replicas: int | None,
    calibration: str | None,
    serving_name: str | None,
    as_json: bool,
) -> None:
    """Predict TTFT, TPOT, throughput and the KV-limited batch of one serving deployment."""
    model = resolve_model(model_name, config_path)
    cluster = resolve_cluster(system_text, num_gpus)
    balance = resolve_expert_balance(expert_load_paths, expert_replicas, model)
    plan = InferencePlan(
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=dp_attention,
        replicas=_replicas(num_gpus or cluster.num_accelerators, tp * dp_attention * pp, pools, replicas),
        precision=auto_precision(cluster) if precision == "auto" else precision,
        activation_precision=activation_precision,
        kv_precision=kv_precision,
        kv_replication=kv_replication,
        speculative=_speculative(draft_tokens, acceptance, draft_cost),
        disaggregated=pools,
        max_batch=max_batch,
    )
    if balance is not None:
        plan = inference_plan_with_load(plan, balance=balance, cluster=cluster)
    efficiency = resolve_efficiency(calibration)
    estimate = estimate_inference(
        model=model,
        cluster=cluster,
        plan=plan,
        load=ServingLoad(isl, osl, concurrency=concurrency, arrival_rate_per_s=arrival_rate),
        efficiency=efficiency,
        batching=batching,
        num_gpus=num_gpus,
        serving=serving_name,
    )
    effect = _effect(estimate, balance, model, cluster, efficiency)
    if as_json:
        print_json(with_expert_load(infer_json(estimate), effect))
        return
    render_inference_estimate(estimate)
    if effect is not None:
        render_expert_load_effect(effect)


def _effect(estimate: Any, balance: Any, model: Any, cluster: Any, efficiency: Any) -> Any:
    """What the expert load costs ``estimate`` (``None`` without ``--expert-load``)."""
    if balance is None:
        return None
    return inference_load_effect(
        estimate=estimate, balance=balance, model=model, cluster=cluster, efficiency=efficiency
    )


def infer_json(estimate: Any) -> dict[str, Any]:
    """``plan infer --json``: the headline keys, then the whole estimate."""
    return {**estimate.summary(), **estimate.to_dict()}


@click.command("infer")
@model_options
@system_options
@precision_option
@load_options
@click.option(
    "--max-ttft", "max_ttft_s", type=LATENCY_BOUND, help="Time-to-first-token bound (e.g. 5s, 500ms)."
)
@click.option("--max-tpot", "max_tpot_s", type=LATENCY_BOUND, help="Time-per-output-token bound (e.g. 50ms).")
@click.option("--disaggregated", is_flag=True, help="Also try separate prefill and decode pools.")
@click.option(
    "--plan-family",
    type=click.Choice(PLAN_FAMILIES),
    default="wide-ep",
    show_default=True,
    help="tp-ep-pp: TP, EP and PP only; wide-ep: also attention data parallelism (MoE).",
)
@click.option(
    "--allow-cross-domain-tp", is_flag=True, help="Also try TP groups larger than the scale-up domain."
)
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), help="Write the Pareto plot (PNG/SVG).")
@speculative_options
@expert_load_options
@calibration_option
@serving_option
@json_option
def search_infer(
    *,
    model_name: str | None,
    config_path: Path | None,
    system_text: str,
    num_gpus: int | None,
    precision: str,
    isl: int,
    osl: int,
    max_ttft_s: float | None,
    max_tpot_s: float | None,
    disaggregated: bool,
    plan_family: str,
    allow_cross_domain_tp: bool,
    plot_path: Path | None,
    draft_tokens: int | None,
    acceptance: float,
    draft_cost: float,
    expert_load_paths: tuple[Path, ...],
    expert_replicas: int | None,
    calibration: str | None,
    serving_name: str | None,
    as_json: bool,
) -> None:
    """Best deployment (TP/EP/PP per replica, replicas, batch) under latency bounds, and the Pareto
    frontier of tokens/s per GPU against tokens/s per user."""
    model = resolve_model(model_name, config_path)
    cluster = resolve_cluster(system_text, num_gpus)
    balance = resolve_expert_balance(expert_load_paths, expert_replicas, model)
    efficiency = resolve_efficiency(calibration)
    result = search_inference(
        model=model,
        cluster=cluster,
        load=ServingLoad(isl, osl),
        precision=auto_precision(cluster) if precision == "auto" else precision,
        max_ttft_s=max_ttft_s,
        max_tpot_s=max_tpot_s,
        efficiency=efficiency,
        speculative=_speculative(draft_tokens, acceptance, draft_cost),
        disaggregated=disaggregated,
        attention_dp=plan_family == "wide-ep",
        max_tp=cluster.num_accelerators if allow_cross_domain_tp else None,
        num_gpus=num_gpus,
        expert_balance=balance,
        serving=serving_name,
    )
    effect = _effect(result.best, balance, model, cluster, efficiency)
    written = save_pareto_plot(result, plot_path) if plot_path is not None else []
    if as_json:
        payload = {**search_infer_json(result), "plots": [str(path) for path in written]}
        print_json(with_expert_load(payload, effect))
        return
    render_inference_search(result)
    if effect is not None:
        render_expert_load_effect(effect)
    for path in written:
        click.echo(f"wrote {path}")


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
        "estimate": best.to_dict(),
    }
