"""Round 12, FC1: user catalog records that contradict themselves are refused at load time (a
scale-up domain larger than its system or not dividing it, a CPU without its count, a power cap above
the TDP, a system power range upside down, an accelerator without compute rows), and an accelerator
named where a system belongs says so and names the spelling that works."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.errors import DataFileError, UnknownNameError

WriteToml = Callable[[str, str], Path]

_SOURCES = """
[sources.s]
title = "t"
url = "https://x"
"""


def _system(*, num_accelerators: int = 8, domain_size: int = 8, extra: str = "") -> str:
    """An 8-GPU H100 node record with the keys a test changes."""
    return f"""
schema_version = 1
kind = "system"
name = "mysys"
display_name = "My sys"
system_type = "node"
accelerator = "h100-sxm"
source = "s"
num_accelerators = {num_accelerators}
{extra}
{_SOURCES}
[scale_up]
domain_size = {domain_size}
in_network_reduction = false
source = "s"
"""


def _accelerator(*, compute: bool = True, power: str = "") -> str:
    rows = '[compute.bf16]\nprinted_tflop_per_s = 100.0\nprinted_with_sparsity = false\nsource = "s"\n'
    return f"""
schema_version = 1
kind = "accelerator"
name = "myacc"
display_name = "My acc"
vendor = "X"
architecture = "Y"
form_factor = "PCIe"
family = "nvidia-hopper"
{_SOURCES}
{rows if compute else ""}
[memory]
type = "HBM3"
nominal_gib = 80.0
bandwidth_tb_per_s = 2.0
source = "s"
{power}
"""


def _refused(path: Path) -> str:
    with pytest.raises(DataFileError) as raised:
        load_catalog([path])
    return str(raised.value)


# --- 1. the scale-up domain lies inside the system -------------------------------------------------


def test_a_domain_larger_than_the_node_is_refused(write_toml: WriteToml) -> None:
    # 16 GPUs on one NVLink fabric in an 8-GPU node would put NVLink between separate nodes
    message = _refused(write_toml("dom_gt.toml", _system(domain_size=16)))
    assert "scale_up.domain_size" in message
    assert "(16 accelerators) is larger than the system's 8 accelerators" in message


def test_a_domain_that_does_not_divide_the_node_is_refused(write_toml: WriteToml) -> None:
    # 8 GPUs cannot be cut into fabrics of 3 (8 = 2 x 3 + 2)
    message = _refused(write_toml("dom_notdiv.toml", _system(domain_size=3)))
    assert "(3 accelerators) does not divide the system's 8 accelerators" in message


@pytest.mark.parametrize("domain_size", [1, 2, 4, 8])
def test_a_domain_dividing_the_node_is_accepted(write_toml: WriteToml, domain_size: int) -> None:
    system = load_catalog([write_toml("ok.toml", _system(domain_size=domain_size))]).system("mysys")
    assert system.scale_up_domain_size == domain_size


def test_the_cli_refuses_the_domain_in_one_line(run_cli, write_toml: WriteToml) -> None:  # type: ignore[no-untyped-def]
    path = write_toml("dom_gt.toml", _system(domain_size=16))
    result = run_cli("--catalog", str(path), "hw", "show", "mysys")
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err


def test_every_shipped_system_domain_lies_inside_it(catalog: Catalog) -> None:
    # racks (NVL72: 72 of 72) and pods (v5e: 256 of 256) stay valid under the new check
    for system in catalog.systems.values():
        assert system.num_accelerators % system.scale_up_domain_size == 0, system.name
    assert catalog.system("gb200-nvl72").scale_up_domain_size == 72


# --- 2. a CPU needs its count ----------------------------------------------------------------------


def test_a_cpu_without_num_cpus_is_refused(write_toml: WriteToml) -> None:
    message = _refused(write_toml("cpu_nocount.toml", _system(extra='cpu = "grace"')))
    assert "num_cpus is required when cpu is given" in message


def test_a_cpu_with_zero_sockets_is_refused(write_toml: WriteToml) -> None:
    message = _refused(write_toml("cpu_zero.toml", _system(extra='cpu = "grace"\nnum_cpus = 0')))
    assert "'num_cpus'" in message


def test_a_cpu_with_its_count_is_kept(write_toml: WriteToml) -> None:
    path = write_toml("cpu_ok.toml", _system(extra='cpu = "grace"\nnum_cpus = 2'))
    system = load_catalog([path]).system("mysys")
    assert system.cpu is not None
    assert system.num_cpus == 2


# --- 3. power figures agree with each other --------------------------------------------------------


def test_a_power_limit_above_the_tdp_is_refused(write_toml: WriteToml) -> None:
    power = '[power]\ntdp_w = 700.0\nlimit_w = 900.0\nsource = "s"'
    message = _refused(write_toml("limit.toml", _accelerator(power=power)))
    assert "the power limit (900 W) is above tdp (700 W)" in message
    assert "power.limit" in message


def test_a_power_limit_at_or_below_the_tdp_is_kept(write_toml: WriteToml) -> None:
    power = '[power]\ntdp_w = 700.0\nlimit_w = 700.0\nsource = "s"'
    accelerator = load_catalog([write_toml("limit_ok.toml", _accelerator(power=power))]).accelerator("myacc")
    assert accelerator.power_limit_w == 700.0


def test_a_cap_above_an_extended_records_tdp_is_refused(write_toml: WriteToml) -> None:
    # h100-sxm's TDP is 700 W (its record); a cap of 800 W on top of it is no cap
    path = write_toml(
        "capped.toml",
        """
        schema_version = 1
        kind = "accelerator"
        name = "h100-capped"
        extends = "h100-sxm"
        [sources.cap]
        title = "t"
        url = "https://x"
        [power]
        limit_w = 800.0
        source = "cap"
        """,
    )
    assert "above tdp (700 W)" in _refused(path)


def test_a_system_power_range_upside_down_is_refused(write_toml: WriteToml) -> None:
    text = _system() + '[power]\nmax_kw = 1.0\nmin_kw = 5.0\nsource = "s"\n'
    message = _refused(write_toml("pw_inv.toml", text))
    assert "the minimum system power (5 kW) is above the maximum (1 kW)" in message
    assert "power.min" in message


# --- 4. an accelerator has compute ------------------------------------------------------------------


def test_an_accelerator_without_compute_rows_is_refused(write_toml: WriteToml) -> None:
    message = _refused(write_toml("no_compute.toml", _accelerator(compute=False)))
    assert "record 'myacc' has no compute figure" in message
    assert "add at least one [compute.<row>]" in message


# --- 5. an accelerator named as a system ----------------------------------------------------------


def _unknown(catalog: Catalog, text: str) -> str:
    with pytest.raises(UnknownNameError) as raised:
        catalog.resolve_cluster(text)
    return str(raised.value)


def test_a_count_of_sxm_gpus_names_the_nodes_that_hold_them(catalog: Catalog) -> None:
    # dgx-h100 holds 8 GPUs: 16 are 2 nodes, 12 need 2 nodes (16 GPUs)
    message = _unknown(catalog, "16xh100-sxm")
    assert message.startswith("h100-sxm is an accelerator, not a system: for 16 of them write 2xdgx-h100")
    assert catalog.parse_cluster("2xdgx-h100").num_accelerators == 16
    assert "write 2xdgx-h100 (2 x 8 accelerators = 16" in _unknown(catalog, "12xh100-sxm@ib-ndr:1nic")


def test_a_count_of_pcie_cards_names_the_server_spec(catalog: Catalog) -> None:
    message = _unknown(catalog, "3xl40s")
    assert message == "l40s is an accelerator, not a system: for 3 of them write 1x3xl40s"
    assert catalog.resolve_cluster("1x3xl40s").num_accelerators == 3


def test_a_count_of_rack_gpus_names_part_of_a_rack_or_whole_racks(catalog: Catalog) -> None:
    # gb200-nvl72 holds 72: 64 are part of one rack, 73 need 2 racks (144 GPUs)
    assert "write 1x64xgb200-nvl72" in _unknown(catalog, "64xgb200")
    assert catalog.resolve_cluster("1x64xgb200-nvl72").num_accelerators == 64
    assert "write 2xgb200-nvl72 (2 x 72 accelerators = 144" in _unknown(catalog, "73xgb200")


def test_a_system_lookup_of_an_accelerator_lists_its_systems(catalog: Catalog) -> None:
    with pytest.raises(UnknownNameError) as raised:
        catalog.system("h100-sxm")
    assert str(raised.value).startswith("h100-sxm is an accelerator, not a system: name a system built")
    assert "dgx-h100 (8)" in str(raised.value)


def test_a_spec_server_of_sxm_parts_names_their_node(catalog: Catalog) -> None:
    # 1x8xh100-sxm is not a PCIe server: the catalog builds h100-sxm into dgx-h100
    assert "write 1xdgx-h100" in _unknown(catalog, "1x8xh100-sxm")


def test_the_cli_says_the_name_is_an_accelerator(run_cli) -> None:  # type: ignore[no-untyped-def]
    for args in (("hw", "show", "16xh100-sxm"), ("cost", "cluster", "--system", "h100-sxm")):
        result = run_cli(*args)
        assert result.code == 2
        assert "h100-sxm is an accelerator, not a system" in result.err
        assert "unknown system" not in result.err
