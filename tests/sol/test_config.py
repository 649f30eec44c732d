"""Job configurations (lightspeed.sol.config): one declaration per field; plan files read back exactly;
bad files are one error naming the key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.sol import (
    ServingConfig,
    ServingSearchConfig,
    TrainingConfig,
    TrainingSearchConfig,
    parse_plan_text,
    plan_file_kind,
)

# every field set away from its default, so a round trip that dropped or retyped one would show
TRAINING = TrainingConfig(
    model="llama-3-405b", system="dgx-h100", num_gpus=16384, tp=8, pp=16, vpp=6, cp=1,
    global_batch_size=2048, seq_len=8192, recompute="selective", precision="fp8", num_tokens=15.6e12,
    tp_overlap=True, dp_overlap=False, sequence_parallel=False, ep_overlap=None, zero_stage=0,
    schedule="interleaved", micro_batch_size=1, stack="megatron-core-2024", sharp=True, check_fit=False,
    expert_imbalance=1.0, uneven_pipeline=True, attention_impl="flash2", calibration="h100",
)  # fmt: skip
SERVING = ServingConfig(
    model="deepseek-v3", system="gb200-nvl72", num_gpus=72, tp=1, ep=32, dp_attention=8, precision="auto",
    input_tokens=2000, output_tokens=200, draft_tokens=3, acceptance=0.8, draft_cost=0.1,
    disaggregated=(1, 3), kv_precision="fp8", max_batch=256, serving="sglang-2025", arrival_rate=12.5,
    expert_load=("load-a.json", "load-b.json"), expert_replicas=288,
)  # fmt: skip
SEARCHES = (
    TrainingSearchConfig(
        model="llama-3-70b",
        system="dgx-h100",
        num_gpus=64,
        global_batch_size=128,
        top=3,
        schedules="1f1b,zb1p",
        compare_plan="tp=8,pp=2",
    ),
    ServingSearchConfig(
        model="llama-3-70b",
        system="dgx-h100",
        max_ttft_s=0.5,
        max_tpot_s=0.05,
        disaggregated=True,
        plan_family="tp-ep-pp",
    ),
)


@pytest.mark.parametrize("config", [TRAINING, SERVING, *SEARCHES], ids=lambda c: c.KIND)
def test_a_plan_file_reads_back_as_the_same_configuration(config: object, tmp_path: Path) -> None:
    assert isinstance(config, TrainingConfig | ServingConfig | TrainingSearchConfig | ServingSearchConfig)
    path = tmp_path / "plan.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    assert type(config).from_file(path) == config
    assert plan_file_kind(path) == config.KIND
    json_path = tmp_path / "out.json"  # a command's --json output carries the file's keys under "config"
    json_path.write_text('{"tp": 1, "config": ' + __import__("json").dumps(config.to_file_dict()) + "}")
    assert type(config).from_file(json_path) == config


def test_a_plan_file_names_what_a_reader_needs() -> None:
    text = TRAINING.to_toml()
    assert 'kind = "training-plan"' in text
    assert "schema_version = 1" in text
    assert "ep_overlap" not in text  # None: left to the stack, TOML has no null
    assert "lightspeed plan train --config FILE" in text


def test_unknown_key_names_the_closest_one(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"unknown key 'tpp' for a training-plan \(did you mean 'tp'\?\)"):
        TrainingConfig.from_toml_text('kind = "training-plan"\ntpp = 8\n', where="p.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('pp = "x"', r"Expected `int \| null`, got `str` - at `\$.pp`"),
        ("schema_version = 9", "schema_version = 9 is not supported"),
        ('kind = "serving-plan"', "is a 'serving-plan' file, not a 'training-plan'.*lightspeed plan infer"),
        ("tp = [", "not valid TOML"),
    ],
)
def test_bad_plan_files_are_one_error_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(DataFileError, match=message):
        TrainingConfig.from_toml_text(text + "\n", where="p.toml")


def test_conflicting_fields_are_refused() -> None:
    with pytest.raises(UserInputError, match="not both"):
        TrainingConfig(model="llama-3-8b", model_config="config.json")
    with pytest.raises(UserInputError, match="--expert-load or --expert-imbalance"):
        TrainingConfig(model="mixtral-8x7b", expert_load=("load.json",), expert_imbalance=1.3)


def test_the_plan_follows_the_fields() -> None:
    # 16,384 GPUs / (tp 8 x pp 16 x cp 1) = 128 data-parallel replicas, as Meta's Llama 3 405B run
    plan = TRAINING.training_plan(num_gpus=16384)
    assert (plan.tp, plan.pp, plan.dp, plan.vpp, plan.precision) == (8, 16, 128, 6, "fp8")
    assert plan.sequence_parallel is False
    assert plan.attention_impl == "flash2"
    serving = SERVING.inference_plan(num_gpus=72, precision="nvfp4")
    assert serving.disaggregated == (1, 3)
    assert serving.speculative is not None
    assert serving.speculative.num_draft_tokens == 3


def test_replicas_must_tile_the_gpus() -> None:
    config = ServingConfig(model="llama-3-70b", system="dgx-h100", tp=3)
    with pytest.raises(
        UserInputError, match="8 GPUs do not split into replicas of tp x dp-attention x pp = 3"
    ):
        config.inference_plan(num_gpus=8, precision="fp8")
    assert (
        ServingConfig(model="llama-3-70b", system="dgx-h100", tp=2)
        .inference_plan(num_gpus=8, precision="fp8")
        .replicas
        == 4
    )


def test_compare_plan_text() -> None:
    assert parse_plan_text("tp=8, pp=16, vpp=6, mb=1, recompute=selective", 16384) == {
        "tp": 8, "pp": 16, "vpp": 6, "micro_batch_size": 1, "recompute": "selective", "dp": 128,
    }  # fmt: skip
    with pytest.raises(UserInputError, match="tp x pp x cp = 3 does not divide the 16 GPUs"):
        parse_plan_text("tp=3", 16)


def test_every_field_says_how_it_appears_on_the_command_line() -> None:
    for config in (TrainingConfig, TrainingSearchConfig, ServingConfig, ServingSearchConfig):
        for item in dataclasses.fields(config):
            assert item.metadata.get("help"), f"{config.__name__}.{item.name} has no help text"


def test_a_plan_text_with_a_number_python_cannot_read_is_one_error() -> None:
    """A 5,000-digit value (Python reads whole numbers of at most 4,300 digits) in a plan's TOML
    text read through the library: the data-file error naming its line, not a ValueError."""
    text = 'kind = "training-plan"\ntp = ' + "9" * 5000
    with pytest.raises(DataFileError, match=r"plan file:2: not valid TOML \(a whole number of 5,000 digits"):
        TrainingConfig.from_toml_text(text)


@pytest.mark.parametrize(
    ("schedules", "words"),
    [
        ("1f1b,1f1b", "1f1b is given twice"),
        ("1f1b,gpipe,1F1B", "1F1B is given twice"),
        ("1f1b,,gpipe", "empty item"),
    ],
)
def test_a_search_refuses_a_schedule_twice_or_an_empty_one(schedules: str, words: str) -> None:
    """Through the library as through the CLI: a schedule tried twice would rank every plan twice
    and report a tie with itself; an empty item names nothing."""
    config = dataclasses.replace(SEARCHES[0], schedules=schedules)
    with pytest.raises(UserInputError, match=words):
        config.schedule_names()
    assert dataclasses.replace(SEARCHES[0], schedules="1f1b, gpipe").schedule_names() == ("1f1b", "gpipe")
