"""A global batch that does not split over the data-parallel replicas: search the settings left free.

A plan's global batch must split into ``dp`` equal shares of whole micro-batches.
When it does not, the user (or a published row) usually fixed only some of the
degrees: the GPU count and, say, TP, while PP, CP or the micro-batch were left to
the tool. :func:`split_batch` keeps what was stated and searches the rest for the
closest plan whose batch splits (fewest settings changed, then the smallest
change), and says what it chose.

>>> from lightspeed.workload import load_models
>>> plan = TrainingPlan(tp=8, dp=8, global_batch_size=36, seq_len=4096)  # 36 sequences over 8 replicas
>>> split = split_batch(plan, load_models().get("llama-3-70b"), free=("pp", "dp"))
>>> split.plan.pp, split.plan.dp
(2, 4)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from lightspeed.errors import InvalidPlanError
from lightspeed.records import Record
from lightspeed.sol.core.factors import divisors, nearest, powers_of_two
from lightspeed.sol.core.stacks import Stack
from lightspeed.sol.train.plan import TrainingPlan, validate_plan
from lightspeed.workload import TransformerSpec

FREE_SETTINGS = ("tp", "pp", "cp", "dp", "micro_batch_size")
_CONTEXT_PARALLEL = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class BatchSplit(Record):
    """The plan to run, the settings changed from the one asked for, and a sentence saying why
    (``note`` is empty when the batch already split)."""

    plan: TrainingPlan
    changed: dict[str, int]
    note: str


def batch_splits(plan: TrainingPlan) -> bool:
    """Whether the global batch splits into ``dp`` shares of whole micro-batches."""
    per_replica, remainder = divmod(plan.global_batch_size, plan.dp)
    return remainder == 0 and per_replica % plan.micro_batch_size == 0


def split_batch(
    plan: TrainingPlan,
    model: TransformerSpec,
    *,
    free: Collection[str],
    stack: Stack | None = None,
) -> BatchSplit:
    """``plan`` if its batch splits over its replicas, else the closest plan on the same GPUs that
    does, changing only the ``free`` settings (of ``tp``, ``pp``, ``cp``, ``dp``,
    ``micro_batch_size``; ``dp`` follows the GPUs left by the others unless it is fixed).

    Raises :class:`~lightspeed.errors.InvalidPlanError` (the usual batch message) when no
    value of the free settings splits it, or no setting is free.
    """
    unknown = set(free) - set(FREE_SETTINGS)
    if unknown:
        raise InvalidPlanError(f"cannot free {', '.join(sorted(unknown))}: one of {', '.join(FREE_SETTINGS)}")
    if batch_splits(plan):
        return BatchSplit(plan, {}, "")
    best: tuple[tuple[int, float, int], TrainingPlan] | None = None
    for candidate in candidate_splits(plan, model, free):
        try:
            validate_plan(candidate, model, plan.num_gpus, stack=stack)
        except InvalidPlanError:
            continue
        score = _distance(plan, candidate)
        if best is None or score < best[0]:
            best = (score, candidate)
    if best is None:
        raise InvalidPlanError(_no_split(plan, set(free)))
    chosen = best[1]
    changed = {
        name: getattr(chosen, name) for name in FREE_SETTINGS if getattr(chosen, name) != getattr(plan, name)
    }
    return BatchSplit(chosen, changed, _note(plan, chosen, changed))


def candidate_splits(
    plan: TrainingPlan, model: TransformerSpec, free: Collection[str]
) -> Iterator[TrainingPlan]:
    """Every plan on the same GPUs that varies only the ``free`` settings (of :data:`FREE_SETTINGS`)
    and whose batch splits."""
    gpus = plan.num_gpus
    heads = model.attention.num_heads
    tps = [t for t in powers_of_two(min(64, gpus)) if heads % t == 0] if "tp" in free else [plan.tp]
    pps = [p for p in divisors(gpus) if p <= model.num_layers] if "pp" in free else [plan.pp]
    cps = [c for c in _CONTEXT_PARALLEL if c <= gpus] if "cp" in free else [plan.cp]
    for tp, pp, cp in itertools.product(tps, pps, cps):
        dp, remainder = divmod(gpus, tp * pp * cp)
        if remainder or (dp != plan.dp and "dp" not in free):
            continue
        per_replica, rest = divmod(plan.global_batch_size, dp)
        if rest:
            continue
        micro = plan.micro_batch_size
        if per_replica % micro:
            if "micro_batch_size" not in free:
                continue
            micro = max(d for d in divisors(per_replica) if d <= micro)
        yield plan.with_changes(tp=tp, pp=pp, cp=cp, dp=dp, micro_batch_size=micro)


# Among equally close candidates, which degree to change first: pipeline stages cost the least
# (a bubble), then context parallelism (a ring exchange per layer), then tensor parallelism.
_CHANGE_ORDER = {"micro_batch_size": 0, "dp": 0, "pp": 1, "cp": 2, "tp": 3}


def _distance(plan: TrainingPlan, candidate: TrainingPlan) -> tuple[int, float, int]:
    """(settings changed, how far in powers of two, which): the closest candidate wins."""
    ratios = {name: getattr(candidate, name) / getattr(plan, name) for name in FREE_SETTINGS}
    changed = [name for name, ratio in ratios.items() if ratio != 1.0]
    far = sum(abs(math.log2(ratio)) for ratio in ratios.values())
    return len(changed), far, max((_CHANGE_ORDER[name] for name in changed), default=0)


def _no_split(plan: TrainingPlan, free: set[str]) -> str:
    """Why no plan's batch splits, naming the real cause: the global batch over the replicas, or
    (when that splits) the micro-batch over each replica's share; and the fixes that remain."""
    batch, dp, micro = plan.global_batch_size, plan.dp, plan.micro_batch_size
    per_replica, remainder = divmod(batch, dp)
    searched = (
        f"no value of the settings left free ({', '.join(sorted(free))}) on {plan.num_gpus} GPUs"
        if free - {"micro_batch_size"}
        else "no parallel degree was left free to search"
    )
    # a batch that splits over the replicas, and into the pinned micro-batch, takes a multiple of both
    unit = dp if "micro_batch_size" in free else dp * micro
    example = unit * max(1, round(batch / unit))
    if remainder == 0:  # the replicas' shares are whole: the micro-batch is what does not divide
        return (
            f"micro-batch {micro} does not divide the {per_replica} sequences per replica "
            f"(global batch {batch} over dp={dp}), and {searched} gives a share it divides; "
            f"try micro-batch size {nearest(micro, divisors(per_replica))} or a global batch that is "
            f"a multiple of {unit} (e.g. {example})"
        )
    return (
        f"global batch {batch} does not split over dp={dp} ({batch / dp:.4g} sequences per replica), "
        f"and {searched} splits it; use a global batch that is a multiple of {unit} (e.g. {example})"
        f"{_other_fix(plan, free)}"
    )


def _other_fix(plan: TrainingPlan, free: set[str]) -> str:
    """The fix besides the batch: free a pinned setting, or (every one free already) fewer GPUs."""
    pinned = [_shown(name) for name in FREE_SETTINGS if name not in free]
    if pinned:
        return f", or leave {' or '.join(pinned)} free"
    return f", or fewer than {plan.num_gpus} GPUs (every setting was left free)"


def _shown(name: str) -> str:
    """A setting as the messages write it: ``micro-batch`` for ``micro_batch_size``."""
    return "micro-batch" if name == "micro_batch_size" else name


def _note(plan: TrainingPlan, chosen: TrainingPlan, changed: dict[str, int]) -> str:
    settings = ", ".join(f"{_shown(name)}={value}" for name, value in changed.items())
    per_replica = chosen.global_batch_size // chosen.dp
    return (
        f"global batch {plan.global_batch_size} does not split over dp={plan.dp} "
        f"({plan.global_batch_size / plan.dp:.4g} sequences per replica); chose {settings} "
        f"among the settings left free: {per_replica} sequences per replica"
    )


__all__ = ["FREE_SETTINGS", "BatchSplit", "batch_splits", "candidate_splits", "split_batch"]
