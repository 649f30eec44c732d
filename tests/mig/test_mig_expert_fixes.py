"""MIG defects an expert check found: memory units of slices and time shares, GPU matching against the
machine's layout, the choice when no slice is used, the layout drawing, tiny rates, -lgi rows checked
against their profile, GPUs whose MIG geometry is not sourced, unknown models and --plot paths."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import lightspeed.mig
from expect import one_line_error
from lightspeed.catalog import Catalog, load_catalog, load_mig_geometries, mig_geometry
from lightspeed.errors import DataFileError, InvalidPlanError, UserInputError
from lightspeed.mig import (
    MigPlacement,
    MigService,
    check_current_layout,
    mig_commands,
    parse_lgi,
    plan_mig,
    planner,
)
from lightspeed.mig.layout import min_cost_assignment
from lightspeed.mig.services import Capacity, read_workloads
from lightspeed.report.mig import layout_lines
from lightspeed.workload import ModelRegistry, load_models

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mig-workloads.toml"
GIB = 2**30
MIB = 2**20
# nvidia-smi on an H100 80GB HBM3: memory.total 81559 MiB (the catalog's reported figure)
H100_REPORTED_BYTES = 81559 * MIB
# nvidia-smi mig -lgip on an H100 80GB (J. Barrow's field notes, the data file's source): GiB per profile
H100_LGIP_GIB = {"1g.10gb": 9.75, "1g.20gb": 19.62, "2g.20gb": 19.62, "3g.40gb": 39.50, "7g.80gb": 79.25}
# sol/data/runtime.toml: reserve min(2 GiB, 5% of the device) plus 3% fragmentation
RESERVED_GIB, FRAGMENTATION = 2.0, 0.03

LGI_HEADER = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
"""


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def models() -> ModelRegistry:
    return load_models()


def _lgi(*rows: str) -> str:
    return LGI_HEADER + "".join(
        f"{row}\n+-------------------------------------------------------+\n" for row in rows
    )


# -- 2: a time-shared service gets its share of the memory the engines use ------------------------


def _reserved(device_bytes: float) -> float:
    return min(RESERVED_GIB * GIB, 0.05 * device_bytes) + FRAGMENTATION * device_bytes


def test_time_shares_size_memory_in_the_engines_units(
    catalog: Catalog, models: ModelRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each share's device must hold the weights plus that share of the free memory, where the free
    memory is the driver-reported 81559 MiB less the reserve and the weights. Before, the share kept the
    reported 85.5 GB (the engines size from it), so a 15% share got nearly the whole GPU's KV cache."""
    seen: list[tuple[float, float]] = []
    real = planner.slice_capacity

    def recording(**kwargs: Any) -> Capacity:
        if kwargs["target"].endswith("shared"):
            device = kwargs["cluster"].system.accelerator
            seen.append((kwargs["bound_scale"], device.memory_device_bytes))
        return real(**kwargs)

    monkeypatch.setattr(planner, "slice_capacity", recording)
    light = MigService("a", "llama-3-8b", "fp8", 512, 128, 0.5, 1.0, 0.1)
    plan = plan_mig(
        services=[light, replace(light, name="b")],
        accelerator=catalog.accelerator("h100-sxm"),
        catalog=catalog,
        models=models,
    )
    weights = next(c.weights_bytes for c in plan.capacities if c.target == "1 x h100-sxm")
    assert weights is not None
    free = H100_REPORTED_BYTES - _reserved(H100_REPORTED_BYTES) - weights
    assert seen
    for share, memory in seen:
        assert memory == pytest.approx(weights + share * free, rel=1e-9)
    fifteen = [memory for share, memory in seen if share == pytest.approx(0.15)]
    assert fifteen
    assert fifteen[0] < 0.3 * H100_REPORTED_BYTES  # not the whole GPU


def test_time_sharing_refusal_names_the_memory_the_engines_use(example_plan: Any) -> None:
    shared = example_plan.strategy("time-sharing")
    assert f"{H100_REPORTED_BYTES / 1e9:.1f} GB" in shared.reason  # 85.5 GB, not the listed 80 GB


# -- 3: slices and whole GPUs in the same units -------------------------------------------------------


@pytest.fixture(scope="module")
def example_plan(catalog: Catalog, models: ModelRegistry) -> Any:
    return plan_mig(
        services=read_workloads(EXAMPLE),
        accelerator=catalog.accelerator("h100-sxm"),
        catalog=catalog,
        models=models,
    )


@pytest.mark.parametrize(("profile", "gib"), sorted(H100_LGIP_GIB.items()))
def test_a_slice_has_the_memory_nvidia_smi_reports(catalog: Catalog, profile: str, gib: float) -> None:
    assert catalog.accelerator(f"h100-sxm/{profile}").memory_device_bytes == pytest.approx(gib * GIB)


def test_a_slice_without_a_recorded_figure_gets_its_share_of_the_whole_gpu(catalog: Catalog) -> None:
    whole = catalog.accelerator("h100-pcie")  # no reported memory: the listed 80 GB is what engines use
    assert whole.memory_device_bytes == pytest.approx(80e9)
    assert catalog.accelerator("h100-pcie/3g.40gb").memory_device_bytes == pytest.approx(80e9 * 4 / 8)
    assert catalog.accelerator("h100-pcie/1g.10gb").memory_device_bytes == pytest.approx(80e9 * 1 / 8)


def test_the_7g_slice_serves_about_what_the_whole_gpu_does(example_plan: Any) -> None:
    """7g.80gb holds all 132 SMs, all bandwidth and 79.25 GiB against the whole GPU's 79.65 GiB: Llama-3-70B
    FP8 (~70 GB of weights) keeps most of its KV room and rate (before: 0.39 against 2.79 requests/s)."""
    rates = {c.target: c.requests_per_s for c in example_plan.capacities if c.service == "assistant-70b"}
    assert rates["1 x h100-sxm"] > 0
    assert rates["7g.80gb"] >= 0.85 * rates["1 x h100-sxm"]
    assert rates["7g.80gb"] <= rates["1 x h100-sxm"]


# -- 5: the plan's GPUs go where the machine already has their layout ------------------------------


def test_a_layout_already_on_another_gpu_is_kept(catalog: Catalog) -> None:
    geometry = mig_geometry(catalog.accelerator("h100-sxm"))
    current = parse_lgi(
        _lgi(*(f"|   1  MIG 1g.20gb         15        {3 + i}          {2 * i}:2     |" for i in range(4)))
    )
    planned = [[MigPlacement(start, "1g.20gb") for start in (0, 2, 4, 6)], None]
    check = mig_commands(geometry, current, planned)
    assert check.matches
    assert check.commands == ()
    assert check.destroy == ()
    assert check.gpus == (1, 0)  # plan GPU 0 on GPU 1; the whole GPU on GPU 0, which has no instances


def test_an_instance_in_another_valid_slot_is_kept(catalog: Catalog) -> None:
    geometry = mig_geometry(catalog.accelerator("h100-sxm"))
    current = parse_lgi(_lgi("|   0  MIG 3g.40gb          9        2          4:4     |"))
    check = mig_commands(geometry, current, [[MigPlacement(0, "3g.40gb")]])  # the plan drew it at slot 0
    assert check.matches
    assert check.keep == ("GPU 0: 3g.40gb at slot 4",)


def test_matching_minimises_the_changes(catalog: Catalog) -> None:
    """GPU 0 has two 3g.40gb, GPU 1 seven 1g.10gb; the plan lists them the other way round: nothing to do."""
    geometry = mig_geometry(catalog.accelerator("h100-sxm"))
    rows = [f"|   0  MIG 3g.40gb          9        {1 + i}          {4 * i}:4     |" for i in range(2)]
    rows += [f"|   1  MIG 1g.10gb         19        {5 + i}          {i}:1     |" for i in range(7)]
    planned = [
        [MigPlacement(i, "1g.10gb") for i in range(7)],
        [MigPlacement(0, "3g.40gb"), MigPlacement(4, "3g.40gb")],
    ]
    check = mig_commands(geometry, parse_lgi(_lgi(*rows)), planned)
    assert check.matches
    assert check.gpus == (1, 0)


def test_min_cost_assignment_is_exact() -> None:
    costs = [[7, 3, 9, 4, 8], [2, 6, 1, 8, 5], [9, 4, 3, 2, 7], [5, 8, 6, 1, 3]]
    best = min(
        sum(costs[row][column] for row, column in enumerate(columns))
        for columns in itertools.permutations(range(5), 4)
    )
    chosen = min_cost_assignment(costs)
    assert len(set(chosen)) == 4
    assert sum(costs[row][column] for row, column in enumerate(chosen)) == best


# -- 6: a MIG plan with no slice is the whole-GPU plan ---------------------------------------------------


def test_a_plan_without_slices_is_not_called_isolated(catalog: Catalog, models: ModelRegistry) -> None:
    """Llama-3-70B in BF16 (~141 GB) fits no H100 slice: the MIG plan is whole GPUs with MIG off, the
    same as the whole-GPU plan, which is chosen; nothing claims slices isolate it."""
    big = MigService("big", "llama-3-70b", "bf16", 1024, 256, 0.5, 2.0, 0.1)
    plan = plan_mig(
        services=[big], accelerator=catalog.accelerator("h100-sxm"), catalog=catalog, models=models
    )
    assert not any(gpu.mig for gpu in plan.layout)
    assert plan.choice == "whole-gpu"
    text = " ".join(plan.explanation)
    assert "slices are isolated" not in text
    assert "same plan" in text
    assert "no MIG slice serves" in text


# -- 8: every instance's service is readable in the drawing --------------------------------------------


def test_the_drawing_names_the_service_of_every_instance() -> None:
    gpu = SimpleNamespace(
        index=0,
        mig=True,
        placements=(
            SimpleNamespace(start=0, profile="1g.23gb"),
            SimpleNamespace(start=1, profile="1g.23gb"),
            SimpleNamespace(start=2, profile="1g.45gb"),
        ),
        services=("chat", "code", "summarize"),
    )
    lines = layout_lines(SimpleNamespace(layout=(gpu,)), {"1g.23gb": 1, "1g.45gb": 2})  # type: ignore[arg-type]
    text = "\n".join(lines)
    for service in ("chat", "code", "summarize"):
        assert service in text
    assert lines[-1] == "keys: A chat, B code, C summarize"


# -- 9: any positive rate needs a copy -----------------------------------------------------------------


def test_a_tiny_rate_needs_one_copy(catalog: Catalog, models: ModelRegistry) -> None:
    assert Capacity("s", "t", 1, 2.0, None, None, "", None).instances_for(1e-300) == 1
    tiny = MigService("tiny", "llama-3-8b", "fp8", 512, 128, 1e-300, 1.0, 0.1)
    plan = plan_mig(
        services=[tiny], accelerator=catalog.accelerator("h100-sxm"), catalog=catalog, models=models
    )
    assert all(a.num_copies >= 1 for s in plan.strategies for a in s.assignments)
    assert plan.strategy("mig").num_gpus == 1


# -- 10: an -lgi row must match its profile --------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "fragments"),
    [
        ("|   0  MIG 3g.40gb          9        2          4:3     |", ("line 6", "placement size of 4")),
        ("|   0  MIG 1g.10gb          0        2          3:1     |", ("line 6", "profile ID 19")),
    ],
)
def test_an_lgi_row_that_is_not_its_profile_is_refused(
    catalog: Catalog, row: str, fragments: tuple[str, ...]
) -> None:
    geometry = mig_geometry(catalog.accelerator("h100-sxm"))
    with pytest.raises(InvalidPlanError) as raised:
        check_current_layout(geometry, parse_lgi(_lgi(row)))
    for fragment in fragments:
        assert fragment in str(raised.value)


def test_the_cli_refuses_such_a_row_in_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    current = tmp_path / "lgi.txt"
    current.write_text(_lgi("|   0  MIG 3g.40gb          9        2          4:3     |"), encoding="utf-8")
    one_line_error(
        run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm", "--current", str(current)),
        str(current),
        "line 6",
        "placement size of 4",
    )


# -- 13: geometries from NVIDIA's tables only; the others said plainly -----------------------------------


def test_an_unsourced_mig_gpu_is_said_so_without_another_gpus_profiles(run_cli) -> None:  # type: ignore[no-untyped-def]
    for gpu in ("gb200", "h20", "b300", "h800"):
        line = one_line_error(run_cli("mig", "profiles", "--gpu", gpu), "not in the catalog", "not sourced")
        assert "closest" not in line
    line = one_line_error(run_cli("mig", "profiles", "--gpu", "mi300x"), "no MIG geometry")
    assert "closest" not in line


def test_gpus_the_guide_covers_have_its_profiles(catalog: Catalog) -> None:
    geometries = load_mig_geometries()
    # the guide's H100 80GB table is "PCIe and SXM5": the same profiles; no SXM5 SM counts on the 114-SM PCIe
    pcie, sxm = geometries["h100-pcie"], geometries["h100-sxm"]
    assert [p.name for p in pcie.profiles] == [p.name for p in sxm.profiles]
    assert [p.placements for p in pcie.profiles] == [p.placements for p in sxm.profiles]
    assert all(p.num_sms is None and p.memory_bytes is None for p in pcie.profiles)
    # the guide's H100 96GB (H100 on GH200) table
    gh200 = geometries["gh200"]
    assert [(p.name, p.max_instances, p.num_compute_slices, p.num_memory_slices) for p in gh200.profiles] == [
        ("1g.12gb", 7, 1, 1),
        ("1g.12gb+me", 1, 1, 1),
        ("1g.24gb", 4, 1, 2),
        ("2g.24gb", 3, 2, 2),
        ("3g.48gb", 2, 3, 4),
        ("4g.48gb", 1, 4, 4),
        ("7g.96gb", 1, 7, 8),
    ]
    assert [p.num_copy_engines for p in gh200.profiles] == [1, 1, 1, 2, 3, 4, 8]
    # A100 PCIe cards: the guide's A100 profiles
    assert geometries["a100-pcie"] is geometries["a100-sxm"]
    assert geometries["a100-pcie-40gb"] is geometries["a100-sxm-40gb"]


def test_every_not_sourced_gpu_is_in_the_catalog_and_has_no_geometry(catalog: Catalog) -> None:
    from lightspeed.catalog.mig_profiles import not_sourced_mig_gpus

    geometries = load_mig_geometries()
    for name in not_sourced_mig_gpus():
        assert catalog.accelerator(name).name == name
        assert name not in geometries
        with pytest.raises(UserInputError, match="not sourced"):
            mig_geometry(catalog.accelerator(name))


# -- 15: an unknown model names the file and the service ---------------------------------------------------


def test_an_unknown_model_names_file_service_and_fix(models: ModelRegistry, tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(
        EXAMPLE.read_text(encoding="utf-8").replace('model = "llama-3-70b"', 'model = "llama-99"'),
        encoding="utf-8",
    )
    with pytest.raises(DataFileError) as raised:
        read_workloads(path, models)
    message = str(raised.value)
    for fragment in (
        str(path),
        "service 'assistant-70b'",
        "'llama-99'",
        "services[3].model",
        "lightspeed model list",
    ):
        assert fragment in message


# -- --plot: checked before planning, as every --plot is --------------------------------------------------


@pytest.mark.parametrize("target", ["layout.jpg", "/dev/null/x.png"])
def test_a_bad_plot_path_is_refused_before_planning(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    def never(**_: Any) -> None:
        raise AssertionError("planned before the --plot path was checked")

    monkeypatch.setattr(lightspeed.mig, "plan_mig", never)
    path = target if target.startswith("/") else str(tmp_path / target)
    one_line_error(run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm", "--plot", path))


def test_a_service_name_with_dollars_is_drawn_as_written(run_cli: Any, tmp_path: Path) -> None:
    # '$' starts matplotlib's mathtext: an unbalanced one raised ParseSyntaxException in the figure
    workloads = tmp_path / "dollars.toml"
    workloads.write_text(
        'schema_version = 1\nkind = "mig-workloads"\n\n[[services]]\nname = "chat $\\\\frac{$x"\n'
        'model = "llama-3.1-8b"\nprecision = "fp8"\ninput_tokens = 1024\noutput_tokens = 256\n'
        "requests_per_s = 1.0\nmax_ttft_ms = 500\nmax_tpot_ms = 40\n",
        encoding="utf-8",
    )
    plot = tmp_path / "layout.png"
    result = run_cli("mig", "plan", "--workloads", str(workloads), "--gpu", "h100-sxm", "--plot", str(plot))
    assert result.code == 0, result.err
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
