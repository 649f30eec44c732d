"""Reading the machine's MIG layout: through a replayed NVML (no GPU here), and the real one on a GPU."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from lightspeed.catalog import load_mig_geometries
from lightspeed.errors import MissingExtraError, UnsupportedError
from lightspeed.mig import GpuInstance, read_mig_layout


class _NvmlError(Exception):
    pass


def _fake_nvml(
    layout: dict[int, list[tuple[int, int, int, int]]], mig_on: dict[int, bool]
) -> types.ModuleType:
    """A pynvml stand-in replaying GPU instances: gpu -> [(profile id, instance id, start, size)]."""
    module = types.ModuleType("pynvml")
    profile_ids = [19, 20, 15, 14, 9, 5, 0]  # NVML profile index -> H100 profile ID
    module.NVMLError = _NvmlError  # type: ignore[attr-defined]
    module.NVML_DEVICE_MIG_ENABLE = 1  # type: ignore[attr-defined]
    module.NVML_GPU_INSTANCE_PROFILE_COUNT = 9  # type: ignore[attr-defined]
    module.nvmlInit = lambda: None  # type: ignore[attr-defined]
    module.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    module.nvmlDeviceGetCount = lambda: len(mig_on)  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByIndex = lambda index: index  # type: ignore[attr-defined]

    def mig_mode(handle: int) -> tuple[int, int]:
        if handle not in mig_on:
            raise _NvmlError("not supported")
        return (1 if mig_on[handle] else 0, 0)

    def profile_info(handle: int, index: int) -> SimpleNamespace:
        if index >= len(profile_ids):
            raise _NvmlError("profile not supported")
        return SimpleNamespace(id=profile_ids[index])

    def instances(handle: int, profile_id: int) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(id=i, start=s, size=z) for p, i, s, z in layout.get(handle, []) if p == profile_id
        ]

    module.nvmlDeviceGetMigMode = mig_mode  # type: ignore[attr-defined]
    module.nvmlDeviceGetGpuInstanceProfileInfo = profile_info  # type: ignore[attr-defined]
    module.nvmlDeviceGetGpuInstances = instances  # type: ignore[attr-defined]
    module.nvmlGpuInstanceGetInfo = lambda gi: SimpleNamespace(
        id=gi.id, placement=SimpleNamespace(start=gi.start, size=gi.size)
    )  # type: ignore[attr-defined]
    return module


def test_replayed_nvml_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_nvml({0: [(9, 2, 4, 4), (14, 3, 0, 2)], 1: [(0, 1, 0, 8)]}, {0: True, 1: False})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    names = {p.profile_id: p.name for p in load_mig_geometries()["h100-sxm"].profiles}
    rows = read_mig_layout(names)
    # GPU 1 has MIG off: its instances are not read
    assert rows == (
        GpuInstance(gpu=0, profile="2g.20gb", profile_id=14, instance_id=3, start=0, size=2),
        GpuInstance(gpu=0, profile="3g.40gb", profile_id=9, instance_id=2, start=4, size=4),
    )
    assert read_mig_layout()[0].profile == "profile-14"


def test_nvml_that_cannot_start(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_nvml({}, {})

    def fail() -> None:
        raise _NvmlError("driver not loaded")

    fake.nvmlInit = fail  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    with pytest.raises(UnsupportedError, match="nvidia-smi mig -lgi"):
        read_mig_layout()


def test_missing_nvml_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(MissingExtraError, match="monitor"):
        read_mig_layout()


@pytest.mark.gpu
def test_real_nvml_layout_is_consistent() -> None:
    """On a GPU machine: whatever the layout (often none), every row is a placement inside the 8 slots."""
    pytest.importorskip("pynvml")
    rows = read_mig_layout({p.profile_id: p.name for g in load_mig_geometries().values() for p in g.profiles})
    for row in rows:
        assert row.start >= 0
        assert row.start + row.size <= 8
