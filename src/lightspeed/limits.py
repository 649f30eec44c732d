"""The bounds every number a person gives lightspeed is held to, and the checks that apply them.

One home for both edges: the CLI's option types (:mod:`lightspeed.cli.options`) read their
bounds from here, and the public Python types (plans, loads, configurations) check their fields
with :func:`check_whole` and :func:`check_number`, so ``tp=0`` or ``seq_len=1e30`` passed from a
notebook is refused with the same one line as ``--tp 0`` or ``--seq 1e30`` on the command line
(docs/limits.md lists the bounds and why each is where it is).

>>> check_whole("tp", 8, maximum=MAX_ACCELERATORS)
8
>>> check_whole("tp", 0)
Traceback (most recent call last):
...
lightspeed.errors.UserInputError: tp must be a whole number >= 1 (got 0)
>>> check_number("max_ttft_s", float("nan"), above=0.0)
Traceback (most recent call last):
...
lightspeed.errors.UserInputError: max_ttft_s must be a finite number > 0 (got nan)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import Any, Final

from lightspeed.errors import UserInputError

MAX_ACCELERATORS: Final = 10_000_000  # 50x xAI Colossus (200,000 GPUs, 2025), the largest built
MAX_NODES: Final = MAX_ACCELERATORS
MAX_SEQ_LEN: Final = 2**27  # 134M tokens; the longest context windows offered hold 10M
MAX_SEQUENCES: Final = 2**30  # sequences in a batch, requests in flight
MAX_TOKENS: Final = 1e18  # 25,000x the largest published pretraining budget (36T, Qwen3)
MAX_FLOP: Final = 1e35  # a total: 1e8x the largest training run (~5e26 FLOP, 2025)
MAX_FLOP_PER_TOKEN: Final = 1e18  # 6 x a quadrillion parameters
MAX_CPU_HZ: Final = 10e9  # the CPU clock record is 9.1 GHz, on liquid helium
MAX_BYTES_PER_S: Final = 1e15  # 1 PB/s: above the memory of any chip (HBM3e: 8 TB/s per GPU)
MAX_BYTES: Final = 2.0**50  # 1 PiB: above the memory of any machine a benchmark runs on
MAX_WATTS: Final = 1e10  # 10 GW: above any data-center site
MAX_RATE_PER_S: Final = 1e9  # requests or tokens per second of one job
MAX_DURATION_S: Final = 100 * 365.25 * 86400.0  # a century
MAX_HEADS_OR_HEAD_DIM: Final = 2**14  # attention heads, head width or mixer heads of one model
# NICs one node's scale-out counts: 1 to 32 today (p5.48xlarge: 32 EFA NICs of 100 Gb/s, four a GPU);
# twice that leaves room for what comes next and refuses a typed count no node holds
MAX_NICS_PER_NODE: Final = 64
# one request (or token) a century: a slower rate's gaps run past any horizon (4.9e-324 req/s gave
# infinite arrival times and NaN latencies); sol/serve/workload.py MIN_ARRIVAL_RATE_PER_S
MIN_RATE_PER_S: Final = 1.0 / MAX_DURATION_S
MAX_THREADS: Final = 8192  # Linux's largest NR_CPUS
MAX_PROCESSES: Final = 1024  # local ranks one machine can spawn
MAX_ROWS: Final = 1_000_000  # rows or runs a table lists
MAX_USD: Final = 1e9  # per GPU-hour
MAX_VPP: Final = 1024  # virtual pipeline chunks per stage
MAX_DRAFT_TOKENS: Final = 1024  # tokens a draft proposes per step
MAX_SEARCHED_DRAFT_TOKENS: Final = 16  # the deepest a search over speculative depths tries
MAX_MTP_MODULES: Final = 16  # MiniMax-M2 declares 3
MAX_PHYSICAL_EXPERTS: Final = 2**24
MAX_EXPERT_IMBALANCE: Final = 1024.0  # the busiest GPU holding every token
MAX_SIMULATED_REQUESTS: Final = 10_000_000  # a day of traffic at over 100 requests/s
MAX_FINALISTS: Final = 64  # deployments a goodput search simulates
MAX_BF16_LAYERS: Final = 100_000
MAX_SEED: Final = 2**63 - 1


def _bounds(
    minimum: float | None, maximum: float | None, above: float | None, below: float | None = None
) -> str:
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    if minimum is not None:
        parts.append(f">= {minimum:,}" if isinstance(minimum, int) else f">= {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:,}" if isinstance(maximum, int) else f"<= {maximum:g}")
    if below is not None:
        parts.append(f"< {below:g}")
    return " and ".join(parts)


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def check_whole(
    label: str,
    value: object,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    error: type[UserInputError] = UserInputError,
) -> int:
    """``value`` as an ``int`` when it is a whole number within the bounds, else ``error``
    naming ``label``, the value and the bounds. ``True``, ``8.0``, ``"8"`` and ``nan`` are
    refused: a whole-number field takes an ``int`` (NumPy's integers are ints here).

    >>> check_whole("seq_len", 2**30, maximum=MAX_SEQ_LEN)
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: seq_len must be a whole number >= 1 and <= 134,217,728 (got 1073741824)
    >>> check_whole("pp", True)
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: pp must be a whole number >= 1 (got True, a bool)
    """
    wanted = f"{label} must be a whole number {_bounds(minimum, maximum, None)}"
    if isinstance(value, bool) or not isinstance(value, Integral):
        kind = type(value).__name__
        raise error(f"{wanted} (got {_shown(value)}, a {kind})")
    whole = int(value)
    if whole < minimum or (maximum is not None and whole > maximum):
        raise error(f"{wanted} (got {whole})")
    return whole


def check_number(
    label: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    error: type[UserInputError] = UserInputError,
) -> float:
    """``value`` as a ``float`` when it is a finite real number within the bounds (``above``
    and ``below`` are strict bounds), else ``error`` naming ``label``, the value and the bounds.

    >>> check_number("arrival_rate_per_s", 2, above=0.0)
    2.0
    >>> check_number("arrival_rate_per_s", "2", above=0.0)
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: arrival_rate_per_s must be a finite number > 0 (got '2', a str)
    """
    bounds = _bounds(minimum, maximum, above, below)
    wanted = f"{label} must be a finite number" + (f" {bounds}" if bounds else "")
    if isinstance(value, bool) or not isinstance(value, Real):
        raise error(f"{wanted} (got {_shown(value)}, a {type(value).__name__})")
    number = float(value)
    low = (minimum is not None and number < minimum) or (above is not None and number <= above)
    high = (maximum is not None and number > maximum) or (below is not None and number >= below)
    if not math.isfinite(number) or low or high:
        raise error(f"{wanted} (got {_shown(value)})")
    return number


def check_kind(
    label: str, value: object, kind: type | tuple[type, ...], hint: str, *, what: str | None = None
) -> None:
    """Refuse a ``value`` that is not a ``kind`` with one line naming ``label``, what it must be
    (``what``, default "a" and the type's name) and how to make one (``hint``): a model's name
    where the engine takes the model itself is the likely slip, a number where a name belongs.

    >>> check_kind("model", "llama-3-70b", int, "ls.model('llama-3-70b')")
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: model must be a int (ls.model('llama-3-70b')), not the str 'llama-3-70b'
    >>> check_kind("a hardware name", 123, str, "such as 'h100-sxm'", what="text")
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: a hardware name must be text (such as 'h100-sxm'), not the int 123
    """
    if not isinstance(value, kind):
        names = (kind,) if isinstance(kind, type) else kind
        wanted = what if what is not None else " or ".join(f"a {name.__name__}" for name in names)
        shown = f"the {type(value).__name__} {_shown(value)}"
        raise UserInputError(f"{label} must be {wanted} ({hint}), not {shown}")


@dataclass(frozen=True)
class Bounds:
    """The bounds of one numeric option type (:data:`OPTION_BOUNDS`): a whole number (``whole``)
    or a finite one from ``minimum`` to ``maximum``, ``above``/``below`` strict ends; ``pair``:
    two such numbers (``P:D``). The CLI's option types take theirs from here
    (:meth:`click_bounds`) and the Python configurations check their fields with :meth:`check`.

    >>> OPTION_BOUNDS["ACCEPTANCE"].check("acceptance", 1.0)
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: acceptance must be a finite number >= 0 and < 1 (got 1.0)
    """

    whole: bool
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    pair: bool = False

    def check(self, label: str, value: object) -> object:
        """``value`` checked (:func:`check_whole` or :func:`check_number`); a pair as a tuple."""
        if self.pair:
            if not isinstance(value, tuple | list) or len(value) != 2:
                raise UserInputError(f"{label} must be two whole numbers, e.g. (1, 3) (got {_shown(value)})")
            single = replace(self, pair=False)
            return tuple(single.check(f"{label}[{index}]", item) for index, item in enumerate(value))
        if self.whole:
            maximum = None if self.maximum is None else int(self.maximum)
            return check_whole(label, value, minimum=int(self.minimum or 0), maximum=maximum)
        return check_number(
            label, value, minimum=self.minimum, maximum=self.maximum, above=self.above, below=self.below
        )

    def click_bounds(self) -> dict[str, Any]:
        """The keyword arguments of a :mod:`lightspeed.cli.options` type: ``minimum``,
        ``maximum`` and, for a strict end, ``min_open``/``max_open``."""
        bounds: dict[str, Any] = {
            "minimum": self.above if self.above is not None else self.minimum,
            "maximum": self.below if self.below is not None else self.maximum,
        }
        if self.above is not None:
            bounds["min_open"] = True
        if self.below is not None:
            bounds["max_open"] = True
        return bounds


# The bounds of the option types a configuration field names (sol/config.py ``option_type``):
# one table for the command line and Python (docs/limits.md).
OPTION_BOUNDS: Final[Mapping[str, Bounds]] = {
    "GPUS": Bounds(whole=True, minimum=1, maximum=MAX_ACCELERATORS),
    "DEGREE": Bounds(whole=True, minimum=1, maximum=MAX_ACCELERATORS),
    "PHYSICAL_EXPERTS": Bounds(whole=True, minimum=1, maximum=MAX_PHYSICAL_EXPERTS),
    "SEQ_LEN": Bounds(whole=True, minimum=1, maximum=MAX_SEQ_LEN),
    "SEQUENCES": Bounds(whole=True, minimum=1, maximum=MAX_SEQUENCES),
    "TOKENS": Bounds(whole=False, minimum=1.0, maximum=MAX_TOKENS),
    "MTP_MODULES": Bounds(whole=True, minimum=0, maximum=MAX_MTP_MODULES),
    "VPP": Bounds(whole=True, minimum=1, maximum=MAX_VPP),
    "ZERO_STAGE": Bounds(whole=True, minimum=0, maximum=3),
    "EXPERT_IMBALANCE": Bounds(whole=False, minimum=1.0, maximum=MAX_EXPERT_IMBALANCE),
    "EFFECTIVE_BITS": Bounds(whole=False, minimum=4.0, maximum=16.0),
    "DRAFT_TOKENS": Bounds(whole=True, minimum=1, maximum=MAX_DRAFT_TOKENS),
    "SEARCHED_DRAFT_TOKENS": Bounds(whole=True, minimum=1, maximum=MAX_SEARCHED_DRAFT_TOKENS),
    "ACCEPTANCE": Bounds(whole=False, minimum=0.0, below=1.0),
    "FRACTION": Bounds(whole=False, minimum=0.0, maximum=1.0),
    "REQUESTS": Bounds(whole=True, minimum=1, maximum=MAX_SIMULATED_REQUESTS),
    "WARMUP_REQUESTS": Bounds(whole=True, minimum=0, maximum=MAX_SIMULATED_REQUESTS),
    "SEED": Bounds(whole=True, minimum=0, maximum=MAX_SEED),
    "PER_SECOND": Bounds(whole=False, minimum=MIN_RATE_PER_S, maximum=MAX_RATE_PER_S),
    "LATENCY_BOUND": Bounds(whole=False, above=0.0, maximum=MAX_DURATION_S),
    "ROWS": Bounds(whole=True, minimum=1, maximum=MAX_ROWS),
    "FINALISTS": Bounds(whole=True, minimum=1, maximum=MAX_FINALISTS),
    "POOL_SPLIT": Bounds(whole=True, minimum=1, maximum=MAX_ACCELERATORS, pair=True),
    "BF16_LAYERS": Bounds(whole=True, minimum=0, maximum=MAX_BF16_LAYERS, pair=True),
}
