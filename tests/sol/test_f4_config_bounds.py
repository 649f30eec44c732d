"""The job configurations hold every numeric field to its option's bounds at construction, so a
value passed from Python is refused in one line as the command line refuses it (F4 defects 1, 4,
7 and 8)."""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightspeed.cli import options as option_types
from lightspeed.errors import InvalidPlanError, LightspeedError, UserInputError
from lightspeed.jobs import run
from lightspeed.limits import OPTION_BOUNDS
from lightspeed.sol import ServingConfig, ServingSearchConfig, TrainingConfig, TrainingSearchConfig

TRAIN: dict[str, Any] = {
    "model": "llama-3-70b",
    "system": "dgx-h100",
    "num_gpus": 64,
    "global_batch_size": 256,
}
SERVE: dict[str, Any] = {"model": "llama-3-8b", "system": "dgx-h100"}
CONFIGS = (TrainingConfig, TrainingSearchConfig, ServingConfig, ServingSearchConfig)


def test_option_bounds_match_the_cli_option_types() -> None:
    """Each option type a field names has the same bounds in the configuration as on the command
    line (the click type's minimum and maximum; an open minimum is the configuration's ``above``)."""
    used = {
        item.metadata["option_type"]
        for config in CONFIGS
        for item in dataclasses.fields(config)
        if item.metadata.get("option_type")
    }
    assert used - set(OPTION_BOUNDS) == {"path", "SLO_TEXT"}  # no numbers: a file, an SLO's text
    for name, bounds in OPTION_BOUNDS.items():
        option = getattr(option_types, name)
        low = bounds.above if option.min_open else bounds.minimum
        high = bounds.below if option.max_open else bounds.maximum
        assert (low, high) == (option.minimum, option.maximum), name
        assert bounds.whole == isinstance(option, option_types.Integer | option_types.Pair), name


@pytest.mark.parametrize(
    ("config", "changes", "words"),
    [
        (TrainingConfig, {"tp": 0}, "tp must be a whole number >= 1"),
        (TrainingConfig, {"pp": 0}, "pp must be a whole number >= 1"),
        (TrainingConfig, {"cp": 0}, "cp must be a whole number >= 1"),
        (TrainingConfig, {"micro_batch_size": 0}, "micro_batch_size must be a whole number >= 1"),
        (TrainingConfig, {"global_batch_size": 0}, "global_batch_size must be a whole number >= 1"),
        (TrainingConfig, {"tp": 10**11}, "<= 10,000,000 (got 100000000000)"),
        (TrainingConfig, {"tp": "8"}, "(got '8', a str)"),
        (TrainingConfig, {"tp": 8.0}, "(got 8.0, a float)"),
        (TrainingConfig, {"tp": True}, "(got True, a bool)"),
        (TrainingConfig, {"seq_len": None}, "seq_len must be a whole number"),
        (TrainingConfig, {"zero_stage": 4}, "zero_stage must be a whole number >= 0 and <= 3"),
        (TrainingConfig, {"expert_imbalance": math.nan}, "expert_imbalance must be a finite number"),
        (TrainingConfig, {"num_tokens": math.inf}, "num_tokens must be a finite number"),
        (TrainingConfig, {"bf16_layers": (0, -1)}, "bf16_layers[1] must be a whole number >= 0"),
        (TrainingSearchConfig, {"top": 0}, "top must be a whole number >= 1"),
        (ServingConfig, {"tp": 0}, "tp must be a whole number >= 1"),
        (ServingConfig, {"replicas": 0}, "replicas must be a whole number >= 1"),
        (ServingConfig, {"input_tokens": 1000.5}, "input_tokens must be a whole number"),
        (ServingConfig, {"concurrency": 1.5}, "concurrency must be a whole number"),
        (ServingConfig, {"arrival_rate": math.nan}, "arrival_rate must be a finite number"),
        (ServingConfig, {"disaggregated": (0, 3)}, "disaggregated[0] must be a whole number >= 1"),
        (ServingConfig, {"disaggregated": (1,)}, "disaggregated must be two whole numbers"),
        (ServingConfig, {"num_requests": 1.5}, "num_requests must be a whole number"),
        (ServingConfig, {"acceptance": 1.5}, "acceptance must be a finite number >= 0 and < 1"),
        (ServingConfig, {"acceptance": 1.0}, "acceptance must be a finite number >= 0 and < 1"),
        (ServingSearchConfig, {"max_ttft_s": 0.0}, "max_ttft_s must be a finite number > 0"),
        (ServingSearchConfig, {"max_tpot_s": math.inf}, "max_tpot_s must be a finite number > 0"),
        (ServingSearchConfig, {"finalists": 0}, "finalists must be a whole number >= 1"),
    ],
)
def test_a_bad_field_is_refused_at_construction(
    config: type[Any], changes: dict[str, Any], words: str
) -> None:
    base = TRAIN if config in (TrainingConfig, TrainingSearchConfig) else SERVE
    with pytest.raises(UserInputError) as caught:
        config(**{**base, **changes})
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_tp_zero_is_refused_not_run_as_tp_one() -> None:
    """``tp=0`` used to run as tp=1 (``self.tp or 1``); a serving tp=0 divided by zero."""
    with pytest.raises(UserInputError, match="tp must be"):
        run(TrainingConfig(**TRAIN, tp=0, pp=2, check_fit=False))
    with pytest.raises(UserInputError, match="tp must be"):
        run(ServingConfig(**SERVE, tp=0))


def test_unset_optional_fields_and_numpy_integers_are_fine() -> None:
    config = TrainingConfig(**{**TRAIN, "tp": np.int64(8), "expert_imbalance": 2})
    assert config.tp == 8
    assert type(config.tp) is int
    assert config.expert_imbalance == 2.0
    assert type(config.expert_imbalance) is float
    assert config.pp is None
    assert config.training_plan(num_gpus=64).pp == 1
    assert ServingConfig(**SERVE, disaggregated=[1, 3]).disaggregated == (1, 3)


def test_a_changed_configuration_is_checked_too() -> None:
    with pytest.raises(UserInputError, match="pp must be"):
        TrainingConfig(**TRAIN).changed(pp=0)


def test_from_file_takes_a_string_path(tmp_path: Path) -> None:
    config = TrainingConfig(**TRAIN, tp=8, pp=2)
    path = tmp_path / "plan.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    assert TrainingConfig.from_file(str(path)) == config
    assert TrainingConfig.from_file(path) == config
    with pytest.raises(LightspeedError, match="no such file"):
        ServingConfig.from_file(str(tmp_path / "missing.toml"))
    with pytest.raises(UserInputError, match="takes a path"):
        TrainingConfig.from_file(None)  # type: ignore[arg-type]


def test_a_file_value_out_of_bounds_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(
        'kind = "training-plan"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\nglobal_batch_size = 64\ntp = 0\n',
        encoding="utf-8",
    )
    with pytest.raises(UserInputError, match=r"plan\.toml: tp must be a whole number >= 1"):
        TrainingConfig.from_file(path)


def test_an_explicit_1f1b_with_virtual_chunks_is_refused() -> None:
    """vpp=4 with schedule 1f1b ran interleaved while gpipe and zb1p with vpp=4 were refused; an
    unset schedule still means 1F1B, interleaved when vpp > 1."""
    with pytest.raises(InvalidPlanError, match="schedule 1f1b runs one chunk per pipeline stage and vpp=4"):
        TrainingConfig(**TRAIN, pp=2, vpp=4, schedule="1f1b")
    unset = TrainingConfig(**TRAIN, pp=2, vpp=4)
    assert unset.schedule is None
    assert unset.training_plan(num_gpus=64).effective_schedule == "interleaved"
    assert TrainingConfig(**TRAIN, pp=2).training_plan(num_gpus=64).effective_schedule == "1f1b"
    assert TrainingConfig(**TRAIN, pp=2, vpp=4, schedule="interleaved").schedule == "interleaved"


def test_a_saved_plan_names_the_command_that_runs_it() -> None:
    config = ServingConfig(**SERVE)
    assert config.to_toml().splitlines()[0].endswith("'lightspeed plan infer --config FILE'")
    first = config.to_toml(command="simulate").splitlines()[0]
    assert first == "# lightspeed serving-plan: run it with 'lightspeed simulate --config FILE'"


def test_run_refuses_what_is_not_a_configuration() -> None:
    for wrong in ({"model": "llama-3-8b"}, None):
        with pytest.raises(UserInputError, match="must be a job configuration"):
            run(wrong)  # type: ignore[call-overload]


def test_every_numeric_field_has_bounds() -> None:
    """A numeric field without an option type would escape the checks."""
    for config in CONFIGS:
        hints = typing.get_type_hints(config)
        for item in dataclasses.fields(config):
            args = set(typing.get_args(hints[item.name])) or {hints[item.name]}
            if args & {int, float} and not item.metadata.get("option_type"):
                raise AssertionError(f"{config.__name__}.{item.name} has no option type")
