"""The tour's steps: the whole loop on this machine, each step a function of the shared state.

Detect the hardware and its SOL, run a quick benchmark suite, train a tiny
GPT on the CPU with the goodput tracker and a profiler trace, analyse that
trace and a shipped real GPU trace, predict the seed's headline scenarios,
store everything and write the HTML report. A step that cannot run here (no
PyTorch, no source checkout for the example) is reported as skipped with the
reason; one that fails (a user error, the example exiting with an error, a
file it cannot write) is reported as failed with a one-line reason; nothing is
faked. An ``--out`` folder the tour cannot write, a ``--sol-device`` that is not a catalog CPU
record and a results store the tour could not open are refused before any step runs.
"""

from __future__ import annotations

import json
import stat
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from lightspeed.bench import (
    BenchDevice,
    BenchResult,
    DeviceSol,
    best_per_dtype,
    device_sol,
    resolve_device,
    run_gemm,
    run_membw,
)
from lightspeed.catalog import Catalog, detect_local
from lightspeed.errors import (
    LightspeedError,
    MissingExtraError,
    UnknownNameError,
    UnsupportedError,
    UserInputError,
    require_extra,
)
from lightspeed.files import cannot_create_in, kind_of
from lightspeed.gate import benchmark_records
from lightspeed.gate.inputs import goodput_step_samples
from lightspeed.goodput import Ledger, build_ledger, read_run
from lightspeed.report import (
    BenchInputs,
    ReportInputs,
    ReportSection,
    build_sections,
    kernel_section,
    metric_history_or_reason,
    predicted_step,
    trace_section,
    write_report,
)
from lightspeed.sol import InferenceEstimate, TrainingEstimate
from lightspeed.store import NewRecord, StoreMissingError, open_store, store_location
from lightspeed.tour.render import SAMPLE_NCU_CSV, SAMPLE_TRACE_DIR, TourResult, TourStep
from lightspeed.tour.seed import SCENARIOS
from lightspeed.trace import kernel_report, load_trace, read_ncu, summarize
from lightspeed.units import format_bytes_per_s, format_duration, format_flop_per_s, format_percent
from lightspeed.workload import ModelRegistry

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "train_tiny_gpt.py"
# Whole-tour budget on a 2-core machine is 3 minutes; the example takes ~15 s.
EXAMPLE_TIMEOUT_S = 150.0
PERCENT = 100.0  # a trace summary's shares are in percent; the store keeps fractions (unit "1")
# The CPU the benchmarks run on, for checking a --sol-device name before any step (and before
# PyTorch, which the bench step's own device needs, is imported); only the record's kind is read.
_CPU_FOR_CHECKS = BenchDevice(kind="cpu", index=0, name="this CPU", num_threads=1)


@dataclass
class TourState:
    """What the steps found, for the later steps and the report."""

    out_dir: Path
    quick: bool
    catalog: Catalog
    models: ModelRegistry
    sol_device: str | None = None  # the catalog CPU record the benchmarks' SOL comes from (detected: None)
    bench: BenchInputs | None = None
    ledgers: list[Ledger] = field(default_factory=list)
    trace_path: Path | None = None
    trace_sections: list[ReportSection] = field(default_factory=list)
    kernel_sections: list[ReportSection] = field(default_factory=list)
    estimates: list[TrainingEstimate | InferenceEstimate] = field(default_factory=list)
    report_path: Path | None = None


def _store_where() -> Path | str:
    where = store_location()
    return where.path if where.path is not None else where.display


def _store(kind: str, records: list[NewRecord], label: str) -> str:
    with open_store(create=True) as store:
        return store.add_records(kind=kind, records=records, label=label)


def step_hardware(state: TourState) -> list[str]:
    """This machine's CPU and GPUs, and the speed of light the catalog gives them."""
    machine = detect_local(catalog=state.catalog)
    cpu = machine.cpu
    lines = [
        f"CPU: {cpu.info.model_name} ({cpu.info.num_physical_cores} cores, {cpu.info.num_sockets} socket(s))"
    ]
    if cpu.peak is not None:
        lines.append(f"SOL: {format_flop_per_s(cpu.peak.fp32_flop_per_s)} fp32 ({cpu.peak.formula})")
    else:
        lines.append(
            f"SOL: no peak for this CPU ({'; '.join(cpu.assumptions) or 'unknown microarchitecture'})"
        )
    if cpu.memory_bandwidth_bytes_per_s is not None:
        lines.append(f"memory bandwidth SOL: {format_bytes_per_s(cpu.memory_bandwidth_bytes_per_s)}")
    gpus = ", ".join(f"{gpu.name} -> {gpu.accelerator or 'not in catalog'}" for gpu in machine.gpus)
    lines.append(
        f"GPUs: {gpus or 'none'}" + (f" ({'; '.join(machine.gpu_notes)})" if machine.gpu_notes else "")
    )
    return lines


def step_bench(state: TourState) -> list[str]:
    """Quick GEMM and STREAM benchmarks on the CPU, beside its SOL (detected, or the catalog CPU
    record ``state.sol_device``), saved to the store."""
    device = resolve_device("cpu")
    sol = device_sol(device=device, catalog=state.catalog, sol_device=state.sol_device)
    gemm = run_gemm(device=device, sol=sol, dtypes=("fp32",), quick=True)
    membw = run_membw(device=device, sol=sol, quick=True)
    run_ids = [
        _store("benchmark", benchmark_records(results), f"tour {name}")
        for name, results in (("gemm", gemm), ("membw", membw))
    ]
    state.bench = BenchInputs(results=(*gemm, *membw), sol=sol, label="tour benchmarks")
    return [*_bench_lines(gemm, membw, sol), f"stored as runs {', '.join(run_ids)}"]


def _bench_lines(gemm: list[BenchResult], membw: list[BenchResult], sol: DeviceSol) -> list[str]:
    lines = []
    bests = [*best_per_dtype(gemm).values(), max(membw, key=lambda result: result.value)]
    for best in bests:
        gemm_point = best.suite == "gemm"
        what = f"GEMM {best.dtype}" if gemm_point else f"memory ({best.name})"
        value = format_flop_per_s(best.value) if gemm_point else format_bytes_per_s(best.value)
        share = (
            f" = {format_percent(best.fraction_of_sol)} of SOL" if best.fraction_of_sol is not None else ""
        )
        lines.append(f"{what}: best {value}{share}")
    if any(best.fraction_of_sol is not None and best.fraction_of_sol > 1.0 for best in bests):
        lines.append(
            "above 100% of SOL: the catalog's peak for this CPU rests on assumptions that understate it"
        )
    if sol.note:
        lines.append(f"SOL assumptions: {sol.note}")
    return lines


def step_train(state: TourState) -> list[str]:
    """The tiny GPT example on the CPU, with the goodput tracker, a crash, a resume and a trace."""
    require_extra("torch", "bench", "training the tiny GPT")
    if not EXAMPLE.is_file():
        raise UnsupportedError(
            f"the tiny-GPT example ships with the source repository ({EXAMPLE.name}), "
            "not with this installation"
        )
    run_dir = state.out_dir / "tiny-gpt" / "run"
    trace = state.out_dir / "tiny-gpt" / "trace.json"
    command = example_command(run_dir=run_dir, trace=trace, quick=state.quick)
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise UnsupportedError(f"the tiny-GPT example took over {EXAMPLE_TIMEOUT_S:.0f} s") from None
    if completed.returncode != 0:  # a failure, not a machine that cannot run it: its last word says why
        last = next((line.strip() for line in reversed(completed.stderr.splitlines()) if line.strip()), "")
        raise LightspeedError(
            f"the tiny-GPT example failed (exit {completed.returncode}): {last or 'no error message'}"
        )
    json.loads(completed.stdout)  # the example's own ledger: proves it finished
    ledger = build_ledger(run=read_run(run_dir))
    state.ledgers.append(ledger)
    state.trace_path = trace if trace.is_file() else None
    name = train_record_name(state.quick)
    run_id = _store("goodput", _ledger_records(ledger, run_dir, name), f"tour {name}")
    return [
        ledger_line(ledger),
        f"badput: {_top_badput(ledger)}",
        f"run folder {run_dir}; stored as run {run_id}",
    ]


def ledger_line(ledger: Ledger) -> str:
    """``24 steps in 8.67 s, 1 restart(s): goodput 1.8%, ETTR 2.3%``: goodput and ETTR as percents,
    as ``goodput report`` and the HTML report print them."""
    return (
        f"{ledger.steps.count} steps in {format_duration(ledger.total_s)}, {ledger.num_restarts} restart(s): "
        f"goodput {format_percent(ledger.goodput_fraction)}, ETTR {format_percent(ledger.ettr)}"
    )


def example_command(*, run_dir: Path, trace: Path, quick: bool) -> list[str]:
    """The tiny-GPT example's command line. Each path is joined to its option by ``=``, so that a
    path starting with ``-`` (``--out=-1``) is the option's value, not another option."""
    command = [
        sys.executable,
        str(EXAMPLE),
        f"--run-dir={run_dir}",
        f"--profile-trace={trace}",
        "--json",
    ]
    return [*command, "--quick"] if quick else command


def _top_badput(ledger: Ledger) -> str:
    worst = sorted(ledger.badput_s.items(), key=lambda item: -item[1])[:3]
    return ", ".join(f"{name} {format_duration(seconds)}" for name, seconds in worst if seconds > 0) or "none"


def train_record_name(quick: bool) -> str:
    """The name the tiny GPT's records are stored and compared under: ``--quick`` trains a
    smaller model (``examples/train_tiny_gpt.py``: 2 layers x 64 wide, sequences of 32 in batches
    of 8, against 4 x 128, 64 and 16), so its step time is another metric, never the full run's."""
    return "tiny-gpt-quick" if quick else "tiny-gpt"


def _ledger_records(ledger: Ledger, run_dir: Path, name: str) -> list[NewRecord]:
    """The run's goodput and its step times. The step times are those the regression gate reads
    from the run folder (the ledger's productive steps, one per step number, the slowest rank's,
    a step redone after a restart once), with the folder's warm-up (the first step): the stored
    value is their median after it, so the value, ``compare run:ID`` and ``compare RUN_DIR`` agree."""
    steps = goodput_step_samples(run_dir)[0]
    return [
        NewRecord(
            name=name,
            metric="goodput_fraction",
            value=ledger.goodput_fraction,
            unit="1",
            payload={"run_dir": str(run_dir), "lower_is_better": False},
        ),
        NewRecord(
            name=name,
            metric="step_time_s",
            value=statistics.median(steps.measured()),
            unit="s",
            payload={"samples": list(steps.samples), "warmup": steps.num_warmup, "lower_is_better": True},
        ),
    ]


def step_trace(state: TourState) -> list[str]:
    """The tiny GPT's CPU trace (profiler steps), a shipped real 2-rank GPU trace (HTA's test data)
    and a shipped real Nsight Compute kernel (superbenchmark's test data)."""
    lines = []
    if state.trace_path is not None:
        rank = load_trace(state.trace_path).ranks[0]
        steps_s = sorted(float(s) for s in (rank.steps.end_ns - rank.steps.start_ns) * 1e-9)
        steps = (
            f"{len(steps_s)} profiler steps, median {format_duration(steps_s[len(steps_s) // 2])}"
            if steps_s
            else "no ProfilerStep annotations"
        )
        lines.append(
            f"tiny GPT trace: {rank.events.num_events} events, {steps}; "
            "CPU only, so there is no GPU time to break down"
        )
    else:
        lines.append("tiny GPT trace: not written (the training step did not run)")
    summary = summarize(load_trace(SAMPLE_TRACE_DIR), catalog=state.catalog)
    section = trace_section(summary, label="2-rank NCCL training trace (HTA test data)")
    state.trace_sections.append(replace(section, key="trace-sample"))
    for summary_rank in summary.ranks:
        lines.append(
            f"shipped GPU trace rank {summary_rank.rank}: idle {summary_rank.idle_pct:.1f}%, "
            f"compute {summary_rank.compute_pct:.1f}%, non-compute {summary_rank.non_compute_pct:.1f}%, "
            f"comm/comp overlap {summary_rank.comm_comp_overlap_pct:.1f}%"
        )
    records = [  # the path lets 'lightspeed report' draw this run again from the store
        NewRecord(
            name=f"sample trace rank {r.rank}",
            metric="idle_fraction",
            value=r.idle_pct / PERCENT,  # NaN (no span) is stored as NULL
            unit="1",
            payload={"path": str(SAMPLE_TRACE_DIR), "lower_is_better": True},
        )
        for r in summary.ranks
    ]
    _store("trace", records, "tour sample trace")
    return lines + _kernel_lines(state)


def _kernel_lines(state: TourState) -> list[str]:
    """The shipped Nsight Compute GEMM against its SOL (ncu's own view of one kernel)."""
    report = kernel_report(read_ncu(SAMPLE_NCU_CSV), device="b200", catalog=state.catalog)
    state.kernel_sections.append(kernel_section(report, label="cuBLASLt FP8 GEMM on a B200 (ncu)"))
    kernel = report.kernels[0]
    top = kernel.findings[0] if kernel.findings else None
    finding = f"; ncu's largest runtime estimate: {top.rule} {top.estimated_speedup_pct:g}%" if top else ""
    return [
        f"shipped Nsight Compute FP8 GEMM on a B200: compute {kernel.compute_throughput_pct:.2f}%, "
        f"memory {kernel.memory_throughput_pct:.2f}% of SOL: {kernel.bound} bound{finding}"
    ]


def step_predict(state: TourState) -> list[str]:
    """The seed's headline scenarios through the catalog, workload and SOL engine."""
    lines = []
    records: list[NewRecord] = []
    for title, function in SCENARIOS:
        scenario = function(state.catalog, state.models)
        lines.append(f"{title}:")
        lines.extend(f"  {line}" for line in scenario.lines)
        records.extend(scenario.records)
        state.estimates.extend(scenario.estimates)
    run_id = _store("prediction", records, "tour predictions")
    lines.append(f"stored as run {run_id}")
    return lines


def step_report(state: TourState) -> list[str]:
    """Everything above in one self-contained HTML file (plus PNG/SVG plots)."""
    # The tiny GPT's step time is the metric a user re-running the tour can watch regress, compared
    # only with runs of the same mode (a --quick run trains a smaller model).
    name, metric = (train_record_name(state.quick), "step_time_s") if state.ledgers else (None, None)
    history, reason = metric_history_or_reason(name=name, metric=metric)
    inputs = ReportInputs(
        bench=state.bench,
        estimates=tuple(predicted_step(e.to_dict(), source="tour") for e in state.estimates),
        ledgers=tuple(state.ledgers),
        trace_sections=tuple(state.trace_sections),
        kernel_sections=tuple(state.kernel_sections),
        history=history,
        reasons={"history": reason} if reason else {},
    )
    path = state.out_dir / "report.html"
    written = write_report(
        path=path, title="lightspeed tour", sections=build_sections(inputs), plots_dir=state.out_dir / "plots"
    )
    state.report_path = written.path
    drawn = sum(section.skipped_reason is None for section in written.sections)
    return [f"{drawn} of {len(written.sections)} sections drawn, {len(written.plot_paths)} plot files"]


STEPS: tuple[tuple[str, str, Callable[[TourState], list[str]]], ...] = (
    ("hardware", "Detect the hardware and its speed of light", step_hardware),
    ("bench", "Quick benchmarks against the SOL", step_bench),
    ("train", "Train a tiny GPT on the CPU with the goodput tracker", step_train),
    ("trace", "Analyse the profiler traces", step_trace),
    ("predict", "Predict the seed's headline scenarios", step_predict),
    ("report", "Write the HTML report", step_report),
)


def run_step(key: str, title: str, function: Callable[[TourState], list[str]], state: TourState) -> TourStep:
    """Run one step; a missing extra or an unsupported machine skips it, a user error (or a file
    it cannot read or write) fails it, with a one-line reason."""
    started = time.perf_counter()
    try:
        lines = function(state)
    except (MissingExtraError, UnsupportedError) as error:
        return TourStep(key, title, "skipped", time.perf_counter() - started, reason=str(error))
    except LightspeedError as error:
        return TourStep(key, title, "failed", time.perf_counter() - started, reason=str(error))
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        reason = f"{error.strerror or error}{where}"
        return TourStep(key, title, "failed", time.perf_counter() - started, reason=reason)
    return TourStep(key, title, "ok", time.perf_counter() - started, summary=tuple(lines))


def check_out_dir(out: Path | str) -> Path:
    """Refuse an ``--out`` the tour cannot write before anything runs; create it (not its
    parents: a mistyped path makes no folders) when it is missing. An empty ``--out`` (text) is
    refused too: ``Path("")`` is the current folder, which the tour would fill unasked."""
    if isinstance(out, str) and not out.strip():
        raise UserInputError(
            f"--out {out!r} is empty: name the folder for the report, e.g. --out lightspeed-tour "
            "(--out . for the current folder)"
        )
    out_dir = Path(out)
    blocking = _file_in_the_way(out_dir)
    if blocking is not None:  # a file where a folder must be: say so, not that the folder is missing
        kind = (kind_of(blocking.stat().st_mode) or ("a file", ""))[0]
        raise UserInputError(f"--out {out_dir}: {blocking} is {kind}, not a folder; pick another --out")
    if not out_dir.parent.is_dir():
        raise UserInputError(
            f"--out {out_dir}: the folder {out_dir.parent} does not exist; create it first or pick "
            "another --out"
        )
    try:
        out_dir.mkdir(exist_ok=True)
    except OSError as error:
        raise UserInputError(
            f"--out {out_dir}: the tour cannot write there ({error.strerror or error}); "
            "pick a folder you can write"
        ) from None
    reason = cannot_create_in(out_dir)  # a real write: permissions, read-only mounts, /proc
    if reason is not None:
        raise UserInputError(
            f"--out {out_dir}: the tour cannot write there ({reason}); pick a folder you can write"
        )
    return out_dir


def _file_in_the_way(out_dir: Path) -> Path | None:
    """The nearest existing one of ``out_dir`` and the paths above it when it is not a folder (a file
    where the tour needs a folder), else ``None``."""
    for above in (out_dir, *out_dir.parents):
        try:
            mode = above.stat().st_mode
        except OSError:  # missing, or not ours to look at: the checks after this one say so
            continue
        return None if stat.S_ISDIR(mode) else above
    return None


def check_sol_device(sol_device: str | None, catalog: Catalog) -> None:
    """Refuse a ``--sol-device`` the bench step could not use before anything runs, as ``lightspeed
    bench`` does: the tour benchmarks the CPU, so the name must be a catalog CPU record; an unknown
    name lists the closest ones (:func:`~lightspeed.bench.device_sol`'s own check)."""
    if sol_device is None:
        return
    try:
        accelerator = catalog.accelerator(sol_device)
    except UnknownNameError:
        accelerator = None
    if accelerator is not None:  # said here: bench's wording points at its --device, which the tour lacks
        raise UserInputError(
            f"--sol-device {sol_device} is an accelerator record ({accelerator.name}) but the tour "
            "benchmarks the CPU; name a CPU record of 'lightspeed hw list', or measure that GPU with "
            f"'lightspeed bench gemm --device cuda --sol-device {sol_device}'"
        )
    device_sol(device=_CPU_FOR_CHECKS, catalog=catalog, sol_device=sol_device)


def check_store() -> None:
    """Refuse a results store the steps could not write to before any of them runs
    (``$LIGHTSPEED_HOME`` naming a file, a folder where the store's file goes, another program's
    database), with the store's own checks and message, creating nothing: the store is opened for
    reading, and one that does not exist yet is fine (the first step that stores creates it)."""
    try:
        with open_store(create=False):
            pass
    except StoreMissingError:
        return


def run_tour(
    *,
    out_dir: Path | str,
    catalog: Catalog,
    models: ModelRegistry,
    quick: bool = False,
    sol_device: str | None = None,
    on_step: Callable[[TourStep], None] | None = None,
) -> TourResult:
    """Run every step in order (``on_step`` sees each as it finishes) and return the whole tour.
    ``sol_device`` names the catalog CPU record the benchmarks are measured against (default:
    the detected CPU's peak). A ``sol_device`` that is not a CPU record, a results store that
    cannot be opened (:func:`check_store`) and an ``out_dir`` the tour cannot write (or an empty
    text) are a :class:`~lightspeed.errors.LightspeedError` before any step runs."""
    check_sol_device(sol_device, catalog)
    check_store()
    out_dir = check_out_dir(out_dir)
    started = time.perf_counter()
    state = TourState(out_dir=out_dir, quick=quick, catalog=catalog, models=models, sol_device=sol_device)
    steps = []
    for key, title, function in STEPS:
        step = run_step(key, title, function, state)
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return TourResult(
        out_dir=out_dir,
        report_path=state.report_path,
        store_path=_store_where(),
        steps=tuple(steps),
        duration_s=time.perf_counter() - started,
    )
