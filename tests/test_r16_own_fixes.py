"""Round 16, fixes made directly: the tour's predictions are found by the payload keys
docs/store.md promises (``model``, ``system`` as the catalog names it, ``plan`` as an object)."""

from __future__ import annotations

import json
from pathlib import Path

from lightspeed.catalog import load_catalog
from lightspeed.store import open_store
from lightspeed.tour import seed
from lightspeed.workload import load_models


def _run_ids(run_cli, *conditions: str) -> set[str]:  # type: ignore[no-untyped-def]
    arguments = [part for condition in conditions for part in ("--where", condition)]
    result = run_cli("results", "list", *arguments, "--json")
    assert result.code == 0, result.err
    return {run["run_id"] for run in json.loads(result.out)}


def test_tour_predictions_match_where_model_system_and_plan(run_cli) -> None:  # type: ignore[no-untyped-def]
    catalog, models = load_catalog(), load_models()
    training = seed.nvl72_vs_infiniband(catalog, models)
    serving = seed.gpt_moe_inference(catalog, models)
    with open_store() as store:
        trained = store.add_records(kind="prediction", records=list(training.records))
        served = store.add_records(kind="prediction", records=list(serving.records))
    # the InfiniBand side is 9 DGX H100 ("9 x dgx-h100 over ib-ndr"): its system is dgx-h100
    assert _run_ids(run_cli, "system=dgx-h100") == {trained, served}
    assert _run_ids(run_cli, "system=gb200-nvl72") == {trained, served}
    assert _run_ids(run_cli, "model=gpt-moe-1.8t") == {served}
    assert _run_ids(run_cli, "model=llama-3-70b", "system=dgx-h100") == {trained}
    assert _run_ids(run_cli, "cluster=9 x dgx-h100 over ib-ndr") == {trained}
    # the serving plan is an object: a dotted key reaches its degrees (the H100 side runs tp=8)
    (h100,) = [record for record in serving.records if record.payload["system"] == "dgx-h100"]
    assert _run_ids(run_cli, "model=gpt-moe-1.8t", f"plan.tp={h100.payload['plan']['tp']}") == {served}
    assert _run_ids(run_cli, "model=gpt-moe-1.8t", "plan.tp=999") == set()


def test_the_library_data_loaders_take_a_path_as_text(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A path given as text (the way a user calls a library) is read like a Path; the loaders
    failed with AttributeError: 'str' object has no attribute 'stat'."""
    from lightspeed.datafile import load_toml
    from lightspeed.sol.serve.benchmark_datasets import load_benchmark_datasets
    from lightspeed.sol.serve.mlperf_inference import load_mlperf_workloads

    file = tmp_path / "t.toml"
    file.write_text('a = 1\n[b]\nc = "d"\n', encoding="utf-8")
    assert load_toml(str(file)) == {"a": 1, "b": {"c": "d"}}
    assert load_mlperf_workloads(str(_shipped("mlperf"))) == load_mlperf_workloads()
    assert load_benchmark_datasets(str(_shipped("datasets"))) == load_benchmark_datasets()


def _shipped(kind: str):  # type: ignore[no-untyped-def]
    from lightspeed.sol.serve import benchmark_datasets, mlperf_inference

    module = mlperf_inference if kind == "mlperf" else benchmark_datasets
    return module._data_file()


def test_a_row_without_tp_is_split_to_hold_its_static_batch(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Intel's Gaudi 2 table: Llama 2 70B in FP8 on 2 HPUs (96 GB each) at a static batch of 1,750 of
    128/128 tokens. One HPU holds the 70.6 GB of weights and ~9 GiB of KV cache: 236 requests of 256
    tokens at 160 KiB a token (40 MiB each), not the 875 a replica of TP 1 x 2 would hold. At TP 2 each
    HPU keeps 35 GB of weights and 20 MiB a request: 1,750 x 20 MiB = 34 GiB fits. The layout is sized
    for the batch the run held, as an operator sizes it (the row was refused as 3.7x over at TP 1)."""
    source = Path(__file__).resolve().parent / "data" / "validation" / "probe-serving.tsv"
    lines = source.read_text(encoding="utf-8").splitlines()
    row = next(line for line in lines if line.startswith("P07\t"))
    table = tmp_path / "p07.tsv"
    table.write_text(f"{lines[0]}\n{row}\n", encoding="utf-8")
    result = run_cli("validate", str(table), "--json")
    assert result.code == 0, result.err
    (predicted,) = json.loads(result.out)["rows"]
    assert predicted["status"] == "ok"
    assert (predicted["plan"]["tp"], predicted["plan"]["replicas"]) == (2, 1)
    assert any("static batch of 1750" in line for line in predicted["assumptions"])


def test_gpus_before_their_part_with_nodes_after_keep_the_node_shape() -> None:
    """'4x H100, 2 nodes' is 8 GPUs as four in each of two DGX H100 (their traffic crosses the nodes'
    NICs), as '2 nodes of 4x H100' is; '2x DGX H100, 2 nodes' counts systems, the system's own nodes."""
    from lightspeed.catalog import load_catalog
    from lightspeed.sol.validation.hardware_text import cluster_of, read_hardware

    catalog = load_catalog()
    hardware, _ = read_hardware(catalog, "4x H100, 2 nodes")
    cluster, notes = cluster_of(catalog, hardware, 8)
    assert (cluster.num_nodes, cluster.system.num_accelerators) == (2, 4)
    assert notes[0] == "2 x dgx-h100 (4 GPUs used in each)"
    whole, _ = read_hardware(catalog, "2x DGX H100, 2 nodes")
    assert whole.gpus_per_node is None
    one_node, _ = read_hardware(catalog, "8x H100, 1 node")
    assert one_node.gpus_per_node is None
