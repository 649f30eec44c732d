"""Round 15, fixes left from round 14: ``doctor --ray-address http://`` is bad input (exit code 2,
it exited 0); a replica that does not fit says ``1 GPU`` (it said ``1 GPUs``); the latency-load
figure marks the run's own rate; the main validation table writes a time to train in days as the
table of other figures does (it wrote 7,257,600 s beside 84 d); an EFA speed with no NIC count is
the instance's total as AWS quotes it (``p4d EFA 400 Gb/s`` read as 8 NICs of 400 Gb/s, 3,200 in all)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import UserInputError
from lightspeed.report.serving import latency_load_figure
from lightspeed.report.simulation_section import _marked_rate
from lightspeed.report.validation_rows import cell_text, interval_text
from lightspeed.sol.serve.capacity_at_slo import LoadPoint
from lightspeed.sol.validation.hardware_text import cluster_of, read_hardware
from lightspeed.trace.ray_engine import parse_address
from lightspeed.units import counted

GBIT: float = 1e9 / 8  # bytes per second in one Gb/s


# 1. doctor --ray-address of another form -----------------------------------------------------


@pytest.mark.parametrize("address", ["http://", "http://head:6379", "head-node", "head:port"])
def test_a_malformed_ray_address_is_bad_input(run_cli, address: str) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("doctor", "--ray-address", address)
    assert result.code == 2
    assert result.out == ""  # refused before any check runs
    assert result.err.count("\n") == 1
    assert f"--ray-address {address!r} is not HOST:PORT, ray://HOST:PORT or auto" in result.err


def test_a_well_formed_ray_address_is_parsed_without_the_network() -> None:
    assert parse_address("ray://10.0.0.1:10001") == ("10.0.0.1", 10001)
    assert parse_address("[::1]:6379") == ("::1", 6379)
    assert parse_address("auto") is None
    with pytest.raises(UserInputError, match="the port must be 1 to 65535"):
        parse_address("head:70000")


# 2. one GPU, not '1 GPUs' ---------------------------------------------------------------------


def test_counted_puts_the_noun_in_its_number() -> None:
    assert counted(1, "GPU") == "1 GPU"
    assert counted(0, "GPU") == "0 GPUs"
    assert counted(16384, "GPU") == "16,384 GPUs"


def test_a_replica_larger_than_one_gpu_says_one_gpu(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "simulate",
        "--model",
        "llama-3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "1",
        "--tp",
        "2",
        "--requests",
        "10",
    )
    assert result.code == 2
    assert "does not fit on 1 GPU;" in result.err
    assert "1 GPUs" not in result.err


# 3. the latency-load figure marks the run's rate ---------------------------------------------


def _point(rate_per_s: float) -> LoadPoint:
    return LoadPoint(
        rate_per_s=rate_per_s,
        ttft_p50_s=0.05,
        ttft_p99_s=0.1,
        tpot_p50_s=0.01,
        tpot_p99_s=0.02,
        e2e_p50_s=0.3,
        attainment=None,
        meets=None,
        output_tokens_per_s=100.0 * rate_per_s,
        requests_per_s=rate_per_s,
    )


def test_the_latency_load_figure_marks_the_rate_given() -> None:
    figure = latency_load_figure(
        [_point(1.0), _point(2.0), _point(4.0)], marked_rate=(3.0, "this run's rate")
    )
    axes = figure.axes[0]
    vertical = [line for line in axes.get_lines() if list(line.get_xdata()) == [3.0, 3.0]]
    assert len(vertical) == 1
    assert vertical[0].get_label() == "this run's rate (3/s)"
    unmarked = latency_load_figure([_point(1.0), _point(2.0)])
    assert not [line for line in unmarked.axes[0].get_lines() if "rate (" in str(line.get_label())]


def test_the_report_marks_a_runs_own_rate_or_its_capacity() -> None:
    poisson = {"workload": {"arrivals": {"kind": "poisson", "rate_per_s": 5.0}}}
    assert _marked_rate(poisson) == (5.0, "this run's rate")
    assert _marked_rate({**poisson, "capacity": {"max_rate_per_s": 5.0}}) == (5.0, "highest rate at the SLO")
    closed = {"workload": {"arrivals": {"kind": "closed", "rate_per_s": None, "concurrency": 8}}}
    assert _marked_rate(closed) is None


# 4. a time to train in days in the main table ------------------------------------------------


def test_a_time_to_train_reads_in_days_in_the_main_table() -> None:
    # 84 days = 84 x 86,400 s = 7,257,600 s (Megatron 2021's 'days for 300B tokens')
    assert cell_text("time_to_train_s", 84 * 86_400.0) == "84 d"
    row = SimpleNamespace(metric="time_to_train_s", interval=(60 * 86_400.0, 110 * 86_400.0), covered=True)
    assert interval_text(row) == "60 d-110 d"  # type: ignore[arg-type]
    assert cell_text("step_time_s", 1.42) == "1.42"  # a step time stays in its metric's seconds
    assert cell_text("memory_per_gpu_bytes", 80 * 2.0**30) == "80 GiB"


# 5. EFA speeds are per instance -----------------------------------------------------------------


def _fabric(text: str, num_gpus: int = 64) -> tuple[str, int, float]:
    catalog = load_catalog()
    hardware, _ = read_hardware(catalog, text)
    cluster, _ = cluster_of(catalog, hardware, num_gpus)
    fabric = cluster.fabric
    assert fabric is not None
    return fabric.link.name, fabric.num_links, fabric.num_links * fabric.link.per_direction_bytes_per_s / GBIT


@pytest.mark.parametrize(
    ("text", "link", "nics", "total_gbit_per_s"),
    [
        # AWS: p4d.24xlarge, 400 Gbps on 4 network cards of 100
        ("p4d.24xlarge, 8x A100 40GB, EFA 400 Gb/s", "efa-100g", 4, 400),
        # another node with EFA 400 Gb/s written with no count: 400 Gb/s in all, not 8 x 400
        ("8x A100 40GB, EFA 400 Gb/s", "efa-400g", 1, 400),
        # the count written before the network's name
        ("H100, 8x EFA 400 Gb/s", "efa-400g", 8, 3200),
        # p5.48xlarge's own 32 cards of 100 Gb/s, 3,200 Gbps as AWS quotes it
        ("AWS p5 H100, 3200 Gbps EFA", "efa-100g", 32, 3200),
        # p6-b200's own 8 cards of 400 Gb/s, named by one card's speed
        ("p6-b200, EFA 400 Gb/s", "efa-400g", 8, 3200),
    ],
)
def test_an_efa_speed_with_no_count_is_the_instance_total(
    text: str, link: str, nics: int, total_gbit_per_s: float
) -> None:
    assert _fabric(text) == (link, nics, pytest.approx(total_gbit_per_s))


def test_p4d_is_in_the_catalog_with_its_own_nics() -> None:
    system = load_catalog().system("p4d")
    assert system.num_accelerators == 8
    assert system.accelerator.name == "a100-sxm-40gb"
    assert system.scale_out is not None
    # 4 x 100 Gb/s = 400 Gb/s = 50 GB/s each way
    assert system.scale_out.num_links * system.scale_out.link.per_direction_bytes_per_s == pytest.approx(50e9)


# 6. GPU-hours read as GPU-hours (the tour stored them in 'h' before) ----------------------------


def test_gpu_hours_show_as_gpu_hours_and_old_runs_still_compare() -> None:
    from lightspeed.gate.inputs import LEGACY_METRICS
    from lightspeed.report.results import _value_text

    # DeepSeek-V3's 2.664M GPU-hours, not '2.664e+06 h' (2.7 million wall-clock hours)
    assert _value_text(2.664e6, "GPU-hours", "gpu_hours") == "2.664 M GPU-hours"
    assert LEGACY_METRICS[("gpu_hours", "h")] == ("gpu_hours", "GPU-hours", 1.0, True)
