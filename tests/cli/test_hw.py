"""``lightspeed hw``: list, show, compare, detect, their JSON, and bad input (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

USER_ACCELERATOR = """
schema_version = 1
kind = "accelerator"
name = "lab-h100"
extends = "h100-sxm"
aliases = ["lab"]
[power]
tdp_w = 500.0
"""


def test_list(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "list")
    assert result.code == 0
    for name in ("h100-sxm", "gb200-nvl72", "nvlink-5", "grace"):
        assert name in result.out


def test_list_kind_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "list", "--kind", "link", "--json")
    assert result.code == 0
    records = json.loads(result.out)["records"]
    assert {record["kind"] for record in records} == {"link"}
    ndr = next(record for record in records if record["name"] == "ib-ndr")
    assert ndr["figures"]["per_direction_bytes_per_s"] == 50e9


def test_show_accelerator(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "NVIDIA H100 80GB HBM3")
    assert result.code == 0
    assert "NVIDIA H100 SXM5 80GB" in result.out
    assert "989.5 TFLOP/s" in result.out  # dense BF16
    assert "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet" in result.out
    assert "1830 MHz" in result.out  # the boost-clock conflict


def test_show_states_a_power_cap_and_the_clock_it_sustains(run_cli) -> None:  # type: ignore[no-untyped-def]
    # Grand Teton's H100: a 500 W limit on a 700 W part sustains (500 / 700)^(1/3) = 0.894 of the clock
    result = run_cli("hw", "show", "h100-sxm-96gb-hbm2e")
    assert result.code == 0, result.err
    line = next(line for line in result.out.splitlines() if "power limit (configured cap)" in line)
    assert "500 W: compute clock x0.894" in line
    assert "configured cap" not in run_cli("hw", "show", "h100-sxm").out  # no cap, no row


def test_show_json_has_every_figure_with_source(run_cli) -> None:  # type: ignore[no-untyped-def]
    payload = json.loads(run_cli("hw", "show", "b300", "--json").out)
    assert payload["kind"] == "accelerator"
    fp4 = payload["record"]["compute"]["fp4"]
    assert (fp4["printed_per_s"], fp4["printed_with_sparsity"], fp4["dense_per_s"]) == (18e15, True, 14e15)
    assert fp4["source"] in payload["record"]["sources"]
    assert payload["record"]["conflicts"]


def test_show_system_with_totals(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "gb200-nvl72")
    assert result.code == 0
    assert "1.44 EFLOP/s" in result.out
    assert "derived/printed" in result.out
    payload = json.loads(run_cli("hw", "show", "gb200-nvl72", "--json").out)
    rows = {row["key"]: row for row in payload["totals"]["rows"]}
    assert rows["fp4_sparse"]["printed"] == 1440e15
    assert rows["fp4_sparse"]["within_tolerance"] is True


def test_show_cluster_spec(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "9xdgx-h100@ib-ndr:1nic")
    assert result.code == 0
    assert "72 x h100-sxm" in result.out
    payload = json.loads(run_cli("hw", "show", "9xdgx-h100@ib-ndr:1nic", "--json").out)
    assert payload["kind"] == "cluster"
    assert payload["record"]["num_nodes"] == 9


def test_compare_reproduces_the_seed_table(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "compare", "h100-pcie", "h800-pcie")
    assert result.code == 0
    lines = {line.split("│")[1].strip(): line for line in result.out.splitlines() if line.count("│") > 3}
    assert "1/32" in lines["FP64"]
    assert "1/64" in lines["FP64 tensor"]
    assert "0.667x (-33%)" in lines["scale-up bidirectional"]
    assert "1,513* (756.5)" in lines["BF16 tensor"]
    assert "same" in lines["BF16 tensor"]
    assert "2:4 structured sparsity" in result.out


def test_compare_json_contract(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "compare", "h100-sxm", "h800-sxm", "--json")
    assert result.code == 0
    payload = json.loads(result.out)
    assert payload["devices"] == ["h100-sxm", "h800-sxm"]
    rows = {row["field"]: row for row in payload["rows"]}
    for row in rows.values():
        assert {"field", "unit", "values", "ratios", "sparse"} <= set(row)
    assert rows["scale_up_bidirectional"]["values"] == [900e9, 400e9]
    assert rows["scale_up_bidirectional"]["unit"] == "B/s"
    assert rows["bf16"]["sparse"] == [True, True]
    assert rows["bf16"]["ratios"] == [1.0, 1.0]


def test_detect(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "detect", "--no-gpu")
    assert result.code == 0
    assert "CPU:" in result.out


def test_detect_json_with_overrides(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "hw", "detect", "--no-gpu", "--cpu-ghz", "2.0", "--memory-bandwidth", "100GB/s", "--json"
    )
    assert result.code == 0
    payload = json.loads(result.out)
    cpu = payload["machine"]["cpu"]
    assert cpu["memory_bandwidth_bytes_per_s"] == 100e9
    if cpu["peak"] is not None:  # known microarchitecture: the SOL record exists
        assert cpu["peak"]["clock_hz"] == 2.0e9
        assert payload["cpu_accelerator"]["family"] == "cpu"
        assert payload["cpu_accelerator"]["memory_bandwidth_bytes_per_s"] == 100e9
    else:
        assert payload["cpu_accelerator_error"]


def test_user_catalog_option_and_environment(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(USER_ACCELERATOR, encoding="utf-8")
    result = run_cli("--catalog", str(path), "hw", "show", "lab", "--json")
    assert result.code == 0
    assert json.loads(result.out)["record"]["tdp_w"] == 500.0
    monkeypatch.setenv("LIGHTSPEED_CATALOG", str(tmp_path))
    result = run_cli("hw", "compare", "h100-sxm", "lab", "--json")
    assert result.code == 0
    rows = {row["field"]: row for row in json.loads(result.out)["rows"]}
    assert rows["tdp"]["values"] == [700.0, 500.0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["hw", "show", "h10"], "closest"),
        (["hw", "show", "h10"], "h100"),
        (["hw", "compare", "h100", "dgx-h100"], "'dgx-h100' a system"),
        (["hw", "compare", "h100", "h100-sxm"], "name the same accelerator"),
        (["hw", "compare", "h100"], "at least two"),
        (["hw", "show", "9xdgx-h100@ib-ndr:0.3nic"], "whole number"),
        (["hw", "show", "2xdgx-h1000"], "dgx-h100"),
        (["hw", "list", "--kind", "gpu"], "gpu"),
        (["hw", "detect", "--no-gpu", "--cpu-ghz", "-1"], "--cpu-ghz"),
        (["hw", "detect", "--no-gpu", "--memory-bandwidth", "fast"], "fast"),
        (["hw", "frobnicate"], "frobnicate"),
    ],
)
def test_bad_input_is_one_line_exit_2(run_cli, args: list[str], expected: str) -> None:  # type: ignore[no-untyped-def]
    assert expected in one_line_error(run_cli(*args))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("schema_version = 1\nkind = [\n", "invalid TOML"),
        (USER_ACCELERATOR.replace('extends = "h100-sxm"', 'extends = "h1000"'), "extends"),
        (USER_ACCELERATOR.replace('aliases = ["lab"]', 'aliases = ["h200"]'), "already used by h200-sxm"),
        (USER_ACCELERATOR.replace("tdp_w", "tdp_watts"), "power.tdp_watts"),
    ],
)
def test_bad_catalog_file_is_one_line_exit_2(run_cli, tmp_path: Path, text: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    error = one_line_error(run_cli("--catalog", str(path), "hw", "list"))
    assert "bad.toml" in error
    assert expected in error
