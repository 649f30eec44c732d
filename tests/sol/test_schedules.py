"""Pipeline bubbles and in-flight activations against REFERENCE.md section 3."""

from __future__ import annotations

import pytest

from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.train.schedules import activations_in_flight, bubble_s, parameter_copies


def _grid(**changes: object):  # type: ignore[no-untyped-def]
    plan = TrainingPlan(pp=4, dp=1, global_batch_size=16, micro_batch_size=1, seq_len=1024).with_changes(
        **changes
    )
    return grid_from_plans([plan])


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"schedule": "1f1b"}, 3 * (1 + 2)),  # (p-1)(F+B)
        ({"schedule": "gpipe"}, 3 * (1 + 2)),
        ({"vpp": 2}, 3 * (1 + 2) / 2),  # (p-1)(F+B)/v
        ({"schedule": "zb1p"}, 3 * (1 + 2 - 2 * 0.5)),  # (p-1)(F+B-2W)
        ({"schedule": "dualpipe"}, (4 / 2 - 1) * (1 + 2 * 2 - 3 * 0.5)),  # (p/2-1)(F&B+B-3W), F&B=F+B
    ],
)
def test_bubble_formulas(changes: dict[str, object], expected: float) -> None:
    forward, backward, weight_grad = 1.0, 2.0, 0.5
    assert float(bubble_s(_grid(**changes), forward, backward, weight_grad)[0]) == pytest.approx(expected)


def test_no_pipeline_no_bubble() -> None:
    assert float(bubble_s(_grid(pp=1), 1.0, 2.0, 0.5)[0]) == 0.0


def test_activations_in_flight() -> None:
    assert float(activations_in_flight(_grid())[0]) == 4  # 1F1B: p
    assert float(activations_in_flight(_grid(schedule="gpipe"))[0]) == 16  # all m
    assert float(activations_in_flight(_grid(vpp=2))[0]) == pytest.approx(4 * (1 + 3 / 8))
    assert float(activations_in_flight(_grid(schedule="dualpipe"))[0]) == 5  # p + 1
    assert float(parameter_copies(_grid(schedule="dualpipe"))[0]) == 2
