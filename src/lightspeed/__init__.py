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

import logging
from typing import TYPE_CHECKING

from lightspeed.lazy import attach

__version__ = "0.1.0"

# a library logs, it never prints: messages go nowhere until the application (or the CLI) configures
logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from lightspeed.api import cluster, hardware, model
    from lightspeed.errors import LightspeedError
    from lightspeed.gate import MetricSamples, compare_samples
    from lightspeed.goodput import Tracker, build_ledger, read_run
    from lightspeed.jobs import run
    from lightspeed.sol import (
        InferencePlan,
        ServingConfig,
        ServingLoad,
        TrainingConfig,
        TrainingPlan,
        compare_systems,
        estimate_inference,
        estimate_training,
        plan_memory,
        search_inference,
        search_training,
    )
    from lightspeed.sol.serve import (
        ArrivalProcess,
        LengthDistribution,
        ServiceLevel,
        ServingWorkload,
        simulate,
    )
    from lightspeed.store import open_store
    from lightspeed.trace import load_trace

__all__ = [
    "ArrivalProcess",
    "InferencePlan",
    "LengthDistribution",
    "LightspeedError",
    "MetricSamples",
    "ServiceLevel",
    "ServingConfig",
    "ServingLoad",
    "ServingWorkload",
    "Tracker",
    "TrainingConfig",
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
    "run",
    "search_inference",
    "search_training",
    "simulate",
]


def _public_dir() -> list[str]:
    """``dir(lightspeed)``: the curated names and the subpackages, not this module's own imports
    (``logging``, ``attach``, ``TYPE_CHECKING``)."""
    import pkgutil

    subpackages = (module.name for module in pkgutil.iter_modules(__path__) if module.ispkg)
    return sorted({*__all__, *(name for name in subpackages if not name.startswith("_"))})


if not TYPE_CHECKING:
    __getattr__ = attach(__name__, __file__)[0]
    __dir__ = _public_dir
