"""MIG profile data against NVIDIA's MIG user guide, the placement rules, and slices as accelerators.

Golden values are typed in from the guide's "Supported MIG Profiles" tables
(fraction of memory and SMs, NVDEC/JPEG/OFA, copy engines, instances), its
``nvidia-smi mig -lgipp`` placements ({0..6}:1, {0,2,4,6}:2, {0,2,4}:2,
{0,4}:4, {0}:4, {0}:8) and ``nvidia-smi mig -lgip`` SM columns (A100-40GB in
the guide; H100 80GB from J. Barrow's field notes), and from hand arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_mig_geometries, mig_geometry, single_gpu_system
from lightspeed.catalog.mig_profiles import MigGeometry, parse_mig_geometry
from lightspeed.datafile import load_toml
from lightspeed.errors import DataFileError, UnknownNameError, UserInputError
from lightspeed.mig import gpu_layouts

# profile: (compute slices of 7, memory slices of 8, NVDEC, JPEG, OFA, copy engines, instances, SMs)
H100_80GB_GUIDE = {
    "1g.10gb": (1, 1, 1, 1, 0, 1, 7, 16),
    "1g.10gb+me": (1, 1, 1, 1, 1, 1, 1, 16),
    "1g.20gb": (1, 2, 1, 1, 0, 1, 4, 26),
    "2g.20gb": (2, 2, 2, 2, 0, 2, 3, 32),
    "3g.40gb": (3, 4, 3, 3, 0, 3, 2, 60),
    "4g.40gb": (4, 4, 4, 4, 0, 4, 1, 64),
    "7g.80gb": (7, 8, 7, 7, 1, 8, 1, 132),
}
A100_40GB_GUIDE = {
    "1g.5gb": (1, 1, 0, 0, 0, 1, 7, 14),
    "1g.5gb+me": (1, 1, 1, 1, 1, 1, 1, 14),
    "1g.10gb": (
        1,
        2,
        1,
        0,
        0,
        1,
        4,
        14,
    ),  # the guide's table prints 1/8; lgipp size 2 and 10 of 40 GB say 2/8
    "2g.10gb": (2, 2, 1, 0, 0, 2, 3, 28),
    "3g.20gb": (3, 4, 2, 0, 0, 3, 2, 42),
    "4g.20gb": (4, 4, 2, 0, 0, 4, 1, 56),
    "7g.40gb": (7, 8, 5, 1, 1, 7, 1, 98),
}
LGIPP = {1: (0, 1, 2, 3, 4, 5, 6), 2: (0, 2, 4, 6), 3: (0, 2, 4), 4: (0, 4), 5: (0,), 6: (0,)}
# profile IDs in nvidia-smi mig -lgip, in table order
PROFILE_IDS = (19, 20, 15, 14, 9, 5, 0)
NAMES = {
    "a100-sxm": ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "h100-nvl": ("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "h200-sxm": ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "b200": ("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
}


def _check_table(geometry: MigGeometry, table: dict[str, tuple[int, ...]]) -> None:
    assert [p.name for p in geometry.profiles] == list(table)
    for profile in geometry.profiles:
        row = (
            profile.num_compute_slices,
            profile.num_memory_slices,
            profile.num_decoders,
            profile.num_jpeg_decoders,
            profile.num_optical_flow_accelerators,
            profile.num_copy_engines,
            profile.max_instances,
            profile.num_sms,
        )
        assert row == table[profile.name], profile.name


def test_h100_80gb_matches_the_guide() -> None:
    _check_table(load_mig_geometries()["h100-sxm"], H100_80GB_GUIDE)


def test_a100_40gb_matches_the_guide() -> None:
    _check_table(load_mig_geometries()["a100-sxm-40gb"], A100_40GB_GUIDE)


@pytest.mark.parametrize("accelerator", ["a100-sxm-40gb", *NAMES])
def test_names_ids_and_placements_match_the_guide(accelerator: str) -> None:
    geometry = load_mig_geometries()[accelerator]
    if accelerator in NAMES:
        assert tuple(p.name for p in geometry.profiles) == NAMES[accelerator]
    assert tuple(p.profile_id for p in geometry.profiles) == PROFILE_IDS
    for index, profile in enumerate(geometry.profiles):
        assert profile.placements == LGIPP.get(index, LGIPP[1] if index == 0 else ())


@pytest.mark.parametrize("accelerator", sorted(load_mig_geometries()))
def test_instance_limits_follow_from_the_placements(accelerator: str) -> None:
    """The guide's 'instances available' column equals the most instances its placements can hold at once."""
    geometry = load_mig_geometries()[accelerator]
    layouts = gpu_layouts(geometry)
    for profile in geometry.profiles:
        most = max(sum(1 for p in layout if p.profile == profile.name) for layout in layouts)
        assert most == profile.max_instances, profile.name


@pytest.mark.parametrize("accelerator", sorted(load_mig_geometries()))
def test_every_layout_respects_seven_compute_and_eight_memory_slices(accelerator: str) -> None:
    geometry = load_mig_geometries()[accelerator]
    for layout in gpu_layouts(geometry):
        profiles = [geometry.profile(p.profile) for p in layout]
        assert sum(p.num_compute_slices for p in profiles) <= 7
        assert sum(p.num_memory_slices for p in profiles) <= 8


def test_one_g_layouts_are_every_subset_of_seven_slots() -> None:
    """Only 1g.10gb instances: any subset of the 7 start slots, 2**7 = 128 layouts."""
    geometry = load_mig_geometries()["h100-sxm"]
    only_1g = [layout for layout in gpu_layouts(geometry) if all(p.profile == "1g.10gb" for p in layout)]
    assert len(only_1g) == 128


def test_every_figure_has_a_declared_source() -> None:
    for geometry in load_mig_geometries().values():
        for profile in geometry.profiles:
            assert profile.source in geometry.sources
            assert profile.placement_source in geometry.sources
            assert (profile.num_sms is None) == (profile.sms_source == "")


def test_slice_is_a_scaled_accelerator(catalog: Catalog) -> None:
    part = catalog.accelerator("h100-sxm/3g.40gb")
    # 60 of 132 SMs x 989.5 TFLOP/s dense BF16 = 449.77 TFLOP/s; 4/8 of 3.35 TB/s and 80 GB
    assert part.dense_flop_per_s("bf16") / 1e12 == pytest.approx(449.77, abs=0.01)
    assert part.memory_bandwidth_bytes_per_s == pytest.approx(1.675e12)
    assert part.memory_usable_bytes == pytest.approx(40e9)
    assert part.l2_cache_bytes == pytest.approx(25e6)
    assert part.scale_up is None
    assert part.name == "h100-sxm/3g.40gb"


def test_slice_without_sm_count_uses_compute_slices(catalog: Catalog) -> None:
    part = catalog.accelerator("h200-sxm/3g.71gb")
    assert part.dense_flop_per_s("bf16") == pytest.approx(
        3 / 7 * catalog.accelerator("h200-sxm").dense_flop_per_s("bf16")
    )
    assert part.memory_usable_bytes == pytest.approx(141e9 / 2)


def test_slice_name_resolves_as_a_one_gpu_system(catalog: Catalog) -> None:
    cluster = catalog.resolve_cluster("h100-sxm/1g.20gb")
    assert cluster.num_accelerators == 1
    assert cluster.system.scale_up_domain_size == 1
    assert cluster.system.accelerator.num_compute_units == 26
    whole = catalog.resolve_cluster("h100-sxm")
    assert whole.system.accelerator.name == "h100-sxm"
    assert single_gpu_system(catalog.accelerator("b200")).num_accelerators == 1


def test_unknown_profile_and_non_mig_gpu_are_user_errors(catalog: Catalog) -> None:
    with pytest.raises(UnknownNameError, match=r"3g\.40gb"):
        catalog.accelerator("h100-sxm/3g.41gb")
    # a plain user error, no longer an unknown name with "closest" GPUs (whose profiles are not its own)
    with pytest.raises(UserInputError, match="MIG-capable"):
        mig_geometry(catalog.accelerator("mi300x"))
    with pytest.raises(UnknownNameError):
        catalog.accelerator("no-such-gpu/1g.10gb")


def _record(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("placements = [0, 4]", "placements = [0, 5]", "runs past"),
        ("placements = [0, 4]", "placements = []", "list of start slots"),
        ("placements = [0, 4]", "placements = [-1]", "runs past"),
        ("placements = [0, 4]", 'placements = ["0"]', "list of start slots"),
        ('name = "3g.40gb"', 'name = "1g.10gb"', "appears twice"),
        ('source = "mig-guide"\n', 'source = "nowhere"\n', "source not declared"),
        ("num_compute_slices = 3", "num_compute_slices = 9", "compute slices"),
        ("max_instances = 2", "max_instances = -1", "whole number"),
        (
            "num_memory_slices = 4\nmax_instances = 2",
            "num_memory_slices = 4\nmax_instance = 2",
            "unknown key",
        ),
    ],
)
def test_bad_data_files_name_the_field(
    write_toml: Callable[[str, str], Path], old: str, new: str, message: str
) -> None:
    shipped = Path(load_mig_geometries()["h100-sxm"].path)
    text = _record(shipped)
    assert old in text
    broken = write_toml("mig.toml", text.replace(old, new, 1))
    with pytest.raises(DataFileError, match=message):
        parse_mig_geometry(str(broken), load_toml(broken))


def test_user_mig_file_is_loaded_and_skipped_by_the_hardware_loader(
    write_toml: Callable[[str, str], Path],
) -> None:
    shipped = _record(Path(load_mig_geometries()["h100-sxm"].path))
    user = write_toml(
        "mine.toml", shipped.replace('accelerators = ["h100-sxm"]', 'accelerators = ["h100-pcie"]')
    )
    geometries = load_mig_geometries([user])
    assert geometries["h100-pcie"].profile("3g.40gb").num_sms == 60
    from lightspeed.catalog import load_catalog

    assert "h100-sxm" in load_catalog([user]).accelerators
