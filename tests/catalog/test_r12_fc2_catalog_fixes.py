"""Round 12, FC2: BF16 wording on Arm cores, missing labels in `hw compare`, GB200 rack power sources,
DGX B300's printed nominal memory."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, derive_totals, load_power
from lightspeed.catalog.microarch import cpu_peak, load_microarchitectures


def test_a_core_without_a_bf16_rate_in_the_table_is_not_said_to_lack_bf16() -> None:
    # Neoverse V2 (Grace) implements Arm's BF16 extension (BFDOT, BFMMLA): only the table lacks a rate.
    peak = cpu_peak(
        microarchitecture=load_microarchitectures()["neoverse-v2"],
        flags=None,
        num_sockets=1,
        num_cores_per_socket=72,
        clock_hz=3.1e9,
        clock_note="base clock",
    )
    assert peak is not None
    assert peak.bf16_flop_per_s is None
    assert not any("in the ISA" in note for note in peak.assumptions)
    assert any("the table has no BF16 rate" in note for note in peak.assumptions)


def test_flags_without_a_listed_bf16_path_name_the_paths() -> None:
    # Sapphire Rapids lists AMX and AVX512_BF16; a CPU whose flags show neither has no BF16 peak.
    peak = cpu_peak(
        microarchitecture=load_microarchitectures()["sapphire-rapids"],
        flags=["avx512f"],
        num_sockets=1,
        num_cores_per_socket=1,
        clock_hz=2.0e9,
        clock_note="base clock",
    )
    assert peak is not None
    assert peak.bf16_flop_per_s is None
    assert any("amx-bf16, avx512-bf16" in note for note in peak.assumptions)


def test_show_grace_does_not_claim_the_isa_has_no_bf16(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "grace")
    assert result.code == 0
    assert "no BF16 FMA path in the ISA" not in result.out
    assert "no BF16 path" not in result.out


def test_compare_shows_a_missing_label_as_a_dash_not_differs(run_cli) -> None:  # type: ignore[no-untyped-def]
    # TPU v5p has no host link record: its cell and its comparison are "-", as for a missing number.
    result = run_cli("hw", "compare", "h100-pcie", "tpu-v5p")
    assert result.code == 0
    lines = [line for line in result.out.splitlines() if "pcie-5-x16" in line]
    assert len(lines) == 1
    cells = [cell.strip() for cell in lines[0].strip("│ ").split("│")]
    assert cells[-2:] == ["-", "-"]


def test_gb200_rack_power_sources_explain_their_difference(catalog: Catalog) -> None:
    # hw show prints the seed's range (claim 5: 120-132 kW); cost sums claim 15's parts:
    # 18 compute trays x 6 kW + 20 kW = 128 kW. Each source says which it is and names the other.
    system = catalog.system("gb200-nvl72")
    rack = load_power()["gb200-nvl72"]
    assert rack.max_power_w == pytest.approx(128_000.0)
    assert (system.power_min_w, system.power_max_w) == (pytest.approx(120_000.0), pytest.approx(132_000.0))
    system_title = system.sources[system.power_source].title
    rack_title = rack.sources[rack.parts[0].source].title
    assert "128 kW" in system_title
    assert "120-132 kW" in rack_title


def test_dgx_b300_printed_nominal_memory_is_8_x_288_gib(catalog: Catalog) -> None:
    # printed "2.3 TB" is 8 x 288 GB rounded; read as nominal (binary) memory: 8 x 288 GiB = 2,304 GiB
    row = derive_totals(system=catalog.system("dgx-b300")).row("memory_capacity_nominal")
    assert row.printed == pytest.approx(8 * 288 * 2**30)
    assert row.ratio == pytest.approx(1.0)
