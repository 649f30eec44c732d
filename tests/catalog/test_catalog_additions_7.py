"""Catalog additions: Google's TPU7x (Ironwood), its ICI port and its pod, with the figures Google's
"TPU7x (Ironwood)" page prints, and the slice names and hardware cells that name it."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.catalog.torus import slice_name
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.validation.hardware_text import read_hardware, resolve_row_cluster, row_gpus
from lightspeed.sol.validation.published import PublishedRow, RowError

# Cloud TPU docs, "TPU7x (Ironwood)" (https://docs.cloud.google.com/tpu/docs/tpu7x), key specifications,
# TPU7x column: 9216 chips per pod; peak compute per chip BF16 2307 TFLOPs, FP8 4614 TFLOPs; HBM 192 GiB
# per chip at 7380 GBps; 2 TensorCores and 4 SparseCores per chip; bidirectional ICI 1200 GBps per chip;
# DCN 100 Gbps per chip. Google prints TPU peaks dense: no sparse rate.
TPU7X_DENSE_TERA = {"bf16": 2307.0, "fp8": 4614.0}
TPU7X_NAMES = ["tpu7x", "TPU7x", "tpu-7x", "Ironwood", "Ironwood TPU", "Google Cloud TPU7x"]


def _row(hardware: str, gpus: str = "") -> PublishedRow:
    cells = {"hardware": hardware, **({"GPUs": gpus} if gpus else {})}
    return PublishedRow(row_id="I", kind="train", line=2, cells=cells)


def test_tpu7x_carries_the_figures_google_prints(catalog: Catalog) -> None:
    tpu7x = catalog.accelerators["tpu7x"]
    assert (tpu7x.vendor, tpu7x.architecture, tpu7x.form_factor, tpu7x.family) == (
        "Google",
        "TPU7x",
        "chip",
        "google-tpu",
    )
    assert set(tpu7x.compute) == set(TPU7X_DENSE_TERA)
    for row, tera in TPU7X_DENSE_TERA.items():
        figure = tpu7x.compute[row]
        assert figure.dense_per_s == pytest.approx(tera * 1e12), row
        assert not figure.printed_with_sparsity
        assert figure.printed_per_s == figure.dense_per_s
    assert tpu7x.dense_flop_per_s("bf16") == pytest.approx(2307e12)
    assert tpu7x.memory_nominal_bytes == 192 * 2**30
    assert tpu7x.memory_usable_bytes == 192 * 2**30
    assert tpu7x.memory_bandwidth_bytes_per_s == pytest.approx(7380e9)
    assert tpu7x.tdp_w is None  # Google prints no TPU power
    assert tpu7x.num_logical_devices == 2  # dual chiplet: two TPU devices per chip


def test_tpu7x_ici_is_1200_gb_per_s_both_ways(catalog: Catalog) -> None:
    tpu7x = catalog.accelerator("tpu7x")
    assert tpu7x.scale_up is not None
    assert tpu7x.scale_up.link.name == "tpu-ici-7x"
    assert tpu7x.scale_up.bidirectional_bytes_per_s == pytest.approx(1200e9)
    assert tpu7x.scale_up.per_direction_bytes_per_s == pytest.approx(600e9)
    # per direction and bidirectional kept apart on the port
    assert tpu7x.scale_up.link.bidirectional_bytes_per_s == pytest.approx(
        2 * tpu7x.scale_up.link.per_direction_bytes_per_s
    )


def test_every_tpu7x_figure_names_its_source(catalog: Catalog) -> None:
    tpu7x = catalog.accelerator("tpu7x")
    cited = [figure.source for figure in tpu7x.compute.values()]
    cited += [tpu7x.memory_source, tpu7x.chip_source]
    assert tpu7x.scale_up is not None
    cited.append(tpu7x.scale_up.source)
    assert set(cited) == {"google-tpu7x"}
    assert tpu7x.sources["google-tpu7x"].url == "https://docs.cloud.google.com/tpu/docs/tpu7x"
    pod = catalog.system("tpu7x-pod")
    assert pod.sources[pod.source].url == "https://docs.cloud.google.com/tpu/docs/tpu7x"
    assert "tpu-ironwood" in pod.sources["gke-tpu-ironwood"].url
    link = catalog.link("tpu-ici-7x")
    assert link.sources[link.source].url == "https://docs.cloud.google.com/tpu/docs/tpu7x"


@pytest.mark.parametrize("name", TPU7X_NAMES)
def test_tpu7x_names_resolve(catalog: Catalog, name: str) -> None:
    found = catalog.find_device(name)
    assert found is not None
    assert found.name == "tpu7x"


def test_the_tpu7x_pod(catalog: Catalog) -> None:
    # 9,216 chips per pod; 4 chips and 2 NICs per VM (GKE); 100 Gbps of DCN per chip
    pod = catalog.system("tpu7x-pod")
    assert (pod.accelerator.name, pod.num_accelerators, pod.scale_up_domain_size) == ("tpu7x", 9216, 9216)
    assert pod.system_type == "pod"
    assert pod.torus_dimensions == (16, 24, 24)
    assert pod.torus_wraparound == (True, True, True)
    assert pod.scale_out is not None
    assert pod.scale_out.num_links == 9216 // 4 * 2
    dcn_gbit = pod.scale_out.num_links * pod.scale_out.link.per_direction_bytes_per_s * 8 / 1e9
    assert dcn_gbit / pod.num_accelerators == pytest.approx(100)
    assert catalog.systems_built_from("tpu7x")[0].name == "tpu7x-pod"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tpu7x-256", ("tpu7x-pod", 128)),  # TensorCores, two per chip
        ("tpu7x-128", ("tpu7x-pod", 64)),
        ("TPU7x-8", ("tpu7x-pod", 4)),
        ("tpu-7x-18432", ("tpu7x-pod", 9216)),
        ("tpu7x-4x8x8", ("tpu7x-pod", 256)),  # a topology counts chips
        ("tpu7x-2x2x1", ("tpu7x-pod", 4)),
        ("tpu7x-16x24x24", ("tpu7x-pod", 9216)),
        ("v5p-4x4x4", ("tpu-v5p-pod", 64)),
        ("TPU7x 256", None),  # with a space it is a count of chips, not a slice name
        ("tpu7x", None),
    ],
)
def test_tpu7x_slice_names(text: str, expected: tuple[str, int] | None) -> None:
    assert slice_name(text) == expected


def test_an_odd_tpu7x_core_count_is_refused() -> None:
    with pytest.raises(InvalidPlanError, match="tpu7x chip has 2"):
        slice_name("tpu7x-127")
    with pytest.raises(InvalidPlanError, match="no chips"):
        slice_name("tpu7x-0x4x4")


@pytest.mark.parametrize(
    ("system", "gpus", "expected"),
    [
        ("tpu7x", 256, ("tpu7x-pod", 1, 256, (4, 8, 8))),
        ("tpu7x-256", None, ("tpu7x-pod", 1, 128, (4, 4, 8))),
        ("tpu7x-4x4x4", None, ("tpu7x-pod", 1, 64, (4, 4, 4))),
        ("Ironwood", 9216, ("tpu7x-pod", 1, 9216, (16, 24, 24))),
        ("tpu7x", 18432, ("tpu7x-pod", 2, 9216, (16, 24, 24))),  # two pods over the DCN
    ],
)
def test_a_tpu7x_request_takes_a_slice(
    catalog: Catalog, system: str, gpus: int | None, expected: tuple[str, int, int, tuple[int, ...]]
) -> None:
    cluster = catalog.resolve_cluster(system, num_accelerators=gpus)
    used = cluster.system
    assert (used.name, cluster.num_nodes, used.num_accelerators, used.torus_dimensions) == expected
    assert used.scale_up_domain_size == used.num_accelerators


def test_small_tpu7x_slices_are_meshes(catalog: Catalog) -> None:
    # whole 4x4x4 cubes wrap, smaller slices do not (as on v5p)
    small = catalog.resolve_cluster("tpu7x", num_accelerators=32).system
    assert (small.torus_dimensions, small.torus_wraparound) == ((2, 4, 4), (False, False, False))
    cube = catalog.resolve_cluster("tpu7x", num_accelerators=64).system
    assert cube.torus_wraparound == (True, True, True)


@pytest.mark.parametrize(
    "text",
    [
        "TPU7x",
        "Ironwood TPU (--device-type=tpu7x-4x8x8, --num-slices=1)",
        "Google Cloud TPU7x (Ironwood)",
        "tpu7x-4x8x8",
        "Ironwood",
    ],
)
def test_read_hardware_on_tpu7x_cells(catalog: Catalog, text: str) -> None:
    hardware, _ = read_hardware(catalog, text)
    assert hardware.system == "tpu7x-pod"
    assert (hardware.memory_gib, hardware.power_limit_w, hardware.fabric) == (None, None, None)
    assert catalog.system(hardware.system).accelerator.name == "tpu7x"


@pytest.mark.parametrize(
    ("text", "gpus", "expected"),
    [
        # (chips, slice shape, every axis wraps)
        ("tpu7x-4x8x8", "", (256, (4, 8, 8), True)),  # not 4 x 8 nodes times GPUs
        ("tpu7x-256", "", (128, (4, 4, 8), True)),
        ("TPU7x (Ironwood) 256 chips", "", (256, (4, 8, 8), True)),
        ("Ironwood x 32", "", (32, (2, 4, 4), False)),
        ("Ironwood TPU (--device-type=tpu7x-4x8x8, --num-slices=1)", "256", (256, (4, 8, 8), True)),
    ],
)
def test_rows_naming_tpu7x(
    catalog: Catalog, text: str, gpus: str, expected: tuple[int, tuple[int, ...], bool]
) -> None:
    num_gpus, _ = row_gpus(catalog, _row(text, gpus))
    cluster, notes = resolve_row_cluster(catalog, _row(text, gpus), num_gpus)
    system = cluster.system
    assert system.name == "tpu7x-pod"
    got = (cluster.num_accelerators, system.torus_dimensions, all(system.torus_wraparound))
    assert got == expected
    assert any("torus" in line for line in notes)


def test_a_device_type_flag_alone_does_not_count_chips(catalog: Catalog) -> None:
    # '--num-slices' could multiply the slice: the reader asks for the GPUs column, it does not guess
    with pytest.raises(RowError, match="GPUs is not reported"):
        row_gpus(catalog, _row("Ironwood TPU (--device-type=tpu7x-4x8x8, --num-slices=1)"))


def test_other_tpus_are_unchanged(catalog: Catalog) -> None:
    assert catalog.accelerator("TPU v5p").name == "tpu-v5p"
    assert catalog.accelerator("Trillium").name == "tpu-v6e"
    assert slice_name("v5p-128") == ("tpu-v5p-pod", 64)
    assert read_hardware(catalog, "TPU v6e (Trillium) 256 chips")[0].system == "tpu-v6e-pod"
