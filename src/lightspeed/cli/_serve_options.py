"""The serving simulator's options, declared once: workload, SLO, scheduler, simulation size.

``lightspeed simulate``, ``plan infer`` (under load) and ``search infer`` (goodput ranking) take
them from here, and the ``resolve_*`` functions turn them into library records, so a later
typed deployment configuration can generate them from one place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from lightspeed.cli._common import given_flags
from lightspeed.cli.options import (
    BLOCK_TOKENS,
    BURSTINESS_CV,
    SEQUENCES,
    TOKENS_PER_LAYER,
    LengthSpec,
    Number,
    ServiceLevelSpec,
)
from lightspeed.cli.text_options import InputFile, flag_of
from lightspeed.errors import UserInputError
from lightspeed.files import excerpt
from lightspeed.sol.serve import (
    KV_POLICIES,
    PREEMPTION_MODES,
    PREFILL_STEPS,
    ROUTERS,
    ArrivalProcess,
    LengthDistribution,
    SchedulerConfig,
    ServiceLevel,
    ServingWorkload,
    load_lengths,
    load_request_trace,
)
from lightspeed.units import parse_items

F = TypeVar("F", bound=Callable[..., Any])
# a share of each prompt cached, from 0 up to but not including 1: the library's one bound
PREFIX_HIT_RATE = Number(**ServingWorkload.PREFIX_HIT_RATE.click_bounds())
_LOAD_FLAGS = "--arrival-rate, --concurrency, --offline or --trace"


def stack_options(function: F, options: Sequence[Callable[[Any], Any]]) -> F:
    """``function`` under ``options`` in the order listed (the first shows first in --help)."""
    for option in reversed(options):
        function = option(function)
    return function


def arrival_options(function: F) -> F:
    """Arrivals beyond the deployment configuration's ``--arrival-rate`` (Poisson) and
    ``--concurrency`` (closed loop): ``--burstiness``, ``--offline``, ``--trace``."""
    return stack_options(
        function,
        [
            click.option(
                "--burstiness",
                "cv",
                type=BURSTINESS_CV,
                help="Gamma arrivals: coefficient of variation of the gaps (1 = Poisson; above 1 bursty).",
            ),
            click.option(
                "--offline",
                is_flag=True,
                help="Every request at time zero (MLPerf Offline); also the default when none of "
                "--arrival-rate, --concurrency or --trace is given.",
            ),
            click.option(
                "--trace",
                "trace_path",
                type=InputFile(what="request trace", example="trace.csv"),
                help="Replay a CSV/JSONL trace of arrival time (seconds; Mooncake's JSONL "
                "timestamp: milliseconds), input and output tokens.",
            ),
        ],
    )


def length_options(function: F) -> F:
    """``--isl-dist`` and ``--osl-dist``: how lengths spread around ``--isl``/``--osl``."""
    spread = "fixed, uniform:MIN-MAX, lognormal:STD[:MIN-MAX] or file:PATH[:COLUMN]"
    return stack_options(
        function,
        [
            click.option(
                "--isl-dist",
                type=_Lengths(),
                default="fixed",
                show_default=True,
                help=f"Prompt lengths: {spread}.",
            ),
            click.option(
                "--osl-dist",
                type=_Lengths(),
                default="fixed",
                show_default=True,
                help=f"Output lengths: {spread}.",
            ),
            click.option(
                "--prefix-hit-rate",
                type=PREFIX_HIT_RATE,
                default=0.0,
                show_default=True,
                help="Share of each prompt found in the prefix cache, from 0 to below 1 (the last "
                "prompt token always runs).",
            ),
        ],
    )


class _Lengths(LengthSpec):
    """:class:`LengthSpec` that says what is wrong with a length of no tokens (``uniform:0-100``), a
    spread of none or below none (``lognormal:0``) or a file not named (``file:``), and refuses
    bounds written largest first (``uniform:900-100``), naming the option and what would run."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, tuple):
            problem = _length_spec_problem(str(value).strip(), flag_of(param))
            if problem is not None:
                self.fail(problem, param, ctx)
        spec: tuple[str, ...] = super().convert(value, param, ctx)
        bounded = spec[0] == "uniform" or (spec[0] == "lognormal" and len(spec) == 4)
        if bounded and int(spec[-2]) > int(spec[-1]):
            swapped = (*spec[:-2], spec[-1], spec[-2])
            self.fail(
                f"{length_spec_text(spec)}: the minimum {spec[-2]} is above the maximum {spec[-1]}; "
                f"write the smaller bound first, e.g. {flag_of(param)} {length_spec_text(swapped)}",
                param,
                ctx,
            )
        return spec


# whole-number bounds as written, signs kept (``0-100``, ``-5-10``): what LengthSpec refuses whole
_BOUNDS = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")


def _length_spec_problem(text: str, flag: str) -> str | None:
    """What is wrong with an ``--isl-dist``/``--osl-dist`` that gives no lengths to draw (``None``
    where nothing here is: :class:`LengthSpec` checks the rest): a bound under 1 token, a log-normal
    spread of 0 or below, ``file:`` without a path."""
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    shown = repr(excerpt(text))
    if kind == "file" and not rest.partition(":")[0].strip():
        return (
            f"{shown} names no file; write file:PATH (one length a line) or file:PATH:COLUMN, "
            f"e.g. {flag} file:lengths.txt"
        )
    if kind == "uniform":
        return _bounds_problem(shown, rest, flag, lambda bounds: f"uniform:{bounds}")
    if kind != "lognormal":
        return None
    std, _, bounds = rest.partition(":")
    spread = _spread_problem(shown, std.strip(), flag)
    if spread is not None or not bounds:
        return spread
    return _bounds_problem(shown, bounds, flag, lambda written: f"lognormal:{std.strip()}:{written}")


def _bounds_problem(shown: str, bounds: str, flag: str, written: Callable[[str], str]) -> str | None:
    """A ``MIN-MAX`` with a bound under 1 token: every request has at least one (``shown``: the
    spec as the message quotes it; ``written``: the spec of the bounds raised to 1, suggested)."""
    match = _BOUNDS.match(bounds)
    if match is None:
        return None
    low, high = (int(bound) for bound in match.groups())
    if min(low, high) >= 1:
        return None
    side = "output" if flag.startswith("--osl") else "input" if flag.startswith("--isl") else "a"
    tokens = "token" if side == "a" else f"{side} token"
    raised = written(f"{max(low, 1)}-{max(high, 1)}")
    return (
        f"{shown}: a length of {min(low, high)} tokens: every request needs at least 1 {tokens}; "
        f"write {raised}"
    )


def _spread_problem(shown: str, std: str, flag: str) -> str | None:
    """A log-normal STD of 0 or below (a spread is above 0 tokens; 0 is no spread: ``fixed``, every
    length the ``--isl``/``--osl`` that ``flag``, the ``-dist`` option, spreads)."""
    try:
        spread = float(std)
    except ValueError:
        return None
    if not math.isfinite(spread) or spread > 0.0:
        return None
    if spread == 0.0:
        length = flag.removesuffix("-dist") if flag.endswith("-dist") else "--isl/--osl"
        return (
            f"{shown}: a spread (STD) of 0 tokens is no spread: write fixed for every length at "
            f"{length}, or a STD above 0 tokens, e.g. lognormal:100"
        )
    return (
        f"{shown}: a spread (STD) of {std} tokens: STD is the lengths' standard deviation, above 0 "
        f"tokens; write e.g. lognormal:{std.lstrip('-')}"
    )


class _ServiceLevel(ServiceLevelSpec):
    """:class:`ServiceLevelSpec` that also refuses a limit given twice or an empty item
    (:func:`check_slo_text`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, tuple):
            check_slo_text(str(value))
        return super().convert(value, param, ctx)


def check_slo_text(text: str) -> None:
    """One error for an SLO that names a limit twice (``ttft=2s,ttft=3s``: which one?) or holds an
    empty item; what each limit may be is :class:`ServiceLevelSpec`'s to say."""
    parse_items(text, "--slo", example="ttft=2s,tpot=50ms", name=lambda item: item.partition("=")[0].lower())


def slo_option(function: F) -> F:
    """``--slo ttft=..,tpot=..[,attainment=..]``."""
    return click.option(
        "--slo",
        "slo_spec",
        type=_ServiceLevel(),
        help="Latency SLO, each limit with its unit, e.g. ttft=2s,tpot=50ms[,attainment=90%] "
        "(DistServe: the share meeting both).",
    )(function)


def scheduler_options(function: F) -> F:
    """The server's scheduler knobs (per attention rank)."""
    return stack_options(
        function,
        [
            click.option(
                "--max-num-seqs",
                type=SEQUENCES,
                help="Sequences per rank (default: what the KV cache holds).",
            ),
            click.option(
                "--max-num-batched-tokens",
                type=TOKENS_PER_LAYER,
                help="Tokens per iteration per rank, per micro-batch with --pp (default 8192).",
            ),
            click.option(
                "--block-size",
                type=BLOCK_TOKENS,
                default=16,
                show_default=True,
                help="KV-cache block, tokens.",
            ),
            click.option(
                "--kv-policy",
                type=click.Choice(KV_POLICIES),
                help="reserve: a request's prompt and output held from admission (TensorRT-LLM); "
                "on-demand: blocks as sequences grow, preempting the last admitted (vLLM) "
                "[default: the serving stack's]",
            ),
            click.option(
                "--preemption", type=click.Choice(PREEMPTION_MODES), default="recompute", show_default=True
            ),
            click.option("--router", type=click.Choice(ROUTERS), default="least-loaded", show_default=True),
            click.option(
                "--prefill-steps",
                type=click.Choice(PREFILL_STEPS),
                help="mixed: prompt chunks share a step with every running decode (chunked prefill); "
                "separate: a step that takes prompts runs no decode (vLLM V0's and SGLang's default) "
                "[default: the serving stack's; separate for sglang-2025, and for vllm-2024 below a "
                "32K context or on AMD]",
            ),
        ],
    )


def slo_of_text(text: str | None) -> tuple[float | None, float | None, float] | None:
    """The ``(ttft_s, tpot_s, attainment)`` of an SLO as a configuration keeps it (``None``: none)."""
    if text is None:
        return None
    check_slo_text(text)
    limits: tuple[float | None, float | None, float] = ServiceLevelSpec().convert(text, None, None)
    return limits


def resolve_slo(spec: tuple[float | None, float | None, float] | None) -> ServiceLevel | None:
    """The SLO of ``--slo`` (``None`` without it)."""
    if spec is None:
        return None
    ttft, tpot, attainment = spec
    return ServiceLevel(ttft_s=ttft, tpot_s=tpot, attainment=attainment)


def resolve_scheduler(
    *,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    block_size: int,
    kv_policy: str | None,
    preemption: str,
    router: str,
    prefill_steps: str | None = None,
) -> SchedulerConfig:
    """The scheduler of the scheduler options (a token budget below the sequence cap refused:
    :func:`check_token_budget`)."""
    check_token_budget(max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens)
    return SchedulerConfig(
        max_sequences_per_rank=max_num_seqs,
        max_batched_tokens_per_rank=max_num_batched_tokens,
        block_tokens=block_size,
        kv_policy=kv_policy,
        preemption=preemption,
        router=router,
        prefill_steps=prefill_steps,
    )


def check_token_budget(*, max_num_seqs: int | None, max_num_batched_tokens: int | None) -> None:
    """Refuse a token budget below the sequence cap, both given: every running sequence takes at
    least a token of the budget each step, so the cap could never be reached (vLLM refuses
    ``max_num_batched_tokens < max_num_seqs`` at start-up, ``vllm/config.py`` SchedulerConfig).
    A budget below the cap the scheduler picks itself is noted by ``simulate``."""
    if max_num_seqs is None or max_num_batched_tokens is None or max_num_batched_tokens >= max_num_seqs:
        return
    raise UserInputError(
        f"--max-num-batched-tokens {max_num_batched_tokens:,} is below --max-num-seqs {max_num_seqs:,}: "
        f"each running sequence takes a token of the budget a step, so at most "
        f"{max_num_batched_tokens:,} could run (vLLM refuses this); raise --max-num-batched-tokens to "
        f"at least {max_num_seqs:,}, or lower --max-num-seqs"
    )


def length_spec_text(spec: tuple[str, ...]) -> str:
    """The text of ``--isl-dist``/``--osl-dist`` parts (:class:`LengthSpec`), as it reads back.

    >>> length_spec_text(("uniform", "100", "900")), length_spec_text(("lognormal", "20.0", "1", "9"))
    ('uniform:100-900', 'lognormal:20.0:1-9')
    """
    kind, *parts = spec
    if kind in ("uniform",) or (kind == "lognormal" and len(parts) == 3):
        bounds = f"{parts[-2]}-{parts[-1]}"
        return f"{kind}:{bounds}" if kind == "uniform" else f"{kind}:{parts[0]}:{bounds}"
    return ":".join(spec)


def slo_spec_text(limits: tuple[float | None, float | None, float]) -> str:
    """The text of ``--slo`` limits (:class:`ServiceLevelSpec`), each number as Python writes it
    (read back to the last digit).

    >>> slo_spec_text((0.1, 0.01, 0.9))
    'ttft=0.1s,tpot=0.01s,attainment=0.9'
    """
    ttft, tpot, attainment = limits
    parts = [f"{name}={value!r}s" for name, value in (("ttft", ttft), ("tpot", tpot)) if value is not None]
    return ",".join([*parts, f"attainment={attainment!r}"])


def resolve_lengths(tokens: int, spec: tuple[str, ...]) -> LengthDistribution:
    """``--isl``/``--osl`` spread as ``--isl-dist``/``--osl-dist`` says."""
    kind = spec[0]
    if kind == "fixed":
        return LengthDistribution.fixed(tokens)
    if kind == "uniform":
        return LengthDistribution.uniform(int(spec[1]), int(spec[2]))
    if kind == "lognormal":
        bounds = (int(spec[2]), int(spec[3])) if len(spec) == 4 else (1, None)
        return LengthDistribution.lognormal(float(tokens), float(spec[1]), bounds[0], bounds[1])
    return load_lengths(Path(spec[1]), spec[2] if len(spec) == 3 else None)


# length distributions that draw every length themselves: --isl/--osl beside them would be ignored
# (fixed is --isl itself, lognormal centres on it)
_OWN_LENGTHS = ("uniform", "file")


def check_lengths_used(isl_dist: tuple[str, ...], osl_dist: tuple[str, ...]) -> None:
    """Refuse an ``--isl`` (``--osl``) given on the command line beside an ``--isl-dist``
    (``--osl-dist``) that draws every length itself (uniform, file), which would ignore it; the
    default (not given) is fine. Outside a command nothing is refused."""
    if click.get_current_context(silent=True) is None:
        return
    sides = (("input_tokens", "--isl", isl_dist), ("output_tokens", "--osl", osl_dist))
    for name, flag, spec in sides:
        if spec[0] in _OWN_LENGTHS and given_flags(name):
            raise click.UsageError(
                f"{flag}: {flag}-dist {length_spec_text(spec)} draws every length itself, so {flag} "
                f"would be ignored: leave {flag} out, or give {flag}-dist lognormal:STD to spread "
                f"lengths around {flag}"
            )


def resolve_arrivals(
    *,
    rate_per_s: float | None,
    cv: float | None,
    offline: bool,
    concurrency: int | None,
    slo_judged: bool = False,
) -> ArrivalProcess:
    """One arrival process from the options (a closed loop when only ``--concurrency`` is given;
    offline, every request at time zero, when no load is given). ``slo_judged``: an SLO judges the
    run at the arrivals returned (not a search of the highest rate), so an offline run by default
    says on stderr that it is one and how to give a load."""
    given = [
        name
        for name, value in (
            ("--arrival-rate", rate_per_s),
            ("--offline", offline or None),
            ("--concurrency", concurrency),
        )
        if value
    ]
    if len(given) > 1:
        raise UserInputError(f"give one of {', '.join(given)}: they are different arrival processes")
    if cv is not None and rate_per_s is None:
        raise UserInputError("--burstiness shapes Poisson arrivals: give --arrival-rate too")
    if rate_per_s is not None:
        return ArrivalProcess.gamma(rate_per_s, cv) if cv is not None else ArrivalProcess.poisson(rate_per_s)
    if concurrency is not None:
        return ArrivalProcess.closed(concurrency)
    if slo_judged and not offline:
        click.echo(
            f"lightspeed: note: no {_LOAD_FLAGS}: the run is offline, every request arriving at time "
            "zero, so --slo judges them all queued at once; give --arrival-rate R (requests/s) or "
            "--concurrency C for a load, or --max-rate-at-slo for the highest rate that meets the SLO",
            err=True,
        )
    return ArrivalProcess.offline()


def resolve_workload(
    *,
    isl: int,
    osl: int,
    isl_dist: tuple[str, ...],
    osl_dist: tuple[str, ...],
    prefix_hit_rate: float,
    arrivals: ArrivalProcess,
    num_requests: int | None,
    trace_path: Path | None = None,
    warmup_requests: int = 0,
) -> ServingWorkload:
    """The simulated workload of the options; with ``trace_path``, the trace's requests (its own
    arrivals and lengths: those of the options are refused beside it, ``simulate``), the first
    ``num_requests`` of them (``None``: all), and the workload says so (arrivals ``trace``, the
    lengths its own). Without a trace ``num_requests`` is needed."""
    if trace_path is not None:
        return _trace_workload(
            trace_path,
            num_requests=num_requests,
            prefix_hit_rate=prefix_hit_rate,
            warmup_requests=warmup_requests,
        )
    if num_requests is None:
        raise UserInputError("give --requests: how many requests to simulate")
    check_lengths_used(isl_dist, osl_dist)
    return ServingWorkload(
        arrivals=arrivals,
        input_lengths=resolve_lengths(isl, isl_dist),
        output_lengths=resolve_lengths(osl, osl_dist),
        num_requests=num_requests,
        prefix_hit_rate=prefix_hit_rate,
        warmup_requests=warmup_requests,
    )


def _trace_workload(
    path: Path, *, num_requests: int | None, prefix_hit_rate: float, warmup_requests: int
) -> ServingWorkload:
    trace = load_request_trace(path)
    # a --warmup of them all: ServingWorkload refuses it
    count = trace.num_requests if num_requests is None else min(num_requests, trace.num_requests)
    if num_requests is not None and num_requests > trace.num_requests:
        click.echo(
            f"lightspeed: note: the trace {path} holds {trace.num_requests:,} requests; "
            f"--requests {num_requests:,} runs them all once",
            err=True,
        )
    return ServingWorkload(
        arrivals=ArrivalProcess("trace"),
        input_lengths=LengthDistribution.empirical(trace.input_tokens[:count]),
        output_lengths=LengthDistribution.empirical(trace.output_tokens[:count]),
        num_requests=count,
        prefix_hit_rate=prefix_hit_rate,
        trace=trace,
        warmup_requests=warmup_requests,
    )


__all__ = [
    "arrival_options",
    "check_lengths_used",
    "check_slo_text",
    "check_token_budget",
    "length_options",
    "length_spec_text",
    "resolve_arrivals",
    "resolve_lengths",
    "resolve_scheduler",
    "resolve_slo",
    "resolve_workload",
    "scheduler_options",
    "slo_of_text",
    "slo_option",
    "slo_spec_text",
    "stack_options",
]
