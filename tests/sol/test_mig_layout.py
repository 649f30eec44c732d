"""MIG layouts: placement rules, packing onto the fewest GPUs, nvidia-smi commands from a replayed layout.

The replayed layout ``fixtures/mig/h100-lgi-dcgm-issue-138.txt`` is real
``nvidia-smi mig -lgi`` output from two H100 80GB GPUs, posted in
NVIDIA/DCGM issue #138 (2g.20gb at 0:2, 1g.10gb at 2:1 and 3:1, 3g.40gb at 4:4).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import MigGeometry, load_mig_geometries
from lightspeed.errors import InvalidPlanError, TraceError
from lightspeed.mig import GpuInstance, MigPlacement, check_layout, mig_commands, parse_lgi
from lightspeed.mig.layout import min_gpus

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mig" / "h100-lgi-dcgm-issue-138.txt"


@pytest.fixture(scope="module")
def h100() -> MigGeometry:
    return load_mig_geometries()["h100-sxm"]


def test_guide_examples_are_valid(h100: MigGeometry) -> None:
    check_layout(h100, [MigPlacement(0, "4g.40gb"), MigPlacement(4, "3g.40gb")])
    check_layout(
        h100,
        [
            MigPlacement(0, "2g.20gb"),
            MigPlacement(2, "2g.20gb"),
            MigPlacement(4, "2g.20gb"),
            MigPlacement(6, "1g.10gb"),
        ],
    )
    check_layout(h100, [MigPlacement(slot, "1g.10gb") for slot in range(7)])


@pytest.mark.parametrize(
    ("placements", "message"),
    [
        ([MigPlacement(0, "3g.40gb"), MigPlacement(3, "1g.10gb")], "overlaps"),  # 3g holds memory slots 0-3
        ([MigPlacement(2, "3g.40gb")], "may start at 0, 4"),
        ([MigPlacement(1, "1g.20gb")], "may start at 0, 2, 4, 6"),
        ([MigPlacement(0, "1g.10gb+me"), MigPlacement(1, "1g.10gb+me")], "more than 1"),
        ([MigPlacement(0, "7g.80gb"), MigPlacement(0, "1g.10gb")], "overlaps"),
        ([MigPlacement(0, "5g.50gb")], "5g.50gb"),
    ],
)
def test_invalid_layouts_say_why(h100: MigGeometry, placements: list[MigPlacement], message: str) -> None:
    with pytest.raises((InvalidPlanError, LookupError, ValueError), match=message):
        check_layout(h100, placements)


@pytest.mark.parametrize(
    ("demand", "gpus"),
    [
        ({"3g.40gb": 3}, 2),  # two per GPU
        ({"4g.40gb": 2}, 2),  # one per GPU
        ({"1g.20gb": 5}, 2),  # four per GPU (two memory slots each)
        ({"2g.20gb": 3, "1g.10gb": 1}, 1),  # 2g at 0, 2, 4 and 1g at 6
        ({"4g.40gb": 1, "3g.40gb": 1}, 1),
        ({"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}, 2),  # 8 compute slices
        ({"1g.10gb": 14}, 2),
        ({"7g.80gb": 3}, 3),
        ({}, 0),
    ],
)
def test_fewest_gpus_by_hand(h100: MigGeometry, demand: dict[str, int], gpus: int) -> None:
    layouts = min_gpus(h100, demand)
    assert layouts is not None
    assert len(layouts) == gpus
    counts: dict[str, int] = {}
    for layout in layouts:
        check_layout(h100, layout)
        for placement in layout:
            counts[placement.profile] = counts.get(placement.profile, 0) + 1
    assert counts == {name: count for name, count in demand.items() if count}


def test_packing_limit(h100: MigGeometry) -> None:
    assert min_gpus(h100, {"7g.80gb": 3}, limit=2) is None


def test_parse_replayed_lgi() -> None:
    rows = parse_lgi(FIXTURE.read_text(encoding="utf-8"))
    assert len(rows) == 8
    assert rows[0] == GpuInstance(gpu=0, profile="1g.10gb", profile_id=19, instance_id=9, start=2, size=1)
    assert {(row.profile, row.start, row.size) for row in rows if row.gpu == 1} == {
        ("1g.10gb", 2, 1),
        ("1g.10gb", 3, 1),
        ("2g.20gb", 0, 2),
        ("3g.40gb", 4, 4),
    }


def test_replayed_layout_is_valid(h100: MigGeometry) -> None:
    rows = parse_lgi(FIXTURE.read_text(encoding="utf-8"))
    check_layout(h100, [MigPlacement(row.start, row.profile) for row in rows if row.gpu == 0])


def test_parse_lgi_bad_input() -> None:
    with pytest.raises(TraceError, match="no GPU instance rows"):
        parse_lgi("hello\nworld\n")
    with pytest.raises(TraceError, match="bytes"):
        parse_lgi("x" * (2 << 20))
    assert parse_lgi("No GPU instances found: Not Found\n") == ()


def test_matching_layout_needs_no_commands(h100: MigGeometry) -> None:
    rows = parse_lgi(FIXTURE.read_text(encoding="utf-8"))
    planned = [[MigPlacement(row.start, row.profile) for row in rows if row.gpu == gpu] for gpu in (0, 1)]
    check = mig_commands(h100, rows, planned)
    assert check.matches
    assert check.commands == ()
    assert len(check.keep) == 8


def test_changed_layout_commands(h100: MigGeometry) -> None:
    rows = parse_lgi(FIXTURE.read_text(encoding="utf-8"))
    planned = [
        [
            *(MigPlacement(0, "2g.20gb"), MigPlacement(2, "1g.10gb"), MigPlacement(3, "1g.10gb")),
            *(MigPlacement(4, "2g.20gb"), MigPlacement(6, "1g.10gb")),
        ],
        None,  # GPU 1 runs whole
    ]
    check = mig_commands(h100, rows, planned)
    assert not check.matches
    assert check.commands == (
        "nvidia-smi mig -i 0 -gi 2 -dci",  # the 3g.40gb (GPU instance 2) at slot 4 goes
        "nvidia-smi mig -i 0 -gi 2 -dgi",
        "nvidia-smi mig -i 0 -cgi 2g.20gb,1g.10gb -C",
        "nvidia-smi mig -i 1 -gi 13 -dci",
        "nvidia-smi mig -i 1 -gi 13 -dgi",
        "nvidia-smi mig -i 1 -gi 14 -dci",
        "nvidia-smi mig -i 1 -gi 14 -dgi",
        "nvidia-smi mig -i 1 -gi 5 -dci",
        "nvidia-smi mig -i 1 -gi 5 -dgi",
        "nvidia-smi mig -i 1 -gi 1 -dci",
        "nvidia-smi mig -i 1 -gi 1 -dgi",
        "nvidia-smi -i 1 -mig 0",
    )
    assert check.create == ("GPU 0: 2g.20gb at slot 4", "GPU 0: 1g.10gb at slot 6")


def test_empty_gpu_gets_mig_on_and_largest_first(h100: MigGeometry) -> None:
    check = mig_commands(h100, [], [[MigPlacement(0, "1g.10gb"), MigPlacement(4, "3g.40gb")]])
    assert check.commands == ("nvidia-smi -i 0 -mig 1", "nvidia-smi mig -i 0 -cgi 3g.40gb,1g.10gb -C")


def test_invalid_plan_is_refused_before_commands(h100: MigGeometry) -> None:
    with pytest.raises(InvalidPlanError):
        mig_commands(h100, [], [[MigPlacement(0, "4g.40gb"), MigPlacement(0, "3g.40gb")]])
