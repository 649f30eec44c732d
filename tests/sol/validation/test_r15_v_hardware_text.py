"""NIC counts in a free-text hardware cell (round 15, helper V), and the Ray address grammar.

A count of NICs is a whole number of cards: ``0x``, ``-8x``, ``1.5x`` and a count no node holds
make the row "not predicted" with a reason naming the count, never a silent 1 or 8.

Hand figures used below (public sources):

* AWS p5.48xlarge: 32 EFA NICs of 100 Gb/s, 3,200 Gb/s per instance, four a GPU (AWS EC2 P5
  page): the most NICs a node has today; lightspeed allows twice that, 64 a node.
* A DGX H100 holds 8 GPUs (NVIDIA DGX H100 datasheet): 64 NICs a node is 64 / 8 = 8 a GPU.
* A GB200 NVL72 rack holds 72 GPUs on 18 compute trays of 4 (NVIDIA GB200 NVL72 page): its record
  counts 72 NICs for the rack, 4 a tray, under 64 a tray.
* 3,200 Gb/s of EFA on 400 Gb/s NICs is 3,200 / 400 = 8 NICs; 409,600 Gb/s is 1,024 NICs.
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol.validation.hardware_text import HardwareTextError, read_hardware
from lightspeed.trace.ray_engine import parse_address
from user_rows import HEADER, validated_rows

DGX_H100_GPUS = 8
MOST_NICS_PER_NODE = 64  # twice p5.48xlarge's 32


def _nics(catalog: Catalog, network: str) -> tuple[str | None, int | None, int | None]:
    """(fabric, NICs per node, NICs per GPU) of an H100 in a DGX H100 on ``network``."""
    hardware, _ = read_hardware(catalog, f"H100-SXM5-80GB (DGX H100, {network})")
    return hardware.fabric, hardware.nics_per_node, hardware.nics_per_gpu


def _training_row(hardware: str) -> str:
    """GPT 1.7B on 32 GPUs, Megatron-LM's Table 1 row (the shape of published-dev.tsv's T1)."""
    cells = {
        "id": "X1",
        "kind": "train",
        "source": "Narayanan et al. SC21 Table 1",
        "model": "GPT 1.7B",
        "params_B": "1.7",
        "layers": "24",
        "hidden": "2304",
        "heads(kv)": "24",
        "ffn": "9216",
        "vocab": "51200",
        "seq": "2048",
        "global_batch": "512",
        "TP": "1",
        "PP": "1",
        "DP": "32",
        "GPUs": "32",
        "hardware": hardware,
        "precision": "fp16 mixed",
        "metric": "achieved TFLOP/s per GPU",
        "measured": "137",
        "confidence": "read",
    }
    return "\t".join(cells.get(column, "") for column in HEADER.split("\t"))


# --- 1: a stated count of 0 NICs is no NIC, not one ------------------------------------------------


@pytest.mark.parametrize(
    "network", ["0x EFA 400 Gb/s", "0 x InfiniBand 200Gb/s", "InfiniBand 0x200Gb/s", "0*100Gb RoCE"]
)
def test_a_count_of_zero_nics_is_refused_naming_it(catalog: Catalog, network: str) -> None:
    # before: read as one NIC a node ('0x EFA 400 Gb/s': 1 x efa-400g per node)
    with pytest.raises(HardwareTextError, match=r"counts 0 NICs .*whole number from 1 to 64"):
        _nics(catalog, network)


def test_a_row_counting_zero_nics_is_not_predicted(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = validated_rows(
        run_cli,
        tmp_path,
        _training_row("H100-SXM5-80GB (DGX H100, 0x EFA 400 Gb/s)"),
    )
    row = rows["X1"]
    assert row["predicted"] is None
    assert "counts 0 NICs ('0x EFA 400 Gb/s')" in row["reason"]


def test_a_stated_count_still_reads(catalog: Catalog) -> None:
    assert _nics(catalog, "8x EFA 400 Gb/s") == ("efa-400g", 8, None)
    assert _nics(catalog, "4*100Gb RoCE") == ("ethernet-100g", 4, None)
    assert _nics(catalog, "1x 100GbE per node") == ("ethernet-100g", 1, None)
    # a hyphen after a word is no sign: the count is 8
    hardware, _ = read_hardware(catalog, "H100-SXM5-80GB-8x EFA 400 Gb/s")
    assert (hardware.fabric, hardware.nics_per_node) == ("efa-400g", 8)


# --- 2: a count no node holds ----------------------------------------------------------------------


def test_a_count_above_any_node_is_refused(catalog: Catalog) -> None:
    # before: '99999999999999999999 x efa-400g per node', the prediction moved 289.5 -> 338.2
    with pytest.raises(HardwareTextError, match="counts 99999999999999999999 NICs"):
        _nics(catalog, "99999999999999999999x EFA 400 Gb/s")
    assert _nics(catalog, f"{MOST_NICS_PER_NODE}x EFA 400 Gb/s")[1] == MOST_NICS_PER_NODE
    with pytest.raises(HardwareTextError, match=f"counts {MOST_NICS_PER_NODE + 1} NICs"):
        _nics(catalog, f"{MOST_NICS_PER_NODE + 1}x EFA 400 Gb/s")


def test_a_count_per_gpu_is_held_to_a_nodes_bound(catalog: Catalog) -> None:
    most_per_gpu = MOST_NICS_PER_NODE // DGX_H100_GPUS  # 8
    assert _nics(catalog, "4x EFA 100 Gb/s per GPU") == ("efa-100g", None, 4)  # p5's 32 a node
    assert _nics(catalog, f"{most_per_gpu}x EFA 100 Gb/s per GPU")[2] == most_per_gpu
    with pytest.raises(HardwareTextError, match=f"counts {most_per_gpu + 1} NICs per GPU"):
        _nics(catalog, f"{most_per_gpu + 1}x EFA 100 Gb/s per GPU")


def test_an_efa_total_above_any_node_is_refused(catalog: Catalog) -> None:
    assert _nics(catalog, "EFA 3200 Gb/s") == ("efa-400g", 3200 // 400, None)
    with pytest.raises(HardwareTextError, match="1,024 NICs of 400 Gb/s"):
        _nics(catalog, "EFA 409600 Gb/s")


def test_a_racks_own_count_above_one_nodes_still_reads(catalog: Catalog) -> None:
    # 72 NICs for 18 trays of 4 GPUs: 4 a tray; the rack's own NICs, named again
    hardware, _ = read_hardware(catalog, "GB200 NVL72 (72x IB 400Gb/s)")
    assert hardware.fabric == "ib-ndr"


def test_thousands_of_digits_are_refused_not_a_crash(catalog: Catalog) -> None:
    # before: ValueError (Python reads no integer of over 4,300 digits), exit 70
    digits = "9" * 5000
    with pytest.raises(HardwareTextError, match="NICs"):
        _nics(catalog, f"{digits}x EFA 400 Gb/s")
    with pytest.raises(HardwareTextError, match="above any link's"):
        _nics(catalog, f"EFA {digits} Gb/s")


# --- 3: a fraction or a sign is never dropped -----------------------------------------------------


@pytest.mark.parametrize(
    ("network", "written"),
    [
        ("1.5x EFA 400 Gb/s", "1.5"),  # before: 1 NIC (the '1.' dropped)
        ("-8x EFA 400 Gb/s", "-8"),  # before: 8 NICs (the sign dropped)
        ("InfiniBand 1.5x200Gb/s", "1.5"),  # before: no speed read, the system's own NICs
        ("InfiniBand -8x200Gb/s", "-8"),
        ("2.5*100Gb RoCE", "2.5"),  # before: 8 NICs of 100 Gb/s
    ],
)
def test_a_fractional_or_negative_count_is_refused(catalog: Catalog, network: str, written: str) -> None:
    with pytest.raises(HardwareTextError, match=rf"counts {written} NICs"):
        _nics(catalog, network)


# --- 5: a Ray address of another form ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "hint"),
    [
        ("ray://[::1", "closed brackets"),  # before: read as host ':' port 1
        ("[::1]", "closed brackets"),  # a bracketed host with no port
        ("[[::1]:6379", "closed brackets"),
        ("head :6379", "a space"),
        ("head:6 379", "a space"),
        ("head:\u0666\u0663\u0667\u0669", ""),  # Arabic-Indic digits: not a port
    ],
)
def test_a_malformed_ray_address_is_refused_in_one_line(address: str, hint: str) -> None:
    with pytest.raises(UserInputError, match=r"is not HOST:PORT, ray://HOST:PORT or auto") as caught:
        parse_address(address, option="--ray-address")
    assert hint in str(caught.value)
    assert "\n" not in str(caught.value)


def test_doctor_refuses_an_unclosed_bracket(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("doctor", "--ray-address", "ray://[::1")
    assert result.code == 2
    assert result.out == ""
    assert result.err.count("\n") == 1
    assert "--ray-address 'ray://[::1' is not HOST:PORT" in result.err


def test_well_formed_ray_addresses_still_parse() -> None:
    assert parse_address("ray://[::1]:10001") == ("::1", 10001)
    assert parse_address("[fe80::1%eth0]:6379") == ("fe80::1%eth0", 6379)
    assert parse_address("head-node.example.com:6379") == ("head-node.example.com", 6379)
    assert parse_address("::1:6379") == ("::1", 6379)  # unbracketed: the port after the last colon
    with pytest.raises(UserInputError, match="the port must be 1 to 65535"):
        parse_address("head:" + "9" * 5000)
