"""Whole-number helpers shared by the plan spaces of both engines."""

from __future__ import annotations


def divisors(value: int) -> list[int]:
    """Every positive divisor of ``value``, ascending.

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    return [d for d in range(1, value + 1) if value % d == 0]


def nearest(value: int, candidates: list[int]) -> int:
    """The candidate closest to ``value`` (the smaller one on a tie).

    >>> nearest(5, [4, 6, 8])
    4
    """
    return min(candidates, key=lambda candidate: (abs(candidate - value), candidate))


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (inclusive).

    >>> powers_of_two(10)
    [1, 2, 4, 8]
    """
    values = [1]
    while values[-1] * 2 <= limit:
        values.append(values[-1] * 2)
    return values
