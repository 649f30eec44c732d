"""The CLI under fuzzing: hostile option values and corrupted copies of real input files.

The property, for every case: exit 0 with finite numbers in the JSON on stdout,
or exit 2 with exactly one line on stderr (``lightspeed: error: ...``); never a
traceback, never a warning from a library (pytest turns warnings into errors),
and nothing written outside LIGHTSPEED_HOME and the paths a command names.

Hypothesis runs derandomized (a fixed seed derived from each test), without an
example database, so CI sees the same cases every run; the whole suite is sized
to take about a minute (docs/benchmarks.md records the case count and time).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import check

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("LIGHTSPEED_SHARED", REPO / "tests" / "data" / "shared"))
FIXTURES = REPO / "tests" / "fixtures"
FUZZ: dict[str, Any] = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}

# Numbers people type by mistake, and numbers built to break parsers.
HOSTILE = st.one_of(
    st.sampled_from(
        [
            "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "0", "-0", "-1", "-8",
            "1.5", "0.5", "99999999999999999999", "9" * 400, "1e20", "2e9", "", " ", "abc", "0x10",
            "1_000", "16k", "1T", "5%", "-5%", "1e3", "3.0", "+3", "1e308", "4.9e-324", "0:0", "1:-1",
            "2:6", "[/bold]", "1TB", "1PiB", "50ms", "-1s", "1e400s", "10min", "1e9d", "1e400GB",
        ]
    ),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)  # fmt: skip

TRAIN = (
    "plan",
    "train",
    "--model",
    "llama-3-8b",
    "--system",
    "dgx-h100",
    "--global-batch",
    "64",
    "--zero",
    "3",
)
INFER = ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "1")
CHECKPOINTS = ("goodput", "plan-checkpoints", "--nodes", "8", "--failures-per-node-day", "0.01")
TRACE = str(SHARED / "data" / "traces" / "triton_example" / "triton_example.json.gz")
NCU = str(REPO / "src" / "lightspeed" / "tour" / "data" / "ncu" / "b200_cublaslt_fp8_gemm.csv")
SYNTH = ("moe", "synth", "--layers", "2", "--experts", "8", "--out", "{load_out}")
MOE_TRAIN = ("plan", "train", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "8", "--ep", "8",
             "--global-batch", "64", "--zero", "1")  # fmt: skip

# (command before the value, option, command after the value); {run} and {samples} are filled in.
VALUE_CASES: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = [
    (("flops", "--model", "llama-3-8b"), "--tokens", ()),
    (("flops", "--model", "llama-3-8b", "--tokens", "1e12"), "--claim", ()),
    (("flops", "--model", "llama-3-8b", "--tokens", "1e12"), "--seq", ()),
    (("model", "show", "llama-3-8b"), "--seq", ()),
    (("memory", "--model", "llama-3-8b", "--training"), "--dp", ()),
    (("memory", "--model", "llama-3-8b", "--training"), "--zero", ()),
    (TRAIN, "--tokens", ()),
    (TRAIN, "--gpus", ()),
    (TRAIN, "--tp", ()),
    (TRAIN, "--dp", ()),
    (TRAIN, "--seq", ()),
    (TRAIN, "--micro-batch", ()),
    (MOE_TRAIN, "--expert-imbalance", ()),
    (TRAIN, "--mtp-modules", ()),
    (MOE_TRAIN, "--etp", ()),
    ((*TRAIN, "--precision", "fp8"), "--bf16-layers", ()),
    (INFER, "--arrival-rate", ()),
    (INFER, "--isl", ()),
    (INFER, "--osl", ()),
    (INFER, "--replicas", ()),
    (INFER, "--concurrency", ()),
    (INFER, "--max-batch", ()),
    (INFER, "--draft-tokens", ()),
    (INFER, "--acceptance", ("--draft-tokens", "3")),
    (("search", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--max-tpot", "20ms"),
     "--search-draft-tokens", ()),
    (INFER, "--disaggregated", ()),
    (("plan", "infer", "--model", "qwen3.5-35b-a3b", "--system", "dgx-h100", "--gpus", "1"),
     "--state-precision", ()),
    (INFER, "--prefill-tp", ("--disaggregated", "1:1")),
    (INFER, "--prefill-dp-attention", ("--disaggregated", "1:1")),
    (CHECKPOINTS, "--checkpoint-write-s", ("--restart-s", "60")),
    (CHECKPOINTS, "--restart-s", ("--checkpoint-write-s", "60")),
    (CHECKPOINTS, "--interval", ("--checkpoint-write-s", "60", "--restart-s", "60")),
    (("goodput", "plan-checkpoints", "--nodes", "8"), "--failures-per-node-day",
     ("--checkpoint-write-s", "60", "--restart-s", "60")),
    (("goodput", "plan-checkpoints", "--failures-per-node-day", "0.01"), "--nodes",
     ("--checkpoint-write-s", "60", "--restart-s", "60")),
    (("goodput", "report", "{run}"), "--seq-len", ()),
    (("goodput", "report", "{run}"), "--num-accelerators", ()),
    (("goodput", "report", "{run}"), "--flop-per-token", ()),
    (("goodput", "report", "{run}"), "--sol-tokens-per-s-per-gpu", ()),
    (("hw", "detect", "--no-gpu"), "--cpu-ghz", ()),
    (("hw", "detect", "--no-gpu"), "--memory-bandwidth", ()),
    (("compare", "{samples}", "{samples}"), "--threshold", ()),
    (("compare", "{samples}", "{samples}"), "--alpha", ()),
    (("compare", "{samples}", "{samples}"), "--warmup", ()),
    (("trace", "summary", TRACE), "--max-bytes", ()),
    (("trace", "kernels", TRACE), "--top", ()),
    (("trace", "idle", TRACE), "--kernel-wait-threshold", ()),
    (("trace", "launch", TRACE), "--runtime-cutoff", ()),
    (("trace", "comms", TRACE), "--link-bandwidth", ()),
    (("trace", "comms", TRACE, "--link", "ib-ndr"), "--num-links", ()),
    (("results", "list"), "--limit", ()),
    (("cost", "cluster"), "--racks", ()),
    (("cost", "cluster"), "--site-kw", ()),
    (("cost", "cluster"), "--systems-per-rack", ()),
    (("cost", "cluster"), "--gpus", ()),
    (("cost", "cluster"), "--pue", ()),
    (("cost", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--isl", "128",
      "--osl", "128"), "--pue", ()),
    (("trace", "summary", TRACE), "--jobs", ()),
    (("trace", "summary", TRACE, "--jobs", "2"), "--max-worker-memory", ()),
    (("kernels", "report", NCU), "--max-bytes", ()),
    (("moe", "balance", "--load", "{load}", "--gpus", "4"), "--replicas", ()),
    (("moe", "balance", "--load", "{load}", "--replicas", "8"), "--gpus", ()),
    (("moe", "balance", "--load", "{load}", "--replicas", "8", "--gpus", "4"), "--groups", ()),
    (("moe", "balance", "--load", "{load}", "--replicas", "8", "--gpus", "4"), "--nodes", ()),
    (("moe", "balance", "--replicas", "8", "--gpus", "4", "--load", "{load}"), "--experts", ()),
    (("moe", "stats", "{load}"), "--replicas", ()),
    (("moe", "stats", "{load}"), "--hot", ()),
    (("moe", "stats", "{load}"), "--gpus", ()),
    (SYNTH, "--layers", ()),
    (SYNTH, "--experts", ()),
    (SYNTH, "--skew", ()),
    (SYNTH, "--tokens", ()),
    (SYNTH, "--top-k", ()),
    (SYNTH, "--seed", ()),
    (SYNTH, "--steps", ()),
    (("moe", "balance", "--load", "{load}", "--replicas", "8", "--gpus", "4"), "--holdout-fraction", ()),
    (MOE_TRAIN, "--expert-replicas", ("--expert-load", "{load}")),
    (("mig", "profiles"), "--gpu", ()),
]  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A goodput run folder and a sample file, written by hand, for the value cases."""
    folder = tmp_path_factory.mktemp("fuzz-inputs")
    run = folder / "run"
    run.mkdir()
    t0 = 1_700_000_000 * 10**9
    lines = [
        {"type": "job_start", "t_ns": t0, "run_id": "r", "rank": 0, "world_size": 1, "num_nodes": 1,
         "model": "llama-3-8b", "system": "h100-sxm", "seq_len": 4096},
        {"type": "step", "step": 0, "start_ns": t0, "end_ns": t0 + 10**9, "tokens": 4096},
        {"type": "step", "step": 1, "start_ns": t0 + 10**9, "end_ns": t0 + 2 * 10**9, "tokens": 4096},
        {"type": "job_end", "t_ns": t0 + 3 * 10**9, "status": "ok"},
    ]  # fmt: skip
    (run / "rank-00000.jsonl").write_text(
        "".join(json.dumps({"v": 1, "seg": "a", **line}) + "\n" for line in lines), encoding="utf-8"
    )
    samples = folder / "samples.json"
    samples.write_text(
        json.dumps(
            {"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": [1.0, 1.1, 0.9]}
        ),
        encoding="utf-8",
    )
    load = folder / "load.json"
    load.write_text(json.dumps(LOAD), encoding="utf-8")
    return {
        "run": str(run),
        "samples": str(samples),
        "load": str(load),
        "load_out": str(folder / "synth.json"),
    }


def _fill(args: Sequence[str], inputs: dict[str, str]) -> list[str]:
    return [inputs.get(arg[1:-1], arg) if arg.startswith("{") else arg for arg in args]


@settings(max_examples=500, **FUZZ)
@given(case=st.sampled_from(VALUE_CASES), value=HOSTILE)
def test_any_option_value(inputs: dict[str, str], case: tuple[Any, str, Any], value: str) -> None:
    before, option, after = case
    check([*_fill(before, inputs), f"{option}={value}", *_fill(after, inputs)])


@pytest.mark.parametrize(("before", "option", "after"), VALUE_CASES, ids=str)
def test_each_option_refuses_nan_and_overflow(
    inputs: dict[str, str], before: tuple[str, ...], option: str, after: tuple[str, ...]
) -> None:
    for value in ("nan", "1e400", "-1"):
        outcome = check([*_fill(before, inputs), f"{option}={value}", *_fill(after, inputs)])
        assert outcome.code == 2, f"{option}={value} was accepted"


# an expert load written by hand (lightspeed's format, docs/moe.md): 2 layers of 8 experts
LOAD = {
    "format": "lightspeed-expert-load",
    "schema_version": 1,
    "num_steps": 4,
    "layers": [
        {"name": "layer0", "counts": [90, 132, 40, 61, 104, 165, 39, 4]},
        {"name": "layer1", "counts": [20, 107, 104, 64, 19, 197, 187, 157]},
    ],
}

# a monitor capture written by hand (docs/monitor.md): one GPU and the host, three samples
CAPTURE_LINES = [
    {"v": 1, "type": "capture_start", "t_ns": 1_700_000_000 * 10**9, "host": "node1", "pid": 7,
     "interval_s": 1.0, "backends": ["nvml", "host"], "meta": {},
     "devices": [{"device_id": "gpu0", "kind": "gpu", "name": "NVIDIA H100 80GB HBM3", "backend": "nvml",
                  "index": 0},
                 {"device_id": "host", "kind": "host", "name": "node1", "backend": "psutil"}]},
    *({"type": "sample", "t_ns": (1_700_000_000 + i) * 10**9,
       "d": {"gpu0": {"gpu_util": 0.5 * i, "power_w": 400.0 + i}, "host": {"cpu_util": 0.2}}}
      for i in (1, 2, 3)),
    {"type": "capture_end", "t_ns": 1_700_000_004 * 10**9},
]  # fmt: skip


# --- corrupted copies of real files -------------------------------------------------------------


def _source(relative: str, fixture: str | None = None) -> Path:
    path = SHARED / relative
    if path.exists():
        return path
    if fixture is not None and (FIXTURES / fixture).exists():
        return FIXTURES / fixture
    raise FileNotFoundError(f"{relative} is not in the repository's test data ({SHARED})")


MLPERF = "data/mlperf/training_v4.0/NVIDIA/results/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
FILES = {
    "trace": ("data/traces/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
              "traces/cuda_event_sync_multi_stream/event_sync_trace.json.gz"),
    "mllog": (MLPERF, None),
    "system_json": ("data/mlperf/training_v4.0/NVIDIA/h200_ngc24.04_nemo.system.json", None),
    "hf_config": ("", "hf_configs/llama-3-8b/config.json"),
    "published": ("validation/published-dev.tsv", None),
    "nsys": ("data/nsight/nsys/con_kernel.sqlite", None),
    "ncu": ("data/nsight/ncu/b200_cublaslt_fp8_gemm.csv", None),
}  # fmt: skip
# inputs written here rather than read from disk
GENERATED = {
    "moe_load": lambda: json.dumps(LOAD).encode(),
    "capture": lambda: "".join(json.dumps(line) + "\n" for line in CAPTURE_LINES).encode(),
    "prices": (REPO / "examples" / "prices.toml").read_bytes,
}


def _original(kind: str) -> bytes:
    if kind in GENERATED:
        return GENERATED[kind]()
    relative, fixture = FILES[kind]
    path = _source(relative, fixture) if relative else FIXTURES / str(fixture)
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


CORRUPTIONS = st.sampled_from(
    ["flip", "truncate", "nul", "nest", "huge", "negative", "duplicate", "delete", "markup", "nan"]
)


def corrupt(data: bytes, kind: str, where: float, seed: int) -> bytes:
    """One corruption of ``data`` at the fraction ``where`` of its length."""
    at = min(len(data) - 1, int(where * len(data)))
    inserts = {
        "nest": b"[" * 3000,
        "huge": b"1e999",
        "negative": b"-",
        "markup": b"[/bold]",
        "nan": b"NaN",
    }
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ (1 << (seed % 8))]) + data[at + 1 :]
    if kind == "truncate":
        return data[:at]
    if kind == "nul":
        return data[:at] + b"\x00" * (seed % 64 + 1) + data[at:]
    if kind == "duplicate":
        return data[:at] + data[at : at + 4096] + data[at:]
    if kind == "delete":
        return data[:at] + data[at + seed % 200 + 1 :]
    return data[:at] + inserts[kind] + data[at:]


def _command(kind: str, path: Path) -> list[str]:
    return {
        "trace": ["trace", "summary", str(path)],
        "mllog": ["goodput", "report", str(path), "--system", "h200-sxm"],
        "system_json": ["goodput", "report", str(_source(MLPERF)), "--system", str(path)],
        "hf_config": ["plan", "train", "--config", str(path), "--system", "dgx-h100", "--global-batch", "64",
                      "--zero", "3"],
        "published": ["validate", str(path)],
        "nsys": ["trace", "summary", str(path)],
        "ncu": ["kernels", "report", str(path)],
        "moe_load": ["moe", "stats", str(path)],
        "capture": ["monitor", "report", str(path)],
        "prices": ["cost", "cluster", "--prices", str(path)],
    }[kind]  # fmt: skip


SUFFIX = {
    "trace": ".json",
    "mllog": ".txt",
    "system_json": ".json",
    "hf_config": ".json",
    "published": ".tsv",
    "nsys": ".sqlite",
    "ncu": ".csv",
    "moe_load": ".json",
    "capture": ".jsonl",
    "prices": ".toml",
}


@settings(max_examples=250, **FUZZ)
@given(
    kind=st.sampled_from(sorted({*FILES, *GENERATED})),
    corruption=CORRUPTIONS,
    where=st.floats(min_value=0.0, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_any_corrupted_file(
    tmp_path_factory: pytest.TempPathFactory, kind: str, corruption: str, where: float, seed: int
) -> None:
    folder = tmp_path_factory.mktemp("corrupt")
    path = folder / f"input{SUFFIX[kind]}"
    path.write_bytes(corrupt(_original(kind), corruption, where, seed))
    check(_command(kind, path))
    shutil.rmtree(folder)


@pytest.mark.parametrize("kind", sorted({*FILES, *GENERATED}))
def test_the_originals_pass(kind: str, tmp_path: Path) -> None:
    path = tmp_path / f"input{SUFFIX[kind]}"
    path.write_bytes(_original(kind))
    assert check(_command(kind, path)).code == 0


SAMPLE_VALUES = st.lists(
    st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**20), 10**20)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=100, **FUZZ)
@given(baseline=SAMPLE_VALUES, current=SAMPLE_VALUES, lower=st.booleans())
def test_any_samples_in_the_gate(
    tmp_path_factory: pytest.TempPathFactory, baseline: list[float], current: list[float], lower: bool
) -> None:
    # 1.7e308 samples used to overflow numpy's median into inf and print "+nan%" after a RuntimeWarning
    folder = tmp_path_factory.mktemp("samples")
    paths = []
    for name, values in (("base", baseline), ("cur", current)):
        path = folder / f"{name}.json"
        payload = {"metric": "t", "unit": "s", "lower_is_better": lower, "samples": values}
        path.write_text(json.dumps(payload), encoding="utf-8")
        paths.append(str(path))
    check(["compare", *paths], other_codes=(1,))


@settings(max_examples=50, **FUZZ)
@given(nodes=HOSTILE, nics=HOSTILE)
def test_any_cluster_spec(nodes: str, nics: str) -> None:
    # numbers inside --system strings are numbers too: "99999999999999999999xdgx-h100" used to be modelled
    check(["hw", "show", f"{nodes}xdgx-h100@ib-ndr:{nics}nic"])
