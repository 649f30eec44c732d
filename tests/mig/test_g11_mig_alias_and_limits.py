"""MIG: a model named by its alias is the same model (weights shared, loaded once); the limits of a
workloads file's rates and token counts are named with a fix."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.mig import plan_mig
from lightspeed.mig.services import read_workloads
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mig-workloads.toml"
ALIAS = "meta-llama/Llama-3.1-8B-Instruct"  # a Hugging Face name `model show llama-3.1-8b` lists


def test_the_alias_is_an_alias_of_the_examples_model() -> None:
    assert load_models().get(ALIAS).name == load_models().get("llama-3.1-8b").name


def test_an_alias_plans_as_the_model_it_names() -> None:
    catalog, models = load_catalog(), load_models()
    services = read_workloads(EXAMPLE)
    assert services[0].model == "llama-3.1-8b"
    aliased = (replace(services[0], model=ALIAS), *services[1:])

    def plan(chosen):  # type: ignore[no-untyped-def]
        h100 = catalog.accelerator("h100-sxm")
        return plan_mig(services=chosen, accelerator=h100, catalog=catalog, models=models)

    written, spelled = plan(services), plan(aliased)
    for name in ("mig", "whole-gpu", "time-sharing"):
        assert spelled.strategy(name).num_gpus == written.strategy(name).num_gpus, name
    # Two distinct models (Llama 3.1 8B, three services; Llama 3 70B, one), by hand: time-sharing's
    # refusal counts the weights of 2 models, not 3.
    reason = spelled.strategy("time-sharing").reason
    assert "the weights of the 2 models" in reason, reason


def _workloads(tmp_path: Path, **values: object) -> Path:
    fields = {"input_tokens": 1024, "output_tokens": 256, "requests_per_s": 2.0} | values
    lines = [f"{key} = {value}" for key, value in fields.items()]
    path = tmp_path / "w.toml"
    path.write_text(
        'schema_version = 1\nkind = "mig-workloads"\n[[services]]\nname = "chat"\nmodel = "llama-3.1-8b"\n'
        'precision = "fp8"\nmax_ttft_ms = 500\nmax_tpot_ms = 40\n' + "\n".join(lines) + "\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("key", "value", "fix"),
    [
        ("requests_per_s", "1e9", "write requests_per_s = <number above 0, at most 1,000,000>"),
        ("input_tokens", "2000000", "write input_tokens = <whole number >= 1, at most 1,000,000>"),
    ],
)
def test_too_large_names_the_limit_and_a_fix(tmp_path: Path, run_cli, key: str, value: str, fix: str) -> None:  # type: ignore[no-untyped-def]
    path = _workloads(tmp_path, **{key: value})
    result = run_cli("mig", "plan", "--workloads", str(path), "--gpu", "h100-sxm")
    one_line_error(result, f"services[0].{key}", "the limit is 1,000,000", f"fix: {fix}")
