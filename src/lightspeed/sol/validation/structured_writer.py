"""Write published runs back as structured rows: the TOML text of ``published-runs.toml``.

:func:`dump_runs` writes runs (read from a table by the free-text readers, or from a structured
file by :func:`~lightspeed.sol.validation.structured.load_published_runs`) in the format that
module reads, one ``[[row]]`` each (the schema is documented there and in ``docs/sol.md``);
:func:`run_table` is the table of one row. ``benchmarks/convert_validation_rows.py`` wrote the
shipped rows with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lightspeed.datafile import toml_value
from lightspeed.errors import UserInputError
from lightspeed.sol.validation.infer_rows import InferenceRowSpec
from lightspeed.sol.validation.rows import TrainingRowSpec
from lightspeed.sol.validation.structured import METRIC_UNITS, SCHEMA_VERSION, PublishedRun
from lightspeed.workload import TransformerSpec


def run_table(run: PublishedRun) -> dict[str, Any]:
    """The TOML table of one row (:func:`dump_runs` writes a file of them)."""
    spec = run.spec
    table: dict[str, Any] = {
        "id": run.id,
        "kind": run.kind,
        "publisher": run.publisher,
        "source": run.source,
        "url": run.url,
        "stack": run.stack,
        "metric": spec.metric,
        "unit": METRIC_UNITS[spec.metric],
        "value": spec.measured,
        "metric_text": run.metric_text,
        "value_text": run.value_text,
        "confidence": run.confidence,
        "derived": run.derived,
        "converted_from": run.converted_from,
        "notes": list(spec.assumptions),
        "model": _model_table(spec.model, spec.model_name),
        # the words a table's cell named its network with are how it was written, not the hardware
        "hardware": _without_none(spec.hardware.to_dict() | {"network_text": None})
        | {"num_gpus": spec.num_gpus},
    }
    if run.training is not None:
        table.update(_training_tables(run.training))
    elif run.inference is not None:
        table.update(_inference_tables(run.inference))
    return table


def _without_none(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


def _model_table(model: TransformerSpec, name: str | None) -> dict[str, Any]:
    if name is not None:
        return {"name": name}
    attention = model.attention
    return {
        "name": model.name,
        "display_name": model.display_name,
        "architecture": {
            "num_layers": model.num_layers,
            "hidden_size": model.hidden_size,
            "ffn_hidden_size": model.ffn_hidden_size,
            "vocab_size": model.vocab_size,
            "max_seq_len": model.max_seq_len,
            "mlp": model.mlp,
            "norm": model.norm,
            "position_embedding": model.position_embedding,
            "tied_embeddings": model.tied_embeddings,
            "mlp_bias": model.mlp_bias,
        },
        "attention": {
            "kind": attention.kind,
            "num_heads": attention.num_heads,
            "num_kv_heads": attention.num_kv_heads,
            "head_dim": attention.head_dim,
            "qkv_bias": attention.qkv_bias,
            "out_bias": attention.out_bias,
        },
    }


def _one_or_list(values: tuple[Any, ...]) -> Any:
    return values[0] if len(values) == 1 else list(values)


def _training_tables(spec: TrainingRowSpec) -> dict[str, Any]:
    plan = spec.plan
    fixed = {key: getattr(plan, key) for key in ("tp", "pp", "dp", "ep", "cp", "zero_stage", "schedule")}
    tables: dict[str, Any] = {
        "plan": fixed
        | {
            "global_batch_size": plan.global_batch_size,
            "seq_len": plan.seq_len,
            "precision": plan.precision,
            "micro_batch_size": _one_or_list(plan.micro_batch_sizes),
            "vpp": _one_or_list(plan.vpps),
            "recompute": _one_or_list(plan.recomputes),
        }
        | _without_none(
            {
                "sequence_parallel": plan.sequence_parallel,
                "tp_overlap": plan.tp_overlap,
                "ep_dispatcher": plan.ep_dispatcher,
            }
        )
        | ({"etp": plan.etp} if plan.etp > 1 else {})
        | ({"fsdp_under_pipeline": True} if plan.fsdp_under_pipeline else {})
        | ({"free_degrees": list(plan.free_degrees)} if plan.free_degrees else {}),
        "flops": _without_none(
            {
                "convention": spec.flops.convention,
                "counts_recompute": spec.flops.counts_recompute,
                "causal": spec.flops.causal,
                "peak_flop_per_s": spec.peak_flop_per_s,
            }
        ),
    }
    if spec.num_tokens is not None:
        tables["workload"] = {"num_tokens": spec.num_tokens}
    if spec.also:
        tables["also"] = [
            {
                "metric": figure.key,
                "unit": METRIC_UNITS[figure.key],
                "value": figure.value,
                "metric_text": figure.metric_text,
                "value_text": figure.value_text,
            }
            | ({} if figure.num_tokens is None else {"num_tokens": figure.num_tokens})
            for figure in spec.also
        ]
    return tables


def _inference_tables(spec: InferenceRowSpec) -> dict[str, Any]:
    plan, load = spec.plan, spec.load
    if spec.simulation is not None and spec.simulation.mlperf:
        raise UserInputError(
            f"row {spec.row_id}: an MLPerf row (its benchmark's length spread and scenario) has no "
            "structured form yet; keep it in a TSV table (lightspeed validate FILE.tsv)"
        )
    deployment = {
        key: getattr(plan, key) for key in ("tp", "pp", "ep", "dp_attention", "replicas", "precision")
    }
    deployment |= _without_none(
        {
            "kv_precision": plan.kv_precision,
            "attention_weights": plan.attention_weights,
            "effective_bits": plan.effective_bits,
        }
    ) | {"kv_replication": plan.kv_replication}
    deployment |= _without_none({"max_batch": plan.max_batch})
    workload = _without_none(
        {
            "input_tokens": load.input_tokens,
            "output_tokens": load.output_tokens,
            "concurrency": load.concurrency,
            "arrival_rate_per_s": load.arrival_rate_per_s,
            "batching": spec.batching,
        }
    )
    return {"deployment": deployment, "workload": workload}


def _toml_table(name: str, table: Mapping[str, Any]) -> list[str]:
    lines = [f"[{name}]" if not name.endswith("]]") else name]
    nested: list[tuple[str, Mapping[str, Any]]] = []
    arrays: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in table.items():
        if isinstance(value, Mapping):
            nested.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
            arrays += [(key, item) for item in value]
        else:
            lines.append(f"{key} = {toml_value(value, wrap_at=100)}")
    base = name.strip("[]")
    for key, value in nested:
        lines += _toml_table(f"{base}.{key}", value)
    for key, value in arrays:
        lines += _toml_table(f"[[{base}.{key}]]", value)
    return lines


def dump_runs(runs: Iterable[PublishedRun], header: str = "") -> str:
    """TOML text of ``runs`` in the structured format (``header`` lines become comments on top).

    >>> dump_runs([]).splitlines()[-1]
    'schema_version = 1'
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines.append(f"schema_version = {SCHEMA_VERSION}")
    for run in runs:
        lines += ["", *_toml_table("[[row]]", run_table(run))]
    return "\n".join(lines) + "\n"


__all__ = [
    "dump_runs",
    "run_table",
]
