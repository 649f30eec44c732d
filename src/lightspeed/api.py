"""Name lookups for the curated API: ``lightspeed.hardware("h100-sxm")``, ``lightspeed.model(...)``,
``lightspeed.cluster(...)``.

The shipped catalog and model files are read once per process, plus the
user's own files named by ``LIGHTSPEED_CATALOG`` (paths separated by ``:``),
as the CLI's ``--catalog`` does.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path

from lightspeed.catalog import Accelerator, Catalog, Cluster, Cpu, Link, System, load_catalog
from lightspeed.catalog.clusters import spread_over_domains
from lightspeed.errors import PlanMismatchError
from lightspeed.limits import check_kind
from lightspeed.sol.train.plan import check_cluster_gpus
from lightspeed.workload import ModelRegistry, TransformerSpec, load_models

CATALOG_ENVIRONMENT_VARIABLE = "LIGHTSPEED_CATALOG"


def _user_paths() -> tuple[Path, ...]:
    value = os.environ.get(CATALOG_ENVIRONMENT_VARIABLE, "")
    return tuple(Path(part) for part in value.split(os.pathsep) if part)


@functools.cache
def _catalog(paths: tuple[Path, ...]) -> Catalog:
    return load_catalog(paths)


@functools.cache
def _models(paths: tuple[Path, ...]) -> ModelRegistry:
    return load_models(paths)


def default_catalog() -> Catalog:
    """The hardware catalog: shipped records plus ``$LIGHTSPEED_CATALOG`` files (cached)."""
    return _catalog(_user_paths())


def default_models() -> ModelRegistry:
    """The model registry: shipped models plus ``$LIGHTSPEED_CATALOG`` files (cached)."""
    return _models(_user_paths())


def hardware(name: str) -> Accelerator | Cpu | Link | System:
    """One catalog record by name or alias: an accelerator, CPU, link or system.

    >>> hardware("h100-sxm").memory_bandwidth_bytes_per_s / 1e12
    3.35
    """
    return default_catalog().any_record(name)


def model(name: str) -> TransformerSpec:
    """One model architecture by name or Hugging Face alias.

    >>> model("llama-3-70b").num_layers
    80
    """
    check_kind("a model name", name, str, "such as 'llama-3-70b'; see 'lightspeed model list'", what="text")
    return default_models().get(name)


def cluster(system: str, *, num_gpus: int | None = None) -> Cluster:
    """A cluster from a system name, a spec such as ``9xdgx-h100@ib-ndr`` or a cluster file;
    ``num_gpus`` picks enough nodes of a system, or part of one node (its GPUs, their NVLink
    domain and their share of its NICs, as ``--gpus`` takes part of a node); a count that is
    neither part of one node nor whole nodes is refused, as ``--gpus`` is.

    >>> cluster("dgx-h100", num_gpus=64).num_nodes
    8
    >>> cluster("dgx-h100", num_gpus=4).num_accelerators
    4
    """
    found = default_catalog().resolve_cluster(system, num_accelerators=num_gpus)
    if num_gpus is None:
        return found
    try:
        check_cluster_gpus(num_gpus, found)  # 12 GPUs of dgx-h100 are no whole number of nodes
    except PlanMismatchError as error:
        raise _in_keywords(error) from None
    return _part_of_one_node(found, num_gpus) if num_gpus < found.num_accelerators else found


def _part_of_one_node(whole: Cluster, num_gpus: int) -> Cluster:
    """``num_gpus`` of a one-node cluster, as the catalog takes part of a rack
    (:func:`~lightspeed.catalog.clusters.spread_over_domains`): the engines then see the GPUs a
    job runs on, as the CLI's ``--gpus`` gives them (``4 of its 8 GPUs used``)."""
    used, _ = spread_over_domains(whole.system, num_gpus)
    if whole.fabric == whole.system.scale_out:
        return replace(whole, system=used, fabric=used.scale_out)
    # a fabric the spec or file names: the used GPUs' share of its NICs, as of the system's own
    named, _ = spread_over_domains(replace(whole.system, scale_out=whole.fabric), num_gpus)
    return replace(whole, system=used, fabric=named.scale_out)


# the settings a library refusal names where this module's keywords spell them otherwise
_KEYWORDS = {"gpus": "num_gpus"}


def _in_keywords(error: PlanMismatchError) -> PlanMismatchError:
    """``error`` naming the matching count by :func:`cluster`'s keyword (``num_gpus=16``)."""
    plan = error.nearest_plan
    return PlanMismatchError(
        error.problem,
        nearest_plan=None
        if plan is None
        else {_KEYWORDS.get(key, key): value for key, value in plan.items()},
        no_match_hint=error.no_match_hint,
    )


__all__ = ["cluster", "default_catalog", "default_models", "hardware", "model"]
