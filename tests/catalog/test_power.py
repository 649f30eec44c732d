"""System power records: every shipped file loads with a source per figure and agrees with the catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import load_catalog, load_power, power_of
from lightspeed.catalog.power import builtin_power_files, parse_power
from lightspeed.errors import DataFileError, UnknownNameError

GOOD = """schema_version = 1
kind = "system-power"
system = "dgx-h100"
cooling = "air"

[sources.a]
title = "a datasheet"

[node]
max_kw = 10.2
source = "a"

[draw]
training_share = 0.8
inference_share = 0.6
source = "a"

[rack]
nodes_per_rack = 4
liquid_heat_share = 0.0
source = "a"
"""


def test_every_power_file_names_a_catalog_system_with_plausible_figures() -> None:
    catalog = load_catalog()
    records = load_power()
    assert len(records) == len(builtin_power_files()) >= 6
    for record in records.values():
        system = catalog.system(record.system)
        per_gpu_w = record.max_power_w / system.num_accelerators
        assert 500.0 <= per_gpu_w <= 2500.0, record.system  # a GPU plus its share of host, fans, NICs
        assert 0.3 <= record.training_draw_share <= 1.0
        assert record.cooling in ("air", "liquid")
        assert all(part.source in record.sources for part in record.parts)


def test_power_records_agree_with_the_systems_printed_power() -> None:
    catalog = load_catalog()
    for name, record in load_power().items():
        system = catalog.system(name)
        if system.power_max_w is None:
            continue
        low = system.power_min_w or system.power_max_w
        assert low <= record.max_power_w <= system.power_max_w, name  # GB200 NVL72: 120 <= 128 <= 132 kW


def test_gb200_rack_is_the_sum_of_its_parts() -> None:
    rack = load_power()["gb200-nvl72"]
    assert [part.count for part in rack.parts] == [18, 1]
    assert rack.max_power_w == pytest.approx(18 * 6_000.0 + 20_000.0)
    assert rack.cooling == "liquid"
    assert rack.liquid_heat_share == 0.85


def test_unknown_system_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="dgx-h100"):
        power_of(load_power(), "dgx-h10")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("max_kw = 10.2", "max_kw = -10.2", "positive"),
        ("max_kw = 10.2", "max_kw = nan", "number"),
        ("max_kw = 10.2", "max_kw = 1e9", "2 MW"),
        ('cooling = "air"', 'cooling = "oil"', "cooling"),
        ("training_share = 0.8", "training_share = 1.5", "[0, 1]"),
        ('source = "a"\n\n[draw]', 'source = "b"\n\n[draw]', "source not declared"),
        ("nodes_per_rack = 4", "nodes_per_rack = 0", "nodes_per_rack"),
        ("[rack]", "[rack_]", "rack"),
    ],
)
def test_bad_power_files_fail_with_one_line(tmp_path: Path, old: str, new: str, words: str) -> None:
    path = tmp_path / "power.toml"
    path.write_text(GOOD.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(DataFileError) as error:
        parse_power(path)
    assert words in str(error.value)
    assert "\n" not in str(error.value)


def test_a_user_file_replaces_the_shipped_record(tmp_path: Path) -> None:
    path = tmp_path / "power.toml"
    path.write_text(GOOD, encoding="utf-8")
    assert parse_power(path).inference_draw_share == 0.6
    assert load_power([path])["dgx-h100"].training_draw_share == 0.8
