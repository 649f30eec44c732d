"""The PUE a site is assumed to have when the user gives none: a sourced industry average.

Facility power is IT power x PUE. ``lightspeed cost cluster`` used to multiply by 1
when no prices file was given, as if cooling and power conversion were free; the
default is now the industry average of the Uptime Institute's 2024 survey, shown
with its source beside every figure it changes (``data/pue.toml``). ``--pue`` or
a prices file (``pue_air``, ``pue_liquid``) replace it with the site's own.

>>> default_pue().value
1.56
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Final

from lightspeed.datafile import Fields, load_toml, parse_sources
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.paths import package_data
from lightspeed.records import Record

PUE_FILE: Final = package_data("cost", "data", "pue.toml")
MIN_PUE: Final = 1.0
MAX_PUE: Final = 5.0
# Where a PUE the user gives comes from: one spelling in every cost command and result (the
# option's name; the library's ``pue=`` keywords are that option).
GIVEN_PUE_SOURCE: Final = "--pue"


@dataclass(frozen=True)
class SitePue(Record):
    """A PUE and where it comes from (a citation, a prices file, or the user's ``--pue``)."""

    value: float
    source: str
    note: str = ""


@functools.cache
def default_pue() -> SitePue:
    """The industry-average PUE lightspeed assumes without the user's own (sourced, ``data/pue.toml``)."""
    fields = Fields(str(PUE_FILE), load_toml(PUE_FILE))
    sources = parse_sources(fields)
    table = fields.table("pue")
    assert table is not None, "required table"
    value = table.number("value")
    if not MIN_PUE <= value <= MAX_PUE:
        raise DataFileError(
            PUE_FILE, "PUE out of range", field="pue.value", value=value, fix="a PUE is 1 to 5"
        )
    key = table.check_source("source", sources)
    return SitePue(value=value, source=sources[key].citation, note=table.string("note", ""))


def site_pue(pue: float | None, source: str = GIVEN_PUE_SOURCE) -> SitePue:
    """``pue`` (from ``source``), checked to be a PUE; ``None``: :func:`default_pue`.

    >>> site_pue(1.2, "--pue").value, site_pue(None).value
    (1.2, 1.56)
    """
    if pue is None:
        return default_pue()
    if not math.isfinite(pue) or not MIN_PUE <= pue <= MAX_PUE:
        raise UserInputError(f"PUE {pue!r} is not in [1, 5]; PUE is facility power / IT power")
    return SitePue(value=pue, source=source)


__all__ = ["GIVEN_PUE_SOURCE", "MAX_PUE", "MIN_PUE", "SitePue", "default_pue", "site_pue"]
