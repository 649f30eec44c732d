"""Collectives in real gloo worlds: spawned local ranks, a 1-rank world, a world that never connects."""

from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path

import pytest

from lightspeed.bench import (
    COLLECTIVES,
    CollectiveConfig,
    DeviceSol,
    WorldConnectionError,
    run_collectives,
    run_collectives_in_world,
    torchrun_rank,
)
from lightspeed.errors import UserInputError

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_spawned_world_measures_every_collective_correctly() -> None:
    config = CollectiveConfig(
        sizes=(4096, 65536), warmup=1, num_trials=2, budget_bytes=65536, max_iterations=4
    )
    results = run_collectives(config=config, sol=DeviceSol.unknown("cpu"), num_processes=2, gpu=False)
    assert [result.details["collective"] for result in results] == [c for c in COLLECTIVES for _ in range(2)]
    assert all(result.correct for result in results)
    for result in results:
        details = result.details
        assert details["num_ranks"] == 2
        assert result.value == pytest.approx(details["algbw_bytes_per_s"] * details["busbw_factor"])
        assert details["rank_time_s"]["min"] <= details["rank_time_s"]["max"]


def test_one_rank_world_detects_a_wrong_result(tmp_path: Path) -> None:
    import torch
    import torch.distributed as dist

    from lightspeed.bench.collectives import _Case

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rv'}", rank=0, world_size=1)
    try:
        case = _Case(torch, dist, "all_reduce", 1024, "cpu")
        assert case.check() is True
        case.fill()
        case.run()
        case.output[3] += 1.0  # a single wrong element must be caught
        assert bool(torch.equal(case.output, case.expected())) is False
    finally:
        dist.destroy_process_group()


def test_world_that_cannot_connect_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _free_port()
    for key, value in {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }.items():
        monkeypatch.setenv(key, value)
    config = CollectiveConfig(sizes=(4096,))
    start = time.monotonic()
    with pytest.raises(
        WorldConnectionError, match=r"rank 1 of 2 could not join the gloo world at 127\.0\.0\.1"
    ):
        run_collectives_in_world(config=config, sol=DeviceSol.unknown(""), gpu=False, timeout_s=2.0)
    assert time.monotonic() - start < 60.0


def test_torchrun_environment_is_read() -> None:
    assert torchrun_rank({}) is None
    assert torchrun_rank({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}) == (3, 8, 1)
    with pytest.raises(UserInputError, match="whole numbers"):
        torchrun_rank({"RANK": "x", "WORLD_SIZE": "8"})


def test_fewer_than_two_processes_is_refused() -> None:
    with pytest.raises(UserInputError, match="at least 2"):
        run_collectives(
            config=CollectiveConfig(sizes=(4096,)), sol=DeviceSol.unknown(""), num_processes=1, gpu=False
        )
    assert tempfile.gettempdir()
