"""What every benchmark returns: one :class:`BenchResult` per measured point.

``value`` is in base SI ``unit`` (``FLOP/s``, ``B/s``, ``s``); ``sol`` is the
speed of light in the same unit (``None`` when the catalog has no figure for
the device: then ``sol_note`` says why). ``stats`` summarises the repetitions
in the same unit. ``size`` is the problem size the suite sweeps: FLOP per call
for ``gemm``, bytes per array for ``membw``, bytes moved for ``copy`` and
``collectives`` (nccl-tests' size), kernels per sample for ``launch``.
``device`` is where it ran (``cpu``, ``cuda:0``) and ``sol_device`` the
catalog record the SOL came from.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from lightspeed.records import JsonObject, Record


@dataclass(frozen=True)
class Stats(Record):
    """Minimum, median and maximum of the repetitions (unit of the result's value)."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        """Summarise ``samples`` (at least one).

        >>> Stats.of([3.0, 1.0, 2.0])
        Stats(min=1.0, median=2.0, max=3.0)
        """
        assert samples, "statistics of no samples"
        return cls(min=min(samples), median=statistics.median(samples), max=max(samples))


@dataclass(frozen=True)
class BenchResult(Record):
    """One measured point of a suite, beside its speed of light."""

    suite: str
    name: str
    dtype: str | None
    size: int
    value: float
    unit: str
    sol: float | None
    fraction_of_sol: float | None
    stats: Stats
    correct: bool
    sol_note: str = ""
    device: str = ""
    sol_device: str | None = None
    details: JsonObject = field(default_factory=dict)
    samples: tuple[float, ...] = ()

    @property
    def key(self) -> str:
        """A name unique within a sweep and stable across runs (how results are compared).

        >>> BenchResult(suite="membw", name="stream triad", dtype="fp64", size=2**27, value=1.0,
        ...             unit="B/s", sol=None, fraction_of_sol=None, stats=Stats.of([1.0]),
        ...             correct=True).key
        'membw stream triad fp64 134217728'
        """
        parts = [self.suite, self.name.removeprefix(f"{self.suite} "), self.dtype or "", str(self.size)]
        return " ".join(part for part in parts if part)

    @property
    def metric(self) -> str:
        """The stored metric name for ``unit`` (``flop_per_s``, ``bytes_per_s``, ``seconds``)."""
        return {"FLOP/s": "flop_per_s", "B/s": "bytes_per_s", "s": "seconds"}.get(self.unit, self.unit)


def make_result(
    *,
    suite: str,
    name: str,
    dtype: str | None,
    size: int,
    samples: Sequence[float],
    device: str = "",
    sol_device: str | None = None,
    unit: str,
    best: str,
    sol: float | None,
    sol_note: str,
    correct: bool,
    details: JsonObject | None = None,
) -> BenchResult:
    """Build a result from per-repetition ``samples`` of the value.

    ``best`` picks the headline: ``"max"`` (STREAM's best of N for rates),
    ``"min"`` (lowest latency) or ``"median"`` (robust, used for GEMM and collectives).
    """
    stats = Stats.of(samples)
    value = {"max": stats.max, "min": stats.min, "median": stats.median}[best]
    fraction = value / sol if sol is not None and sol > 0 else None
    return BenchResult(
        suite=suite,
        name=name,
        dtype=dtype,
        size=int(size),
        value=value,
        unit=unit,
        sol=sol,
        fraction_of_sol=fraction,
        stats=stats,
        correct=correct,
        sol_note=sol_note,
        device=device,
        sol_device=sol_device,
        details=dict(details or {}),
        samples=tuple(float(sample) for sample in samples),
    )
