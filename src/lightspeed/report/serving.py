"""Rendering of simulated serving runs: percentiles, SLO goodput, latency vs load, capacity at an
SLO and the goodput ranking, as tables and figures (the HTML report's section reads a ``simulate
--json`` result back: :mod:`lightspeed.report.simulation_section`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from lightspeed.records import JsonObject
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import category_color
from lightspeed.report.plots import (
    add_legend,
    check_plot_targets,
    new_figure,
    plain_text,
    plot_paths,
    save_figure,
)
from lightspeed.sol.serve.capacity_at_slo import (
    LIMITED_BY_SETTLING,
    LIMITED_BY_THROUGHPUT,
    CapacityResult,
    LoadPoint,
    SeedCheck,
)
from lightspeed.sol.serve.run_metrics import SloResult
from lightspeed.units import format_count, format_duration, format_percent, ordinal

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lightspeed.sol.serve import GoodputSearchResult, LatencyStats, SimulationResult
    from lightspeed.sol.serve.load_band import ScaledRuns


_SETTLED: dict[bool | None, str] = {None: "-", True: "yes", False: "no"}  # Settling.settled, or none


def time_text(value: float) -> str:
    """A latency in seconds as the tables print it."""
    return "-" if not math.isfinite(value) else format_duration(value)


def _stats_row(name: str, stats: LatencyStats) -> list[str]:
    return [
        name,
        *(time_text(value) for value in (stats.mean_s, stats.p50_s, stats.p90_s, stats.p99_s, stats.max_s)),
    ]


def render_simulation(result: SimulationResult, *, title: str | None = None) -> None:
    """Print one simulated run: latency percentiles, throughput, SLO goodput, load over time."""
    console = make_console()
    heading = title or (
        f"[bold]{plain(result.model)}[/bold] on [bold]{plain(result.system)}[/bold] "
        f"({result.num_gpus} GPUs): {result.plan.describe()}"
    )
    console.print(heading)
    console.print(f"workload: {plain(result.workload.describe())}; seed {result.seed}")
    rows = [
        _stats_row("TTFT", result.ttft),
        _stats_row("TPOT", result.tpot),
        _stats_row("ITL", result.itl),
        _stats_row("end to end", result.e2e),
    ]
    counts = completed_text(result.num_completed, result.num_arrived, result.num_requests)
    render_table(
        f"simulated latencies ({counts})",
        ["latency", "mean", "p50", "p90", "p99", "max"],
        rows,
        console=console,
        right_align_from=1,
    )
    render_table(None, ["metric", "value"], _throughput_rows(result), console=console)
    if result.settling is not None and not result.settling.settled:
        console.print(f"[yellow]{plain(result.settling.describe())}[/yellow]")
    if result.slo is not None:
        render_slo(result)
    for line in result.assumptions:
        console.print(f"  assumed: {line}", style="dim")


def completed_text(completed: int, arrived: int, requested: int) -> str:
    """``2,000 of 2,000 requests completed``; a run whose horizon stopped the arrivals counts the
    requests that arrived: ``9 of 9 arrived requests completed; 200 asked, the horizon stopped
    arrivals``."""
    if arrived >= requested:
        return f"{completed:,} of {requested:,} requests completed"
    return (
        f"{completed:,} of {arrived:,} arrived requests completed; {requested:,} asked, the horizon "
        "stopped arrivals"
    )


def _per_user_text(result: SimulationResult) -> str:
    """The mean decode speed per user, or why there is none: no measured request finished (a
    horizon stopped the run first), or every one that did had one output token (no TPOT)."""
    if not math.isfinite(result.output_tokens_per_s_per_user):
        if result.requests_per_s > 0:
            return "n/a (one output token: no TPOT)"
        within = " within the horizon" if _stopped_at_horizon(result) else ""
        return f"n/a (no measured request finished{within})"
    return f"{result.output_tokens_per_s_per_user:,.1f} tok/s (mean of 1 / TPOT)"


def _requests_text(result: SimulationResult) -> str:
    """Completions per second from the first measured arrival to the last completion (to the horizon
    where one stopped the run), then the rate served and the rate offered where they differ from it
    (:func:`rates_text`)."""
    stopped = _stopped_at_horizon(result)
    end = "the horizon" if stopped else "the last completion"
    text = f"{result.requests_per_s:,.4g} over {format_duration(result.duration_s)} to {end}"
    arrivals = result.workload.arrivals
    closed = arrivals.kind == "closed" and result.workload.trace is None
    return text + rates_text(
        completed_per_s=result.requests_per_s,
        served_per_s=result.served_requests_per_s,
        offered_per_s=result.offered_requests_per_s,
        kept_up=result.settled,
        users=arrivals.concurrency if closed else None,
        stopped=stopped,
        trace=result.workload.trace is not None,
        warmup=result.num_warmup > 0,
    )


def rates_text(
    *,
    completed_per_s: float,
    served_per_s: float,
    offered_per_s: float,
    kept_up: bool | None,
    users: int | None = None,
    stopped: bool = False,
    trace: bool = False,
    warmup: bool = False,
) -> str:
    """What follows the completions per second on the requests/s line (terminal and HTML): the
    rate served and why, where it differs from them or from the rate offered, then the rate
    offered where it differs from the rate served. The served rate of a closed loop is its users
    over their mean latency; of a run that kept up, the rate its requests arrived at; of one that
    did not (or too short to tell), the higher of its completions over the whole run (the
    warm-up's included) and its flow through decoding between the ramp and the drain.

    >>> rates_text(completed_per_s=48.2, served_per_s=49.39, offered_per_s=49.39, kept_up=True)[:57]
    '; 49.39 served while requests arrived (their arrival rate'
    >>> rates_text(completed_per_s=3.831, served_per_s=3.831, offered_per_s=4.31, kept_up=False)[-47:]
    ' last arrival: it did not settle); 4.31 offered'
    """
    if not math.isfinite(served_per_s):
        return ""
    why = _served_why(kept_up, users=users, stopped=stopped, trace=trace, warmup=warmup)
    if math.isfinite(offered_per_s) and served_per_s > offered_per_s:
        why = _LIGHT_LOAD
    offered = math.isfinite(offered_per_s) and f"{offered_per_s:,.4g}" != f"{served_per_s:,.4g}"
    if f"{served_per_s:,.4g}" != f"{completed_per_s:,.4g}":
        text = f"; {served_per_s:,.4g} served{why}"
    elif offered:
        text = f"; that rate served{why}"
    else:
        return ""
    return text + (f"; {offered_per_s:,.4g} offered" if offered else "")


# why a run's served rate (its completions per second) is above the rate offered
_LIGHT_LOAD = (
    " (the completions per second: at a load this light each request finishes before the next "
    "arrives, so all n over the arrivals' span and the last one's latency read above the n - 1 "
    "arrivals after the first over that span)"
)


def _served_why(kept_up: bool | None, *, users: int | None, stopped: bool, trace: bool, warmup: bool) -> str:
    if users:
        return f" while all {users:,} users were busy (users / mean latency)"
    if kept_up:
        drain = "requests still decoding at the horizon" if stopped else "the drain after the last"
        return f" while requests arrived (their arrival rate: the run kept up; {drain} left out)"
    if kept_up is False:
        why = "it did not settle"
    else:
        why = "a replayed trace is not judged settled" if trace else "too few arrivals to tell if it kept up"
    end = "the horizon" if stopped else "the last completion"
    counted = (
        f"the higher of every completion from the first arrival to {end}"
        f"{', warm-up included' if warmup else ''}, and the flow through decoding from the first "
        "completion to the last arrival"
    )
    return f" ({counted}: {why})"


def _stopped_at_horizon(result: SimulationResult) -> bool:
    """Whether a horizon stopped the run before it served every request (some not arrived or left
    in flight)."""
    return result.num_in_flight > 0 or result.num_arrived < result.num_requests


def _window(result: SimulationResult) -> str:
    """What the load figures cover: the measured window after a warm-up, else the run."""
    return "measured window" if result.num_warmup else "run"


def output_tokens_text(result: SimulationResult) -> str:
    """``18.03 K tok/s (2.254 K per GPU) to the last completion; 23.86 K served (the 81.02 req/s
    served x 294.5 mean output tokens)``: the run's own rate counts its drain (the last answers
    finishing after the last arrival), the served one is the load's; the second only where it
    differs in the digits shown."""
    text = (
        f"{format_count(result.output_tokens_per_s)} tok/s "
        f"({format_count(result.output_tokens_per_s_per_gpu)} per GPU)"
    )
    served = result.served_output_tokens_per_s
    if not math.isfinite(served) or format_count(served) == format_count(result.output_tokens_per_s):
        return text
    end = "the horizon" if _stopped_at_horizon(result) else "the last completion"
    per_request = served / result.served_requests_per_s
    return (
        f"{text} to {end}; {format_count(served)} tok/s served ({format_count(served / result.num_gpus)} "
        f"per GPU: the {result.served_requests_per_s:,.4g} req/s served x {per_request:,.4g} mean output "
        "tokens)"
    )


def _counts_text(result: SimulationResult) -> str:
    """What the in-flight and the running figures count, where a warm-up makes them differ: the
    first the measured requests only (their drain to the end included), the second every sequence
    in a batch (warm-up ones too)."""
    if not result.num_warmup:
        return ""
    return (
        " (in flight counts the measured requests only, over the wall time to the end, drain included; "
        "running and queue count warm-up requests too)"
    )


def _throughput_rows(result: SimulationResult) -> list[list[str]]:
    rows = [
        ["output tokens/s", output_tokens_text(result)],
        ["requests/s", _requests_text(result)],
        ["per user", _per_user_text(result)],
        [
            "in flight",
            f"{result.mean_in_flight:,.1f} mean over the {_window(result)}; while the GPUs are busy, running "
            f"{result.mean_running:,.1f} mean, {result.max_running:,.0f} max, queue "
            f"{result.mean_queue:,.1f} mean, {result.max_queue:,.0f} max{_counts_text(result)}",
        ],
        ["KV cache", f"fullest rank at {format_percent(result.max_kv_use)} at most"],
        [
            "preemptions",
            f"{result.num_preemptions:,}" + (f" ({result.num_swaps:,} swapped)" if result.num_swaps else ""),
        ],
        [
            "simulation",
            f"{result.num_iterations:,} iterations, {result.num_cost_evaluations:,} cost-model calls, "
            f"{format_duration(result.elapsed_s)}",
        ],
    ]
    if result.plan.dp_attention > 1:
        rows.insert(
            -1,
            [
                "attention DP",
                f"balance {format_percent(result.attention_dp_balance)} (mean tokens per rank over the "
                f"busiest's); perfect balance (the same tokens spread evenly, whole sequences per rank) "
                f"would be {result.attention_dp_balanced_speedup:,.2f}x faster",
            ],
        )
    if result.num_in_flight:
        rows.insert(4, ["stopped with", f"{result.num_in_flight:,} requests in flight"])
    return rows


# beyond this the analytic headline and the simulation of the same load are said to disagree
LOAD_GAP: Final = 0.2


def simulated_against_analytic(
    *,
    analytic_ttft_s: float,
    analytic_tokens_per_s: float,
    simulated: SimulationResult,
    analytic_tpot_s: float | None = None,
    analytic_in_flight: float | None = None,
) -> dict[str, float]:
    """The simulated run's figures over the analytic headline's (``plan infer`` prints both): 1.0
    where they agree. TTFT p50; the throughput served while requests arrive
    (:attr:`SimulationResult.served_requests_per_s` times the output tokens per request: a finite
    run's own rate also counts its drain, the last answers finishing after the last arrival, which
    a deployment serving the whole rate does not lose); and, where the headline's are given, the
    mean TPOT and the requests in flight over the deployment (the headline's steady batch)."""
    ratios = {
        "ttft_p50_over_analytic": simulated.ttft.p50_s / analytic_ttft_s,
        "output_tokens_per_s_over_analytic": served_output_tokens_per_s(simulated) / analytic_tokens_per_s,
    }
    if analytic_tpot_s is not None and analytic_tpot_s > 0:
        ratios["tpot_mean_over_analytic"] = simulated.tpot.mean_s / analytic_tpot_s
    if analytic_in_flight is not None and analytic_in_flight > 0:
        ratios["in_flight_over_analytic"] = simulated.mean_in_flight / analytic_in_flight
    return ratios


def served_output_tokens_per_s(result: SimulationResult) -> float:
    """Output tokens per second at the rate the run serves
    (:attr:`SimulationResult.served_output_tokens_per_s`; its own rate where it serves none)."""
    served = result.served_output_tokens_per_s
    return served if math.isfinite(served) else result.output_tokens_per_s


# the figures compared (simulated_against_analytic's keys), as the note names them
_COMPARED: Final = (
    ("ttft_p50_over_analytic", "TTFT p50"),
    ("tpot_mean_over_analytic", "mean TPOT"),
    ("output_tokens_per_s_over_analytic", "throughput served"),
    ("in_flight_over_analytic", "requests in flight"),
)


def _apart(ratio: float | None) -> int:
    """+1 where the simulated figure is more than ``LOAD_GAP`` above the headline's, -1 below, else 0
    (and for a figure not compared or not finite)."""
    if ratio is None or not math.isfinite(ratio) or abs(ratio - 1.0) <= LOAD_GAP:
        return 0
    return 1 if ratio > 1.0 else -1


def against_analytic_text(ratios: Mapping[str, float]) -> str | None:
    """The note where the simulated load and the analytic headline part by more than ``LOAD_GAP``
    (``None`` where every figure compared agrees): each figure that parts and by how much, and a
    cause only where the direction of the gap implies one. A simulated TTFT above the headline's is
    waiting the headline leaves out (behind other prompts, for iterations already formed); fewer
    (more) requests in flight with a faster (slower) TPOT at the same load is Little's law (in
    flight = rate x time in the system), a consequence of the TPOT gap, not a cause of it. Other gaps
    are stated without a cause."""
    parted = [(key, label) for key, label in _COMPARED if _apart(ratios.get(key))]
    if not parted:
        return None
    said = [
        f"{label}{' is' if index == 0 else ''} {ratios[key]:.2f}x"
        for index, (key, label) in enumerate(parted)
    ]
    figures = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"
    causes = []
    if _apart(ratios.get("ttft_p50_over_analytic")) > 0:
        causes.append(
            "a longer simulated TTFT is time before the first token that the headline does not price: "
            "it prices evenly spaced requests joining a steady batch, while the simulation schedules each "
            "arrival as the server does (behind other prompts, after the iterations already formed)"
        )
    in_flight, tpot = (
        _apart(ratios.get("in_flight_over_analytic")),
        _apart(ratios.get("tpot_mean_over_analytic")),
    )
    if in_flight and in_flight == tpot:
        causes.append(
            f"{'fewer' if in_flight < 0 else 'more'} requests are in flight because each decodes "
            f"{'faster' if tpot < 0 else 'slower'} (Little's law: in flight = rate x time in the system)"
        )
    cause = f"; {'; '.join(causes)}" if causes else ""
    return (
        f"note: under this load the simulated {figures} the analytic headline above{cause}; read the "
        "simulated percentiles for this load."
    )


def render_simulated_against_analytic(ratios: Mapping[str, float]) -> None:
    """The note of :func:`against_analytic_text`, where there is one."""
    text = against_analytic_text(ratios)
    if text is not None:
        make_console().print(text)


def render_load_band(runs: ScaledRuns) -> None:
    """Print the error bars of a run's latencies under its load (:mod:`lightspeed.sol.serve.load_band`)."""
    make_console().print(
        f"{band_paragraph(runs.intervals())[:-1]}; near capacity the slow side grows far past the "
        "family's band, as a queue does."
    )


def render_slo(result: SimulationResult) -> None:
    """Print how a run meets its SLO (DistServe's attainment and goodput, and the p99 test)."""
    slo = result.slo
    if slo is None:
        return
    verdict = "[green]met[/green]" if slo.meets else "[red]missed[/red]"
    make_console().print(slo_text(slo, verdict=verdict, escape_text=plain))


def slo_text(slo: SloResult, *, verdict: str = "", escape_text: Callable[[str], str] = str) -> str:
    """``SLO TTFT <= 80 ms, TPOT <= 14 ms for 90% of requests: missed; 58.7% of requests within
    both (...); goodput ...; p99s outside the limits`` (terminal and HTML); ``verdict`` replaces
    the plain ``met`` / ``missed`` (the terminal colours it), ``escape_text`` escapes the limits."""
    verdict = verdict or ("met" if slo.meets else "missed")
    return (
        f"SLO {escape_text(slo.slo.describe())}: {verdict}; {format_percent(slo.attainment)} of "
        f"{'the scored ' if slo.num_unscored else ''}requests "
        f"{_within_text(slo)}; goodput "
        f"{slo.goodput_requests_per_s:,.4g} req/s ({slo.goodput_requests_per_s_per_gpu:,.4g} per GPU"
        f"{_served_text(slo)}); p99s {'within' if slo.p99_meets else 'outside'} the limits"
        f"{_unscored_text(slo)}"
    )


def _within_text(slo: SloResult) -> str:
    """``within both (TTFT 98.1%, TPOT 99.0%)``; an SLO of one limit: ``within the TTFT limit``."""
    if slo.slo.ttft_s is None or slo.slo.tpot_s is None:
        return f"within the {'TPOT' if slo.slo.ttft_s is None else 'TTFT'} limit"
    return (
        f"within both (TTFT {format_percent(slo.ttft_attainment)}, "
        f"TPOT {format_percent(slo.tpot_attainment)})"
    )


def _unscored_text(slo: SloResult) -> str:
    """``; 812 requests in flight at the horizon not scored`` (none: empty)."""
    if not slo.num_unscored:
        return ""
    return (
        f"; {slo.num_unscored:,} request{'s' if slo.num_unscored != 1 else ''} in flight at the horizon, "
        "within the limits so far, not scored"
    )


def _served_text(slo: SloResult) -> str:
    """``; 98.9% of the 63.9 req/s served`` where the run served what it was offered; for one that
    fell behind, ``; 41.7% of the 39.4 req/s offered`` or, where that is more than it served, ``; the
    16.42 req/s served, short of 41.7% of the 39.4 req/s offered`` (nothing where the served rate
    is not recorded)."""
    served, offered = slo.served_requests_per_s, slo.offered_requests_per_s
    if not math.isfinite(served):
        return ""
    share = format_percent(slo.attainment)
    if slo.num_unscored and math.isfinite(offered) and offered > 0:
        # the goodput counts the good requests seen over every one offered, those in flight as none
        seen = format_percent(slo.goodput_requests_per_s / offered)
        offered_text = f"{offered:,.4g} req/s offered"
        return f"; {seen} of the {offered_text}, those in flight counted as none ({served:,.4g} served)"
    if not math.isfinite(offered) or f"{offered:,.4g}" == f"{served:,.4g}":
        return f"; {share} of the {served:,.4g} req/s served"
    if slo.attainment * offered > served:
        return f"; the {served:,.4g} req/s served, short of {share} of the {offered:,.4g} req/s offered"
    return f"; {share} of the {offered:,.4g} req/s offered ({served:,.4g} served)"


LOAD_SWEEP_HEADERS = (
    "req/s",
    "TTFT p50",
    "TTFT p99",
    "TPOT p50",
    "TPOT p99",
    "output tok/s served",
    "within SLO",
    "settled",
)


def render_load_sweep(points: Sequence[LoadPoint], *, title: str = "latency against load") -> None:
    """Print one row per arrival rate."""
    render_table(
        title, list(LOAD_SWEEP_HEADERS), load_sweep_rows(points), console=make_console(), right_align_from=0
    )


def load_sweep_rows(points: Sequence[LoadPoint]) -> list[list[str]]:
    """One row per arrival rate, under :data:`LOAD_SWEEP_HEADERS` (terminal and HTML); the output
    tokens per second are the load's, at the rate served (``-`` where not recorded: a result
    written before it was, whose own rate counts the drain)."""
    return [
        [
            f"{point.rate_per_s:,.4g}",
            time_text(point.ttft_p50_s),
            time_text(point.ttft_p99_s),
            time_text(point.tpot_p50_s),
            time_text(point.tpot_p99_s),
            "-"
            if not math.isfinite(point.served_output_tokens_per_s)
            else format_count(point.served_output_tokens_per_s),
            "-" if point.attainment is None else format_percent(point.attainment),
            _SETTLED[point.settled],
        ]
        for point in points
    ]


def render_capacity(capacity: CapacityResult) -> None:
    """Print the highest rate meeting an SLO and the probes that found it."""
    console = make_console()
    for line in capacity_lines(capacity, escape_text=plain, bold=("[bold]", "[/bold]")):
        console.print(line)
    render_load_sweep(capacity.probes, title="probes (in the order simulated)")


def capacity_lines(
    capacity: CapacityResult,
    *,
    escape_text: Callable[[str], str] = str,
    bold: tuple[str, str] = ("", ""),
) -> list[str]:
    """The highest rate meeting an SLO in a line (its goodput is its run's: the share within the
    SLO of the rate that run's arrivals came at, a Poisson sample of the rate), why it stops there
    where no latency limit binds, and how it holds on other seeds (terminal and HTML; the probes are
    a table of :func:`load_sweep_rows`)."""
    lines = [
        f"highest rate meeting {escape_text(capacity.slo.describe())}: "
        f"{bold[0]}{capacity.max_rate_per_s:,.4g} req/s{bold[1]} "
        f"(goodput {capacity.goodput_requests_per_s:,.4g} req/s, "
        f"{capacity.goodput_requests_per_s_per_gpu:,.4g} per GPU{_sample_text(capacity)}; saturation "
        f"{capacity.saturation_rate_per_s:,.4g} req/s; {len(capacity.probes)} simulations, limited by "
        f"{capacity.limited_by})"
    ]
    bound = _bound_text(capacity)
    if bound:
        lines.append(bound)
    if capacity.seed_checks:
        lines.append(seed_checks_text(capacity))
    return lines


def _bound_text(capacity: CapacityResult) -> str:
    """Why the search stopped where no latency limit bound it: the saturation rate reached, or
    probes that met the SLO without settling (empty where a probe missed the SLO)."""
    share = capacity.max_rate_per_s / capacity.saturation_rate_per_s
    if capacity.limited_by == LIMITED_BY_THROUGHPUT:
        return (
            f"no latency limit binds: every probe up to the saturation rate met the SLO and settled, so "
            f"the rate is the deployment's throughput ({share:.1%} of saturation, within the search's "
            "tolerance of it)"
        )
    if capacity.limited_by != LIMITED_BY_SETTLING:
        return ""
    unsettled = sorted(
        probe.rate_per_s
        for probe in capacity.probes
        if probe.rate_per_s > capacity.max_rate_per_s and probe.meets and probe.settled is False
    )
    lowest = f" ({unsettled[0]:,.4g} req/s the lowest)" if unsettled else ""
    return (
        f"limited by settling, not by a latency limit: the probes above {capacity.max_rate_per_s:,.4g} "
        f"req/s{lowest} met the SLO but did not settle within the run (their requests in flight still "
        f"moving between its halves), so they are not counted as sustained; the rate found is "
        f"{share:.1%} of saturation ({capacity.saturation_rate_per_s:,.4g} req/s), and a longer "
        "--requests (and --warmup) may find more"
    )


def _sample_text(capacity: CapacityResult) -> str:
    """``, its seed-0 run's arrivals coming at 63.52 req/s`` (the goodput is a share of that rate)
    where that differs from the rate found."""
    offered = capacity.offered_requests_per_s
    if not math.isfinite(offered) or f"{offered:,.4g}" == f"{capacity.max_rate_per_s:,.4g}":
        return ""
    return f", its seed-{capacity.seed} run's arrivals coming at {offered:,.4g} req/s"


def seed_checks_text(capacity: CapacityResult) -> str:
    """How the rate found holds on other seeds: it is one sample of the arrival process."""
    return checks_text(capacity.seed_checks, seed=capacity.seed, rate_per_s=capacity.max_rate_per_s)


def checks_text(checks: Sequence[SeedCheck], *, seed: int, rate_per_s: float) -> str:
    """``the rate is one sample of the arrivals (seed 0); rerun at 63.87 req/s with seeds 1 and 2,
    ...`` (:class:`SeedCheck`: a rate found rerun with other seeds)."""
    seeds = " and ".join(str(check.seed) for check in checks)
    unsettled = " (not settled)"
    shares = " and ".join(
        format_percent(check.attainment) + (unsettled if check.meets and check.settled is False else "")
        for check in checks
    )
    held = sum(check.sustained for check in checks)
    verdict = (
        ("sustained on both" if len(checks) == 2 else f"sustained on all {len(checks)}")
        if held == len(checks)
        else f"sustained on {held} of {len(checks)}: expect a rate a few percent lower on other draws"
    )
    return (
        f"the rate is one sample of the arrivals (seed {seed}); rerun at "
        f"{rate_per_s:,.4g} req/s with seed{'s' if len(checks) > 1 else ''} {seeds}, "
        f"{shares} of requests within the SLO ({verdict}; --seed draws another sample)"
    )


def render_goodput_ranking(result: GoodputSearchResult) -> None:
    """Print the finalists of a goodput search, best goodput per GPU first."""
    at = (
        f"at {result.rate_per_s:,.4g} req/s"
        if result.rate_per_s is not None
        else "at each one's highest rate"
    )
    rows = [
        [
            str(index),
            entry.plan.describe(),
            f"{entry.analytic_output_tokens_per_s_per_gpu:,.0f}",
            f"{entry.rate_per_s:,.4g}",
            f"{entry.goodput_requests_per_s_per_gpu:,.4g}",
            format_percent(entry.attainment),
            time_text(entry.ttft_p99_s),
            time_text(entry.tpot_p99_s),
            _SETTLED[entry.settled],
            f"{entry.warmup_requests:,} + {entry.measured_requests:,}",
        ]
        for index, entry in enumerate(result.ranking, start=1)
    ]
    render_table(
        f"finalists simulated {at}, ranked by goodput per GPU ({plain(result.slo.describe())})",
        [
            "#",
            "deployment",
            "analytic tok/s/GPU",
            "req/s",
            "goodput/GPU",
            "within SLO",
            "TTFT p99",
            "TPOT p99",
            "settled",
            "warm-up + measured",
        ],
        rows,
        console=make_console(),
        right_align_from=2,
    )
    if result.num_shapes_infeasible:
        make_console().print(
            f"  not simulated: {result.num_shapes_infeasible:,} replica shapes with no analytic point within "
            f"{plain(result.slo.describe().split(' for ')[0])} at any batch"
        )
    make_console().print(goodput_verdict(result, analytic_best=result.analytic.best.plan.describe()))


def goodput_verdict(result: GoodputSearchResult, *, analytic_best: str | None = None) -> str:
    """One line: the finalist to deploy, or that none meets the SLO at the rate and what to change;
    ``analytic_best``: the deployment the analytic search put first (shown above the ranking), named
    where the ranking recommends another."""
    best, slo = result.best, result.slo
    if best.meets:
        caveat = (
            "; its run fell behind the arrivals (not settled): simulate more requests (--requests) before "
            "trusting it"
            if best.settled is False
            else ""
        )
        return (
            f"best: {best.plan.describe()}, {best.goodput_requests_per_s_per_gpu:,.4g} good req/s per GPU "
            f"({format_percent(best.attainment)} within the SLO at {best.rate_per_s:,.4g} req/s)"
            f"{_recommended_text(result, analytic_best)}{_sample_note(result)}{caveat}"
        )
    at = f"at {result.rate_per_s:,.4g} req/s" if result.rate_per_s is not None else "at any rate probed"
    return (
        f"no finalist meets {plain(slo.describe())} {at}: the closest, {best.plan.describe()}, keeps "
        f"{format_percent(best.attainment)} of requests within it; lower the rate, add GPUs or relax the SLO "
        "(without --rate, each finalist's highest rate at the SLO is searched)"
    )


def _recommended_text(result: GoodputSearchResult, analytic: str | None) -> str:
    """``; the recommended deployment (...)``, naming the ``analytic`` best shown above the ranking
    where the ranking's winner is another deployment (nothing where it is not given)."""
    if analytic is None:
        return ""
    if analytic == result.best.plan.describe():
        return "; the recommended deployment, also the analytic best above"
    place = next(
        (index for index, entry in enumerate(result.ranking, start=1) if entry.plan.describe() == analytic),
        None,
    )
    ranked = f", ranked {ordinal(place)} here" if place is not None else ""
    return (
        f"; the recommended deployment, ranked on its simulated goodput (the analytic best above, "
        f"{analytic}{ranked}, prices a steady batch without a queue)"
    )


def _sample_note(result: GoodputSearchResult) -> str:
    """A highest rate found is one sample of the arrivals: how the best finalist's holds on other
    seeds (:class:`SeedCheck`), else that it is one seed's (nothing at a given rate)."""
    if result.rate_per_s is not None:
        return ""
    best = result.best
    if best.seed_checks:
        return f"; {checks_text(best.seed_checks, seed=result.seed, rate_per_s=best.rate_per_s)}"
    return f"; the rate is one sample of the arrivals (seed {result.seed}): --seed draws another"


def latency_load_figure(
    points: Sequence[LoadPoint], *, title: str = "", marked_rate: tuple[float, str] | None = None
) -> Figure:
    """TTFT and TPOT (p50 solid, p99 dashed) against the arrival rate, on two axes; a rate whose
    run did not settle (:class:`Settling`: its latencies a lower bound) is ringed in black.
    ``marked_rate`` is (requests/s, label): the run's own rate (or the highest rate at the SLO),
    drawn as a dotted vertical line so the run can be found on the curve."""
    figure, axes = new_figure(7.0, 4.5)
    if marked_rate is not None and math.isfinite(marked_rate[0]) and marked_rate[0] > 0:
        rate_per_s, label = marked_rate
        rate_label = f"{label} ({rate_per_s:.3g}/s)"
        axes.axvline(rate_per_s, color="black", linestyle=":", linewidth=1.2, label=rate_label)
    rates = [point.rate_per_s for point in points]
    unsettled = [index for index, point in enumerate(points) if point.settled is False]
    for key, label, color in (("ttft", "TTFT", "predicted"), ("tpot", "TPOT", "measured")):
        p50 = [getattr(point, f"{key}_p50_s") * 1e3 for point in points]
        p99 = [getattr(point, f"{key}_p99_s") * 1e3 for point in points]
        target = axes if key == "ttft" else axes.twinx()
        target.plot(rates, p50, marker="o", color=category_color(color), label=f"{label} p50")
        target.plot(rates, p99, marker="o", linestyle="--", color=category_color(color), label=f"{label} p99")
        if unsettled and key == "ttft":
            target.scatter(
                [rates[index] for index in unsettled],
                [p99[index] for index in unsettled],
                s=120,
                facecolors="none",
                edgecolors="black",
                label="not settled (lower bound)",
                zorder=3,
            )
        target.set_ylabel(f"{label} (ms)")
        add_legend(target, fontsize=8, frameon=False, loc="upper left" if key == "ttft" else "upper center")
    axes.set_xlabel("arrival rate (requests/s)")
    if title:
        axes.set_title(plain_text(title, 90), fontsize=10)
    return figure


def save_latency_load_plot(
    points: Sequence[LoadPoint] | None,
    path: Path,
    *,
    title: str = "",
    marked_rate: tuple[float, str] | None = None,
) -> list[Path]:
    """Write the latency-versus-load figure to ``path`` (its suffix picks the format), with
    ``marked_rate`` as :func:`latency_load_figure` draws it.
    ``points=None`` draws nothing: it checks, as every ``--plot`` does
    (:func:`~lightspeed.report.plots.check_plot_targets`), that the plot can be written there and
    returns the files it would be, so that ``simulate`` refuses a bad path before it runs."""
    stem, formats = plot_paths(path, name="latency-load", default_formats=("png", "svg"))
    if points is None:
        return check_plot_targets(stem, formats)
    return save_figure(latency_load_figure(points, title=title, marked_rate=marked_rate), stem, formats)


def number_field(data: JsonObject, key: str) -> float:
    """``data[key]`` as a float, NaN where it is missing or not a number (a JSON result read back)."""
    value = data.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def band_paragraph(band: JsonObject) -> str:
    """The band under load of a ``simulate --json`` result, in one sentence."""
    parts = []
    labels = (("median TTFT", "ttft_p50_s"), ("p99 TTFT", "ttft_p99_s"), ("median TPOT", "tpot_p50_s"))
    for label, key in labels:
        edges = band.get(key)
        if isinstance(edges, Sequence) and len(edges) == 2 and all(isinstance(x, int | float) for x in edges):
            if not any(math.isfinite(float(edge)) for edge in edges):  # a TPOT of one-token outputs
                parts.append(f"{label} n/a (one output token)")
                continue
            parts.append(f"{label} {time_text(float(edges[0]))} to {time_text(float(edges[1]))}")
    measured = number_field(band, "measured_requests")
    on = f" on {measured:,.0f} measured requests" if math.isfinite(measured) else ""
    return (
        f"Error bars under this load ({format_percent(number_field(band, 'level'))} of published runs of "
        f"family {band.get('family', '?')}, {number_field(band, 'num_rows'):,.0f} rows; the run "
        "re-simulated at the rate times "
        f"{number_field(band, 'fast_scale'):.3g} and {number_field(band, 'slow_scale'):.3g}{on}): "
        f"{'; '.join(parts)}."
    )


__all__ = [
    "against_analytic_text",
    "band_paragraph",
    "capacity_lines",
    "checks_text",
    "completed_text",
    "latency_load_figure",
    "number_field",
    "output_tokens_text",
    "rates_text",
    "render_capacity",
    "render_goodput_ranking",
    "render_load_band",
    "render_load_sweep",
    "render_simulation",
    "render_slo",
    "save_latency_load_plot",
    "seed_checks_text",
    "served_output_tokens_per_s",
    "slo_text",
    "time_text",
]
