"""Prices and site figures: user inputs, never market facts.

A prices file (``examples/prices.toml`` documents one) holds what the user pays
or assumes: electricity per kWh, PUE for air- and liquid-cooled rooms, years of
depreciation, utilisation, other yearly costs as a share of the purchase price,
cloud prices per GPU-hour by accelerator and purchase prices per system. Every
figure computed from them carries the inputs it used (``inputs`` in each result).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lightspeed.cost.pue import GIVEN_PUE_SOURCE, SitePue, default_pue, site_pue
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, UnknownNameError, UserInputError, closest_names
from lightspeed.records import Record

if TYPE_CHECKING:
    from lightspeed.catalog import Catalog

PRICES_KIND: Final = "prices"
HOURS_PER_YEAR: Final = 8766.0  # 365.25 days
JOULES_PER_KWH: Final = 3.6e6
MAX_PRICE_USD: Final = 1e12
MAX_USD_PER_KWH: Final = 100.0


def _check(name: str, value: float, low: float, high: float, fix: str, *, low_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserInputError(f"{name} = {value!r} is not a finite number; {fix}")
    if math.copysign(1.0, value) < 0:  # -0 is a typo for a price, not a price
        raise UserInputError(f"{name} = {value:g} is negative; {fix}")
    if not low <= value <= high or (low_open and value == low):
        bounds = f"({low:g}, {high:g}]" if low_open else f"[{low:g}, {high:g}]"
        raise UserInputError(f"{name} = {value:g} is outside {bounds}; {fix}")


@dataclass(frozen=True)
class Prices(Record):
    """What electricity, rooms, cloud hours and systems cost (user inputs, US dollars).

    ``pue_air`` and ``pue_liquid``: facility power / IT power for air- and
    liquid-cooled systems (>= 1); ``None`` (not given) is the sourced industry
    average every cost command assumes (:func:`~lightspeed.cost.pue.default_pue`).
    ``utilisation``: share of the year the hardware works (1.0 = 24/7).
    ``other_opex_share_per_year``: yearly costs other than electricity (support,
    network, space, staff) as a share of the purchase price.

    >>> Prices(electricity_usd_per_kwh=0.1).pue("air")
    1.56
    >>> Prices(electricity_usd_per_kwh=0.1, pue_air=0.9)
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: pue_air = 0.9 is outside [1, 5]; PUE is facility / IT power, at least 1
    """

    electricity_usd_per_kwh: float
    pue_air: float | None = None
    pue_liquid: float | None = None
    depreciation_years: float = 4.0
    utilisation: float = 1.0
    other_opex_share_per_year: float = 0.0
    cloud_usd_per_gpu_hour: dict[str, float] = field(default_factory=dict)
    system_purchase_usd: dict[str, float] = field(default_factory=dict)
    path: str = ""

    def __post_init__(self) -> None:
        _check(
            "electricity_usd_per_kwh",
            self.electricity_usd_per_kwh,
            0.0,
            MAX_USD_PER_KWH,
            f"give 0 (free, e.g. on-site power) or a price above 0 up to {MAX_USD_PER_KWH:g} USD per kWh",
        )
        for name in ("pue_air", "pue_liquid"):
            if getattr(self, name) is not None:
                _check(name, getattr(self, name), 1.0, 5.0, "PUE is facility / IT power, at least 1")
        _check(
            "depreciation_years",
            self.depreciation_years,
            0.1,
            50.0,
            "give years of straight-line depreciation",
        )
        _check("utilisation", self.utilisation, 1e-6, 1.0, "give the working share of the year, 1.0 = 24/7")
        _check(
            "other_opex_share_per_year", self.other_opex_share_per_year, 0.0, 10.0, "give a share such as 0.1"
        )
        for table in ("cloud_usd_per_gpu_hour", "system_purchase_usd"):
            for name, price in getattr(self, table).items():
                _check(
                    f"{table}.{name}", price, 0.0, MAX_PRICE_USD, "give a price in USD above 0", low_open=True
                )

    def pue(self, cooling: str) -> float:
        """The PUE for a system cooled by ``cooling`` (``air`` or ``liquid``)."""
        return pue_for(cooling, prices=self).value

    def site_pue(self, cooling: str) -> SitePue:
        """:meth:`pue` and where it comes from (this file's key, or the sourced default)."""
        return pue_for(cooling, prices=self)

    def gpu_hour_usd(self, accelerator: str) -> float:
        """Cloud price of one GPU-hour of ``accelerator``; a missing one says how to add it."""
        return _lookup(self, "cloud_usd_per_gpu_hour", accelerator)

    def with_cloud_price(self, accelerator: str, usd_per_gpu_hour: float) -> Prices:
        """These prices with ``accelerator``'s cloud price replaced (an explicit rate, such as
        ``--usd-per-gpu-hour``, wins over the file's everywhere a run is priced).

        >>> Prices(electricity_usd_per_kwh=0.1).with_cloud_price("h800-sxm", 3.0).gpu_hour_usd("h800-sxm")
        3.0
        """
        table = {**self.cloud_usd_per_gpu_hour, accelerator: usd_per_gpu_hour}
        return replace(self, cloud_usd_per_gpu_hour=table)

    def missing_prices(self, *, accelerator: str = "", system: str = "") -> tuple[str, ...]:
        """What a priced figure cannot show because these prices lack a price, with how to add it:
        the cloud price of ``accelerator`` and the purchase price of ``system`` (each if named).

        >>> Prices(electricity_usd_per_kwh=0.1).missing_prices(system="dgx-a100")[0][:48]
        'owned cost (TCO) not shown: the prices have no s'
        """
        notes = []
        if accelerator and accelerator not in self.cloud_usd_per_gpu_hour:
            notes.append(
                "cloud cost not shown: " + missing_price(self, "cloud_usd_per_gpu_hour", accelerator)
            )
        if system and system not in self.system_purchase_usd:
            notes.append("owned cost (TCO) not shown: " + missing_price(self, "system_purchase_usd", system))
        return tuple(notes)

    def purchase_usd(self, system: str) -> float:
        """Purchase price of one ``system`` (a node, or a rack for rack-scale systems)."""
        return _lookup(self, "system_purchase_usd", system)


def pue_for(
    cooling: str,
    *,
    prices: Prices | None = None,
    pue: float | None = None,
    pue_source: str = GIVEN_PUE_SOURCE,
) -> SitePue:
    """The PUE of a site cooled by ``cooling`` and where it comes from: ``pue`` (from
    ``pue_source``), else the prices' ``pue_air``/``pue_liquid``, else the sourced default
    (one home for every cost command: :func:`~lightspeed.cost.pue.default_pue`).

    >>> pue_for("liquid").value, pue_for("liquid", pue=1.2).value
    (1.56, 1.2)
    """
    if pue is not None:
        return site_pue(pue, pue_source)
    if prices is not None:
        key = "pue_liquid" if cooling == "liquid" else "pue_air"
        value = getattr(prices, key)
        if value is not None:
            return SitePue(value=value, source=f"{key} in {prices.path or 'the prices'}")
    return default_pue()


def missing_price(prices: Prices, key: str, name: str) -> str:
    """The one wording for a price the file lacks, with how to add it (an error's text and a
    note's alike): ``examples/prices.toml has no system_purchase_usd.dgx-a100 (has: ...); add
    dgx-a100 = <USD> under [system_purchase_usd]``. ``key``: ``cloud_usd_per_gpu_hour`` or
    ``system_purchase_usd``.

    >>> missing_price(Prices(electricity_usd_per_kwh=0.1), "system_purchase_usd", "dgx-a100")[:62]
    'the prices have no system_purchase_usd.dgx-a100 (has: none); a'
    """
    table: dict[str, float] = getattr(prices, key)
    where = f"{prices.path} has" if prices.path else "the prices have"
    known = ", ".join(sorted(table)) or "none"
    return f"{where} no {key}.{name} (has: {known}); add {name} = <USD> under [{key}]"


def _lookup(prices: Prices, key: str, name: str) -> float:
    table: dict[str, float] = getattr(prices, key)
    if name not in table:
        raise UserInputError(missing_price(prices, key, name))
    return table[name]


_TOP_KEYS: Final = {
    "schema_version",
    "kind",
    "currency",
    "note",
    "electricity_usd_per_kwh",
    "pue_air",
    "pue_liquid",
    "depreciation_years",
    "utilisation",
    "other_opex_share_per_year",
    "cloud_usd_per_gpu_hour",
    "system_purchase_usd",
}


def load_prices(path: Path, *, catalog: Catalog | None = None) -> Prices:
    """Read a prices file (see ``examples/prices.toml``); a bad figure is one line naming it.

    The names under ``[cloud_usd_per_gpu_hour]`` and ``[system_purchase_usd]``
    must be ``catalog``'s accelerators and systems (default: the shipped
    catalog), by name or alias (``h100``, ``dgxh100``), and are kept by the catalog's name
    (``h100-sxm``, ``dgx-h100``): a typo is refused with the closest names, never priced as
    nothing, and two names of one record are refused naming both.

    >>> from pathlib import Path
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "p.toml").write_text('kind = "prices"\\nelectricity_usd_per_kwh = 0.12\\n')
    >>> load_prices(folder / "p.toml").electricity_usd_per_kwh
    0.12
    """
    fields = Fields(str(path), load_toml(path, what="prices file (TOML)"))
    if fields.string("kind", PRICES_KIND) != PRICES_KIND:
        raise DataFileError(path, "not a prices file", field="kind", fix=f'write kind = "{PRICES_KIND}"')
    fields.schema_version({1}, default=1)
    if fields.string("currency", "USD") != "USD":
        raise DataFileError(path, "only USD is supported", field="currency", fix='write currency = "USD"')
    unknown = fields.unknown_keys(_TOP_KEYS)
    if unknown:
        raise DataFileError(
            path, "unknown key", field=unknown[0], fix=f"use one of {', '.join(sorted(_TOP_KEYS))}"
        )
    defaults = Prices(electricity_usd_per_kwh=0.0)
    values = {
        key: fields.number(key, default=getattr(defaults, key), positive=False)
        for key in ("depreciation_years", "utilisation", "other_opex_share_per_year")
    }
    pue_air, pue_liquid = (  # not given: the sourced default, and the output says so where it is used
        fields.number(key, positive=False) if key in fields.data else None
        for key in ("pue_air", "pue_liquid")
    )
    if catalog is None:
        from lightspeed.catalog import load_catalog

        catalog = load_catalog()
    cloud = _priced_names(path, fields, "cloud_usd_per_gpu_hour", "accelerator", catalog)
    purchase = _priced_names(path, fields, "system_purchase_usd", "system", catalog)
    try:
        return Prices(
            # 0 is free electricity (on-site power); Prices checks the range, as for the library
            electricity_usd_per_kwh=fields.number("electricity_usd_per_kwh", positive=False),
            cloud_usd_per_gpu_hour=cloud,
            system_purchase_usd=purchase,
            path=str(path),
            pue_air=pue_air,
            pue_liquid=pue_liquid,
            **values,
        )
    except UserInputError as error:
        raise DataFileError(path, str(error)) from None


def _priced_names(path: Path, fields: Fields, key: str, kind: str, catalog: Catalog) -> dict[str, float]:
    """The prices under ``[key]`` by ``catalog``'s canonical ``kind`` name: an alias (``h100``,
    ``dgxh100``) is the record it names, as everywhere else; a name that is no record is refused
    with the closest names (a typo would price nothing, silently), and so are two names of one
    record (which price would count?)."""
    inner = fields.table(key, required=False)
    if inner is None:
        return {}
    found: dict[str, float] = {}
    written: dict[str, str] = {}  # canonical name -> the name the file wrote
    for name in inner.data:
        canonical = _canonical(path, key, kind, name, catalog)
        if canonical in written:
            raise DataFileError(
                path,
                f"{written[canonical]!r} and {name!r} are both {kind} {canonical!r}",
                field=f"{key}.{name}",
                fix=f"keep one price for {canonical} under [{key}]",
            )
        written[canonical] = name
        found[canonical] = inner.number(name)  # prices: above 0
    return found


def _canonical(path: Path, key: str, kind: str, name: str, catalog: Catalog) -> str:
    """The catalog name of the ``kind`` record ``name`` names (its name or an alias)."""
    table = catalog.accelerators if kind == "accelerator" else catalog.systems
    lookup = catalog.accelerator if kind == "accelerator" else catalog.system
    try:
        canonical = lookup(name).name
    except UnknownNameError:
        canonical = ""
    if canonical in table:  # a MIG slice (h100-sxm/3g.40gb) is no priced accelerator
        return canonical
    names = sorted(table)
    closest = closest_names(name, [*names, *_aliases(table)]) or names[:8]
    raise DataFileError(
        path,
        f"unknown {kind} {name!r}",
        field=f"{key}.{name}",
        fix=f"use a catalog {kind} name or alias (closest: {', '.join(closest)}; 'lightspeed hw list')",
    )


def _aliases(table: Mapping[str, Any]) -> list[str]:
    return [alias for record in table.values() for alias in record.aliases]


__all__ = ["HOURS_PER_YEAR", "JOULES_PER_KWH", "Prices", "load_prices", "missing_price", "pue_for"]
