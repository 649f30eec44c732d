"""Round 16 fix (helper G): nvidia-smi's "No MIG-enabled devices found." (MIG off) reads as no GPU
instances, as --nvml reads a machine with MIG off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.errors import TraceError
from lightspeed.mig import parse_lgi

# What `nvidia-smi mig -lgi` prints on a machine whose GPUs have MIG off.
MIG_OFF = "No MIG-enabled devices found.\n"


def test_mig_off_text_is_no_instances() -> None:
    assert parse_lgi(MIG_OFF) == ()


def test_other_text_is_still_refused() -> None:
    with pytest.raises(TraceError, match="No MIG-enabled devices found"):  # the fix names both texts
        parse_lgi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


def test_cli_plan_against_a_machine_with_mig_off(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    current = tmp_path / "lgi.txt"
    current.write_text(MIG_OFF, encoding="utf-8")
    result = run_cli(
        "mig", "plan", "--workloads", "examples/mig-workloads.toml", "--gpu", "h100-sxm", "--gpus", "2",
        "--current", str(current), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    check = json.loads(result.out)["check"]
    assert check["keep"] == []  # nothing there to keep or destroy
    assert check["destroy"] == []
    assert all(command.startswith("nvidia-smi") for command in check["commands"])
    assert any(command.endswith("-mig 1") for command in check["commands"])  # MIG turned on first
