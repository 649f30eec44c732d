"""Memory rules per software stack: what a framework keeps per parameter under each ZeRO stage.

A stack's ``memory_rules`` (``sol/data/stacks.toml``) names one family of rules:
``megatron`` (Megatron-Core: DDP, the distributed optimizer, Megatron-FSDP),
``deepspeed`` (ZeRO stages 1-3 and its pipeline engine) or ``fsdp`` (PyTorch
FSDP/FSDP2 as torchtitan and llm-foundry drive it). For each ZeRO stage, with
and without pipeline parallelism, a :class:`ShardingRule` says where each model
state lives (whole on every data-parallel rank, sharded over them, gathered a
layer at a time, or absent), how often gradients are reduced and parameters
gathered, or why the framework refuses the combination.

The model states, in bytes per parameter: ``weights`` the 16-bit (or FP8) compute
copy, ``gradients`` the main gradients (the plan's ``grad_reduce_precision``),
``optimizer`` the fp32 master weights and Adam moments (the stack's
``optimizer_bytes_per_param``). Megatron-Core's distributed optimizer, for
example, keeps weights and gradients whole and shards the optimizer: with bf16
weights and fp32 gradients, ``2 + 4 + 12/d`` bytes per parameter over ``d`` ranks.

>>> rules = load_memory_rules("megatron")
>>> rules.rule(1, pipeline=True).name
'distributed optimizer'
>>> rules.rule(1, pipeline=True).bytes_per_parameter(
...     weight_bytes=2.0, grad_bytes=4.0, optimizer_bytes=12.0, num_shards=8)
7.5
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, UnknownNameError
from lightspeed.paths import package_data
from lightspeed.records import Record

ZERO_STAGES: Final = (0, 1, 2, 3)
WEIGHT_PLACES: Final = ("whole", "sharded", "gathered", "none")
STATE_PLACES: Final = ("whole", "sharded")
FREQUENCIES: Final = ("none", "step", "micro-batch")
COLLECTIVES: Final = ("all-reduce", "reduce-scatter")
# Layers whose 16-bit weights are gathered at once when they rest sharded: the one computing and
# the one prefetched behind it (FSDP's and ZeRO-3's prefetch of the next layer).
GATHERED_LAYERS: Final = 2.0


@dataclass(frozen=True)
class ShardingRule(Record):
    """Where each model state lives under one ZeRO stage of one framework (with or without PP).

    ``weights``: ``whole`` (every data-parallel rank keeps the 16-bit copy), ``sharded``
    (a 16-bit shard, gathered a layer at a time), ``gathered`` (no 16-bit copy at rest: the
    fp32 shard is gathered to 16 bits a layer at a time) or ``none`` (no 16-bit copy:
    autocast casts per operation). ``gradients`` and ``optimizer``: ``whole`` or ``sharded``.
    ``gradient_reduce`` and ``parameter_gather``: how often the data-parallel collectives
    run (``step``: once per optimizer step; ``micro-batch``: for every micro-batch;
    ``none``: never); ``gradient_collective`` is ``all-reduce`` or ``reduce-scatter``.
    ``refused``: why the framework cannot run it (empty when it can).
    """

    zero_stage: int
    pipeline: bool
    name: str
    weights: str
    gradients: str
    optimizer: str
    gradient_reduce: str
    gradient_collective: str
    parameter_gather: str
    source: str
    refused: str = ""

    @property
    def allowed(self) -> bool:
        """Whether the framework runs this combination."""
        return not self.refused

    @property
    def gathers_layers(self) -> bool:
        """Whether the 16-bit weights are gathered a layer at a time (ZeRO-3 / FSDP full sharding)."""
        return self.weights in ("sharded", "gathered")

    def bytes_per_parameter(
        self, *, weight_bytes: float, grad_bytes: float, optimizer_bytes: float, num_shards: float
    ) -> float:
        """Bytes one rank keeps per parameter at rest over ``num_shards`` data-parallel ranks
        (gathered layers excluded: they scale with a layer, not the model).

        >>> load_memory_rules("deepspeed").rule(2, pipeline=False).bytes_per_parameter(
        ...     weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0, num_shards=64)
        2.21875
        """
        weights = {"whole": weight_bytes, "sharded": weight_bytes / num_shards}.get(self.weights, 0.0)

        def share(place: str, per_parameter: float) -> float:
            return per_parameter if place == "whole" else per_parameter / num_shards

        return weights + share(self.gradients, grad_bytes) + share(self.optimizer, optimizer_bytes)


@dataclass(frozen=True)
class MemoryRules(Record):
    """One family of memory rules: a :class:`ShardingRule` per ZeRO stage, without and with PP."""

    name: str
    display_name: str
    source: str
    rules: tuple[ShardingRule, ...]

    def rule(self, zero_stage: int, *, pipeline: bool) -> ShardingRule:
        """The rule of ``zero_stage`` (0-3) without or with pipeline parallelism."""
        for rule in self.rules:
            if rule.zero_stage == zero_stage and rule.pipeline == pipeline:
                return rule
        raise UnknownNameError(
            "ZeRO stage", str(zero_stage), [str(stage) for stage in ZERO_STAGES], hint=self.name
        )

    def stage_keeping(self, *, weights: str, gradients: str, optimizer: str, pipeline: bool) -> int | None:
        """The lowest ZeRO stage this family runs that keeps the model states where given
        (``None`` if none does): how a run described in another framework's terms reads here.

        >>> load_memory_rules("megatron").stage_keeping(
        ...     weights="whole", gradients="whole", optimizer="sharded", pipeline=True)
        1
        """
        for stage in ZERO_STAGES:
            rule = self.rule(stage, pipeline=pipeline)
            if rule.allowed and (rule.weights, rule.gradients, rule.optimizer) == (
                weights,
                gradients,
                optimizer,
            ):
                return stage
        return None


def stacks_file() -> Path:
    """The shipped stack profiles (``sol/data/stacks.toml``), where the memory rules live too."""
    return package_data("sol", "data", "stacks.toml")


def _choice(table: Fields, key: str, allowed: tuple[str, ...], default: str | None = None) -> str:
    value = table.string(key, default)
    if value not in allowed:
        raise DataFileError(table.path, f"{key} must be one of {', '.join(allowed)}", field=key, value=value)
    return value


def _rule(table: Fields, stage: int, *, pipeline: bool, base: ShardingRule | None) -> ShardingRule:
    """A stage's rule from its table (under PP: its ``pipeline`` sub-table over the rule without PP)."""
    if base is not None:
        return replace(
            base,
            pipeline=True,
            name=table.string("name", base.name),
            weights=_choice(table, "weights", WEIGHT_PLACES, base.weights),
            gradients=_choice(table, "gradients", STATE_PLACES, base.gradients),
            optimizer=_choice(table, "optimizer", STATE_PLACES, base.optimizer),
            gradient_reduce=_choice(table, "gradient_reduce", FREQUENCIES, base.gradient_reduce),
            gradient_collective=_choice(table, "gradient_collective", COLLECTIVES, base.gradient_collective),
            parameter_gather=_choice(table, "parameter_gather", FREQUENCIES, base.parameter_gather),
            source=table.string("source", base.source),
            refused=table.string("refused", ""),
        )
    return ShardingRule(
        zero_stage=stage,
        pipeline=pipeline,
        name=table.string("name"),
        weights=_choice(table, "weights", WEIGHT_PLACES),
        gradients=_choice(table, "gradients", STATE_PLACES),
        optimizer=_choice(table, "optimizer", STATE_PLACES),
        gradient_reduce=_choice(table, "gradient_reduce", FREQUENCIES),
        gradient_collective=_choice(table, "gradient_collective", COLLECTIVES),
        parameter_gather=_choice(table, "parameter_gather", FREQUENCIES),
        source=table.string("source"),
        refused=table.string("refused", ""),
    )


def _parse(name: str, table: Fields) -> MemoryRules:
    rules: list[ShardingRule] = []
    for stage in ZERO_STAGES:
        stage_table = table.table(f"zero{stage}")
        assert stage_table is not None
        alone = _rule(stage_table, stage, pipeline=False, base=None)
        under_pipeline = stage_table.table("pipeline", required=False)
        with_pipeline = (
            replace(alone, pipeline=True)
            if under_pipeline is None
            else _rule(under_pipeline, stage, pipeline=True, base=alone)
        )
        rules += [alone, with_pipeline]
    return MemoryRules(
        name=name,
        display_name=table.string("display_name"),
        source=table.string("source"),
        rules=tuple(rules),
    )


@functools.lru_cache(maxsize=4)
def _load(file: Path) -> Mapping[str, MemoryRules]:
    fields = Fields(str(file), load_toml(file))
    return {name: _parse(name, table) for name, table in fields.tables("memory_rules").items()}


def load_all_memory_rules(path: Path | None = None) -> Mapping[str, MemoryRules]:
    """Every family of memory rules of the shipped data file, by name."""
    return _load(path or stacks_file())


def load_memory_rules(name: str, path: Path | None = None) -> MemoryRules:
    """The family of memory rules called ``name`` (``megatron``, ``deepspeed``, ``fsdp``)."""
    families = load_all_memory_rules(path)
    if name not in families:
        raise UnknownNameError("memory rules", name, list(families), hint="see sol/data/stacks.toml")
    return families[name]


__all__ = [
    "GATHERED_LAYERS",
    "MemoryRules",
    "ShardingRule",
    "load_all_memory_rules",
    "load_memory_rules",
    "stacks_file",
]
