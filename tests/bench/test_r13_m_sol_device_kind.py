"""Round 13 fix M, defect 1: a CPU run measured against an accelerator's SOL record (and a GPU run
against a CPU record) is refused before anything is timed or stored."""

from __future__ import annotations

import pytest

from expect import one_line_error
from lightspeed.bench import BenchDevice, device_sol
from lightspeed.catalog import load_catalog
from lightspeed.errors import UserInputError
from lightspeed.store import open_store

CPU = BenchDevice(kind="cpu", index=0, name="Some CPU", num_threads=1)
GPU = BenchDevice(kind="cuda", index=0, name="NVIDIA H100 80GB HBM3", num_threads=1)


@pytest.mark.parametrize("name", ["h100-sxm", "h100", "mi300x", "tpu-v5p"])
def test_an_accelerator_record_for_a_cpu_run_is_refused(name: str) -> None:
    with pytest.raises(UserInputError, match="is an accelerator record") as refused:
        device_sol(device=CPU, catalog=load_catalog(), sol_device=name)
    message = str(refused.value)
    assert "runs on the CPU" in message
    assert "a CPU record of 'lightspeed hw list'" in message
    assert "drop --sol-device" in message


def test_each_kind_still_names_its_own_record() -> None:
    catalog = load_catalog()
    assert device_sol(device=GPU, catalog=catalog, sol_device="h100-sxm").device_name == "h100-sxm"
    cpu_sol = device_sol(device=CPU, catalog=catalog, sol_device="xeon-platinum-8480c")
    assert cpu_sol.device_name == "xeon-platinum-8480c"
    with pytest.raises(UserInputError, match="is a CPU record"):
        device_sol(device=GPU, catalog=catalog, sol_device="xeon-platinum-8480c")


@pytest.mark.torch
@pytest.mark.parametrize(
    "args",
    [
        ("gemm", "--quick", "--dtype", "bf16", "--sol-device", "h100-sxm"),
        ("membw", "--quick", "--sol-device", "h100-sxm"),
    ],
)
def test_the_cli_refuses_before_timing_and_stores_nothing(run_cli, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    result = run_cli("bench", *args, "--device", "cpu")
    one_line_error(result, "--sol-device h100-sxm is an accelerator record", "lightspeed hw list")
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []
