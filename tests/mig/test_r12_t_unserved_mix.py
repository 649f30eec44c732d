"""``mig plan`` with a mix no strategy serves names the workloads file and says what to change,
by why it fails: a model too big for any group of whole GPUs (a smaller precision or a larger GPU),
bounds no group meets (looser bounds or a faster GPU), or more GPUs than allowed (more GPUs, or a
lighter mix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.mig import MigService, plan_mig
from lightspeed.workload import load_models

HEADER = 'schema_version = 1\nkind = "mig-workloads"\n'


def _workloads(
    tmp_path: Path, model: str, precision: str, *, rate: float, ttft_ms: float, tpot_ms: float
) -> Path:
    path = tmp_path / "mix.toml"
    path.write_text(
        HEADER
        + f'[[services]]\nname = "svc"\nmodel = "{model}"\nprecision = "{precision}"\n'
        + f"input_tokens = 1024\noutput_tokens = 256\nrequests_per_s = {rate}\n"
        + f"max_ttft_ms = {ttft_ms}\nmax_tpot_ms = {tpot_ms}\n",
        encoding="utf-8",
    )
    return path


def _fix(line: str) -> str:
    return line.split("; fix: ", 1)[1]


def test_a_model_too_big_for_a_node_asks_for_a_smaller_precision_or_larger_gpu(
    run_cli, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # By hand: 405e9 parameters x 2 bytes (bf16) = 810 GB of weights, more than 8 x 80 GB = 640 GB
    path = _workloads(tmp_path, "llama-3.1-405b", "bf16", rate=1.0, ttft_ms=2000, tpot_ms=100)
    line = one_line_error(run_cli("mig", "plan", "--workloads", str(path), "--gpu", "h100-sxm"), str(path))
    fix = _fix(line)
    assert "fits no 8 x h100-sxm in bf16" in fix
    assert "smaller precision than bf16 (e.g. fp8)" in fix
    assert "larger GPU" in fix
    assert "allow more GPUs" not in fix


def test_bounds_no_gpu_meets_ask_to_relax_them_or_a_faster_gpu(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # By hand: each output token reads the 8e9 fp8 weights once; split over 8 H100s at 3.35 TB/s each
    # that is 8e9 / (8 x 3.35e12) = 0.3 ms at the very least, 30 x a 0.01 ms TPOT bound
    path = _workloads(tmp_path, "llama-3.1-8b", "fp8", rate=1.0, ttft_ms=500, tpot_ms=0.01)
    line = one_line_error(run_cli("mig", "plan", "--workloads", str(path), "--gpu", "h100-sxm"), str(path))
    fix = _fix(line)
    assert "relax their max_ttft_ms / max_tpot_ms" in fix
    assert "faster GPU" in fix
    assert "'svc'" in fix
    assert "smaller precision" not in fix


def test_too_few_gpus_asks_for_more_or_a_lighter_mix(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # By hand: 2 x 8e9 x 1280 = 2.0e13 FLOP a request; 20,000 requests/s is 4.1e17 FLOP/s, over 200
    # H100s at their ~2e15 dense FP8 FLOP/s: not on 2 GPUs, nor on the 64 a plan may use at most
    path = _workloads(tmp_path, "llama-3.1-8b", "fp8", rate=20000.0, ttft_ms=500, tpot_ms=40)
    capped = one_line_error(
        run_cli("mig", "plan", "--workloads", str(path), "--gpu", "h100-sxm", "--gpus", "2"), str(path)
    )
    assert "allow more GPUs (--gpus, now 2)" in _fix(capped)
    assert "lighten the mix (fewer services, lower requests_per_s)" in _fix(capped)
    uncapped = one_line_error(
        run_cli("mig", "plan", "--workloads", str(path), "--gpu", "h100-sxm"), str(path)
    )
    assert "allow more GPUs" not in _fix(uncapped)  # 64 is the most --gpus takes
    assert "lighten the mix" in _fix(uncapped)


def test_the_library_says_what_to_change_too() -> None:
    catalog = load_catalog()
    huge = MigService("huge", "llama-3.1-405b", "bf16", 1024, 256, 1.0, 2.0, 0.1)
    with pytest.raises(InvalidPlanError, match=r"no strategy serves the mix.*; fix: .*smaller precision"):
        plan_mig(
            services=[huge],
            accelerator=catalog.accelerator("h100-sxm"),
            catalog=catalog,
            models=load_models(),
        )
