"""Collective bandwidth with nccl-tests' conventions, over torch.distributed.

For each collective and size (bytes, nccl-tests' "size"), every rank times
blocks of back-to-back operations; a block's time is the slowest rank's
(the collective finishes when the last rank does). ``algbw = size / time``
and ``busbw = algbw x factor`` (REFERENCE.md section 4):

==============  =======================  ==============
collective      size is                  busbw factor
==============  =======================  ==============
all_reduce      per-rank buffer          2 (n - 1) / n
all_gather      whole output             (n - 1) / n
reduce_scatter  whole input              (n - 1) / n
all_to_all      per-rank send buffer     (n - 1) / n
broadcast       buffer                   1
sendrecv        buffer                   1
==============  =======================  ==============

Every size is checked once with known per-rank data (nccl-tests' ``#wrong``).
The spread of per-rank times (each rank's median over the trials: min/median/max)
exposes stragglers; the headline is never faster than the slowest rank's figure. Worlds come
from :mod:`lightspeed.bench.world` (local processes or ``torchrun``).

The same concept one layer down, predicted: :mod:`lightspeed.sol.core.collectives` costs them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final

from lightspeed.bench.results import BenchResult, make_result
from lightspeed.bench.sol import DeviceSol
from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.units import KIB, MIB

COLLECTIVES: Final = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "sendrecv")
_ELEMENT_BYTES: Final = 4  # float32
_PATTERN_PERIOD: Final = 7  # small integers: sums stay exact in float32


def busbw_factor(collective: str, num_ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor for ``collective`` on ``num_ranks`` ranks.

    >>> busbw_factor("all_reduce", 8)
    1.75
    """
    n = num_ranks
    factors = {
        "all_reduce": 2.0 * (n - 1) / n,
        "all_gather": (n - 1) / n,
        "reduce_scatter": (n - 1) / n,
        "all_to_all": (n - 1) / n,
        "broadcast": 1.0,
        "sendrecv": 1.0,
    }
    return factors[collective]


def collective_sizes(*, quick: bool, gpu: bool) -> tuple[int, ...]:
    """Sizes in bytes, powers of two as nccl-tests sweeps them."""
    if gpu:
        return (
            (int(MIB), int(64 * MIB), int(512 * MIB)) if quick else tuple(int(KIB * 4**p) for p in range(11))
        )
    return (int(64 * KIB), int(MIB), int(8 * MIB)) if quick else tuple(int(KIB * 4**p) for p in range(9))


@dataclass(frozen=True)
class CollectiveConfig(Record):
    """What each rank measures (sent to every rank, so plain fields only)."""

    collectives: tuple[str, ...] = COLLECTIVES
    sizes: tuple[int, ...] = ()
    warmup: int = 2
    num_trials: int = 3
    budget_bytes: float = 32 * MIB
    max_iterations: int = 50

    def __post_init__(self) -> None:
        unknown = [name for name in self.collectives if name not in COLLECTIVES]
        if unknown:
            raise UserInputError(f"unknown collective(s) {', '.join(unknown)}; use {', '.join(COLLECTIVES)}")
        if any(size < _ELEMENT_BYTES for size in self.sizes):
            raise UserInputError(f"collective sizes must be at least {_ELEMENT_BYTES} bytes")

    def iterations(self, size_bytes: int) -> int:
        """Operations per timed block: enough to amortise the timer, fewer for big sizes."""
        return max(2, min(self.max_iterations, int(self.budget_bytes // max(size_bytes, 1))))


def default_config(*, quick: bool, gpu: bool, collectives: Sequence[str] = COLLECTIVES) -> CollectiveConfig:
    """The sweep ``lightspeed bench collectives`` runs (``--quick``: three sizes)."""
    return CollectiveConfig(
        collectives=tuple(collectives),
        sizes=collective_sizes(quick=quick, gpu=gpu),
        warmup=(2 if quick else 5) if not gpu else (5 if quick else 20),
        num_trials=3 if quick else 5,
        budget_bytes=(32 * MIB if quick else 256 * MIB)
        if not gpu
        else (4096 * MIB if quick else 32768 * MIB),
        max_iterations=20 if quick else 50,
    )


def _element_counts(collective: str, size_bytes: int, num_ranks: int) -> tuple[int, int]:
    """(input, output) float32 elements per rank for nccl-tests' ``size``."""
    total = size_bytes // _ELEMENT_BYTES
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        total = max(num_ranks, total - total % num_ranks)
    if collective == "all_gather":
        return total // num_ranks, total
    if collective == "reduce_scatter":
        return total, total // num_ranks
    return total, total


class _Case:
    """Buffers, the operation and its check for one collective and size on one rank."""

    def __init__(self, torch: Any, dist: Any, collective: str, size_bytes: int, device: str) -> None:
        self.torch, self.dist, self.collective = torch, dist, collective
        self.rank, self.num_ranks = dist.get_rank(), dist.get_world_size()
        num_in, num_out = _element_counts(collective, size_bytes, self.num_ranks)
        self.size_bytes = (num_out if collective == "all_gather" else num_in) * _ELEMENT_BYTES
        self.input = torch.empty(num_in, dtype=torch.float32, device=device)
        self.output = (
            self.input
            if collective in ("all_reduce", "broadcast")
            else torch.empty(num_out, dtype=torch.float32, device=device)
        )
        self.pattern = (torch.arange(num_in, device=device) % _PATTERN_PERIOD + 1).to(torch.float32)
        self.fill()

    def fill(self) -> None:
        """Rank r holds (r + 1) x pattern, so every expected output is exact."""
        self.input.copy_(self.pattern).mul_(self.rank + 1)

    def run(self) -> None:
        dist, collective = self.dist, self.collective
        n, rank = self.num_ranks, self.rank
        if collective == "all_reduce":
            dist.all_reduce(self.input)
        elif collective == "all_gather":
            dist.all_gather_single(self.output, self.input)
        elif collective == "reduce_scatter":
            dist.reduce_scatter_single(self.output, self.input)
        elif collective == "all_to_all":
            dist.all_to_all_single(self.output, self.input)
        elif collective == "broadcast":
            dist.broadcast(self.input, src=0)
        else:
            operations = [
                dist.P2POp(dist.isend, self.input, (rank + 1) % n),
                dist.P2POp(dist.irecv, self.output, (rank - 1) % n),
            ]
            for request in dist.batch_isend_irecv(operations):
                request.wait()

    def expected(self) -> Any:
        n, rank, pattern = self.num_ranks, self.rank, self.pattern
        total = n * (n + 1) / 2.0
        if self.collective == "all_reduce":
            return pattern * total
        if self.collective == "broadcast":
            return pattern
        if self.collective == "sendrecv":
            return pattern * ((rank - 1) % n + 1)
        if self.collective == "all_gather":
            return self.torch.cat([pattern * (j + 1) for j in range(n)])
        chunk = pattern.numel() // n
        mine = pattern[rank * chunk : (rank + 1) * chunk]
        if self.collective == "reduce_scatter":
            return mine * total
        return self.torch.cat([mine * (j + 1) for j in range(n)])  # all_to_all

    def check(self) -> bool:
        """Run once on fresh data and compare every element with the exact answer."""
        self.fill()
        self.run()
        return bool(self.torch.equal(self.output, self.expected()))


def measure_rank(
    *,
    torch: ModuleType,
    dist: ModuleType,
    config: CollectiveConfig,
    device: str,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[tuple[str, int, list[float], bool]]:
    """This rank's timings: (collective, size in bytes, seconds per op per trial, correct)."""
    synchronize = (lambda: torch.cuda.synchronize(device)) if device.startswith("cuda") else (lambda: None)
    cases = [(name, size) for name in config.collectives for size in config.sizes]
    measured: list[tuple[str, int, list[float], bool]] = []
    for position, (name, size) in enumerate(cases):
        if progress is not None:
            progress(f"{name} {size} B", position, len(cases))
        case = _Case(torch, dist, name, size, device)
        iterations = config.iterations(case.size_bytes)
        for _ in range(config.warmup):
            case.run()
        synchronize()
        trials: list[float] = []
        for _ in range(config.num_trials):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iterations):
                case.run()
            synchronize()
            trials.append((time.perf_counter() - start) / iterations)
        measured.append((name, case.size_bytes, trials, case.check()))
    if progress is not None:
        progress("collectives done", len(cases), len(cases))
    return measured


NO_LINK_NOTE: Final = "no catalog link figure between these ranks"

RankTimings = Sequence[Sequence[tuple[str, int, Sequence[float], bool]]]


def assemble_results(
    *, per_rank: RankTimings, backend: str, sol: DeviceSol, link_note: str = ""
) -> list[BenchResult]:
    """Results from every rank's timings (``per_rank[r]`` as :func:`measure_rank` returned)."""
    num_ranks = len(per_rank)
    peak = sol.scale_up_bytes_per_s if backend == "nccl" else None
    # a known device's note derives its compute peak (or names its record): it goes with its link
    # figure only; an unknown device's note (why it has no figures at all) holds for the link too
    if peak is not None:
        note = link_note or sol.note
    else:
        note = link_note or (sol.note if sol.device_name is None else "") or NO_LINK_NOTE
    results: list[BenchResult] = []
    for index, (name, size_bytes, _, _) in enumerate(per_rank[0]):
        rows = [rank_rows[index] for rank_rows in per_rank]
        trials = list(zip(*(row[2] for row in rows), strict=True))  # trials[k][r]
        block_s = [max(per_trial) for per_trial in trials]
        factor = busbw_factor(name, num_ranks)
        # each rank's own figure is, like the headline, a median over the trials: the median of the
        # per-trial slowest is then never below any rank's median (the collective ends with its last rank)
        rank_medians = [statistics.median(row[2]) for row in rows]
        busbw = [size_bytes / seconds * factor for seconds in block_s]
        median_s = size_bytes * factor / statistics.median(busbw)  # the headline's time
        results.append(
            make_result(
                suite="collectives",
                device="cuda" if backend == "nccl" else "cpu",
                sol_device=sol.device_name,
                name=f"{name} busbw",
                dtype="fp32",
                size_bytes=size_bytes,
                samples=busbw,
                unit="B/s",
                best="median",
                sol=peak,
                sol_note=note,
                correct=all(row[3] for row in rows),
                details=_details(
                    name=name,
                    size_bytes=size_bytes,
                    median_s=median_s,
                    factor=factor,
                    rank_medians=rank_medians,
                    backend=backend,
                ),
            )
        )
    return results


def _details(
    *, name: str, size_bytes: int, median_s: float, factor: float, rank_medians: Sequence[float], backend: str
) -> Mapping[str, Any]:
    return {
        "collective": name,
        "backend": backend,
        "num_ranks": len(rank_medians),
        "time_s": median_s,
        "algbw_bytes_per_s": size_bytes / median_s,
        "busbw_factor": factor,
        "rank_time_s": {
            "min": min(rank_medians),
            "median": statistics.median(rank_medians),
            "max": max(rank_medians),
        },
    }
