"""``lightspeed simulate``: one serving deployment under a workload, request by request."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Final

import click

from lightspeed.cli._common import get_context, given_flags, json_option, print_json
from lightspeed.cli._config import OptionTable, config_file_keys, config_options, configuration
from lightspeed.cli._infer import check_deployment
from lightspeed.cli._serve_options import (
    arrival_options,
    length_options,
    length_spec_text,
    resolve_arrivals,
    resolve_scheduler,
    resolve_slo,
    resolve_workload,
    scheduler_options,
    slo_option,
    slo_spec_text,
)
from lightspeed.cli._sol_options import refuse_given
from lightspeed.cli.options import SIMULATED_S
from lightspeed.cli.text_options import OutputPath
from lightspeed.errors import UserInputError
from lightspeed.jobs import serving_parts
from lightspeed.report import (
    render_capacity,
    render_load_band,
    render_load_sweep,
    render_simulation,
    save_latency_load_plot,
)
from lightspeed.sol import ServingConfig
from lightspeed.sol.serve import (
    MLPERF_SCENARIOS,
    ArrivalProcess,
    LengthDistribution,
    LoadPoint,
    MlperfWorkload,
    ServiceLevel,
    ServingWorkload,
    SimulatedDeployment,
    band_under_load,
    check_slo_reachable,
    load_mlperf_workload,
    load_sweep,
    max_rate_at_slo,
    simulate_deployment,
    simulated_deployment,
    steady_state_workload,
)
from lightspeed.workload import check_context

_SCHEDULER_KEYS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "kv_policy",
    "preemption",
    "router",
    "prefill_steps",
)
_NUMBER = (int, float)
# the [simulate] key of each length's lognormal centre (see SIMULATE_TABLE)
LOGNORMAL_CENTRE_KEYS: Final = {
    "input_tokens": "isl_dist_mean_tokens",
    "output_tokens": "osl_dist_mean_tokens",
}
_CENTRE_KEYS: Final = frozenset(LOGNORMAL_CENTRE_KEYS.values())
_SIDE_FLAGS: Final = {"input_tokens": "isl", "output_tokens": "osl"}
# --max-rate-at-slo reruns the run at the rate it finds with this many more seeds: the rate is one
# sample of the arrivals (Llama 3 8B FP8 on one H100, 500/200 tokens, TTFT 300 ms and TPOT 20 ms:
# 59.47-63.87 req/s over seeds 0-4, a 7% spread), and the output says whether it holds on them
SEED_CHECKS = 2
# simulate's own options in a plan file's [simulate] table (the --json "config" object's "simulate"),
# so that a saved run re-runs as the same run; --plot and --save-config say where to write, not what
# to simulate, and are left out (docs/plan-files.md)
SIMULATE_TABLE = OptionTable(
    name="simulate",
    keys={
        "burstiness": ("cv", _NUMBER),
        "offline": ("offline", (bool,)),
        "trace": ("trace_path", (str,)),
        "isl_dist": ("isl_dist", (str,)),
        "osl_dist": ("osl_dist", (str,)),
        # the mean a lognormal --isl-dist/--osl-dist centres on (its --isl/--osl) where the file's
        # top-level input_tokens/output_tokens hold the mean after clipping, for plan infer
        LOGNORMAL_CENTRE_KEYS["input_tokens"]: ("input_tokens", (int,)),
        LOGNORMAL_CENTRE_KEYS["output_tokens"]: ("output_tokens", (int,)),
        "prefix_hit_rate": ("prefix_hit_rate", _NUMBER),
        "mlperf": ("mlperf_name", (str,)),
        "scenario": ("scenario", (str,)),
        "slo": ("slo_spec", (str,)),
        "max_rate_at_slo": ("max_rate_at_slo", (bool,)),
        "sweep": ("sweep", (bool,)),
        "horizon_s": ("horizon_s", _NUMBER),
        "max_num_seqs": ("max_num_seqs", (int,)),
        "max_num_batched_tokens": ("max_num_batched_tokens", (int,)),
        "block_size": ("block_size", (int,)),
        "kv_policy": ("kv_policy", (str,)),
        "preemption": ("preemption", (str,)),
        "router": ("router", (str,)),
        "prefill_steps": ("prefill_steps", (str,)),
    },
    written={"isl_dist": length_spec_text, "osl_dist": length_spec_text, "slo_spec": slo_spec_text},
    comment="the simulated workload, SLO and scheduler: 'lightspeed simulate --config FILE' runs them "
    "(plan infer leaves this table out)",
)


@click.command("simulate")
@config_options(ServingConfig, table=SIMULATE_TABLE)
@arrival_options
@length_options
@click.option(
    "--mlperf",
    "mlperf_name",
    help="An MLPerf LLM benchmark (llama2-70b, mixtral-8x7b ...): its model (without --model), lengths, "
    "SLO and sample count (without --requests).",
)
@click.option(
    "--scenario",
    type=click.Choice(MLPERF_SCENARIOS),
    default="server",
    show_default=True,
    help="MLPerf scenario (with --mlperf).",
)
@slo_option
@click.option(
    "--max-rate-at-slo",
    is_flag=True,
    help="Find the highest arrival rate that meets --slo and run at it (not with --arrival-rate, "
    "--concurrency or --offline; --burstiness keeps its shape).",
)
@click.option("--sweep", is_flag=True, help="Latency against load, 10% to 100% of the saturation rate.")
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(example="latency.png"),
    help="Write the latency-load figure of the --sweep, which --plot runs whether or not --sweep is "
    "given (10% to 100% of the saturation rate, beside the run shown).",
)
@click.option("--horizon", "horizon_s", type=SIMULATED_S, help="Stop at this simulated time (e.g. 10min).")
@scheduler_options
@json_option
def command(*, as_json: bool, **values: Any) -> None:
    """Simulate requests through a deployment's scheduler (continuous batching, chunked prefill,
    paged KV cache, preemption, P/D pools, speculation): TTFT, TPOT, ITL and end-to-end
    percentiles, throughput, SLO goodput, queue and KV use over time. The deployment options
    are plan infer's (--arrival-rate: Poisson arrivals; --concurrency: a closed loop)."""
    benchmark = None if values["mlperf_name"] is None else load_mlperf_workload(values["mlperf_name"])
    named = _with_benchmark_model(values, benchmark)
    config = configuration(ServingConfig, {**named, "save_config": None})  # written with its count below
    if config.batching != "continuous":
        raise UserInputError(
            "simulate runs continuous batching; drop --batching (static and decode are analytic)"
        )
    check_deployment(config)
    _check_workload_options(values)
    if values["plot_path"] is not None:  # a path the figure cannot go to fails before any run
        save_latency_load_plot(None, values["plot_path"])
    parts = serving_parts(config, catalog=get_context().catalog(), models=get_context().models())
    assert parts.plan is not None
    slo = resolve_slo(values["slo_spec"])
    workload, slo, find_capacity = _workload(config, values, slo=slo, model=parts.model, benchmark=benchmark)
    # the plan file and the JSON keep the count run (an MLPerf benchmark's samples, a whole trace)
    # and the mean lengths drawn, which plan infer analyses (the distributions in [simulate])
    lengths = _mean_lengths(workload, values)
    table = _written_table(lengths, values)
    config = configuration(
        ServingConfig,
        named,
        table=table,
        changes={**lengths, **({} if _requests_given() else {"num_requests": workload.num_requests})},
    )
    _note_users_past_requests(workload)
    longest, what = _longest_request(workload)
    context = check_context(parts.model, longest, what=what)
    _warn_past_context(context, parts.model, trace=workload.trace is not None)
    deployment = simulated_deployment(
        model=parts.model,
        cluster=parts.cluster,
        plan=parts.plan,
        scheduler=resolve_scheduler(**{key: values[key] for key in _SCHEDULER_KEYS}),
        efficiency=parts.efficiency,
        serving=config.serving,
        num_gpus=config.num_gpus,
    )
    _note_token_budget(deployment, values["max_num_batched_tokens"])
    _run(
        deployment,
        workload,
        slo,
        values,
        find_capacity=find_capacity,
        as_json=as_json,
        config=config,
        table=table,
        benchmark=benchmark,
        context=context,
    )


def _note_users_past_requests(workload: ServingWorkload) -> None:
    """Say on stderr when a closed loop has at least as many users as requests: each user sends
    one and none sends again, so every request is in flight from the start, as an offline run
    (the figures are those of one burst, not of users sending as they are served)."""
    users, count = workload.arrivals.concurrency, workload.num_requests
    if workload.arrivals.kind != "closed" or users is None or users < count:
        return
    click.echo(
        f"lightspeed: note: --concurrency {users:,} with {count:,} requests: each user sends one and "
        f"none sends again, so all {count:,} are in flight from the start (an offline run, not a closed "
        f"loop); give --requests well above {users:,} for users that send as they are served",
        err=True,
    )


def _mean_lengths(workload: ServingWorkload, values: dict[str, Any]) -> dict[str, int]:
    """``input_tokens``/``output_tokens`` of a plan file for lengths the workload draws itself (a
    uniform or file distribution, a trace, an MLPerf benchmark's; not given on the command line) or
    clips (a lognormal's draws beyond its bounds, given or not): the mean of what is drawn, rounded,
    where it differs from the option's value (its default, which no request ran at, or the mean a
    lognormal centres on before clipping, would otherwise be written for ``plan infer`` to analyse)."""
    sides = (("input_tokens", workload.input_lengths), ("output_tokens", workload.output_lengths))
    means = {
        name: max(round(_drawn_mean_tokens(lengths)), 1)
        for name, lengths in sides
        if lengths.kind == "lognormal" or (lengths.kind != "fixed" and not given_flags(name))
    }
    return {name: tokens for name, tokens in means.items() if tokens != values[name]}


def _drawn_mean_tokens(lengths: LengthDistribution) -> float:
    """The mean of the lengths ``lengths`` draws: a lognormal's after clipping to its bounds
    (:meth:`LengthDistribution.clipped`; ``mean_tokens`` is its centre before), else ``mean_tokens``."""
    return lengths.clipped()[1] if lengths.kind == "lognormal" else lengths.mean_tokens


def _written_table(lengths: dict[str, int], values: dict[str, Any]) -> OptionTable:
    """The [simulate] table as a plan file writes it, its comment saying which of the file's
    top-level lengths are means of the distributions in the table and what plan infer, which
    leaves the table out, analyses instead of them (every request at those lengths, and Poisson
    arrivals where --burstiness shapes them). A lognormal's centre (its --isl/--osl) is kept in the
    table where the top level holds its clipped mean, so that ``simulate --config`` draws the same
    lengths; otherwise the table leaves the centre keys out."""
    centred = [name for name in lengths if values[f"{_SIDE_FLAGS[name]}_dist"][0] == "lognormal"]
    notes = [SIMULATE_TABLE.comment]
    if lengths:
        named = " and ".join(f"{name} = {tokens}" for name, tokens in lengths.items())
        means = "is the mean" if len(lengths) == 1 else "are the means"
        notes.append(f"{named} above {means} of the lengths drawn here: plan infer runs every request at it")
    for name in centred:
        notes.append(
            f"{name} = {lengths[name]} is the lognormal's mean after clipping to its bounds; simulate "
            f"centres it on {LOGNORMAL_CENTRE_KEYS[name]} = {values[name]} (--{_SIDE_FLAGS[name]})"
        )
    if values.get("cv") is not None:
        notes.append(
            f"plan infer takes arrival_rate as Poisson arrivals; simulate gives them gamma gaps of CV "
            f"{values['cv']:g} (burstiness)"
        )
    kept = {LOGNORMAL_CENTRE_KEYS[name] for name in centred}
    keys = {key: item for key, item in SIMULATE_TABLE.keys.items() if key in kept or key not in _CENTRE_KEYS}
    return replace(SIMULATE_TABLE, keys=keys, comment="\n# ".join(notes))


def _note_token_budget(deployment: SimulatedDeployment, budget: int | None) -> None:
    """Say on stderr when a --max-num-batched-tokens given without --max-num-seqs caps the batch
    below the sequences per rank the scheduler would run (what the KV cache holds, the server's
    default): where decodes share a step with prompts, every running sequence takes a token of the
    budget a step (the drafts + 1 under speculation), and a sequence is admitted only while some
    is left, so at most ceil(budget / tokens each) run (:func:`check_token_budget` refuses a
    budget below a --max-num-seqs given)."""
    if budget is None or deployment.scheduler.max_sequences_per_rank is not None:
        return
    if deployment.separate_prefill or deployment.plan.disaggregated is not None:
        return  # decodes run in steps (or on replicas) of their own: the budget is the prompts'
    cap = deployment.max_sequences_per_rank
    each = math.ceil(deployment.pool.query_tokens)
    runs = math.ceil(budget / each)
    if runs >= cap:
        return
    tokens = "a token" if each == 1 else f"{each} tokens (the drafts + 1)"
    click.echo(
        f"lightspeed: note: --max-num-batched-tokens {budget:,} caps the batch at {runs:,} "
        f"sequence{'' if runs == 1 else 's'}"
        f"{' per micro-batch' if deployment.plan.pp > 1 else ''}, below the {cap:,} per rank the "
        f"scheduler would run: each running sequence takes {tokens} of it a step (vLLM refuses a "
        f"budget below max_num_seqs); raise the budget, or give --max-num-seqs {runs:,} to run that batch",
        err=True,
    )


def _warn_past_context(context: tuple[str, ...], model: Any, *, trace: bool) -> None:
    """Say on stderr, not only in the run's assumptions, that a request runs past the model's
    context (:func:`check_context`: a rotary model runs it, quality aside, as a rope-scaled variant
    would; a learned position table was refused): minutes-long TTFTs follow, and a typo
    (``--isl 200000``) must not pass as a result."""
    lengths = "the trace's requests" if trace else "--isl + --osl"
    for note in context:
        click.echo(
            f"lightspeed: warning: {note}: simulated as if {model.name} could run it (a rope-scaled "
            f"variant would); keep {lengths} within {model.max_seq_len:,} tokens, or pass a model "
            "file with a longer max_seq_len (--model-config)",
            err=True,
        )


def _longest_request(workload: ServingWorkload) -> tuple[int, str]:
    """(tokens, what they are) of the workload's longest request, prompt and output together, that
    the model's context is checked against: a trace's longest, the bounds of fixed, uniform and
    empirical lengths, the mean of log-normal ones (unbounded unless given)."""
    if workload.trace is not None:
        trace = workload.trace
        pairs = zip(trace.input_tokens, trace.output_tokens, strict=True)
        return max((prompt + output for prompt, output in pairs), default=0), "the trace's longest request"
    sides = (workload.input_lengths, workload.output_lengths)
    if any(side.kind == "lognormal" for side in sides):
        return round(sum(side.mean_tokens for side in sides)), "a mean request (isl+osl)"
    longest = sum(side.maximum_tokens for side in sides)
    return longest, "isl+osl" if all(
        side.kind == "fixed" for side in sides
    ) else "the longest request (isl+osl)"


def _with_benchmark_model(values: dict[str, Any], benchmark: MlperfWorkload | None) -> dict[str, Any]:
    """``values`` with the model an MLPerf benchmark names (``model = "llama-2-70b"`` in its data)
    when neither --model nor --config names one; a model that is named is checked against the
    benchmark's later (:func:`_check_benchmark_model`)."""
    if benchmark is None or values.get("model") is not None or values.get("model_config") is not None:
        return values
    return {**values, "model": benchmark.model}


def _requests_given() -> bool:
    """Whether the run's request count is the user's: ``--requests``, or the ``num_requests`` of a
    plan file that names its MLPerf benchmark or trace itself (``simulate --save-config`` writes the
    count it ran). Otherwise an MLPerf benchmark runs its samples and a trace replays whole."""
    if given_flags("num_requests"):
        return True
    source = click.get_current_context().get_parameter_source
    from_file = click.core.ParameterSource.DEFAULT_MAP in (source("mlperf_name"), source("trace_path"))
    return from_file and "num_requests" in config_file_keys()


def _check_workload_options(values: dict[str, Any]) -> None:
    """Refuse the workload options given on the command line that the workload would ignore (a plan
    file's values give way to a --trace or --mlperf): a trace's own arrivals and lengths, an MLPerf
    scenario's own arrivals, and a --scenario without --mlperf."""
    mlperf = values["mlperf_name"] is not None
    if values["max_rate_at_slo"]:
        _check_rate_search(values, mlperf=mlperf)
    if values["trace_path"] is not None:
        if mlperf:
            raise click.UsageError("give --trace or --mlperf, not both: each is a whole workload")
        refuse_given(
            (
                "input_tokens",
                "output_tokens",
                "isl_dist",
                "osl_dist",
                "arrival_rate",
                "concurrency",
                "offline",
                "cv",
            ),
            "a --trace replays its own arrival times and token counts: leave {it} out",
        )
    if not mlperf:
        refuse_given(("scenario",), "it picks an MLPerf scenario: give --mlperf NAME too, or leave it out")
        return
    refuse_given(
        ("concurrency", "offline", "cv"),
        "with --mlperf the --scenario sets the arrivals (offline: every sample at once; server and "
        "interactive: Poisson at --arrival-rate, else the highest rate that meets the benchmark's SLO): "
        "leave {it} out",
    )
    if values["scenario"] == "offline":
        refuse_given(
            ("arrival_rate",),
            "MLPerf's Offline scenario issues every sample at once: leave it out, or give --scenario server",
        )


def _check_rate_search(values: dict[str, Any], *, mlperf: bool) -> None:
    """Refuse the arrivals --max-rate-at-slo would replace: it searches the rate, and the run shown
    is the one at the rate it finds (Poisson, gamma with --burstiness)."""
    refuse_given(
        ("arrival_rate", "concurrency", "offline"),
        "--max-rate-at-slo looks for the highest arrival rate that meets --slo and runs at it: leave {it} "
        "out, or drop --max-rate-at-slo to run at that load",
    )
    if mlperf and values["scenario"] == "offline":
        raise click.UsageError(
            "--max-rate-at-slo searches an arrival rate, while MLPerf's Offline scenario issues every "
            "sample at once: give --scenario server or interactive (which search the rate themselves)"
        )


def _check_benchmark_model(benchmark: MlperfWorkload, config: ServingConfig, model: Any) -> None:
    """An MLPerf workload is its model's benchmark: another model named with --model is refused; a
    model file (whose name may differ from the registry's) runs it with a note saying so."""
    expected = get_context().models().get(benchmark.model)
    if model.name == expected.name:
        return
    if config.model is not None:
        raise UserInputError(
            f"--mlperf {benchmark.name} is MLPerf's {benchmark.display_name} benchmark of {expected.name}, "
            f"not {model.name}: give --model {expected.name}, or leave --mlperf out and describe the "
            "workload (--isl, --osl, --arrival-rate ...)"
        )
    click.echo(
        f"lightspeed: note: MLPerf {benchmark.display_name} benchmarks {expected.name}; its workload runs "
        f"here on {model.name} from {config.model_config}",
        err=True,
    )


def _arrivals(config: ServingConfig, values: dict[str, Any]) -> ArrivalProcess:
    """The arrivals of the options: a trace's own (the options' are refused beside it), gamma gaps
    of --burstiness at a rate --max-rate-at-slo replaces, or :func:`resolve_arrivals`."""
    if values["trace_path"] is not None:
        return ArrivalProcess("trace")
    if values["max_rate_at_slo"] and values["cv"] is not None and config.arrival_rate is None:
        return ArrivalProcess.gamma(1.0, values["cv"])  # the search sets the rate, the CV stays
    return resolve_arrivals(
        rate_per_s=config.arrival_rate,
        cv=values["cv"],
        offline=values["offline"],
        concurrency=config.concurrency,
        slo_judged=values["slo_spec"] is not None
        and not values["max_rate_at_slo"]
        and values["mlperf_name"] is None,
    )


def _workload(
    config: ServingConfig,
    values: dict[str, Any],
    *,
    slo: ServiceLevel | None,
    model: Any,
    benchmark: MlperfWorkload | None,
) -> tuple[ServingWorkload, ServiceLevel | None, bool]:
    """(workload, SLO, whether to search the highest rate at the SLO) of the options; ``--mlperf``
    brings its lengths (each side unless ``--isl``/``--isl-dist`` or ``--osl``/``--osl-dist`` are
    given), its sample count (unless ``--requests`` is given: LoadGen issues the benchmark's
    samples, and the generic default of 2,000 ran Llama 2 70B's Offline 15% slow) and its
    scenario's SLO, and a Server or Interactive scenario without ``--arrival-rate`` is the
    benchmark's own question: the highest rate."""
    scenario = values["scenario"]
    find_capacity = bool(values["max_rate_at_slo"])
    arrivals = _arrivals(config, values)
    source = click.get_current_context().get_parameter_source
    stated_input, stated_output = (
        any(source(key) == click.core.ParameterSource.COMMANDLINE for key in keys)
        for keys in (("input_tokens", "isl_dist"), ("output_tokens", "osl_dist"))
    )
    generic = resolve_workload(
        isl=config.input_tokens,
        osl=config.output_tokens,
        isl_dist=values["isl_dist"],
        osl_dist=values["osl_dist"],
        prefix_hit_rate=values["prefix_hit_rate"],
        arrivals=arrivals,
        num_requests=values["num_requests"] if _requests_given() or values["trace_path"] is None else None,
        trace_path=values["trace_path"],
        warmup_requests=config.warmup_requests,
    )
    if benchmark is None:
        return generic, slo, find_capacity
    _check_benchmark_model(benchmark, config, model)
    rate = arrivals.rate_per_s if arrivals.kind in ("poisson", "gamma") else None
    loaded = scenario != "offline" and rate is not None
    workload = benchmark.workload(
        scenario if loaded else "offline",
        rate_per_s=rate if loaded else None,
        num_requests=generic.num_requests if _requests_given() else None,
        input_lengths=generic.input_lengths if stated_input else None,
        output_lengths=generic.output_lengths if stated_output else None,
    )
    # a Server or Interactive search starts from the Offline workload; it is named by its scenario
    name = f"MLPerf {benchmark.display_name} {scenario}"
    workload = replace(
        workload,
        warmup_requests=config.warmup_requests,
        name=name,
        prefix_hit_rate=generic.prefix_hit_rate,
    )
    return workload, slo or benchmark.slo(scenario), find_capacity or (scenario != "offline" and rate is None)


def _steady(deployment: SimulatedDeployment, workload: ServingWorkload) -> ServingWorkload:
    """:func:`steady_state_workload`, saying so on stderr when it measures more requests than a
    --requests given on the command line (the steady state measures at least as many as it warms
    up; with --warmup N the run is exactly --requests, the first N not measured)."""
    steady = steady_state_workload(deployment, workload)
    measured = steady.num_requests - steady.warmup_requests
    if steady is not workload and measured != workload.num_requests and given_flags("num_requests"):
        click.echo(
            f"lightspeed: note: --requests {workload.num_requests:,}: {measured:,} requests measured after "
            f"{steady.warmup_requests:,} that warm the deployment up, as a sustained rate is measured at "
            "its steady state (with --warmup N the run is exactly --requests, the first N not measured)",
            err=True,
        )
    return steady


def _check_horizon(*, find_capacity: bool) -> None:
    """--horizon stops the one run shown part-way; runs at other rates (a sweep, the rate search)
    would run whole beside it, and the figures would not be of the same runs."""
    refuse_given(
        ("sweep", "plot_path"),
        "--horizon stops the one run shown part-way, while {it} runs whole runs at other rates: leave {it} "
        "out, or drop --horizon",
    )
    if find_capacity:
        raise click.UsageError(
            "--horizon stops the one run shown part-way, while the highest rate at the SLO "
            "(--max-rate-at-slo, or an MLPerf Server or Interactive scenario without --arrival-rate) is "
            "found from whole runs: drop --horizon (an MLPerf scenario runs one rate with --arrival-rate)"
        )


def _run(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    slo: ServiceLevel | None,
    values: dict[str, Any],
    *,
    find_capacity: bool,
    as_json: bool,
    config: ServingConfig,
    table: OptionTable,
    benchmark: MlperfWorkload | None,
    context: tuple[str, ...] = (),
) -> None:
    seed, plot_path = values["seed"], values["plot_path"]
    if values["horizon_s"] is not None:
        _check_horizon(find_capacity=find_capacity)
    if find_capacity and slo is None:
        raise UserInputError(
            "--max-rate-at-slo needs --slo (or --mlperf with a Server or Interactive scenario)"
        )
    if find_capacity:
        assert slo is not None  # a limit no rate meets is refused before the steady state's note
        check_slo_reachable(deployment, workload, slo, source=_slo_source(values, benchmark), seed=seed)
    if find_capacity or (values["mlperf_name"] is not None and values["scenario"] != "offline"):
        # a rate sustained (and LoadGen's Server and Interactive runs of ten minutes and more)
        # is measured at the steady state, the run shown included
        workload = _steady(deployment, workload)
    capacity = None
    if find_capacity:
        assert slo is not None
        capacity = max_rate_at_slo(
            deployment,
            workload=workload,
            slo=slo,
            seed=seed,
            seed_checks=SEED_CHECKS,
        )
        # the run shown is the search's own run at the highest rate that meets the SLO (the same
        # arrivals, seed and warm-up: its goodput is the capacity's), in the arrivals searched
        workload = replace(workload, arrivals=_at_rate(workload.arrivals, max(capacity.max_rate_per_s, 1e-6)))
    result = simulate_deployment(deployment, workload, seed=seed, slo=slo, horizon_s=values["horizon_s"])
    if context:  # a request longer than the model's context (check_context)
        result = replace(result, assumptions=(*context, *result.assumptions))
    band = band_under_load(deployment, workload, seed=seed) if values["horizon_s"] is None else None
    sweep: tuple[LoadPoint, ...] = ()
    if values["sweep"] or plot_path is not None:
        sweep = load_sweep(deployment, workload=workload, slo=slo, seed=seed)
    title = f"{deployment.model.name}, {deployment.plan.describe()}"
    marked = _marked_rate(workload, capacity.max_rate_per_s if capacity is not None else None)
    written = []
    if plot_path is not None:
        written = save_latency_load_plot(sweep, plot_path, title=title, marked_rate=marked)
    source, reason = _requests_basis(workload, values, benchmark)
    if source == "mlperf-samples" or (source == "--requests" and workload.trace is not None):
        click.echo(f"lightspeed: note: {reason}", err=True)
    if as_json:
        print_json(
            {
                **result.summary(),
                **result.to_dict(),
                "num_requests_source": source,
                "num_requests_reason": reason,
                "capacity": None if capacity is None else capacity.to_dict(),
                "interval_under_load": None if band is None else band.intervals(),
                "sweep": [point.to_dict() for point in sweep],
                "plots": [str(path) for path in written],
                "config": {**config.to_file_dict(), table.name: table.file_values(values)},
            }
        )
        return
    render_simulation(result)
    if band is not None:
        render_load_band(band)
    if capacity is not None:
        render_capacity(capacity)
    if sweep:
        render_load_sweep(sweep)
    for path in written:
        click.echo(f"wrote {path}")


def _slo_source(values: dict[str, Any], benchmark: MlperfWorkload | None) -> str:
    """The SLO as a refusal names it: ``--slo``, or the MLPerf scenario's own."""
    if values["slo_spec"] is not None or benchmark is None:
        return "--slo"
    return f"MLPerf {benchmark.display_name} {values['scenario']}'s SLO"


def _marked_rate(workload: ServingWorkload, capacity_rate_per_s: float | None) -> tuple[float, str] | None:
    """The rate to mark on the latency-load figure: the highest rate at the SLO where one was
    searched, else the run's own arrival rate (none for offline or fixed-concurrency runs)."""
    if capacity_rate_per_s is not None:
        return capacity_rate_per_s, "highest rate at the SLO"
    rate_per_s = workload.arrivals.rate_per_s
    return (rate_per_s, "this run's rate") if rate_per_s is not None else None


def _at_rate(arrivals: ArrivalProcess, rate_per_s: float) -> ArrivalProcess:
    """``arrivals`` at ``rate_per_s``: gamma gaps keep their CV (--burstiness), others are Poisson
    (as :func:`max_rate_at_slo` probes them)."""
    if arrivals.kind == "gamma":
        return ArrivalProcess.gamma(rate_per_s, arrivals.cv)
    return ArrivalProcess.poisson(rate_per_s)


def _requests_basis(
    workload: ServingWorkload, values: dict[str, Any], benchmark: MlperfWorkload | None
) -> tuple[str, str]:
    """(where the run's request count comes from, a sentence saying how many ran and why):
    ``--requests``, ``mlperf-samples`` (the benchmark's, as LoadGen issues them), ``trace`` (a
    replay shorter than --requests), ``plan-file`` or ``default``."""
    measured = workload.num_requests - workload.warmup_requests
    ran = f"{measured:,} requests measured" + (
        f" after {workload.warmup_requests:,} that warm the deployment up" if workload.warmup_requests else ""
    )
    source = click.get_current_context().get_parameter_source("num_requests")
    trace = workload.trace
    if trace is not None and workload.num_simulated < trace.num_requests:
        return "--requests", (
            f"{ran}: the first {workload.num_simulated:,} of the {trace.num_requests:,} requests of "
            f"{values['trace_path']} (--requests {values['num_requests']:,}; without it the whole trace "
            "replays)"
        )
    if trace is not None:
        return "trace", f"{ran}: every request of {values['trace_path']}"
    if given_flags("num_requests"):
        return "--requests", f"{ran}: --requests {values['num_requests']:,}"
    if benchmark is not None:
        return "mlperf-samples", (
            f"{ran}: MLPerf {benchmark.display_name}'s {benchmark.num_samples:,} samples, as LoadGen "
            "issues them (--requests N runs another count)"
        )
    if source == click.core.ParameterSource.DEFAULT_MAP:
        return "plan-file", f"{ran}: the plan file's num_requests = {values['num_requests']:,}"
    return "default", f"{ran}: --requests defaults to {values['num_requests']:,}"
