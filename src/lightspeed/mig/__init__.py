"""MIG: serve several models on the fewest GPUs, sliced, whole or time-shared.

One home for MIG planning: :mod:`~lightspeed.mig.services` (the services to
place, from a workloads file, and what one slice serves),
:mod:`~lightspeed.mig.layout` (valid per-GPU layouts, packing, the
``nvidia-smi mig`` commands), :mod:`~lightspeed.mig.planner` (the plan and its
alternatives) and :mod:`~lightspeed.mig.device` (the layout a machine has now,
through :mod:`lightspeed.nvml` or saved ``nvidia-smi mig -lgi`` text). The MIG
profiles themselves are hardware data: a slice is an accelerator of the
catalog (:mod:`lightspeed.catalog.mig_profiles`). Rendering is in
:mod:`lightspeed.report.mig`, the command group in :mod:`lightspeed.cli.mig`.

>>> from lightspeed.catalog import load_mig_geometries
>>> from lightspeed.mig import gpu_layouts
>>> max(len(layout) for layout in gpu_layouts(load_mig_geometries()["h100-sxm"]))  # seven 1g instances
7
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.mig.device import GpuInstance, parse_lgi, read_mig_layout
    from lightspeed.mig.layout import (
        MigPlacement,
        check_current_layout,
        check_layout,
        gpu_layouts,
        mig_commands,
    )
    from lightspeed.mig.planner import MigPlan, plan_mig
    from lightspeed.mig.services import MigService, read_workloads

__all__ = [
    "GpuInstance",
    "MigPlacement",
    "MigPlan",
    "MigService",
    "check_current_layout",
    "check_layout",
    "gpu_layouts",
    "mig_commands",
    "parse_lgi",
    "plan_mig",
    "read_mig_layout",
    "read_workloads",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
