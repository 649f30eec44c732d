"""Microbenchmarks of this machine against its speed of light.

Suites (``gemm``, ``membw``, ``copy``, ``launch``, ``collectives``) run through
PyTorch (the ``bench`` extra), imported only when a suite runs; each returns
:class:`BenchResult` records with the SOL beside every value. The environment
fingerprint needs no extra.

>>> from lightspeed.bench import resolve_device, run_membw, DeviceSol
>>> results = run_membw(device=resolve_device("cpu"), sol=DeviceSol.unknown("doctest"),
...                     array_bytes=2**20, quick=True)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.bench.collectives import (
        COLLECTIVES,
        CollectiveConfig,
        assemble_results,
        busbw_factor,
        collective_sizes,
        default_config,
        measure_rank,
    )
    from lightspeed.bench.copy import run_copy
    from lightspeed.bench.gemm import (
        GEMM_DTYPES,
        GemmShape,
        best_per_dtype,
        model_shapes,
        run_gemm,
        supported_dtypes,
        sweep_shapes,
    )
    from lightspeed.bench.launch import run_launch
    from lightspeed.bench.membw import STREAM_KERNELS, run_membw
    from lightspeed.bench.results import BenchResult, Stats, make_result, size_fields
    from lightspeed.bench.runtime import BenchDevice, import_torch, resolve_device
    from lightspeed.bench.sol import DeviceSol, device_sol, sol_from_accelerator
    from lightspeed.bench.world import (
        WorldConnectionError,
        run_collectives,
        run_collectives_in_world,
        torchrun_rank,
    )
    from lightspeed.environment import EnvironmentFingerprint, environment_fingerprint


SUITES = ("gemm", "membw", "copy", "launch", "collectives")

__all__ = [
    "COLLECTIVES",
    "GEMM_DTYPES",
    "STREAM_KERNELS",
    "SUITES",
    "BenchDevice",
    "BenchResult",
    "CollectiveConfig",
    "DeviceSol",
    "EnvironmentFingerprint",
    "GemmShape",
    "Stats",
    "WorldConnectionError",
    "assemble_results",
    "best_per_dtype",
    "busbw_factor",
    "collective_sizes",
    "default_config",
    "device_sol",
    "environment_fingerprint",
    "import_torch",
    "make_result",
    "measure_rank",
    "model_shapes",
    "resolve_device",
    "run_collectives",
    "run_collectives_in_world",
    "run_copy",
    "run_gemm",
    "run_launch",
    "run_membw",
    "size_fields",
    "sol_from_accelerator",
    "supported_dtypes",
    "sweep_shapes",
    "torchrun_rank",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
