"""Hardware variants: a catalog record with a different memory size or a power cap.

Deployed GPUs are not always the datasheet part: a site caps its H100s at 600 W,
CINECA's A100s carry 64 GB. A variant is what an ``extends`` file produces
(``docs/catalog.md``, ``examples/catalog/h100-600w.toml``)::

    schema_version = 1
    kind = "accelerator"
    name = "h100-sxm-600w"
    extends = "h100-sxm"
    [power]
    limit_w = 600.0

:func:`derive_variant` builds the same record in code, so that a published row
saying ``A100 SXM4 64GB @300W`` is read without a file: memory as stated
(HBM stacks are sized in GiB), the driver keeping the same share as on the
base part, and the cap sustaining :attr:`Accelerator.clock_fraction` of the clock.
The memory bandwidth stays the base part's (no row text gives one): a part with
another memory technology, such as Meta's Grand Teton H100 (96 GB of HBM2e at
2.4 TB/s, ``h100-sxm-96gb-hbm2e``), is a catalog record of its own.
"""

from __future__ import annotations

from dataclasses import replace

from lightspeed.catalog.records import Accelerator, System


def variant_name(base: Accelerator, *, memory_gib: float | None, power_limit_w: float | None) -> str:
    """``h100-sxm-96gb-500w``: the base name with what differs.

    >>> from lightspeed.catalog import load_catalog
    >>> variant_name(load_catalog().accelerator("h100"), memory_gib=96, power_limit_w=500)
    'h100-sxm-96gb-500w'
    """
    parts = [base.name]
    if memory_gib is not None:
        parts.append(f"{memory_gib:g}gb")
    if power_limit_w is not None:
        parts.append(f"{power_limit_w:g}w")
    return "-".join(parts)


def derive_variant(
    base: Accelerator, *, memory_gib: float | None = None, power_limit_w: float | None = None
) -> Accelerator:
    """``base`` with ``memory_gib`` of HBM and/or capped at ``power_limit_w`` (see the module docs).

    >>> from lightspeed.catalog import load_catalog
    >>> part = derive_variant(load_catalog().accelerator("h100-sxm"), memory_gib=96, power_limit_w=500)
    >>> round(part.memory_device_bytes / 2**30, 1), round(part.clock_fraction, 3)
    (95.6, 0.894)
    """
    changes: dict[str, object] = {
        "name": variant_name(base, memory_gib=memory_gib, power_limit_w=power_limit_w),
        "aliases": (),
    }
    notes = []
    if memory_gib is not None:
        nominal = memory_gib * 2.0**30
        kept = base.memory_device_bytes / base.memory_nominal_bytes
        changes.update(
            memory_nominal_bytes=nominal,
            memory_usable_bytes=nominal,
            memory_reported_bytes=nominal * min(kept, 1.0),
        )
        notes.append(f"{memory_gib:g} GB of HBM")
    if power_limit_w is not None:
        changes["power_limit_w"] = power_limit_w
        notes.append(f"capped at {power_limit_w:g} W")
    changes["display_name"] = f"{base.display_name} ({', '.join(notes)})" if notes else base.display_name
    return replace(base, **changes)  # type: ignore[arg-type]


def system_with(system: System, accelerator: Accelerator) -> System:
    """``system`` built from ``accelerator`` instead of its own (a variant of it)."""
    if accelerator.name == system.accelerator.name:
        return system
    return replace(
        system, accelerator=accelerator, display_name=f"{system.display_name} with {accelerator.name}"
    )


__all__ = ["derive_variant", "system_with", "variant_name"]
