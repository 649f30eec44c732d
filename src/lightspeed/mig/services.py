"""Services to place on shared GPUs, read from a workloads file, and what one slice of a GPU serves.

A workloads file (TOML) lists services::

    schema_version = 1
    kind = "mig-workloads"

    [[services]]
    name = "chat"
    model = "llama-3.1-8b"
    precision = "fp8"
    input_tokens = 1024
    output_tokens = 256
    requests_per_s = 4.0
    max_ttft_ms = 500
    max_tpot_ms = 50

:func:`slice_capacity` runs the inference search on one target (a MIG
slice, or a group of whole GPUs joined by NVLink) under a service's latency
bounds and returns the most requests per second it sustains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lightspeed.catalog import Cluster
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, LightspeedError, PlanDoesNotFitError, UnknownNameError
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.infer.plan import INFERENCE_PRECISIONS, InferencePlan, ServingLoad
from lightspeed.sol.infer.search import search_inference
from lightspeed.workload import ModelRegistry, TransformerSpec

MAX_SERVICES: Final = 16
MAX_TOKENS: Final = 1_000_000
MAX_RATE_PER_S: Final = 1e6
_SERVICE_KEYS: Final = {
    *("name", "model", "precision", "input_tokens", "output_tokens", "requests_per_s"),
    *(f"max_{bound}_{unit}" for bound in ("ttft", "tpot") for unit in ("s", "ms", "us")),
}


@dataclass(frozen=True)
class MigService(Record):
    """One model served at a request rate under latency bounds (seconds, requests/s)."""

    name: str
    model: str
    precision: str
    input_tokens: int
    output_tokens: int
    requests_per_s: float
    max_ttft_s: float
    max_tpot_s: float

    @property
    def load(self) -> ServingLoad:
        """The request shape (ISL/OSL) without a rate."""
        return ServingLoad(self.input_tokens, self.output_tokens)


def _service(fields: Fields) -> MigService:
    unknown = fields.unknown_keys(_SERVICE_KEYS)
    if unknown:
        raise DataFileError(
            fields.path,
            "unknown key",
            field=f"{fields.prefix}{unknown[0]}",
            fix=f"allowed: {', '.join(sorted(_SERVICE_KEYS))}",
        )
    tokens = {key: fields.integer(key, minimum=1) for key in ("input_tokens", "output_tokens")}
    rate = fields.number("requests_per_s")
    for key, value in (*tokens.items(), ("requests_per_s", rate)):
        _check_at_most(fields, key, value)
    name = fields.name("name")
    precision = fields.choice("precision", INFERENCE_PRECISIONS, f"precision of service {name!r}", "bf16")
    return MigService(
        name=name,
        model=fields.name("model"),
        precision=precision,
        input_tokens=tokens["input_tokens"],
        output_tokens=tokens["output_tokens"],
        requests_per_s=rate,
        max_ttft_s=fields.quantity("max_ttft", "seconds"),
        max_tpot_s=fields.quantity("max_tpot", "seconds"),
    )


def _check_at_most(fields: Fields, key: str, value: float) -> None:
    """A token count above :data:`MAX_TOKENS` or a rate above :data:`MAX_RATE_PER_S` is refused with
    the limit and what to write instead."""
    rate = key == "requests_per_s"
    limit = MAX_RATE_PER_S if rate else MAX_TOKENS
    if value > limit:
        kind = "number above 0" if rate else "whole number >= 1"
        raise DataFileError(
            fields.path,
            f"implausibly large (the limit is {limit:,.0f})",
            field=f"{fields.prefix}{key}",
            value=value,
            fix=f"write {key} = <{kind}, at most {limit:,.0f}>",
        )


def read_workloads(path: Path, models: ModelRegistry | None = None) -> tuple[MigService, ...]:
    """The services of a ``kind = "mig-workloads"`` file (see the module docstring).

    With ``models``, a service whose model the registry does not know is refused naming the
    file, the service and the closest known models.
    """
    fields = Fields(str(path), load_toml(path, what="MIG workloads file (TOML)"))
    if fields.data.get("kind") != "mig-workloads":
        raise DataFileError(path, "not a workloads file", field="kind", fix='write kind = "mig-workloads"')
    fields.schema_version({1}, default=1)
    entries = fields.array_of_tables("services")
    if not entries or len(entries) > MAX_SERVICES:
        raise DataFileError(
            path,
            f"expected 1 to {MAX_SERVICES} services, found {len(entries)}",
            field="services",
            fix="add [[services]] tables with name, model, rate and bounds",
        )
    services = tuple(_service(entry) for entry in entries)
    names = [service.name for service in services]
    if len(set(names)) != len(names):
        raise DataFileError(path, "two services share a name", field="services", value=names)
    if models is not None:
        for index, service in enumerate(services):
            _check_model(path, index, service, models)
    return services


def _check_model(path: Path, index: int, service: MigService, models: ModelRegistry) -> None:
    try:
        models.get(service.model)
    except UnknownNameError as error:
        listing = ", ".join(error.closest) or "none close"
        raise DataFileError(
            path,
            f"service {service.name!r}: unknown model {service.model!r} (closest: {listing})",
            field=f"services[{index}].model",
            fix="name a model that 'lightspeed model list' shows, or add one with --catalog",
        ) from None


@dataclass(frozen=True)
class Capacity(Record):
    """What one target sustains for one service under its bounds.

    ``target`` is a slice (``h100-sxm/3g.40gb``) or whole GPUs (``2 x h100-sxm``);
    ``requests_per_s`` is 0 with ``reason`` when the model does not fit or no
    batch meets the bounds (``does_not_fit`` tells the first: no split of the
    model fits the target's memory). TTFT/TPOT are at that most-loaded feasible point.
    """

    service: str
    target: str
    num_gpus: int
    requests_per_s: float
    ttft_s: float | None
    tpot_s: float | None
    plan: str
    weights_bytes: float | None  # one replica's weights, all its GPUs together
    reason: str = ""
    deployment: InferencePlan | None = None
    does_not_fit: bool = False

    @property
    def serves(self) -> bool:
        """Whether this target can serve the service at all."""
        return self.requests_per_s > 0

    def instances_for(self, requests_per_s: float) -> int | None:
        """Copies of this target needed for ``requests_per_s`` (``None`` if it serves nothing): at
        least one for any positive rate, however small.

        >>> Capacity("chat", "h100-sxm/1g.20gb", 1, 2.0, None, None, "", None).instances_for(1e-300)
        1
        """
        if not self.serves:
            return None
        return max(1, math.ceil(requests_per_s / self.requests_per_s - 1e-9))


def slice_capacity(
    *,
    service: MigService,
    model: TransformerSpec,
    cluster: Cluster,
    target: str,
    num_gpus: int = 1,
    bound_scale: float = 1.0,
    efficiency: EfficiencyModel | None = None,
) -> Capacity:
    """Most requests/s ``num_gpus`` GPUs of ``cluster`` serve for ``service`` under its bounds.

    ``bound_scale`` tightens both bounds (time-sharing: a service that runs a
    fraction f of the time sees its latencies stretched by 1/f).

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.workload import load_models
    >>> chat = MigService("chat", "llama-3-8b", "fp8", 1024, 256, 4.0, 0.5, 0.05)
    >>> part = load_catalog().resolve_cluster("h100-sxm/3g.40gb")
    >>> capacity = slice_capacity(service=chat, model=load_models().get("llama-3-8b"),
    ...     cluster=part, target="h100-sxm/3g.40gb")
    >>> capacity.serves and capacity.tpot_s <= 0.05
    True
    """
    try:
        result = search_inference(
            model=model,
            cluster=cluster,
            load=service.load,
            precision=service.precision,
            max_ttft_s=service.max_ttft_s * bound_scale,
            max_tpot_s=service.max_tpot_s * bound_scale,
            efficiency=efficiency,
            num_gpus=num_gpus,
        )
    except LightspeedError as error:
        return Capacity(
            service.name,
            target,
            num_gpus,
            0.0,
            None,
            None,
            "",
            None,
            reason=str(error),
            does_not_fit=isinstance(error, PlanDoesNotFitError),
        )
    best = result.best
    return Capacity(
        service=service.name,
        target=target,
        num_gpus=num_gpus,
        requests_per_s=best.requests_per_s,
        ttft_s=best.ttft_s,
        tpot_s=best.tpot_s,
        plan=best.plan.describe(),
        weights_bytes=best.memory_bytes.get("weights", 0.0) * best.plan.tp * best.plan.pp,
        deployment=best.plan,
    )
