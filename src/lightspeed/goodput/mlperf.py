"""The goodput ledger of an MLPerf Training result log.

Wall time runs from the earliest ``init_start`` to ``run_stop``. Training
blocks are productive, evaluation intervals are *eval* (an evaluation logged
inside a block is taken out of it), initialization is *init*, and what no
interval covers is *other*. Samples and tokens come from the benchmark's
counters (gpt3 counts tokens, llama2_70b_lora sequences of 8192 tokens; see
``goodput/data/mlperf.toml``); with the system description (``--system
SYSTEM.json``, else the log's own ``:::SYSJSON`` line) and the benchmark's
model they give MFU.
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

from lightspeed.catalog import Catalog
from lightspeed.errors import LightspeedError, UserInputError
from lightspeed.goodput.events import PRODUCTIVE
from lightspeed.goodput.ledger import Ledger, SegmentView, ledger_from_buckets
from lightspeed.goodput.mllog import (
    MlperfBenchmark,
    MlperfBlock,
    MlperfEval,
    MlperfLog,
    MlperfSystem,
    benchmark_info,
)
from lightspeed.goodput.reader import Workload
from lightspeed.goodput.step_times import step_stats
from lightspeed.goodput.timeline import Interval, attribute
from lightspeed.goodput.utilization import DEFAULT_CONVENTION, Utilization, check_figures, utilization
from lightspeed.workload import ModelRegistry


def mllog_ledger(
    *,
    log: MlperfLog,
    system: MlperfSystem | None = None,
    model: str | None = None,
    device: str | None = None,
    num_accelerators: int | None = None,
    seq_len: int | None = None,
    model_flop_per_token: float | None = None,
    sol_tokens_per_s_per_accelerator: float | None = None,
    precision: str = "bf16",
    convention: str = DEFAULT_CONVENTION,
    catalog: Catalog | None = None,
    models: ModelRegistry | None = None,
) -> Ledger:
    """Ledger of an MLPerf log read with :func:`~lightspeed.goodput.read_mllog`.

    ``system`` (an MLPerf system description) gives the device and the number
    of accelerators; one that contradicts the log's own ``:::SYSJSON`` line
    (another system's name, node count or accelerators) is refused. ``model``,
    ``device``, ``num_accelerators`` and ``seq_len`` (tokens per sequence: the
    tokens of a benchmark counting sequences, and the FLOP per token) override
    what the log and the benchmark say; ``model_flop_per_token`` replaces the
    FLOP per token counted from the model and ``sol_tokens_per_s_per_accelerator``
    gives the token-rate SOL (efficiency), as for tracker runs. MFU divides by
    the dense peak of ``precision`` (many v4.0 submissions ran FP8: pass
    ``precision="fp8"`` to divide by that peak).
    """
    check_figures(
        num_accelerators=num_accelerators,
        model_flop_per_token=model_flop_per_token,
        sol_tokens_per_s_per_accelerator=sol_tokens_per_s_per_accelerator,
    )
    _check_system(log, system)
    buckets, end_s = _log_buckets(log)
    total_s = end_s - log.init_start_s
    notes = list(log.notes)
    benchmark = _benchmark(log, model, notes)
    used_system = system or log.embedded_system
    if system is None and log.embedded_system is not None:
        taken = [
            name for name, given in (("device", device), ("accelerator count", num_accelerators)) if not given
        ]
        if taken:
            notes.append(f"{' and '.join(taken)} taken from the log's :::SYSJSON line")
    workload = _workload(
        log=log,
        benchmark=benchmark,
        system=used_system,
        model=model,
        device=device,
        num_accelerators=num_accelerators,
        seq_len=seq_len,
        model_flop_per_token=model_flop_per_token,
        sol_tokens_per_s_per_accelerator=sol_tokens_per_s_per_accelerator,
        precision=precision,
    )
    tokens, samples = _tokens_and_samples(log, benchmark, workload.seq_len)
    flops = _utilization(
        workload=workload,
        tokens=tokens,
        total_s=total_s,
        productive_s=buckets[PRODUCTIVE],
        benchmark=benchmark,
        catalog=catalog,
        models=models,
        convention=convention,
    )
    details = _details(
        log, benchmark, used_system, tokens=tokens, samples=samples, mfu=flops.mfu, total_s=total_s
    )
    durations, unit = _block_durations(log)
    segment = SegmentView(
        index=0,
        start_s=log.init_start_s,
        end_s=end_s,
        status=log.status,
        first_step=None,
        last_step=None,
        num_steps=len(log.blocks),
        num_wasted_steps=0,
    )
    return ledger_from_buckets(
        source="mllog",
        path=log.path,
        run_id=f"{log.submitter}/{log.platform}/{log.benchmark}",
        total_s=total_s,
        buckets=buckets,
        tokens=tokens or 0.0,
        samples=samples or 0.0,
        workload=workload,
        accelerators=workload.num_accelerators,
        flops=flops,
        steps=step_stats(durations_s=durations, steps=list(range(len(durations))), unit=unit),
        segments=(segment,),
        partial=log.partial,
        notes=tuple(notes),
        details=details,
    )


def _check_system(log: MlperfLog, system: MlperfSystem | None) -> None:
    """A system description that contradicts the log's own ``:::SYSJSON`` line describes another
    run's system (MFU would divide by its accelerators): refuse it, naming what differs."""
    logged = log.embedded_system
    if system is None or logged is None:
        return
    fields = (
        ("system_name", system.system_name, logged.system_name),
        ("number_of_nodes", system.num_nodes, logged.num_nodes),
        ("accelerators_per_node", system.accelerators_per_node, logged.accelerators_per_node),
        ("accelerator_model_name", system.accelerator_model_name, logged.accelerator_model_name),
    )
    differences = [
        f"{name} {given!r}, the log's {own!r}" for name, given, own in fields if _differs(given, own)
    ]
    if differences:
        raise UserInputError(
            f"{system.path} describes another system than the :::SYSJSON line of {log.path} "
            f"({'; '.join(differences)}): give this run's system description, or leave --system out to "
            "use the log's (--num-accelerators N and --system DEVICE override its figures)"
        )


def _differs(given: object, logged: object) -> bool:
    """Whether two system fields disagree (names compared without case; an empty name says nothing)."""
    if isinstance(given, str) and isinstance(logged, str):
        return bool(given.strip() and logged.strip()) and given.strip().lower() != logged.strip().lower()
    return given != logged


def _log_buckets(log: MlperfLog) -> tuple[dict[str, float], float]:
    """(seconds per bucket, end of the run): training blocks productive, evals and init badput."""
    end_s = log.end_s
    intervals: list[Interval] = [(PRODUCTIVE, "", block.start_s, block.end_s) for block in log.blocks]
    intervals += [("eval", "", item.start_s, item.end_s) for item in log.evals if item.end_s > item.start_s]
    if log.init_stop_s is not None:
        intervals.append(("init", "", log.init_start_s, log.init_stop_s))
    buckets, _ = attribute(intervals, start_s=log.init_start_s, end_s=end_s)
    return buckets, end_s


def _details(
    log: MlperfLog,
    benchmark: Any,
    system: MlperfSystem | None,
    *,
    tokens: float | None,
    samples: float | None,
    mfu: float | None,
    total_s: float,
) -> dict[str, Any]:
    """What the ledger's JSON reports about the MLPerf run beyond the buckets."""
    time_to_train = log.time_to_train_s
    return {
        "benchmark": log.benchmark,
        "submitter": log.submitter,
        "platform": log.platform,
        "status": log.status,
        "init_s": log.init_s,
        "time_to_train_s": time_to_train,
        "num_blocks": len(log.blocks),
        "num_evals": len(log.evals),
        "eval_accuracies": [item.accuracy for item in log.evals],
        "global_batch_size": log.global_batch_size,
        "count_unit": benchmark.count_unit if benchmark else None,
        "run_samples_per_s": samples / time_to_train if samples and time_to_train else None,
        "run_tokens_per_s": tokens / time_to_train if tokens and time_to_train else None,
        "run_mfu": mfu * total_s / time_to_train if mfu is not None and time_to_train else None,
        "system": system.to_dict() if system is not None else None,
    }


def _block_durations(log: MlperfLog) -> tuple[list[float], str]:
    """Block training times (a block less the evaluations inside it, which the ledger books as
    eval), scaled to the median block size when blocks train different amounts.

    MLPerf blocks end at evaluations, which need not be evenly spaced (the
    first llama2_70b_lora block trains 1536 samples, later ones 384): raw
    durations would make the first block an outlier for its size alone.
    """
    durations = [block.end_s - block.start_s - _eval_inside_s(block, log.evals) for block in log.blocks]
    counts = [block.end_count for block in log.blocks]
    if not counts or any(count is None for count in counts):
        return durations, "block"
    cumulative = [0.0, *(float(count) for count in counts if count is not None)]
    sizes = [end - start for start, end in itertools.pairwise(cumulative)]
    if any(size <= 0 for size in sizes) or len(set(sizes)) == 1:
        return durations, "block"
    typical = statistics.median(sizes)
    return [
        duration * typical / size for duration, size in zip(durations, sizes, strict=True)
    ], "block (scaled)"


def _eval_inside_s(block: MlperfBlock, evals: tuple[MlperfEval, ...]) -> float:
    """Seconds of ``evals`` that fall inside ``block`` (Intel-HabanaLabs evaluates inside its one block)."""
    return sum(max(0.0, min(block.end_s, item.end_s) - max(block.start_s, item.start_s)) for item in evals)


def _benchmark(log: MlperfLog, model: str | None, notes: list[str]) -> MlperfBenchmark | None:
    try:
        return benchmark_info(log.benchmark)
    except LightspeedError:
        if model is None:
            notes.append(f"benchmark {log.benchmark!r} has no known model: pass --model for MFU")
        return None


def _workload(
    *,
    log: MlperfLog,
    benchmark: MlperfBenchmark | None,
    system: MlperfSystem | None,
    model: str | None,
    device: str | None,
    num_accelerators: int | None,
    seq_len: int | None,
    model_flop_per_token: float | None,
    sol_tokens_per_s_per_accelerator: float | None,
    precision: str,
) -> Workload:
    return Workload(
        model=model or (benchmark.model if benchmark else None),
        system=device or (system.accelerator_model_name if system else None),
        seq_len=seq_len or log.max_sequence_length or (benchmark.seq_len if benchmark else None),
        precision=precision,
        recompute="full" if benchmark is not None and benchmark.recompute else "none",
        training=benchmark.training if benchmark else "full",
        num_accelerators=num_accelerators or (system.num_accelerators if system else None),
        model_flop_per_token=model_flop_per_token,
        sol_tokens_per_s_per_accelerator=sol_tokens_per_s_per_accelerator,
    )


def _tokens_and_samples(
    log: MlperfLog, benchmark: MlperfBenchmark | None, seq_len: int | None
) -> tuple[float | None, float | None]:
    count = log.trained_count
    if count is None or benchmark is None:
        return None, count
    if benchmark.count_unit == "tokens":
        return count, count / seq_len if seq_len else None
    return (count * seq_len if seq_len else None), count


def _utilization(
    *,
    workload: Workload,
    tokens: float | None,
    total_s: float,
    productive_s: float,
    benchmark: MlperfBenchmark | None,
    catalog: Catalog | None,
    models: ModelRegistry | None,
    convention: str,
) -> Utilization:
    if tokens is None:
        reason = "MFU unavailable: the number of tokens trained is unknown"
        if benchmark is None:
            reason += " (unknown benchmark: its counters' unit is not known)"
        return Utilization(model=workload.model, device=workload.system, reason=reason)
    if tokens <= 0:
        return Utilization(
            model=workload.model,
            device=workload.system,
            reason="MFU unavailable: the log's counters record no trained samples",
        )
    if workload.num_accelerators is None:
        return Utilization(
            model=workload.model,
            device=workload.system,
            reason="MFU unavailable: no system description (pass --system SYSTEM.json or --num-accelerators)",
        )
    return utilization(
        tokens=tokens,
        total_s=total_s,
        productive_s=productive_s,
        workload=workload,
        num_accelerators=workload.num_accelerators,
        catalog=catalog,
        models=models,
        convention=convention,
    )
