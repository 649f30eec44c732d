"""Round 16, helper GS2: a saved ``nvidia-smi mig -lgi`` is refused when a row names a GPU index no
node has or is cut or changed, or when other text only mentions 'No GPU instances found'; the plan's
GPUs are matched over the GPUs the machine shows, not every index up to the highest."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import lightspeed.mig.layout
from expect import one_line_error
from lightspeed.catalog import load_catalog, mig_geometry
from lightspeed.catalog.mig_profiles import MigGeometry
from lightspeed.errors import TraceError
from lightspeed.mig import GpuInstance, MigPlacement, mig_commands, parse_lgi
from lightspeed.mig.device import MAX_GPUS_PER_NODE

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mig-workloads.toml"
FRAME = "+-------------------------------------------------------+"
HEADER = f"""{FRAME}
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
"""


def _row(gpu: int, instance: int = 2, start: int = 4) -> str:
    return f"|   {gpu}  MIG 3g.40gb          9        {instance}          {start}:4     |"


@pytest.fixture(scope="module")
def h100() -> MigGeometry:
    return mig_geometry(load_catalog().accelerator("h100-sxm"))


def test_a_node_numbers_its_gpus_below_the_limit() -> None:
    # DGX H100 and HGX B200 hold 8 GPUs, an HGX-2 16: a node's indexes stay well inside 0..63
    assert 16 <= MAX_GPUS_PER_NODE <= 1024
    assert parse_lgi(_row(MAX_GPUS_PER_NODE - 1))[0].gpu == MAX_GPUS_PER_NODE - 1


@pytest.mark.parametrize("digits", [str(MAX_GPUS_PER_NODE), "10000000", "1" + "0" * 20, "9" * 5000])
def test_a_gpu_index_no_node_has_is_refused_naming_its_line(digits: str) -> None:
    text = HEADER + f"|   {digits}  MIG 3g.40gb          9        2          4:4     |\n"
    with pytest.raises(TraceError, match=r"lgi\.txt:6: GPU index \d+(\.\.\.)? is not a GPU of one node"):
        parse_lgi(text, path="lgi.txt")


def test_a_huge_index_is_one_line_from_the_cli(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    current = tmp_path / "lgi.txt"
    current.write_text("|   10000000  MIG 3g.40gb  9  2  4:4     |\n", encoding="utf-8")
    one_line_error(
        run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm", "--current", str(current)),
        f"{current}:1: GPU index 10000000",
        f"0 to {MAX_GPUS_PER_NODE - 1}",
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("hello\nNo GPU instances found\n| 0  MIG 3g.40gb  9  2  4:4 |garbage\n", 3),  # the expert's file
        (f"{HEADER}{_row(0)[:-8]}\n{FRAME}\n", 6),  # a row cut short
        (f"{HEADER}|   0  MIG 3g.40gb          9        2          4-4     |\n", 6),  # changed
    ],
)
def test_a_mangled_row_is_refused_naming_its_line(text: str, line: int) -> None:
    with pytest.raises(TraceError, match=rf"^lgi\.txt:{line}: not a row of nvidia-smi mig -lgi output"):
        parse_lgi(text, path="lgi.txt")


@pytest.mark.parametrize(
    "text",
    [
        "junk text\nNo GPU instances found\n",  # other text mentioning the message: it read as no instances
        "No GPU instances found: Not Found\nuser@host:~$\n",
        f"{HEADER}{_row(0)}\n{FRAME}\nsome other output\n",
    ],
)
def test_other_text_is_refused_naming_its_line(text: str) -> None:
    with pytest.raises(TraceError, match=r"lgi\.txt:\d: '.*' is not nvidia-smi mig -lgi output"):
        parse_lgi(text, path="lgi.txt")


@pytest.mark.parametrize(
    "text",
    [
        "No GPU instances found: Not Found\n",
        "\nNo MIG-enabled devices found.\n\n",
        f"{HEADER}No GPU instances found: Not Found\n{FRAME}\n",
    ],
)
def test_nvidia_smi_saying_none_is_no_instances(text: str) -> None:
    assert parse_lgi(text) == ()


def test_the_real_table_still_reads_with_a_bom_and_crlf() -> None:
    text = "\ufeff" + (HEADER + f"{_row(0)}\n{FRAME}\n{_row(1, 3)}\n{FRAME}\n").replace("\n", "\r\n")
    assert [(row.gpu, row.line) for row in parse_lgi(text)] == [(0, 6), (1, 8)]


def test_matching_looks_at_the_gpus_present_not_every_index(
    h100: MigGeometry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GPU 5,000 (from Python, past parse_lgi's check) holds the plan's 3g.40gb: it is kept there,
    and the assignment weighs 1 + 1 GPUs (the plan's numbering and the one with instances), not
    5,001; 10,000,000 took 36 s and 1 GB."""
    sizes: list[int] = []
    solve = lightspeed.mig.layout.min_cost_assignment

    def counted(cost: list[list[int]]) -> list[int]:
        sizes.append(len(cost[0]))
        return solve(cost)

    monkeypatch.setattr(lightspeed.mig.layout, "min_cost_assignment", counted)
    current = [GpuInstance(gpu=5000, profile="3g.40gb", profile_id=9, instance_id=2, start=4, size=4)]
    check = mig_commands(h100, current, [[MigPlacement(4, "3g.40gb")]])
    assert check.matches
    assert check.gpus == (5000,)
    assert sizes == [3]  # GPU 0 (the plan's), GPU 1 (a spare without instances), GPU 5,000


Planned = list[list[MigPlacement] | None]


def _cost(
    h100: MigGeometry, on_gpu: dict[int, list[GpuInstance]], planned: Planned, gpus: tuple[int, ...]
) -> int:
    """The ordering _match_gpus minimises: instance changes, then MIG mode changes, then GPUs off
    the plan's numbering (its docstring), as one number."""
    weight = 2 * (len(planned) + 1)
    total = 0
    for index, (layout, gpu) in enumerate(zip(planned, gpus, strict=True)):
        changes, toggles = lightspeed.mig.layout._changes_count(h100, layout, on_gpu.get(gpu, []))
        total += (changes * weight + toggles) * weight + int(gpu != index)
    return total


THREE_G = [MigPlacement(0, "3g.40gb"), MigPlacement(4, "3g.40gb")]
SEVEN_1G = [MigPlacement(slot, "1g.10gb") for slot in range(7)]


@pytest.mark.parametrize(
    ("rows", "planned"),
    [
        ([_row(4)], [THREE_G, None]),
        ([_row(0), _row(6, 3, 0)], [SEVEN_1G, THREE_G, None]),
        ([_row(2), _row(5, 3)], [None, None, THREE_G]),
        ([_row(7)], [SEVEN_1G]),
    ],
)
def test_matching_over_present_gpus_finds_the_best_of_every_gpu(
    h100: MigGeometry,
    rows: list[str],
    planned: Planned,
) -> None:
    """The best assignment over every GPU up to the highest index (each tried in turn) costs what
    the one chosen over the GPUs present costs."""
    current = parse_lgi("\n".join(rows))
    on_gpu: dict[int, list[GpuInstance]] = {}
    for row in current:
        on_gpu.setdefault(row.gpu, []).append(row)
    every = range(max(len(planned), max(on_gpu) + 1))
    best = min(_cost(h100, on_gpu, planned, gpus) for gpus in itertools.permutations(every, len(planned)))
    chosen = mig_commands(h100, current, planned).gpus
    assert _cost(h100, on_gpu, planned, chosen) == best
