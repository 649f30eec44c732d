"""Every command that reads a file, against each special file (issue 29, point 7).

``/dev/zero`` (endless), a FIFO (opening it waits for a writer), a folder, an empty file and a
file of 1,000 nested brackets: each command answers with one line and exit 2, within seconds
(an alarm fails a command that blocks), and a device is never called "no such file". A
separate run in a fresh interpreter measures peak memory over large inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzzing import check, fails_if_blocked

REPO = Path(__file__).resolve().parents[2]
NCU = REPO / "src" / "lightspeed" / "tour" / "data" / "ncu" / "b200_cublaslt_fp8_gemm.csv"
WORKLOADS = REPO / "examples" / "mig-workloads.toml"
ALARM_S = 20  # a command that blocks on a FIFO or reads /dev/zero without end fails here

# Every command and option that reads a file the user names; {} is the special file.
COMMANDS = [
    "validate {}",
    "kernels report {}",
    f"kernels report {NCU} --trace {{}}",
    "moe stats {}",
    "moe balance --load {} --replicas 8 --gpus 4",
    "plan train --model mixtral-8x7b --system dgx-h100 --gpus 8 --ep 8 --global-batch 64 --expert-load {}",
    "plan train --config {} --system dgx-h100 --global-batch 64",
    "model show --config {}",
    "mig plan --gpu h100-sxm --workloads {}",
    f"mig plan --gpu h100-sxm --workloads {WORKLOADS} --current {{}}",
    "compare {} {}",
    "cost cluster --prices {}",
    "cost train --model llama-3-8b --system dgx-h100 --global-batch 64 --tokens 1e12 --prices {}",
    "goodput report {}",
    "goodput report {} --system h100-sxm",
    "goodput plan-checkpoints --checkpoint-write-s 60 --restart-s 60 --from {}",
    "trace summary {}",
    "trace diff {} {}",
    "monitor report {}",
    "monitor watch --replay {} --count 1",
    "calibrate --from {} --no-save",
    "report --from {} -o out.html",
    "plan train --model llama-3-8b --system dgx-h100 --global-batch 64 --calibration {}",
    "--catalog {} hw list",
]
KINDS = ("dev-zero", "fifo", "folder", "empty", "deep")
ANSWERS = {("--catalog {} hw list", "folder")}  # a catalog folder is an input: an empty one adds nothing


@pytest.fixture(scope="module")
def specials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("special")
    fifo = folder / "pipe.json"
    os.mkfifo(fifo)
    (folder / "folder").mkdir()
    (folder / "empty.json").write_bytes(b"")
    (folder / "deep.json").write_bytes(b"[" * 1000 + b"]" * 1000)
    return {
        "dev-zero": Path("/dev/zero"),
        "fifo": fifo,
        "folder": folder / "folder",
        "empty": folder / "empty.json",
        "deep": folder / "deep.json",
    }


@pytest.fixture
def alarm() -> Iterator[None]:
    with fails_if_blocked(ALARM_S, "on a special file"):
        yield


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_against_each_special_file(
    specials: dict[str, Path], alarm: None, command: str, kind: str
) -> None:
    path = specials[kind]
    outcome = check(command.replace("{}", str(path)).split())
    if (command, kind) in ANSWERS:
        assert outcome.code == 0, outcome.err
        return
    assert outcome.code == 2, f"{command} accepted {kind}: {outcome.out[:300]}"
    line = outcome.err.strip()
    if kind in ("dev-zero", "fifo"):
        assert "no such file" not in line, line  # it exists: say what it is
        found = "character device" if kind == "dev-zero" else "FIFO"
        assert found in line, line
    if kind == "empty":
        assert "empty" in line or "no " in line, line
    assert "None" not in line, line


LARGE = {  # commands given a 4 GiB sparse file of zeros: each reads at most its bounded window
    "validate": "validate {}",
    "kernels": "kernels report {}",
    "moe": "moe stats {}",
    "goodput": "goodput report {}",
    "trace": "trace summary {}",
    "capture": "monitor report {}",
    "samples": "compare {} {}",
    "prices": "cost cluster --prices {}",
}
PEAK_RSS_LIMIT_BYTES = 200 * 2**20  # issue 29: memory stays under 200 MB whatever the input

# VmHWM (the peak resident set of this process image), not ru_maxrss: Linux keeps ru_maxrss across
# the exec that starts the child, so it would report the forking test runner's own size.
_MEASURE = """
import contextlib, io, json, re
from lightspeed.cli.main import main
codes = []
for args in {commands!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main(args))
status = open("/proc/self/status", encoding="ascii").read()
print(json.dumps(codes), re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from Linux's /proc")
def test_memory_stays_bounded_on_huge_and_endless_inputs(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(4 * 2**30)
    commands = [template.replace("{}", str(path)).split() for template in LARGE.values() for path in (huge,)]
    commands += [["validate", "/dev/zero"], ["kernels", "report", "/dev/zero"]]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "LIGHTSPEED_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE.format(commands=commands)],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path, check=True,
    )  # fmt: skip
    codes_text, peak_kib = done.stdout.strip().rsplit(" ", 1)
    assert set(json.loads(codes_text)) == {2}, codes_text
    peak_bytes = int(peak_kib) * 1024
    assert peak_bytes < PEAK_RSS_LIMIT_BYTES, f"peak RSS {peak_bytes / 2**20:.0f} MiB"
