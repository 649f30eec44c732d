"""A predicted time's breakdown read back from a command's ``--json`` output (``plan train``'s
``breakdown_s``, ``plan infer``'s ``iteration_breakdown_s``): every part one the report knows,
finite and >= 0, the parts adding up to the whole within :data:`BREAKDOWN_TOLERANCE`; else one
error naming the file, the field and the fix."""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from lightspeed.datafile import Fields
from lightspeed.errors import DataFileError

# The parts must add up to the whole within this share of it (the engines' whole is their sum; a
# hand-rounded file keeps 3 digits).
BREAKDOWN_TOLERANCE: Final = 1e-3


def checked_breakdown(
    parts: Fields, total_s: float, *, names: Collection[str], what: str, fix: str
) -> dict[str, float]:
    """``parts`` (a JSON object whose ``prefix`` names its field, ``breakdown_s.``) as seconds per
    part: known ``names``, finite and >= 0, adding up to ``total_s``; ``what`` is the whole, as
    ``step`` or ``iteration`` (``the step time``)."""
    where = parts.prefix.rstrip(".")
    known = {}
    for name in map(str, parts.data):
        if name not in names:
            raise DataFileError(
                parts.path,
                f"unknown part of the {what} {name!r} (known: {', '.join(names)})",
                field=f"{where}.{name}",
                fix=f"{fix} (the file is from another version, or edited)",
            )
        known[name] = parts.number(name, positive=False)
        if known[name] < 0:
            raise DataFileError(
                parts.path,
                f"a part of the {what} cannot be negative",
                field=f"{where}.{name}",
                value=known[name],
            )
    sum_s = sum(known.values())
    if abs(sum_s - total_s) > BREAKDOWN_TOLERANCE * total_s:
        raise DataFileError(
            parts.path,
            f"the parts of the {what} add up to {sum_s:.6g} s, not the {what} time {total_s:.6g} s "
            f"(within {BREAKDOWN_TOLERANCE:.1%})",
            field=where,
            fix=fix,
        )
    return known


__all__ = ["BREAKDOWN_TOLERANCE", "checked_breakdown"]
