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
from numbers import Integral, Real
from typing import Final

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
# one request (or token) a century: a slower rate's gaps run past any horizon (4.9e-324 req/s gave
# infinite arrival times and NaN latencies); sol/serve/workload.py MIN_ARRIVAL_RATE_PER_S
MIN_RATE_PER_S: Final = 1.0 / MAX_DURATION_S
MAX_THREADS: Final = 8192  # Linux's largest NR_CPUS
MAX_PROCESSES: Final = 1024  # local ranks one machine can spawn
MAX_ROWS: Final = 1_000_000  # rows or runs a table lists
MAX_USD: Final = 1e9  # per GPU-hour


def _bounds(minimum: float | None, maximum: float | None, above: float | None) -> str:
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    if minimum is not None:
        parts.append(f">= {minimum:,}" if isinstance(minimum, int) else f">= {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:,}" if isinstance(maximum, int) else f"<= {maximum:g}")
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
    error: type[UserInputError] = UserInputError,
) -> float:
    """``value`` as a ``float`` when it is a finite real number within the bounds (``above``
    is a strict lower bound), else ``error`` naming ``label``, the value and the bounds.

    >>> check_number("arrival_rate_per_s", 2, above=0.0)
    2.0
    >>> check_number("arrival_rate_per_s", "2", above=0.0)
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: arrival_rate_per_s must be a finite number > 0 (got '2', a str)
    """
    bounds = _bounds(minimum, maximum, above)
    wanted = f"{label} must be a finite number" + (f" {bounds}" if bounds else "")
    if isinstance(value, bool) or not isinstance(value, Real):
        raise error(f"{wanted} (got {_shown(value)}, a {type(value).__name__})")
    number = float(value)
    low = (minimum is not None and number < minimum) or (above is not None and number <= above)
    if not math.isfinite(number) or low or (maximum is not None and number > maximum):
        raise error(f"{wanted} (got {_shown(value)})")
    return number


def check_kind(label: str, value: object, kind: type, hint: str) -> None:
    """Refuse a ``value`` that is not a ``kind`` with one line naming ``label`` and how to make
    one (``hint``): a model's name where the engine takes the model itself is the likely slip.

    >>> check_kind("model", "llama-3-70b", int, "ls.model('llama-3-70b')")
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: model must be a int (ls.model('llama-3-70b')), not the str 'llama-3-70b'
    """
    if not isinstance(value, kind):
        shown = f"the {type(value).__name__} {_shown(value)}"
        raise UserInputError(f"{label} must be a {kind.__name__} ({hint}), not {shown}")
