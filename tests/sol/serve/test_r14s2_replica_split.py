"""Round 14 fix S2, defect 5: a replica shape that does not tile the GPUs says what does. A replica
larger than the GPUs needs more GPUs (--replicas cannot help: it said "or set --replicas"); a smaller
one that does not divide them needs a multiple of its size."""

from __future__ import annotations

import pytest

from lightspeed.errors import UserInputError
from lightspeed.sol import ServingConfig


def _problem(config: ServingConfig, num_gpus: int) -> str:
    with pytest.raises(UserInputError) as caught:
        config.inference_plan(num_gpus=num_gpus, precision="fp8")
    return str(caught.value)


def test_a_replica_larger_than_the_gpus_asks_for_more_gpus_not_replicas() -> None:
    # tp 8 x pp 2 = 16 GPUs a replica, on one 8-GPU node
    message = _problem(ServingConfig(model="llama-3-8b", system="dgx-h100", tp=8, pp=2), 8)
    assert message.startswith(
        "one replica of tp x dp-attention x pp = 8 x 1 x 2 = 16 GPUs does not fit on 8 GPUs"
    ), message
    assert "give --gpus 16" in message
    assert "--replicas" not in message


def test_a_replica_that_does_not_divide_the_gpus_names_the_multiples() -> None:
    # 4 x 2 = 8 GPUs a replica on 12: the multiples of 8 around 12 are 8 and 16
    config = ServingConfig(model="llama-3-8b", system="dgx-h100", tp=4, pp=2, num_gpus=12)
    message = _problem(config, 12)
    assert message.startswith(
        "12 GPUs do not split into replicas of tp x dp-attention x pp = 4 x 1 x 2 = 8 GPUs"
    )
    assert "give --gpus a multiple of 8 (e.g. 8 or 16)" in message
    assert "--replicas" not in message  # --gpus 12 was given: part of them is refused later anyway


def test_without_gpus_given_replicas_may_use_part_of_the_system() -> None:
    # 2 x 3 = 6 GPUs a replica on the system's 8 (no --gpus): --replicas 1 runs on 6 of them
    message = _problem(ServingConfig(model="llama-3-8b", system="dgx-h100", tp=2, pp=3), 8)
    assert "give --gpus a multiple of 6 (e.g. 6 or 12)" in message
    assert message.endswith("or --replicas N to use N x 6 of them")


def test_more_stages_than_layers_says_how_many_stages_fit() -> None:
    # llama-3-70b has 80 layers (its config.json: num_hidden_layers 80): 81 stages leave one empty
    from lightspeed.errors import InvalidPlanError
    from lightspeed.sol.infer.plan import InferencePlan, validate_inference_plan
    from lightspeed.workload import load_models

    with pytest.raises(InvalidPlanError, match=r"pp=81 exceeds the 80 layers .*give --pp 80 or fewer"):
        validate_inference_plan(InferencePlan(pp=81, precision="fp8"), load_models().get("llama-3-70b"))
