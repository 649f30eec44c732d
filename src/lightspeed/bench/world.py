"""Multi-process worlds for the collectives suite: local processes or ``torchrun``.

* :func:`run_collectives` spawns ``num_processes`` local ranks (gloo on CPU,
  NCCL with one GPU each) that meet through a file rendezvous, and returns
  rank 0's assembled results: one command on one machine.
* :func:`run_collectives_in_world` runs inside a world ``torchrun`` started
  (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` in the
  environment), across nodes; rank 0 returns the results, other ranks ``[]``.

A world that does not connect within ``timeout_s`` raises
:class:`WorldConnectionError` naming the rank, the address and the fix.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from lightspeed.bench.collectives import CollectiveConfig, assemble_results, measure_rank
from lightspeed.bench.results import BenchResult
from lightspeed.bench.runtime import ProgressCallback, cpu_count, import_torch
from lightspeed.bench.sol import DeviceSol
from lightspeed.errors import UnsupportedError, UserInputError

DEFAULT_TIMEOUT_S: Final = 60.0
_POLL_S: Final = 0.2


class WorldConnectionError(UnsupportedError):
    """The ranks of a torch.distributed world did not all connect in time."""


def torchrun_rank(environment: Mapping[str, str] | None = None) -> tuple[int, int, int] | None:
    """``(rank, world_size, local_rank)`` when launched by torchrun, else ``None``."""
    env = os.environ if environment is None else environment
    if "WORLD_SIZE" not in env or "RANK" not in env:
        return None
    try:
        return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", env["RANK"]))
    except ValueError:
        raise UserInputError(
            f"RANK={env.get('RANK')!r} and WORLD_SIZE={env.get('WORLD_SIZE')!r} must be whole numbers"
        ) from None


def choose_backend(torch: ModuleType, gpu: bool) -> str:
    """NCCL for GPUs, gloo for CPUs; refuses NCCL when torch lacks it."""
    if gpu:
        if not torch.distributed.is_nccl_available():
            raise UnsupportedError("this torch build has no NCCL; the GPU collectives need it")
        return "nccl"
    if not torch.distributed.is_gloo_available():
        raise UnsupportedError("this torch build has no gloo backend; CPU collectives need it")
    return "gloo"


def _connect(
    torch: Any, *, backend: str, init_method: str, rank: int, world_size: int, timeout_s: float, where: str
) -> None:
    try:
        torch.distributed.init_process_group(
            backend,
            init_method=init_method,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
    except (RuntimeError, ValueError, TimeoutError, OSError) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise WorldConnectionError(
            f"rank {rank} of {world_size} could not join the {backend} world at {where} within "
            f"{timeout_s:g} s ({first_line}); check that all {world_size} ranks started and can reach "
            "that address, or raise --timeout"
        ) from None


def _device_for(torch: Any, backend: str, local_rank: int) -> str:
    if backend != "nccl":
        return "cpu"
    if local_rank >= torch.cuda.device_count():
        raise UnsupportedError(
            f"local rank {local_rank} has no GPU of its own ({torch.cuda.device_count()} visible); "
            "start one rank per GPU"
        )
    torch.cuda.set_device(local_rank)
    return f"cuda:{local_rank}"


@dataclass(frozen=True)
class _Membership:
    """Where one rank joins: its rank, the world size, the rendezvous and how long to wait."""

    rank: int
    world_size: int
    local_rank: int
    init_method: str
    where: str
    timeout_s: float


def _join_and_measure(
    torch: Any, member: _Membership, *, gpu: bool, config: CollectiveConfig, progress: ProgressCallback | None
) -> tuple[str, list[Any] | None]:
    """Join the world, measure, gather every rank's rows to rank 0, leave; (backend, rows or None)."""
    backend = choose_backend(torch, gpu)
    device = _device_for(torch, backend, member.local_rank)
    _connect(torch, backend=backend, init_method=member.init_method, rank=member.rank,
             world_size=member.world_size, timeout_s=member.timeout_s, where=member.where)  # fmt: skip
    try:
        rows = measure_rank(torch=torch, dist=torch.distributed, config=config, device=device,
                            progress=progress if member.rank == 0 else None)  # fmt: skip
        gathered: list[Any] = [None] * member.world_size
        torch.distributed.all_gather_object(gathered, rows)
    finally:
        torch.distributed.destroy_process_group()
    return backend, (gathered if member.rank == 0 else None)


def run_collectives_in_world(
    *,
    config: CollectiveConfig,
    sol: DeviceSol,
    gpu: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: ProgressCallback | None = None,
) -> list[BenchResult]:
    """Measure inside the torchrun world of this process; rank 0 returns the results."""
    found = torchrun_rank()
    if found is None:
        raise UserInputError("not inside a torchrun world (RANK and WORLD_SIZE are not set)")
    rank, world_size, local_rank = found
    if world_size < 2:
        raise UserInputError(
            "collectives need at least 2 ranks; start torchrun with --nproc-per-node 2 or more"
        )
    where = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
    member = _Membership(rank, world_size, local_rank, "env://", where, timeout_s)
    backend, gathered = _join_and_measure(import_torch(), member, gpu=gpu, config=config, progress=progress)
    if gathered is None:
        return []
    return assemble_results(per_rank=gathered, backend=backend, sol=sol)


def _spawned_rank(
    *,
    rank: int,
    world_size: int,
    init_file: str,
    config: CollectiveConfig,
    gpu: bool,
    timeout_s: float,
    inbox: Any,
) -> None:
    """Body of one spawned rank: report rows (rank 0) or an error through ``inbox``."""
    try:
        torch = import_torch()
        torch.set_num_threads(max(1, cpu_count() // world_size))

        def report(description: str, done: int, total: int) -> None:
            inbox.put(("progress", rank, (description, done, total)))

        member = _Membership(rank, world_size, rank, f"file://{init_file}", init_file, timeout_s)
        _, gathered = _join_and_measure(torch, member, gpu=gpu, config=config, progress=report)
        inbox.put(("done", rank, gathered))
    except Exception as error:  # every failure must reach the parent, not vanish with the child
        inbox.put(("error", rank, f"{type(error).__name__}: {error}"))


def run_collectives(
    *,
    config: CollectiveConfig,
    sol: DeviceSol,
    num_processes: int,
    gpu: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: ProgressCallback | None = None,
) -> list[BenchResult]:
    """Spawn ``num_processes`` local ranks, measure, and return the assembled results."""
    if num_processes < 2:
        raise UserInputError(f"collectives need at least 2 processes (got {num_processes})")
    torch = import_torch()
    backend = choose_backend(torch, gpu)
    if gpu and num_processes > torch.cuda.device_count():
        raise UnsupportedError(
            f"{num_processes} GPU ranks need {num_processes} GPUs; {torch.cuda.device_count()} are visible"
        )
    context = multiprocessing.get_context("spawn")
    inbox = context.Queue()
    with tempfile.TemporaryDirectory(prefix="lightspeed-world-") as folder:
        init_file = str(Path(folder) / "rendezvous")
        processes = [
            context.Process(
                target=_spawned_rank,
                kwargs={
                    "rank": rank,
                    "world_size": num_processes,
                    "init_file": init_file,
                    "config": config,
                    "gpu": gpu,
                    "timeout_s": timeout_s,
                    "inbox": inbox,
                },
            )
            for rank in range(num_processes)
        ]
        for process in processes:
            process.start()
        try:
            gathered = _collect(processes, inbox, progress)
        finally:
            for process in processes:
                if process.is_alive():
                    process.terminate()
                process.join(timeout=10)
    return assemble_results(per_rank=gathered, backend=backend, sol=sol)


def _check_alive(processes: list[Any], finished: set[int], inbox: Any) -> None:
    dead = [r for r, p in enumerate(processes) if r not in finished and p.exitcode not in (None, 0)]
    if dead:
        time.sleep(_POLL_S)  # its own error message may still be in flight
        if inbox.empty():
            code = processes[dead[0]].exitcode
            raise UnsupportedError(f"collective rank {dead[0]} exited with code {code} before reporting")


def _collect(processes: list[Any], inbox: Any, progress: ProgressCallback | None) -> Any:
    """Wait for every rank; the first error (or a rank that died silently) stops all."""
    finished: set[int] = set()
    gathered: Any = None
    while len(finished) < len(processes):
        try:
            kind, rank, payload = inbox.get(timeout=_POLL_S)
        except queue.Empty:
            _check_alive(processes, finished, inbox)
            continue
        if kind == "error":
            raise UnsupportedError(f"collective rank {rank} failed: {payload}")
        if kind == "progress":
            if progress is not None:
                progress(*payload)
            continue
        finished.add(rank)
        if rank == 0:
            gathered = payload
    return gathered
