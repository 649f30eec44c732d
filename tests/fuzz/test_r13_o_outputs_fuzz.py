"""Every option that writes one file a user names, against what cannot take one (round 13, O).

A FIFO with no reader (opening it for writing would wait for one: an alarm fails a command that
blocks), a device, a folder, a path that ends in a separator (it names a folder), a file in a
folder that does not exist, an empty and a blank value: each is one line and exit 2, and nothing is
written. Plot options take an existing folder (a separator at its end too) and refuse a missing one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzzing import check, fails_if_blocked

ALARM_S = 20
LOAD = (
    '{"format": "lightspeed-expert-load", "schema_version": 1, "layers": [{"name": "l0", "counts": [3, 1]}]}'
)
PLAN = "plan infer --model llama-3-8b --system dgx-h100 --tp 1"
# every option that writes one file; {} is the path given
WRITERS = [
    f"{PLAN} --save-config {{}}",
    "plan train --model llama-3-8b --system dgx-h100 --gpus 8 --global-batch 64 --save-config {}",
    "results export --output {}",
    "moe synth --layers 2 --experts 8 --out {}",
    "report -o {}",
]
MAKES_ITS_FOLDER = {"report -o {}"}  # report -o makes a missing folder (report/html.py)
# each bad target and a word its refusal holds
TARGETS = {
    "fifo": "FIFO",
    "device": "character device",
    "folder": "is a folder",
    "trailing-separator": "ends in a separator",
    "missing-folder": "no folder",
    "empty": "names nothing to write",
    "blank": "names nothing to write",
}


@pytest.fixture
def alarm() -> Iterator[None]:
    with fails_if_blocked(ALARM_S, "in open()"):
        yield


def _target(folder: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(folder / "pipe")
        return str(folder / "pipe")
    return {
        "device": "/dev/null",
        "folder": str(folder),
        "trailing-separator": f"{folder}/new/",
        "missing-folder": f"{folder}/missing/out.json",
        "empty": "",
        "blank": " ",
    }[kind]


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (command, kind)
        for command in WRITERS
        for kind in TARGETS
        if not (command in MAKES_ITS_FOLDER and kind == "missing-folder")
    ],
)
def test_each_writer_refuses_each_bad_target(tmp_path: Path, alarm: None, command: str, kind: str) -> None:
    before = sorted(tmp_path.iterdir())
    target = _target(tmp_path, kind)
    args = [part.replace("{}", target) for part in command.split()]
    outcome = check(args)
    assert outcome.code == 2, f"{command} wrote to {kind}: {outcome.out[:300]}"
    assert TARGETS[kind] in outcome.err, outcome.err
    made = sorted(path for path in tmp_path.iterdir() if path.name != "pipe")
    assert made == [path for path in before if path.name != "pipe"], made


@pytest.mark.parametrize("value", ["", " ", "{}/missing/", "{}/missing/x.png", "{}/pipe"])
def test_moe_stats_plot_refuses(tmp_path: Path, alarm: None, value: str) -> None:
    load = tmp_path / "load.json"
    load.write_text(LOAD, encoding="utf-8")
    if value.endswith("pipe"):
        os.mkfifo(tmp_path / "pipe")
    outcome = check(["moe", "stats", str(load), "--gpus", "1", "--plot", value.replace("{}", str(tmp_path))])
    assert outcome.code == 2, outcome.out[:300]
    assert not (tmp_path / "missing.png").exists()


@pytest.mark.parametrize("value", ["8,", "8,,16", ",8", "8,8", "8, 08"])
def test_moe_stats_replicas_refuses(tmp_path: Path, value: str) -> None:
    load = tmp_path / "load.json"
    load.write_text(LOAD, encoding="utf-8")
    outcome = check(["moe", "stats", str(load), "--replicas", value])
    assert outcome.code == 2
    assert "--replicas" in outcome.err
