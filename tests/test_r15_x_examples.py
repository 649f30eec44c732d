"""The examples refuse what they cannot use in one line, exit 2, no traceback: the calibration
example on a CPU whose peak or memory figure detection lacks (a VM), with options that give them;
the tiny-GPT example on a --run-dir it cannot make or did not make."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"r15_x_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def calibration() -> ModuleType:
    pytest.importorskip("torch")
    return _load("calibrate_cpu_step")


def _one_line(err: str, *fragments: str) -> str:
    assert "Traceback" not in err, err
    assert err.count("\n") == 1, repr(err)
    for fragment in fragments:
        assert fragment in err, err
    return err


def _vm_cpu(module: ModuleType):  # type: ignore[no-untyped-def]
    """This machine's CPU as a VM whose model the table lacks shows it: no peak, no memory figure."""
    detected = module.detect_cpu(catalog=module.load_catalog())

    def detect(**given: object):  # type: ignore[no-untyped-def]
        bandwidth = given.get("memory_bandwidth_bytes_per_s")
        return replace(
            detected,
            peak=None,
            microarchitecture=None,
            memory_bandwidth_bytes_per_s=bandwidth,
            memory_bandwidth_note="memory bandwidth given by the user"
            if bandwidth
            else "unknown: platform unknown",
            assumptions=("microarchitecture not in the table (a VM): no peak",),
            missing=(),
        )

    return detect


def test_calibration_example_names_the_options_for_missing_figures(
    calibration: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(calibration, "detect_cpu", _vm_cpu(calibration))
    monkeypatch.setattr(calibration, "measure_steps_s", lambda *_: pytest.fail("measured before refusing"))
    assert calibration.main(["--quick"]) == 2
    _one_line(
        capsys.readouterr().err,
        "calibrate_cpu_step.py: error: this CPU lacks figures the estimate needs: no peak FLOP/s",
        "give --peak-tflops",
        "no memory bandwidth",
        "give --memory-bandwidth",
    )
    assert calibration.main(["--quick", "--memory-bandwidth", "20GB/s"]) == 2
    err = _one_line(capsys.readouterr().err, "give --peak-tflops")
    assert "--memory-bandwidth" not in err  # given: only what is still missing is named


def test_calibration_example_builds_the_machine_from_the_figures_given(
    calibration: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(calibration, "detect_cpu", _vm_cpu(calibration))
    args = calibration.parse_args(["--peak-tflops", "1.5", "--memory-bandwidth", "20GB/s"])
    accelerator = calibration.local_system(cpu=calibration.local_cpu(args)).accelerator
    assert accelerator.compute["fp32"].dense_per_s == 1.5e12  # 1.5 TFLOP/s
    assert accelerator.compute["fp64"].dense_per_s == 0.75e12  # half of it, as the help says
    assert accelerator.memory_bandwidth_bytes_per_s == 20e9  # 20 GB/s, 1 GB = 1e9 bytes
    sol = calibration.sol_from_local_cpu(calibration.local_cpu(args), num_threads=None)
    assert sol.flop_per_s["fp32"] == 1.5e12
    assert "given by the user (--peak-tflops)" in sol.note


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "fast"])
def test_calibration_example_refuses_a_bad_figure(
    calibration: ModuleType, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        calibration.parse_args(["--peak-tflops", value])
    assert exited.value.code == 2
    assert "argument --peak-tflops: must be a finite number > 0" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tiny_gpt() -> ModuleType:
    pytest.importorskip("torch")
    return _load("train_tiny_gpt")


def test_tiny_gpt_refuses_a_run_dir_it_did_not_make(
    tiny_gpt: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "someone-elses"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert tiny_gpt.main(["--quick", "--run-dir", str(foreign)]) == 2
    _one_line(capsys.readouterr().err, "train_tiny_gpt.py: error: --run-dir", "was not made by this example")
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_tiny_gpt_refuses_a_run_dir_it_cannot_make(
    tiny_gpt: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert tiny_gpt.main(["--quick", "--run-dir", str(a_file)]) == 2
    _one_line(capsys.readouterr().err, f"--run-dir {a_file} is a file, not a folder")
    assert tiny_gpt.main(["--quick", "--run-dir", str(a_file / "run")]) == 2  # under a file
    _one_line(capsys.readouterr().err, f"--run-dir {a_file / 'run'} cannot be used: ")
    if sys.platform == "linux":  # procfs: no folder can be made there
        assert tiny_gpt.main(["--quick", "--run-dir", "/proc/r15-x-run"]) == 2
        _one_line(capsys.readouterr().err, "--run-dir /proc/r15-x-run cannot be used: ")


def _python_block(document: Path, heading: str) -> str:
    """The first ```python block after ``heading`` in ``document``."""
    text = document.read_text(encoding="utf-8")
    after = text[text.index(f"\n{heading}\n") :]
    start = after.index("```python\n") + len("```python\n")
    return after[start : after.index("```", start)]


def test_the_moe_python_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/moe.md's Python section, run as written on a load like the recorded Mixtral one (32
    layers, 8 experts, top-2): its names are imported from where they live."""
    from lightspeed.moe import synthetic_load, write_expert_load

    monkeypatch.chdir(tmp_path)
    load = synthetic_load(num_layers=32, num_experts=8, top_k=2, num_tokens=4096, skew=1.0)
    write_expert_load(load, tmp_path / "mixtral-tiny-load.json")
    names: dict[str, object] = {}
    exec(compile(_python_block(REPO / "docs" / "moe.md", "## Python"), "docs/moe.md", "exec"), names)
    assert 0 < names["effect"].imbalance_share < 1  # type: ignore[attr-defined]  # a share of the step
    assert names["plan"].ep == 8  # type: ignore[attr-defined]
