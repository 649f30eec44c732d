"""A placement made on one window of expert load, scored on a later window (issue 28), by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.errors import UserInputError
from lightspeed.moe import (
    balance_experts,
    expert_load_from_array,
    holdout_score,
    read_expert_load,
    split_steps,
    synthetic_load,
    write_expert_load,
)

# One layer, 4 experts, 2 GPUs with one slot per expert. Window 1 has 6, 2, 4, 4 tokens: the only
# perfect split pairs experts 0+1 and 2+3 (8 and 8). Window 2 has 6, 6, 2, 2: the same pairs hold 12
# and 4 tokens, a busiest GPU of 12 over a mean of 8 = 1.5; placed afresh (0+2, 1+3) it is 8 and 8.
EARLIER = [[6.0, 2.0, 4.0, 4.0]]
LATER = [[6.0, 6.0, 2.0, 2.0]]


def test_a_placement_scored_on_a_later_window_by_hand() -> None:
    placement = balance_experts(load=EARLIER, num_replicas=4, num_gpus=2)
    score = holdout_score(placement=placement, later=LATER)
    assert score.in_sample_gpu_load_max_over_mean == (1.0,)
    assert score.out_of_sample_gpu_load_max_over_mean == (1.5,)
    assert score.refit_gpu_load_max_over_mean == (1.0,)
    assert score.unbalanced_gpu_load_max_over_mean == (1.5,)  # experts in order: 0+1 and 2+3 again
    assert score.overall_in_sample == 1.0
    assert score.overall_out_of_sample == 1.5
    # what serving the later window with the earlier placement costs over placing it afresh
    assert score.staleness == 1.5


def test_split_steps_keeps_the_later_steps_for_scoring() -> None:
    load = expert_load_from_array([[12.0, 8.0, 6.0, 6.0]], num_steps=2, step_counts=[EARLIER, LATER])
    earlier, later = split_steps(load, holdout_fraction=0.5)
    assert earlier.counts == ((6.0, 2.0, 4.0, 4.0),)
    assert later.counts == ((6.0, 6.0, 2.0, 2.0),)
    assert (earlier.num_steps, later.num_steps) == (1, 1)
    score = holdout_score(
        placement=balance_experts(load=earlier.array(), num_replicas=4, num_gpus=2), later=later.array()
    )
    assert score.overall_out_of_sample == 1.5


def test_split_steps_refuses_what_it_cannot_split() -> None:
    summed = expert_load_from_array([[1.0, 2.0]], num_steps=4)
    with pytest.raises(UserInputError, match="per-step counts"):
        split_steps(summed, holdout_fraction=0.25)
    one = expert_load_from_array([[1.0, 2.0]], step_counts=[[[1.0, 2.0]]])
    with pytest.raises(UserInputError, match="at least 2 steps"):
        split_steps(one, holdout_fraction=0.5)
    two = expert_load_from_array([[2.0, 2.0]], num_steps=2, step_counts=[[[1.0, 1.0]], [[1.0, 1.0]]])
    with pytest.raises(UserInputError, match="between 0 and 1"):
        split_steps(two, holdout_fraction=1.0)
    with pytest.raises(UserInputError, match="do not add up"):
        expert_load_from_array([[9.0, 2.0]], num_steps=2, step_counts=[[[1.0, 1.0]], [[1.0, 1.0]]])


def test_step_counts_survive_the_file(tmp_path: Path) -> None:
    load = expert_load_from_array([[12.0, 8.0, 6.0, 6.0]], num_steps=2, step_counts=[EARLIER, LATER])
    path = write_expert_load(load, tmp_path / "steps.json")
    assert json.loads(path.read_text())["step_counts"] == [[[6, 2, 4, 4]], [[6, 6, 2, 2]]]
    assert read_expert_load(path).step_counts == load.step_counts


def test_synthetic_steps_are_kept_and_sum_to_the_counts() -> None:
    load = synthetic_load(num_layers=2, num_experts=8, num_tokens=100, top_k=2, num_steps=4)
    assert load.num_steps == 4
    assert len(load.step_counts) == 4
    assert load.array().sum(axis=1).tolist() == [800.0, 800.0]  # 4 steps x 100 tokens x top-2
    earlier, later = split_steps(load, holdout_fraction=0.25)
    assert (earlier.num_steps, later.num_steps) == (3, 1)
