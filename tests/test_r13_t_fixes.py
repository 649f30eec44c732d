"""Round 13, helper T: an installed PyTorch that cannot be imported skips the tour's training like a
missing one, and the tiny-GPT example surfaces its child's own last error line; an ``--out`` under a
file says so; ``run:latest`` on a store that does not exist reads as one sentence; an empty doctor
option is refused; the per-GPU throughput of ``plan train`` keeps its significant digits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lightspeed.errors import MissingExtraError, UserInputError, require_extra
from lightspeed.report.sol import count_with_its_digits
from lightspeed.store import MEMORY_STORE, open_store
from lightspeed.tour import steps as tour

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "train_tiny_gpt.py"
BROKEN = "broken CUDA wheel"


def _broken_package(root: Path, name: str, body: str = f"raise ImportError({BROKEN!r})\n") -> Path:
    """A package ``name`` under ``root`` that is found (it has a spec) but whose import runs ``body``."""
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(body)
    return root


# 1. an installed but broken extra -------------------------------------------------------------


def test_require_extra_imports_and_names_a_broken_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_broken_package(tmp_path, "r13_broken_extra")))
    with pytest.raises(MissingExtraError) as raised:
        require_extra("r13_broken_extra", "bench", "training the tiny GPT")
    assert raised.value.problem == BROKEN
    assert str(raised.value) == (
        "training the tiny GPT needs the 'r13_broken_extra' package, which is installed but cannot be "
        f"imported ({BROKEN}); reinstall it with pip install --upgrade 'lightspeed[bench]'"
    )


def test_require_extra_returns_the_module_and_still_names_a_missing_one() -> None:
    assert require_extra("json", "none", "reading JSON").__name__ == "json"
    with pytest.raises(MissingExtraError, match=r"; install it with pip install 'lightspeed\[bench\]'$"):
        require_extra("r13_surely_not_a_module", "bench", "GEMM benchmarks")


def test_the_tour_skips_training_when_torch_is_installed_but_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_broken_package(tmp_path / "site", "torch")))
    for name in [name for name in sys.modules if name == "torch" or name.startswith("torch.")]:
        monkeypatch.delitem(sys.modules, name)  # restored after the test
    stand_in = tmp_path / "example.py"  # were the check passed, the step would fail on this
    stand_in.write_text("import sys\nsys.exit('error: the first segment should have been killed')\n")
    monkeypatch.setattr(tour, "EXAMPLE", stand_in)
    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=None, models=None)  # type: ignore[arg-type]
    step = tour.run_step("train", "Train", tour.step_train, state)
    assert step.status == "skipped"
    assert f"installed but cannot be imported ({BROKEN})" in step.reason
    assert "pip install --upgrade 'lightspeed[bench]'" in step.reason


def _example(tmp_path: Path, torch_body: str) -> subprocess.CompletedProcess[str]:
    site = _broken_package(tmp_path / "site", "torch", torch_body)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")])}
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "--quick", "--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def test_the_example_refuses_a_broken_torch_in_one_line(tmp_path: Path) -> None:
    done = _example(tmp_path, f"raise ImportError({BROKEN!r})\n")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: the tiny GPT example needs the 'torch' package, which is installed but cannot be "
        f"imported ({BROKEN}); reinstall it with pip install --upgrade 'lightspeed[bench]'"
    )


def test_the_example_ends_with_its_childs_own_last_error_line(tmp_path: Path) -> None:
    # torch imports in the parent but not in the child (the worker): the child's traceback ends
    # with the real reason, which the parent's last line (the one the tour shows) must carry
    body = "import sys\nif '--worker' in sys.argv:\n    raise ImportError('broken in the child')\n"
    done = _example(tmp_path, body)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "error: the first segment exited with 1: ImportError: broken in the child"
    )


# 2. an --out under a file ---------------------------------------------------------------------


@pytest.mark.parametrize("below", ["sub", "sub/deeper", ""])
def test_an_out_under_a_file_says_the_file_is_not_a_folder(tmp_path: Path, below: str) -> None:
    file = tmp_path / "f"
    file.write_text("x")
    out = file / below if below else file
    with pytest.raises(UserInputError) as raised:
        tour.check_out_dir(out)
    assert str(raised.value) == f"--out {out}: {file} is a file, not a folder; pick another --out"


# 3. run:latest on a store that does not exist -------------------------------------------------


def test_latest_on_a_store_that_does_not_exist_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIGHTSPEED_HOME", str(tmp_path))
    monkeypatch.delenv("LIGHTSPEED_STORE", raising=False)
    with open_store(MEMORY_STORE, create=False) as store, pytest.raises(UserInputError) as raised:
        store.run("latest")
    message = str(raised.value)
    assert message.startswith(
        f"the results store {tmp_path / 'results.sqlite'} does not exist yet, so it holds no run; fix: "
    )
    assert "'lightspeed tour'" in message
    assert "yet holds" not in message


def test_latest_on_an_empty_store_names_the_store_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.sqlite"
    with open_store(path, create=True) as store, pytest.raises(UserInputError) as raised:
        store.run("latest")
    assert str(raised.value).startswith(f"the results store {path} holds no complete run yet; fix: ")


# 4. an empty doctor option --------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--exporter", "--dcgm-host", "--ray-address"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_doctor_option_is_refused_in_one_line(run_cli, option: str, value: str) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("doctor", option, value)
    assert result.code == 2
    assert result.err.count("\n") == 1
    # the one-line printer folds runs of blanks, so '  ' may read ' '
    assert re.search(rf"{option} '\s*' is empty: give ", result.err), result.err
    assert "leave the option out" in result.err
    assert result.out == ""


# 6. the per-GPU throughput keeps its digits ---------------------------------------------------


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (1000.45, "1.000 K"),  # 1.00045 K to 4 significant digits: 1.000 (format_count printed '1 K')
        (31_000.0, "31.00 K"),  # 31.000 K: 3.100e4 to 4 digits
        (128_057.4, "128.1 K"),  # 128.0574 K -> 128.1
        (520.3, "520.3"),
        (100.0, "100"),  # no prefix: a whole number shows every digit
    ],
)
def test_a_count_keeps_its_significant_digits(count: float, text: str) -> None:
    assert count_with_its_digits(count) == text


def test_plan_train_prints_the_per_gpu_throughput_to_four_digits(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ("plan", "train", "--model", "llama-3-70b", "--system", "16xdgx-h100@ib-ndr",
            "--tp", "8", "--pp", "2", "--global-batch", "512")  # fmt: skip
    estimate = json.loads(run_cli(*args, "--json").out)
    text = run_cli(*args).out
    shown = re.search(r"\(([\d.,]+) K per GPU\)", text)
    assert shown is not None, text
    digits = shown.group(1).replace(",", "").replace(".", "")
    assert len(digits) == 4  # 16 systems x 8 GPUs = 128 GPUs: about 1,000 tokens/s each, '1.000 K'
    per_gpu = estimate["tokens_per_s"] / (16 * 8)
    assert float(shown.group(1)) * 1e3 == pytest.approx(per_gpu, abs=0.5)
