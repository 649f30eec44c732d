"""MIG planning: workloads files, slice capacities, the three strategies, and what a plan must satisfy."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_mig_geometries
from lightspeed.errors import DataFileError, InvalidPlanError
from lightspeed.mig import MigPlan, MigService, check_layout, plan_mig, read_workloads
from lightspeed.workload import ModelRegistry

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mig-workloads.toml"


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str, str], Path]:
    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture(scope="module")
def example_plan(catalog: Catalog, models: ModelRegistry) -> MigPlan:
    return plan_mig(
        services=read_workloads(EXAMPLE),
        accelerator=catalog.accelerator("h100-sxm"),
        catalog=catalog,
        models=models,
    )


def test_example_workloads_file() -> None:
    services = read_workloads(EXAMPLE)
    assert [s.name for s in services] == ["chat", "summarize", "code", "assistant-70b"]
    assert services[0].max_ttft_s == pytest.approx(0.5)
    assert services[0].max_tpot_s == pytest.approx(0.040)
    assert services[3].model == "llama-3-70b"


def test_example_plan_is_valid_and_meets_every_rate(example_plan: MigPlan) -> None:
    geometry = load_mig_geometries()["h100-sxm"]
    for gpu in example_plan.layout:
        if gpu.mig:
            check_layout(geometry, gpu.placements)
            assert len(gpu.services) == len(gpu.placements)
    mig = example_plan.strategy("mig")
    assert mig.num_gpus == len(example_plan.layout)
    services = {s.name: s for s in example_plan.services}
    for assignment in mig.assignments:
        service = services[assignment.service]
        assert assignment.num_copies * assignment.capacity_per_copy_requests_per_s >= service.requests_per_s
        assert assignment.ttft_s is not None
        assert assignment.ttft_s <= service.max_ttft_s
        assert assignment.tpot_s is not None
        assert assignment.tpot_s <= service.max_tpot_s
        assert assignment.latency_at == "requested rate"
    instances = [name for gpu in example_plan.layout for name in gpu.services]
    for assignment in mig.assignments:
        assert instances.count(assignment.service) == assignment.num_copies * (
            1 if assignment.target[0].isdigit() and "x" not in assignment.target else assignment.gpus_per_copy
        )


def test_example_plan_against_the_alternatives(example_plan: MigPlan) -> None:
    mig, whole, shared = (example_plan.strategy(n) for n in ("mig", "whole-gpu", "time-sharing"))
    assert whole.num_gpus is not None
    assert mig.num_gpus is not None
    assert mig.num_gpus <= whole.num_gpus  # whole GPUs are one of MIG's options
    # Llama-3-70B in FP8 is ~70 GB of weights: beside one copy of Llama-3.1-8B (~8 GB) it cannot share
    # one 80 GB GPU (the 8B model counts once, not once per service)
    assert shared.num_gpus is None
    assert "exceed one GPU" in shared.reason
    assert "2 models" in shared.reason


def test_whole_gpus_load_one_model_once_for_its_services(example_plan: MigPlan) -> None:
    """Issue 28: the whole-GPU baseline counted Llama-3.1-8B once per service (4 GPUs). One H100 with
    the model loaded once serves chat, summarize and code (each uses 7-21% of a GPU alone) in time
    shares, and the 70B takes one more: 2 GPUs, as many as the MIG plan."""
    whole = example_plan.strategy("whole-gpu")
    assert whole.num_gpus == 2
    shared = [a for a in whole.assignments if a.model == "llama-3.1-8b"]
    assert {a.service for a in shared} == {"chat", "summarize", "code"}
    assert len({a.engine for a in shared}) == 1  # one engine, one copy of the weights
    assert all(a.num_copies * a.gpus_per_copy == 1 for a in shared)
    assert sum(a.share for a in shared) <= 1.0
    services = {s.name: s for s in example_plan.services}
    for assignment in shared:
        assert assignment.num_copies * assignment.capacity_per_copy_requests_per_s >= (
            services[assignment.service].requests_per_s
        )
        assert assignment.tpot_s is not None
        assert assignment.tpot_s <= services[assignment.service].max_tpot_s
    assert "whole-gpu needs 2 GPU(s)" in example_plan.explanation
    assert example_plan.choice == "mig"
    assert example_plan.explanation[0].startswith("mig serves every service")


def test_mig_needs_at_least_the_slices_it_uses(example_plan: MigPlan) -> None:
    geometry = load_mig_geometries()["h100-sxm"]
    sliced = [gpu for gpu in example_plan.layout if gpu.mig]
    compute = sum(geometry.profile(p.profile).num_compute_slices for gpu in sliced for p in gpu.placements)
    memory = sum(geometry.profile(p.profile).num_memory_slices for gpu in sliced for p in gpu.placements)
    assert len(sliced) >= max(math.ceil(compute / 7), math.ceil(memory / 8))


def test_capacity_grows_with_the_slice(example_plan: MigPlan) -> None:
    order = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    chat = {c.target: c.requests_per_s for c in example_plan.capacities if c.service == "chat"}
    rates = [chat[name] for name in order]
    assert rates == sorted(rates)
    assert chat["1g.10gb"] == 0.0  # 8B in FP8 is ~9.1 GB of weights: no room in 10 GB less the reserve
    assert chat["7g.80gb"] == pytest.approx(chat["1 x h100-sxm"])  # 132 of 132 SMs, 8 of 8 memory slices


def test_time_sharing_when_the_models_fit(catalog: Catalog, models: ModelRegistry) -> None:
    light = MigService("a", "llama-3-8b", "fp8", 512, 128, 0.5, 1.0, 0.1)
    plan = plan_mig(
        services=[light, replace(light, name="b"), replace(light, name="c")],
        accelerator=catalog.accelerator("h100-sxm"),
        catalog=catalog,
        models=models,
    )
    shared = plan.strategy("time-sharing")
    assert shared.num_gpus == 1
    assert sum(a.share for a in shared.assignments) <= 1.0
    for assignment in shared.assignments:
        assert assignment.num_copies * assignment.capacity_per_copy_requests_per_s >= 0.5
    assert plan.strategy("whole-gpu").num_gpus == 1  # one model, loaded once, serves all three
    assert plan.strategy("mig").num_gpus == 1
    assert plan.choice == "mig"  # ties go to the isolated slices


def test_one_big_model_for_two_services_is_loaded_once(catalog: Catalog, models: ModelRegistry) -> None:
    """Two services of Llama-3-70B FP8 (~71 GB of weights each copy) on H200 (141 GB): loaded twice the
    weights fill the GPU, loaded once they leave ~60 GB of KV cache for both, so one GPU serves them."""
    light = MigService("a", "llama-3-70b", "fp8", 1024, 256, 0.5, 2.0, 0.1)
    plan = plan_mig(
        services=[light, replace(light, name="b")],
        accelerator=catalog.accelerator("h200-sxm"),
        catalog=catalog,
        models=models,
    )
    assert plan.strategy("whole-gpu").num_gpus == 1
    assert plan.strategy("time-sharing").num_gpus == 1
    assert plan.strategy("mig").num_gpus == 1  # MIG off on that GPU: the two services share it
    assert [gpu.services for gpu in plan.layout] == [("a", "b")]


def test_gpu_cap_makes_a_plan_impossible(catalog: Catalog, models: ModelRegistry) -> None:
    # 70B in FP8 fits one H100 (it ran in reality), but not at 50 requests/s
    big = MigService("big", "llama-3-70b", "fp8", 1024, 256, 50.0, 1.0, 0.06)
    with pytest.raises(InvalidPlanError, match="no strategy serves the mix"):
        plan_mig(
            services=[big],
            accelerator=catalog.accelerator("h100-sxm"),
            catalog=catalog,
            models=models,
            max_gpus=1,
        )


SERVICE = """
schema_version = 1
kind = "mig-workloads"
[[services]]
name = "chat"
model = "llama-3-8b"
input_tokens = 1024
output_tokens = 256
requests_per_s = 1.0
max_ttft_ms = 500
max_tpot_ms = 50
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("requests_per_s = 1.0", "requests_per_s = -1.0", "positive"),
        ("requests_per_s = 1.0", "requests_per_s = nan", "expected a number"),
        ("requests_per_s = 1.0", "requests_per_s = inf", "expected a number"),
        ("requests_per_s = 1.0", "requests_per_s = 1e12", "implausibly large"),
        ("input_tokens = 1024", "input_tokens = 0", "whole number"),
        ("input_tokens = 1024", "input_tokens = 99999999", "implausibly large"),
        ("max_tpot_ms = 50", "max_tpot_ms = 0", "positive"),
        ("max_tpot_ms = 50", "", "missing figure"),
        ("max_tpot_ms = 50", "max_tpot_ms = 50\ncolour = 1", "unknown key"),
        ('kind = "mig-workloads"', 'kind = "cluster"', "not a workloads file"),
        ("[[services]]", "[[services]]\n[services.x]\ny=1", "unknown key"),
    ],
)
def test_bad_workloads_files(
    write_toml: Callable[[str, str], Path], old: str, new: str, message: str
) -> None:
    path = write_toml("w.toml", SERVICE.replace(old, new, 1))
    with pytest.raises(DataFileError, match=message):
        read_workloads(path)


def test_workloads_file_shapes(write_toml: Callable[[str, str], Path]) -> None:
    with pytest.raises(DataFileError, match="expected 1 to 16 services"):
        read_workloads(write_toml("empty.toml", 'schema_version = 1\nkind = "mig-workloads"\n'))
    twice = SERVICE + SERVICE[SERVICE.index("[[services]]") :]
    with pytest.raises(DataFileError, match="share a name"):
        read_workloads(write_toml("twice.toml", twice))
    with pytest.raises(DataFileError, match="invalid TOML"):
        read_workloads(write_toml("cut.toml", SERVICE[:-30]))
    deep = 'schema_version = 1\nkind = "mig-workloads"\nservices = ' + "[" * 50 + "]" * 50 + "\n"
    with pytest.raises(DataFileError):
        read_workloads(write_toml("deep.toml", deep))
