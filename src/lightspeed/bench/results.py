"""What every benchmark returns: one :class:`BenchResult` per measured point.

``value`` is in base SI ``unit`` (``FLOP/s``, ``B/s``, ``s``); ``sol`` is the
speed of light in the same unit (``None`` when the catalog has no figure for
the device: then ``sol_note`` says why). ``stats`` summarises the repetitions
in the same unit. The problem size the suite sweeps is one of three fields,
each with its unit in its name: ``flop_per_call`` (``gemm``), ``size_bytes``
(bytes per array for ``membw``, bytes moved for ``copy`` and ``collectives``,
nccl-tests' size) or ``num_ops_per_sample`` (kernels per sample for
``launch``); the other two are ``None``. JSON output also carries the old
key ``size`` (whichever is set) as an alias. ``device`` is where it ran
(``cpu``, ``cuda:0``) and ``sol_device`` the catalog record the SOL came from.
JSON output also carries ``above_sol``: whether the value beats its SOL (a
result above a nominal peak is possible; ``details["above_sol_note"]`` says
why), ``null`` without a SOL.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, JsonObject, Record
from lightspeed.units import fraction_of_sol, unit_direction

# Which field holds each suite's swept size, and the unit that field is in.
SIZE_FIELD_BY_SUITE: Final = {
    "gemm": "flop_per_call",
    "membw": "size_bytes",
    "copy": "size_bytes",
    "collectives": "size_bytes",
    "launch": "num_ops_per_sample",
}
SIZE_UNITS: Final = {"flop_per_call": "FLOP", "size_bytes": "B", "num_ops_per_sample": "ops"}


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
    """One measured point of a suite, beside its speed of light.

    Exactly one of ``flop_per_call``, ``size_bytes`` and ``num_ops_per_sample``
    is set: the size the suite sweeps (see :data:`SIZE_FIELD_BY_SUITE`).
    """

    suite: str
    name: str
    dtype: str | None
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
    flop_per_call: int | None = None
    size_bytes: int | None = None
    num_ops_per_sample: int | None = None

    def __post_init__(self) -> None:
        given = [name for name in SIZE_UNITS if getattr(self, name) is not None]
        if len(given) != 1:
            raise UserInputError(
                f"benchmark result {self.name!r} needs exactly one of {', '.join(SIZE_UNITS)} (got "
                f"{', '.join(given) or 'none'})"
            )

    @property
    def size_field(self) -> str:
        """The name of the field that holds the swept size (``size_bytes`` ...)."""
        return next(name for name in SIZE_UNITS if getattr(self, name) is not None)

    @property
    def swept_size(self) -> int:
        """The swept size in the unit of :attr:`size_field` (FLOP, bytes or operations)."""
        value: int = getattr(self, self.size_field)
        return value

    @property
    def key(self) -> str:
        """A name unique within a sweep and stable across runs (how results are compared).

        >>> BenchResult(suite="membw", name="stream triad", dtype="fp64", size_bytes=2**27, value=1.0,
        ...             unit="B/s", sol=None, fraction_of_sol=None, stats=Stats.of([1.0]),
        ...             correct=True).key
        'membw stream triad fp64 134217728 B'
        """
        size = f"{self.swept_size} {SIZE_UNITS[self.size_field]}"
        parts = [self.suite, self.name.removeprefix(f"{self.suite} "), self.dtype or "", size]
        return " ".join(part for part in parts if part)

    @property
    def above_sol(self) -> bool | None:
        """Whether the value beats its SOL (``fraction_of_sol`` above 1: faster than it for a time);
        ``None`` without a SOL.

        >>> BenchResult(suite="gemm", name="gemm", dtype="fp32", flop_per_call=8, value=178.3e9,
        ...             unit="FLOP/s", sol=166.2e9, fraction_of_sol=178.3 / 166.2,
        ...             stats=Stats.of([178.3e9]), correct=True).above_sol
        True
        """
        if self.fraction_of_sol is None:
            return None
        return bool(self.fraction_of_sol > 1.0)

    @property
    def metric(self) -> str:
        """The stored metric name for ``unit`` (``flop_per_s``, ``bytes_per_s``, ``seconds``)."""
        return {"FLOP/s": "flop_per_s", "B/s": "bytes_per_s", "s": "seconds"}.get(self.unit, self.unit)

    def to_dict(self) -> JsonDict:
        """Every field, plus ``size`` (the old name of the swept size, kept as an alias) and
        ``above_sol`` (derived: recomputed, not read back, when a result is loaded)."""
        return {**super().to_dict(), "size": self.swept_size, "above_sol": self.above_sol}


def size_fields(data: JsonObject) -> dict[str, int | None]:
    """The three size fields of a result's JSON, new (``size_bytes`` ...) or old (``size``).

    >>> size_fields({"suite": "gemm", "size": 2048})
    {'flop_per_call': 2048, 'size_bytes': None, 'num_ops_per_sample': None}

    Raises ``KeyError``/``TypeError``/``ValueError`` on a malformed result (callers
    name the file or run).
    """
    found = {name: None if data.get(name) is None else int(data[name]) for name in SIZE_UNITS}
    given = [value for value in found.values() if value is not None]
    if given:
        alias = data.get("size")
        if alias is not None and (isinstance(alias, bool) or int(alias) != given[0]):
            raise ValueError(f"size {alias!r} disagrees with the size field ({given[0]})")
        return found
    field_name = SIZE_FIELD_BY_SUITE.get(str(data["suite"]))
    if field_name is None:
        raise ValueError(f"suite {data['suite']!r} has no size field; give one of {', '.join(SIZE_UNITS)}")
    size = data["size"]
    if isinstance(size, bool):
        raise TypeError("size is not a number")
    return {**found, field_name: int(size)}


def make_result(
    *,
    suite: str,
    name: str,
    dtype: str | None,
    samples: Sequence[float],
    device: str = "",
    sol_device: str | None = None,
    unit: str,
    best: str,
    sol: float | None,
    sol_note: str,
    correct: bool,
    details: JsonObject | None = None,
    flop_per_call: int | None = None,
    size_bytes: int | None = None,
    num_ops_per_sample: int | None = None,
    above_sol_note: str = "",
) -> BenchResult:
    """Build a result from per-repetition ``samples`` of the value.

    Give the swept size as exactly one of ``flop_per_call``, ``size_bytes``
    and ``num_ops_per_sample``. ``best`` picks the headline: ``"max"`` (STREAM's best of N for rates),
    ``"min"`` (lowest latency) or ``"median"`` (robust, used for GEMM and collectives).
    A result above its SOL keeps ``above_sol_note`` (why the SOL can be beaten) in
    ``details["above_sol_note"]``.
    """
    stats = Stats.of(samples)
    value = {"max": stats.max, "min": stats.min, "median": stats.median}[best]
    # the share of the SOL reached: sol / value for a time (launch latency), value / sol for a rate
    fraction = fraction_of_sol(value, sol, lower_better=unit_direction(unit) is True)
    result = BenchResult(
        suite=suite,
        name=name,
        dtype=dtype,
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
        flop_per_call=None if flop_per_call is None else int(flop_per_call),
        size_bytes=None if size_bytes is None else int(size_bytes),
        num_ops_per_sample=None if num_ops_per_sample is None else int(num_ops_per_sample),
    )
    if result.above_sol:
        reason = f": {above_sol_note}" if above_sol_note else ""
        return replace(result, details={**result.details, "above_sol_note": f"above the SOL{reason}"})
    return result
