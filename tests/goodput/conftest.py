"""Helpers that write event logs by hand (independently of the Tracker's writer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

NS = 1_000_000_000
T0_NS = 1_700_000_000 * NS  # an arbitrary epoch origin


class HandLog:
    """Builds one rank's JSONL log line by line; times are seconds after T0."""

    def __init__(self, run_dir: Path, rank: int = 0, world_size: int = 1, run_id: str = "run-a") -> None:
        self.path = run_dir / f"rank-{rank:05d}.jsonl"
        self.rank = rank
        self.world_size = world_size
        self.run_id = run_id
        self.lines: list[str] = []
        self.segment = ""

    def _line(self, payload: dict[str, Any]) -> HandLog:
        self.lines.append(json.dumps({"v": 1, "seg": self.segment, **payload}))
        return self

    def start(self, t_s: float, segment: str = "s1", **workload: Any) -> HandLog:
        self.segment = segment
        header = {
            "type": "job_start",
            "t_ns": T0_NS + round(t_s * NS),
            "run_id": self.run_id,
            "rank": self.rank,
            "world_size": self.world_size,
            "num_nodes": 1,
            "tokens_scope": workload.pop("tokens_scope", "rank"),
        }
        return self._line({**header, **workload})

    def step(self, step: int, start_s: float, end_s: float, tokens: float = 0, **extra: Any) -> HandLog:
        return self._line(
            {
                "type": "step",
                "step": step,
                "start_ns": T0_NS + round(start_s * NS),
                "end_ns": T0_NS + round(end_s * NS),
                "tokens": tokens,
                "samples": extra.pop("samples", 0),
                **extra,
            }
        )

    def phase(self, phase: str, start_s: float, end_s: float, name: str | None = None) -> HandLog:
        payload: dict[str, Any] = {
            "type": "phase",
            "phase": phase,
            "step": 0,
            "start_ns": T0_NS + round(start_s * NS),
            "end_ns": T0_NS + round(end_s * NS),
        }
        if name is not None:
            payload["name"] = name
        return self._line(payload)

    def end(self, t_s: float, status: str = "ok") -> HandLog:
        return self._line({"type": "job_end", "t_ns": T0_NS + round(t_s * NS), "status": status})

    def raw(self, text: str) -> HandLog:
        self.lines.append(text)
        return self

    def write(self, trailing_newline: bool = True) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(self.lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
        return self.path


@pytest.fixture
def hand_log(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``hand_log(rank=0, world_size=1)`` -> a :class:`HandLog` writing into ``tmp_path / 'run'``."""

    def make(rank: int = 0, world_size: int = 1, run_id: str = "run-a") -> HandLog:
        return HandLog(tmp_path / "run", rank=rank, world_size=world_size, run_id=run_id)

    return make
