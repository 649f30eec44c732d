"""One case per cause of the second bad-input audit (issue 29), each as the issue states it.

Every case runs the CLI in process through :func:`fuzzing.check` (a fresh current folder and
``LIGHTSPEED_HOME``; one line and exit 2, or JSON and the expected exit), then asserts what the
cause was about: the words of the message, the exit code, nothing created that was not asked for.
Inputs are written here by hand, or are copies of the repository's own files with one change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fuzzing import check

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "data" / "shared"
NCU = REPO / "src" / "lightspeed" / "tour" / "data" / "ncu" / "b200_cublaslt_fp8_gemm.csv"
LGI = REPO / "tests" / "fixtures" / "mig" / "h100-lgi-dcgm-issue-138.txt"
WORKLOADS = REPO / "examples" / "mig-workloads.toml"
PRICES = REPO / "examples" / "prices.toml"
VARIANT = REPO / "examples" / "catalog" / "h100-600w.toml"
HF_CONFIG = REPO / "tests" / "fixtures" / "hf_configs" / "llama-3-8b" / "config.json"
MLPERF = SHARED / "data/mlperf/training_v4.0/NVIDIA/results/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
DEV_TSV = SHARED / "validation" / "published-dev.tsv"
T0_NS = 1_700_000_000 * 10**9


@dataclass(frozen=True)
class Cause:
    """A command built in a folder, the exit it must give, and fragments of its error line."""

    build: Callable[[Path], list[str]]
    code: int = 2
    fragments: tuple[str, ...] = ()
    absent: tuple[str, ...] = ("None",)  # words the line must not hold
    home_clean: bool = field(default=True)  # nothing written into LIGHTSPEED_HOME


def _write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _capture(folder: Path, sample: dict[str, object]) -> Path:
    lines = [
        {"v": 1, "type": "capture_start", "t_ns": T0_NS, "host": "node1", "pid": 7, "interval_s": 1.0,
         "backends": ["host"], "meta": {}, "devices": [{"device_id": "host", "kind": "host", "name": "node1",
                                                         "backend": "psutil"}]},
        {"type": "sample", **sample},
    ]  # fmt: skip
    return _write(folder, "capture-node1-7.jsonl", "".join(json.dumps(line) + "\n" for line in lines))


def _goodput_run(folder: Path, end_ns: int) -> Path:
    run = folder / "run"
    run.mkdir()
    lines = [
        {"v": 1, "seg": "a", "type": "job_start", "t_ns": T0_NS, "run_id": "r", "rank": 0, "world_size": 1},
        {"v": 1, "seg": "a", "type": "step", "step": 0, "start_ns": T0_NS, "end_ns": end_ns, "tokens": 1},
    ]
    _write(run, "rank-00000.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    return run


def _tsv(folder: Path, measured: str) -> Path:
    header, first = DEV_TSV.read_text(encoding="utf-8").splitlines()[:2]
    cells = first.split("\t")
    cells[header.split("\t").index("measured")] = measured
    return _write(folder, "rows.tsv", header + "\n" + "\t".join(cells) + "\n")


def _kernels_report(folder: Path, metric: str, old: str, new: str) -> list[str]:
    """``kernels report`` of the shipped ncu CSV with one metric's value changed."""
    text = NCU.read_text(encoding="utf-8")
    before, after = f'"{metric}","%","{old}"', f'"{metric}","%","{new}"'
    assert before in text
    return ["kernels", "report", str(_write(folder, "ncu.csv", text.replace(before, after, 1)))]


def _lgi(folder: Path, old: str, new: str) -> Path:
    text = LGI.read_text(encoding="utf-8")
    assert old in text
    return _write(folder, "lgi.txt", text.replace(old, new, 1))


def _mig_plan(current: Path) -> list[str]:
    return ["mig", "plan", "--gpu", "h100-sxm", "--workloads", str(WORKLOADS), "--current", str(current)]


def _samples(folder: Path, name: str, samples: list[float]) -> str:
    payload = {"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": samples}
    return str(_write(folder, name, json.dumps(payload)))


def _kineto_without_dur(folder: Path) -> Path:
    kernels = [
        {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 1e15 + 20 * i, "dur": 10}
        for i in range(5)
    ]
    del kernels[2]["dur"]
    return _write(folder, "trace.json", json.dumps({"schemaVersion": 1, "traceEvents": kernels}))


def _catalog_bandwidth(folder: Path) -> Path:
    text = VARIANT.read_text(encoding="utf-8")
    assert "[memory]" not in text  # the example overrides the power limit only
    return _write(folder, "gpu.toml", text + "\n[memory]\nbandwidth_tb_per_s = 1e-300\n")


def _config(folder: Path, **changes: object) -> Path:
    data = json.loads(HF_CONFIG.read_text(encoding="utf-8"))
    data.update(changes)
    return _write(folder, "config.json", json.dumps(data))


def _prices(folder: Path, old: str, new: str, *, bom: bool = False) -> Path:
    text = PRICES.read_text(encoding="utf-8")
    assert old in text
    return _write(
        folder, "prices.toml", (b"\xef\xbb\xbf" if bom else b"") + text.replace(old, new, 1).encode()
    )


CAUSES: dict[str, Cause] = {
    # the monitor keeps its run
    "monitor: a command shorter than the first sample": Cause(
        lambda f: ["monitor", "run", "--backend", "host", "--out", str(f / "m"), "--no-save", "--", "true"],
        code=0,
    ),
    "monitor: a command killed by a signal gives 128 + signal": Cause(
        lambda f: [
            "monitor",
            "run",
            "--backend",
            "host",
            "--out",
            str(f / "m"),
            "--no-save",
            "--",
            "sh",
            "-c",
            "kill -KILL $$",
        ],
        code=137,
    ),
    "monitor: --out that cannot be created": Cause(
        lambda f: ["monitor", "run", "--out", "/proc/nope", "--", "true"], fragments=("cannot create",)
    ),
    # unbounded readers and special files
    "validate /dev/zero": Cause(lambda f: ["validate", "/dev/zero"], fragments=("character device",)),
    "kernels /dev/zero": Cause(lambda f: ["kernels", "report", "/dev/zero"], fragments=("character device",)),
    "/dev/zero is not 'no such file'": Cause(
        lambda f: ["trace", "summary", "/dev/zero"], fragments=("character device",), absent=("no such file",)
    ),
    "a folder where a file was expected names both": Cause(
        lambda f: ["validate", str(f)], fragments=("found a folder where a published-results table",)
    ),
    # tracebacks
    "moe synth --out <a folder>": Cause(
        lambda f: ["moe", "synth", "--layers", "2", "--experts", "8", "--out", str(f)],
        fragments=("is a folder",),
    ),
    "a capture time beyond int64": Cause(
        lambda f: [
            "monitor",
            "report",
            str(_capture(f, {"t_ns": 2**70, "d": {"host": {"cpu_util_ratio": 0.5}}})),
        ],
        fragments=("int64", "'t_ns'"),
    ),
    "a goodput log time beyond int64": Cause(
        lambda f: ["goodput", "report", str(_goodput_run(f, 2**64))], fragments=("int64", "'end_ns'")
    ),
    "cost train --usd-per-gpu-hour 0": Cause(
        lambda f: ["cost", "train", "--scenario", "deepseek-v3", "--usd-per-gpu-hour", "0"],
        fragments=("not above",),
    ),
    # silent nonsense
    "monitor capture with -500% CPU": Cause(
        lambda f: [
            "monitor",
            "report",
            str(_capture(f, {"t_ns": T0_NS + 10**9, "d": {"host": {"cpu_util_ratio": -5}}})),
        ],
        fragments=("-500%", "d.host.cpu_util_ratio"),
    ),
    "ncu throughput of 250%": Cause(
        lambda f: _kernels_report(f, "Compute (SM) Throughput", "23.59", "250"),
        fragments=("250 % is outside 0% to 100% of peak",),
    ),
    "ncu negative throughput": Cause(
        lambda f: _kernels_report(f, "Memory Throughput", "21.68", "-3"),
        fragments=("Memory Throughput = -3 %",),
    ),
    # a row's impossible measured value is that row's error, with its reason in the JSON (exit 0:
    # tests/sol/validation/test_user_files.py), never read as 137 or 44
    "validate reads -137 as 137": Cause(lambda f: ["validate", str(_tsv(f, "-137 (44%)"))], code=0),
    "validate reads inf (44%) as 44": Cause(lambda f: ["validate", str(_tsv(f, "inf (44%)"))], code=0),
    "a catalog bandwidth of 1e-300": Cause(
        lambda f: ["--catalog", str(_catalog_bandwidth(f)), "hw", "list"],
        fragments=("physical range", "memory.bandwidth_tb_per_s"),
    ),
    "mig plan --current with an unknown profile": Cause(
        lambda f: _mig_plan(_lgi(f, "MIG 3g.40gb          9 ", "MIG 5g.99gb          9 ")),
        fragments=("GPU 0: unknown MIG profile",),
    ),
    "mig plan --current with overlapping slices": Cause(
        lambda f: _mig_plan(_lgi(f, "19       10          3:1", "19       10          2:1")),
        fragments=("overlaps",),
    ),
    "-0 as a price": Cause(
        lambda f: [
            "cost",
            "cluster",
            "--prices",
            str(_prices(f, "electricity_usd_per_kwh = 0.10", "electricity_usd_per_kwh = -0.0")),
        ],
        fragments=("electricity_usd_per_kwh", "above 0"),
    ),
    "goodput report --system nope": Cause(
        lambda f: ["goodput", "report", str(MLPERF), "--system", "nope"], fragments=("unknown device 'nope'",)
    ),
    "compare with negative samples": Cause(
        lambda f: ["compare", _samples(f, "a.json", [1.0, 1.1]), _samples(f, "b.json", [-1.0, 1.0])],
        fragments=("negative sample", "samples[0]"),
    ),
    "kernels without a duration": Cause(
        lambda f: ["trace", "summary", str(_kineto_without_dur(f))], fragments=("a GPU event without a dur",)
    ),
    "goodput MFU of 1000%": Cause(
        lambda f: ["goodput", "report", str(MLPERF), "--system", "h200-sxm", "--num-accelerators", "1"],
        fragments=("MFU would be", "--num-accelerators"),
    ),
    "a hidden size of 1e30": Cause(
        lambda f: ["model", "show", "--config", str(_config(f, hidden_size=10**30))],
        fragments=("hidden_size", "far past any model built"),
    ),
    # messages
    "schema_version = 9": Cause(
        lambda f: [
            "cost",
            "cluster",
            "--prices",
            str(_prices(f, "schema_version = 1", "schema_version = 9")),
        ],
        fragments=("schema_version 9 is not one this lightspeed reads (1)",),
    ),
    "a capture without a version": Cause(
        lambda f: ["monitor", "report", str(_write(f, "capture-x-1.jsonl", '{"type": "capture_start"}\n'))],
        fragments=("capture has no version",),
    ),
    "conflicting options: bench gemm --tp 3": Cause(
        lambda f: ["bench", "gemm", "--tp", "3", "--no-save"], fragments=("--tp: only with --model",)
    ),
    "conflicting options: a scenario with a model": Cause(
        lambda f: ["cost", "train", "--scenario", "deepseek-v3", "--model", "llama-3-8b"],
        fragments=("fixes",),
    ),
    "a UTF-8 byte-order mark is accepted": Cause(
        lambda f: ["cost", "cluster", "--prices", str(_prices(f, "kind", "kind", bom=True))], code=0
    ),
    "an empty MIG name": Cause(lambda f: ["mig", "profiles", "--gpu", ""], fragments=("name is empty",)),
    # the seventh round of expert checks (issues 27, 28)
    "a link inside a node as the network between nodes": Cause(
        lambda f: ["hw", "show", "2xdgx-h100@nvlink-c2c"], fragments=("nvlink-c2c",)
    ),
    "a TPU slice Google does not offer": Cause(lambda f: ["hw", "show", "v5e-3"], fragments=("v5e",)),
    "a bare memory bandwidth": Cause(
        lambda f: ["hw", "detect", "--no-gpu", "--memory-bandwidth", "200"], fragments=("unit",)
    ),
    "an empty tour folder": Cause(lambda f: ["tour", "--out", ""], fragments=("--out",)),
    "a roofline for a suite without one": Cause(
        lambda f: ["bench", "launch", "--quick", "--no-save", "--plot", str(f / "x.png")],
        fragments=("--plot",),
    ),
    "a count the upgrade computes": Cause(
        lambda f: [
            "cost",
            "upgrade",
            "--from",
            "100xh100-sxm",
            "--to",
            "7xb200",
            "--workload",
            "llama-3-70b-chat",
            "--prices",
            str(PRICES),
        ],
        fragments=("--to",),
    ),
    "a system named twice in a fleet": Cause(
        lambda f: [
            "cost",
            "fleet",
            "--workload",
            "llama-3-70b-chat",
            "--requests-per-s",
            "5",
            "--systems",
            "dgx-h100,h100-sxm",
        ],
        fragments=("more than once",),
    ),
    "interleaving without virtual stages": Cause(
        lambda f: [
            "plan",
            "train",
            "--model",
            "llama-3-8b",
            "--system",
            "2xdgx-h100",
            "--tp",
            "4",
            "--pp",
            "4",
            "--global-batch",
            "64",
            "--schedule",
            "interleaved",
        ],
        fragments=("vpp=2 or more",),
    ),
    "half a token": Cause(
        lambda f: ["plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tokens", "1.5"],
        fragments=("whole",),
    ),
    # open, never create
    "calibrate --from a missing file": Cause(
        lambda f: ["calibrate", "--from", str(f / "typo.json"), "--no-save"], fragments=("no such file",)
    ),
}


@pytest.mark.parametrize("name", list(CAUSES))
def test_each_cause_of_the_audit(name: str, tmp_path: Path) -> None:
    cause = CAUSES[name]
    outcome = check(cause.build(tmp_path), other_codes=() if cause.code in (0, 2) else (cause.code,))
    assert outcome.code == cause.code, f"{name}: exit {outcome.code}: {outcome.err}"
    line = outcome.err.strip()
    for fragment in cause.fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    for word in cause.absent:
        assert not re.search(rf"\b{re.escape(word)}\b", line), line
    if cause.home_clean:
        # the cache folder holds what any command may rebuild (the parsed catalog, trace columns),
        # never a result: a refused input may leave it, not a store, a run or a report
        kept = [name for name in outcome.home_files if not name.startswith(("monitor", "cache"))]
        assert not kept, outcome.home_files
