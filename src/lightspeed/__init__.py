"""lightspeed: how fast could this go, how fast does it go, and where did the rest go.

The curated API for notebooks and training scripts, loaded lazily (``import
lightspeed`` imports none of the engines until a name is used)::

    >>> import lightspeed as ls
    >>> plan = ls.TrainingPlan(tp=8, dp=8, micro_batch_size=1, global_batch_size=64, seq_len=8192)
    >>> estimate = ls.estimate_training(model=ls.model("llama-3-70b"),
    ...                                 cluster=ls.cluster("dgx-h100", num_gpus=64), plan=plan)
    >>> 0.2 < estimate.mfu < 0.7
    True

Every package is reachable as an attribute too (``ls.trace``, ``ls.goodput``).
Layers, bottom up: ``units``/``errors``/``records``/``datafile``/``stats``/``paths``/
``environment``, ``catalog`` (hardware SOL), ``workload`` (model costs), ``sol``
(the training and inference engines), ``bench``/``goodput``/``trace``/``monitor``
(measurement), ``store`` (persistence), ``gate`` (regression gate), ``report``
(tables, plots, HTML), ``tour`` and ``cli``. See ``docs/architecture.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it (imported on first use, PEP 562)
_EXPORTS: dict[str, str] = {
    "LightspeedError": "lightspeed.errors",
    "cluster": "lightspeed.api",
    "hardware": "lightspeed.api",
    "model": "lightspeed.api",
    "InferencePlan": "lightspeed.sol",
    "ServingLoad": "lightspeed.sol",
    "TrainingPlan": "lightspeed.sol",
    "compare_systems": "lightspeed.sol",
    "estimate_inference": "lightspeed.sol",
    "estimate_training": "lightspeed.sol",
    "plan_memory": "lightspeed.sol",
    "search_inference": "lightspeed.sol",
    "search_training": "lightspeed.sol",
    "Tracker": "lightspeed.goodput",
    "build_ledger": "lightspeed.goodput",
    "read_run": "lightspeed.goodput",
    "load_trace": "lightspeed.trace",
    "open_store": "lightspeed.store",
    "MetricSamples": "lightspeed.gate",
    "compare_samples": "lightspeed.gate",
}
_PACKAGES = frozenset(
    {
        "api",
        "bench",
        "catalog",
        "gate",
        "goodput",
        "monitor",
        "report",
        "sol",
        "store",
        "tour",
        "trace",
        "workload",
    }
)

if TYPE_CHECKING:
    from lightspeed.api import cluster, hardware, model
    from lightspeed.errors import LightspeedError
    from lightspeed.gate import MetricSamples, compare_samples
    from lightspeed.goodput import Tracker, build_ledger, read_run
    from lightspeed.sol import (
        InferencePlan,
        ServingLoad,
        TrainingPlan,
        compare_systems,
        estimate_inference,
        estimate_training,
        plan_memory,
        search_inference,
        search_training,
    )
    from lightspeed.store import open_store
    from lightspeed.trace import load_trace

__all__ = [
    "InferencePlan",
    "LightspeedError",
    "MetricSamples",
    "ServingLoad",
    "Tracker",
    "TrainingPlan",
    "__version__",
    "build_ledger",
    "cluster",
    "compare_samples",
    "compare_systems",
    "estimate_inference",
    "estimate_training",
    "hardware",
    "load_trace",
    "model",
    "open_store",
    "plan_memory",
    "read_run",
    "search_inference",
    "search_training",
]


def __getattr__(name: str) -> Any:
    if name in _PACKAGES:
        return importlib.import_module(f"lightspeed.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lightspeed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_PACKAGES})
