"""``lightspeed memory``: the seed's 100T example, the JSON contract, bad input."""

from __future__ import annotations

import json

from expect import one_line_error


def test_seed_example_on_b200(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "dense-100t", "--precision", "bf16", "--gpu", "b200")
    assert result.code == 0
    assert "200 TB" in result.out
    assert "181.9 TiB" in result.out
    # usable is the driver's 183,359 MiB = 192.27 GB: 200.04 TB / 192.27 GB = 1,040.4 -> 1,041 GPUs;
    # the listed 180 GB: 1,111.3 -> 1,112; the nominal 192 GiB (binary):
    # 200,041,174,925,312 / (192 x 2^30) = 970.3 -> 971 GPUs, 971 / 8 = 121.4 -> 122 nodes
    text = " ".join(result.out.split())
    assert "1,041 x b200 at 192.3 GB usable = 131 nodes of 8" in text
    assert "1,112 at the 180 GB listed = 139 nodes" in text
    assert "971 at 192 GiB nominal = 122 nodes" in text
    assert "weights only: activations, optimizer state and inputs come on top" in result.out
    assert "GB = 1e9 bytes" in result.out


def test_seed_example_on_b300_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "dense-100t", "--precision", "bf16", "--gpu", "b300", "--json")
    assert result.code == 0
    payload = json.loads(result.out)
    for key in ("total_bytes", "components", "gpus_needed", "nodes_needed", "assumptions"):
        assert key in payload
    assert payload["total_bytes"] == payload["components"]["weights"]
    assert payload["total_bytes"] / 1e12 == 200.041174925312
    # the nominal 288 GB read as 288 GiB: 200,041,174,925,312 / (288 x 2^30) = 646.9 -> 647 GPUs,
    # 647 / 8 = 80.9 -> 81 nodes (the seed's "~700 GPUs at 288 GB" used decimal GB)
    assert payload["gpus_needed_at_nominal"] == 647
    assert payload["nodes_needed_at_nominal"] == 81
    assert isinstance(payload["assumptions"], list)


def test_training_with_zero_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "memory",
        "--model",
        "llama-3-70b",
        "--training",
        "--optimizer",
        "adam",
        "--zero",
        "3",
        "--dp",
        "16",
        "--system",
        "dgx-h100",
        "--json",
    )
    assert result.code == 0
    payload = json.loads(result.out)
    num_params = 70_553_706_496
    assert payload["components"] == {
        "weights": 2 * num_params,
        "gradients": 4 * num_params,  # fp32 main gradients, as plan train counts
        "optimizer": 8 * num_params,
        "master_weights": 4 * num_params,
    }
    assert payload["bytes_per_param"] == 1.125  # 18 / dp
    assert payload["gpus_needed"] == 16
    assert payload["nodes_needed"] == 2


def test_no_device_gives_bytes_only(run_cli) -> None:  # type: ignore[no-untyped-def]
    payload = json.loads(run_cli("memory", "--model", "llama-3-8b", "--json").out)
    assert payload["gpus_needed"] is None
    assert payload["nodes_needed"] is None
    assert payload["total_bytes"] == 2 * 8_030_261_248


def test_bad_inputs_are_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    unknown_gpu = run_cli("memory", "--model", "llama-3-8b", "--gpu", "b2000")
    one_line_error(unknown_gpu)
    assert "b200" in unknown_gpu.err
    unknown_model = run_cli("memory", "--model", "llama-9-8b")
    one_line_error(unknown_model)
    assert "closest" in unknown_model.err
    one_line_error(run_cli("memory", "--model", "llama-3-8b", "--precision", "fp5"))
    one_line_error(run_cli("memory", "--model", "llama-3-8b", "--zero", "2"))
    one_line_error(run_cli("memory", "--model", "llama-3-8b", "--training", "--zero", "5"))
    one_line_error(run_cli("memory", "--model", "llama-3-8b", "--training", "--optimizer", "adan"))
    one_line_error(run_cli("memory", "--model", "llama-3-8b", "--gpu", "b200", "--system", "dgx-b200"))
    one_line_error(run_cli("memory", "--model", "llama-3-8b", "--dp", "0"))


def test_training_components_are_the_whole_jobs_and_a_row_gives_one_ranks(run_cli) -> None:  # type: ignore[no-untyped-def]
    """ZeRO-1 over 8 replicas of Llama 3 70B (70,553,706,496 parameters): the components sum over
    all 8 (the title says so), and one data-parallel rank holds 2 + 4 + 12/8 = 7.5 bytes a
    parameter (fp32 main gradients): 529,152,798,720 bytes."""
    result = run_cli("memory", "--model", "llama-3-70b", "--training", "--zero", "1", "--dp", "8")
    assert result.code == 0
    assert "over the whole job (all 8 replicas)" in result.out
    per_rank = round(7.5 * 70_553_706_496)
    assert "per data-parallel rank" in result.out
    assert f"{per_rank:,}" in result.out
