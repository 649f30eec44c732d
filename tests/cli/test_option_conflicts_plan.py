"""``plan train`` and ``plan infer`` refuse the settings they would ignore, as ``--ep`` on a dense model
is refused: MoE settings on a dense model, virtual stages without pipeline stages, speculation's
knobs without draft tokens, the simulated run's size without a load, a batching mode beside
``--disaggregated``. A plan file that holds the defaults of those options (every ``--json`` output
does) is not refused; one that sets a contradiction is, as the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

TRAIN = ["plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64",
         "--zero", "3"]  # fmt: skip
INFER = ["plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--ep-dispatcher", "deepep"], ("--ep-dispatcher", "llama-3-8b is dense")),
        (["--ep-overlap"], ("--ep-overlap", "llama-3-8b is dense")),
        (["--no-ep-overlap"], ("--ep-overlap", "llama-3-8b is dense")),
        (["--expert-imbalance", "3"], ("--expert-imbalance", "llama-3-8b is dense")),
        (["--vpp", "4"], ("--vpp 4", "--pp 2 or more")),
        (["--vpp", "2", "--pp", "1"], ("--vpp 2", "--pp 2 or more")),
    ],
)
def test_plan_train_refuses(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*TRAIN, *args), *words)


def test_plan_train_keeps_moe_settings_on_a_moe_model_and_vpp_over_stages(run_cli) -> None:  # type: ignore[no-untyped-def]
    moe = ["plan", "train", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "8", "--ep", "8"]
    result = run_cli(
        *moe, "--global-batch", "64", "--zero", "1", "--ep-dispatcher", "deepep", "--no-fit-check", "--json"
    )
    assert result.code == 0, result.err
    staged = run_cli(*TRAIN[:-2], "--pp", "2", "--vpp", "2", "--no-fit-check", "--json")
    assert staged.code == 0, staged.err
    assert json.loads(staged.out)["plan"]["vpp"] == 2


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--acceptance", "0.8"], ("--acceptance", "--draft-tokens")),
        (["--draft-cost", "0.1"], ("--draft-cost", "--draft-tokens")),
        (["--requests", "50"], ("--requests", "--concurrency or --arrival-rate")),
        (["--seed", "3", "--warmup", "2"], ("--seed, --warmup", "--concurrency or --arrival-rate")),
        (["--concurrency", "8", "--batching", "static", "--requests", "50"], ("--requests", "continuous")),
        (["--expert-imbalance", "2"], ("--expert-imbalance", "llama-3-8b is dense")),
        (
            ["--disaggregated", "1:1", "--gpus", "2", "--batching", "static"],
            ("--batching static", "--disaggregated"),
        ),
        (["--disaggregated", "1:1", "--gpus", "2", "--batching", "decode"], ("--batching decode",)),
    ],
)
def test_plan_infer_refuses(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    base = INFER[:-2] if "--gpus" in args else INFER  # an option given twice is refused for that
    one_line_error(run_cli(*base, *args), *words)


def test_plan_infer_takes_them_where_they_apply(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(*INFER, "--draft-tokens", "3", "--acceptance", "0.8", "--draft-cost", "0.1").code == 0
    loaded = run_cli(*INFER, "--concurrency", "4", "--requests", "40", "--seed", "3", "--json")
    assert loaded.code == 0, loaded.err
    assert json.loads(loaded.out)["simulated"]["num_requests"] == 40
    pooled = run_cli(*INFER[:-2], "--disaggregated", "1:1", "--gpus", "2", "--batching", "continuous")
    assert pooled.code == 0, pooled.err


def test_plan_files_holding_the_defaults_are_not_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a --json output holds every default (acceptance, draft cost, requests, seed, warm-up, batching)
    for command, name in ((INFER, "infer.json"), (TRAIN, "train.json")):
        written = run_cli(*command, "--json")
        assert written.code == 0, written.err
        path = tmp_path / name
        path.write_text(written.out)
        again = run_cli(*command[:2], "--config", str(path), "--json")
        assert again.code == 0, again.err
    # the file gives the draft tokens and the load: the options that need them are taken
    plan = tmp_path / "speculative.toml"
    plan.write_text(
        'kind = "serving-plan"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\nnum_gpus = 1\n'
        "draft_tokens = 3\nconcurrency = 4\n"
    )
    result = run_cli("plan", "infer", "--config", str(plan), "--acceptance", "0.8", "--requests", "30")
    assert result.code == 0, result.err


def test_a_plan_file_that_sets_a_contradiction_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = 'model = "llama-3-8b"\nsystem = "dgx-h100"\n'
    train = tmp_path / "train.toml"
    train.write_text(f'kind = "training-plan"\n{base}global_batch_size = 64\nzero_stage = 3\nvpp = 4\n')
    one_line_error(run_cli("plan", "train", "--config", str(train)), "--vpp 4")
    infer = tmp_path / "infer.toml"
    infer.write_text(f'kind = "serving-plan"\n{base}num_gpus = 1\nexpert_imbalance = 2.0\n')
    one_line_error(run_cli("plan", "infer", "--config", str(infer)), "--expert-imbalance", "dense")
