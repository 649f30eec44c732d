"""The reading a published row is predicted on: which of its metric cell's readings the engines
predict, each made one GPU's.

:func:`choose_reading` takes the first reading whose quantity the engine predicts (a per-node figure
over the node's GPUs, an aggregate PFLOP/s as TFLOP/s per GPU; a GPU-hours or time-to-train figure
only with its token budget), :func:`other_readings` the others it predicts from the same plan. A
training row's bare token rate is one GPU's where its source prints it so: torchtitan's log
(:func:`log_rate_per_device`) and a label that would put the job far below its peak
(:func:`unlabelled_rate_per_gpu`). The cells themselves are read by
:mod:`lightspeed.sol.validation.readings`.
"""

from __future__ import annotations

import re
from typing import Final

from lightspeed.catalog import Accelerator
from lightspeed.sol.core.stacks import Stack
from lightspeed.sol.validation.metric_keys import not_predicted_reason
from lightspeed.sol.validation.readings import Reading, RowError
from lightspeed.workload import TransformerSpec, parameter_counts

TRAIN_METRICS_NEEDING_TOKENS = ("gpu_hours", "time_to_train_s")


# the most GPUs a "node" of a per-node figure may hold: a rack-scale NVLink domain (NVL576)
MAX_NODE_GPUS: Final = 576


def choose_reading(
    readings: tuple[Reading, ...], keys: tuple[str, ...], num_gpus: int, node_gpus: int | None
) -> Reading:
    """The first reading whose quantity the engine predicts (per-node values made per GPU over
    ``node_gpus``, :func:`~lightspeed.sol.validation.hardware_text.node_gpus`; ``None``: the system's
    node is not known, and a per-node figure must say its GPUs).

    Readings of a token-budget metric without the budget in the text are skipped
    (a GPU-hours figure needs ``for 14.8T tokens``); aggregate PFLOP/s becomes TFLOP/s per GPU.
    """
    skipped = []
    for reading in readings:
        normalized = _predictable(reading, keys, num_gpus, node_gpus)
        if normalized is not None:
            return normalized
        skipped.append(reading)
    texts = "; ".join(f"'{r.metric_text}'" for r in skipped) or "(empty)"
    needs_budget = [r for r in skipped if r.key in TRAIN_METRICS_NEEDING_TOKENS]
    if needs_budget and len(needs_budget) == len(skipped):
        raise RowError(
            "a GPU-hours or time-to-train row must name its token budget in the metric "
            "(e.g. 'for 14.8T tokens')"
        )
    reasons = [reason for r in skipped if (reason := not_predicted_reason(r.metric_text))]
    if reasons:
        raise RowError(f"metric {texts} is not predicted: {reasons[0]}")
    raise RowError(f"metric {texts} is not one lightspeed can predict ({', '.join(keys)})")


def other_readings(
    readings: tuple[Reading, ...],
    chosen: Reading,
    keys: tuple[str, ...],
    num_gpus: int,
    node_gpus: int | None,
) -> tuple[Reading, ...]:
    """The readings beside ``chosen`` whose quantity the engine also predicts from the same plan
    (a peak memory published beside a throughput: ``tokens/s per GPU; peak memory GiB``), each
    made per GPU as :func:`choose_reading` makes its own; a piece of another quantity is left out."""
    others = []
    for reading in readings:
        if reading.position == chosen.position:
            continue
        normalized = _predictable(reading, keys, num_gpus, node_gpus)
        if normalized is not None and normalized.key != chosen.key:
            others.append(normalized)
    return tuple(others)


def _predictable(
    reading: Reading, keys: tuple[str, ...], num_gpus: int, node_gpus: int | None
) -> Reading | None:
    """``reading`` per GPU, in a quantity of ``keys`` (aggregate PFLOP/s as TFLOP/s per GPU), or
    ``None`` where the engine cannot predict it (no value, another quantity, a token-budget figure
    without its budget). Raises :class:`RowError` for a node of an impossible size."""
    size = reading.gpus_per_scope
    if reading.scope == "node" and size is not None and not 1 <= size <= MAX_NODE_GPUS:
        raise RowError(
            f"metric {reading.metric_text!r} counts {size:,} GPUs a node: a node holds 1 to "
            f"{MAX_NODE_GPUS:,} (an NVL576 rack the most)"
        )
    reading = reading.per_gpu(_node_size(reading, node_gpus))
    if reading.value is None or reading.key not in keys:
        return None
    if reading.key in TRAIN_METRICS_NEEDING_TOKENS and reading.num_tokens is None:
        return None
    if reading.key == "pflop_per_s":
        return _replace_reading(reading, "tflop_per_s_per_gpu", reading.value / num_gpus, "aggregate / GPUs")
    return reading


def _node_size(reading: Reading, node_gpus: int | None) -> int:
    """The GPUs a per-node ``reading`` divides by: its own (``per 4-GPU node``), else the node's;
    a rack's or pod's node, which the catalog does not count, is refused (never the job's GPUs)."""
    if reading.scope != "node" or reading.gpus_per_scope is not None:
        return reading.gpus_per_scope or node_gpus or 1
    if node_gpus is None:
        raise RowError(
            f"metric {reading.metric_text!r} is per node, and the row's system is a rack or pod whose "
            "node the catalog does not count (a GB200 NVL72 compute tray holds 4 GPUs); write the "
            "node's GPUs ('per 4-GPU node') or the figure per GPU"
        )
    return node_gpus


# The abbreviations torchtitan's metric log prints (``tps``, its older ``wps``): tokens per second
# per device (torchtitan/components/metrics.py: tokens / (time x the non-data-parallel size)).
_LOG_TOKEN_RATE: Final = re.compile(r"^\s*(?:tps|wps)\b(?!.*\b(?:total|global|aggregate|cluster|job)\b)")


def log_rate_per_device(reading: Reading, stack: Stack) -> Reading:
    """A bare ``tps`` / ``wps`` of a torchtitan row is its log's rate per device, not the job's."""
    if (
        reading.key != "tokens_per_s"
        or not stack.name.startswith("torchtitan")
        or not _LOG_TOKEN_RATE.search(reading.metric_text.lower())
        or reading.value is None
    ):
        return reading
    return _replace_reading(
        reading,
        "tokens_per_s_per_gpu",
        reading.value,
        "torchtitan's log prints tps per device (tokens over time x the non-data-parallel size)",
    )


# a job's token rate is labelled so when a source means it (``total``, ``global``, ``aggregate``)
_JOB_RATE_WORDS: Final = re.compile(r"\b(?:total|global|aggregate|cluster|job|all\s+gpus|combined)\b")
# model FLOP/s as a share of the GPU's dense BF16 peak: below the first no training run reads (no
# job-level rate of the repository's 1,100 published rows falls under it); the second bounds what a
# per-GPU reading may imply
_IMPLAUSIBLE_MFU: Final = 0.05
_PLAUSIBLE_MFU: Final = (0.03, 1.0)


def unlabelled_rate_per_gpu(
    reading: Reading, model: TransformerSpec, num_gpus: int, accelerator: Accelerator
) -> Reading:
    """A bare token rate (``tokens/sec``, no word that makes it the job's) that would put the job
    below 5% of its GPUs' dense BF16 peak in model FLOPs (6 x active parameters per token), but one
    GPU at a plausible share of it, is that GPU's rate: torchtitan's, torchao's and MaxText's
    tables print their logs' per-device rate under such a label (torchao's ``Median
    tokens/second`` of Llama 3 8B on 8 H100, 6,150: 3.7% of the job's peak, 30% of one GPU's)."""
    peak = accelerator.compute.get("bf16")
    if (
        reading.key != "tokens_per_s"
        or reading.value is None
        or num_gpus <= 1
        or peak is None
        or _JOB_RATE_WORDS.search(reading.metric_text.lower())
    ):
        return reading
    per_gpu_share = 6.0 * parameter_counts(model).active_params * reading.value / peak.dense_per_s
    low, high = _PLAUSIBLE_MFU
    if per_gpu_share / num_gpus >= _IMPLAUSIBLE_MFU or not low <= per_gpu_share <= high:
        return reading
    return _replace_reading(
        reading,
        "tokens_per_s_per_gpu",
        reading.value,
        f"'{reading.metric_text}' read per GPU: over the {num_gpus} GPUs it would be "
        f"{100 * per_gpu_share / num_gpus:.2g}% of their BF16 peak in model FLOPs, on one GPU "
        f"{100 * per_gpu_share:.0f}%",
    )


def _replace_reading(reading: Reading, key: str, value: float, note: str) -> Reading:
    data = reading.to_dict()
    data.update(key=key, value=value, scope="gpu", notes=(*reading.notes, note))
    return Reading(**data)


__all__ = [
    "MAX_NODE_GPUS",
    "TRAIN_METRICS_NEEDING_TOKENS",
    "choose_reading",
    "log_rate_per_device",
    "other_readings",
    "unlabelled_rate_per_gpu",
]
