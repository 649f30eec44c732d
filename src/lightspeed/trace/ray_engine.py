"""Rank files on Ray: one task per file, on a local Ray or a running cluster.

:func:`lightspeed.trace.summarize_ranks` and its siblings take
``engine="ray"``: each rank file becomes one Ray task that loads it (writing
its Parquet to the trace cache of the node it runs on, so a second analysis
there skips parsing) and computes that rank's part of the analysis, the same
function the local process pool runs. Only these partial results come back
to the caller, which reduces them exactly as the serial path does, so the
numbers are the same to the last digit.

``address`` is a running cluster's (``ray://head:10001``, or ``auto`` on a
node of it); without one a local Ray is started for the call (and stopped
after it) unless one is already running in this process. Ray is the ``ray``
extra (``pip install 'lightspeed[ray]'``); every node of a cluster needs
lightspeed installed (docs/trace.md says how).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lightspeed.errors import MissingExtraError

_LOG = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
LOCAL_OBJECT_STORE_BYTES = 256 << 20  # per-rank parts are small; keep a local Ray's footprint small


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`MissingExtraError` naming the extra."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray", "--engine ray (rank traces on Ray)") from None
    return ray


def ray_map(
    function: Callable[[T, Any], R], items: Sequence[T], *, shared: Any, address: str | None = None
) -> list[R]:
    """``[function(item, shared) for item in items]``, one Ray task per item, results in order.

    ``shared`` is put in Ray's object store once (the hardware catalog) rather than sent
    with every task.
    """
    ray = import_ray()
    started_here = False
    if not ray.is_initialized():
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,
        }
        if address is None:
            options["object_store_memory"] = LOCAL_OBJECT_STORE_BYTES
        ray.init(address=address, **options)
        started_here = True
        _LOG.info("Ray started (%s)", address or "local")
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(function)
        shared_ref = ray.put(shared)
        return list(ray.get([task.remote(item, shared_ref) for item in items]))
    finally:
        if started_here:
            ray.shutdown()
