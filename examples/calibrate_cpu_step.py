"""A small GPT training step on this CPU: predicted before and after calibration, against the measured step.

    python examples/calibrate_cpu_step.py [--quick] [--steps 8] [--threads N] [--json]
        [--cpu-ghz GHZ] [--peak-tflops TFLOPS] [--memory-bandwidth 20GB/s]

1. Measures one training step (forward, backward, AdamW) of a small GPT in
   PyTorch on the CPU, fp32: ``--steps`` steps after warm-up, before and
   again after the microbenchmarks; the median of all of them.
2. Predicts the same step with lightspeed's SOL engine on this machine
   (``lightspeed.catalog.local_system``: the CPU peak from the microarchitecture
   table, the memory figure of the platform) with the ``cpu`` family's default
   efficiencies.
3. Calibrates: runs the GEMM suite on the model's own GEMM shapes plus a small
   sweep, STREAM and the launch suite, stores the results, fits a profile
   from the store (``cpu-step-example`` in ``$LIGHTSPEED_HOME/calibrations``)
   and predicts again with it.
4. Reports both errors against the measured step (target after calibration:
   within 25%).

A CPU whose peak or memory figure detection cannot find (a VM that hides its
clock or its model, a microarchitecture the table lacks) is one line naming
the option that gives it, exit 2: ``--cpu-ghz`` (the clock, for a known
microarchitecture), ``--peak-tflops`` (this machine's FP32 peak; FP64 is taken
as half of it) and ``--memory-bandwidth``.

The model is described twice, once as a ``TransformerSpec`` and once as torch
modules, with the same shapes (GELU MLP, LayerNorm, learned positions, no
biases in the linears, untied embeddings).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional

from lightspeed.bench import GemmShape, model_shapes, resolve_device, run_gemm, run_launch, run_membw
from lightspeed.bench.sol import sol_from_local_cpu
from lightspeed.catalog import Cluster, CpuPeak, LocalCpu, detect_cpu, load_catalog, local_system
from lightspeed.errors import LightspeedError, UserInputError
from lightspeed.gate import benchmark_payloads, benchmark_records, calibration_inputs
from lightspeed.sol import (
    EfficiencyModel,
    TrainingPlan,
    calibrate,
    default_efficiency,
    estimate_training,
    save_calibration,
)
from lightspeed.store import open_store
from lightspeed.units import format_flop_per_s, parse_bandwidth
from lightspeed.workload import AttentionSpec, TransformerSpec

PROFILE = "cpu-step-example"
TARGET = 0.25
PROG = Path(__file__).name


@dataclass(frozen=True)
class Config:
    num_layers: int
    hidden: int
    num_heads: int
    ffn: int
    vocab: int
    seq_len: int
    batch: int


FULL = Config(num_layers=4, hidden=512, num_heads=8, ffn=2048, vocab=8192, seq_len=256, batch=8)
QUICK = Config(num_layers=2, hidden=256, num_heads=4, ffn=1024, vocab=4096, seq_len=128, batch=8)


def spec_of(config: Config) -> TransformerSpec:
    """The model as lightspeed describes it."""
    return TransformerSpec(
        name="gpt-example",
        display_name="small GPT (example)",
        num_layers=config.num_layers,
        hidden_size=config.hidden,
        ffn_hidden_size=config.ffn,
        vocab_size=config.vocab,
        attention=AttentionSpec(
            kind="mha", num_heads=config.num_heads, num_kv_heads=config.num_heads,
            head_dim=config.hidden // config.num_heads,
        ),
        mlp="gelu",
        norm="layernorm",
        position_embedding="learned",
        tied_embeddings=False,
        max_seq_len=config.seq_len,
    )  # fmt: skip


class Block(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.num_heads = config.num_heads
        self.norm1 = nn.LayerNorm(config.hidden)
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden, bias=False)
        self.out = nn.Linear(config.hidden, config.hidden, bias=False)
        self.norm2 = nn.LayerNorm(config.hidden)
        self.up = nn.Linear(config.hidden, config.ffn, bias=False)
        self.down = nn.Linear(config.ffn, config.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, hidden = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(hidden, dim=2)
        q, k, v = (t.view(batch, tokens, self.num_heads, -1).transpose(1, 2) for t in (q, k, v))
        attention = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attention.transpose(1, 2).reshape(batch, tokens, hidden))
        return x + self.down(functional.gelu(self.up(self.norm2(x))))


class Gpt(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.tokens = nn.Embedding(config.vocab, config.hidden)
        self.positions = nn.Embedding(config.seq_len, config.hidden)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = nn.LayerNorm(config.hidden)
        self.head = nn.Linear(config.hidden, config.vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def measure_steps_s(config: Config, num_steps: int) -> list[float]:
    """Seconds of each of ``num_steps`` training steps after three warm-up steps."""
    torch.manual_seed(0)
    model = Gpt(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab, (config.batch, config.seq_len))
    targets = torch.randint(0, config.vocab, (config.batch, config.seq_len))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = model(ids)
        loss = functional.cross_entropy(logits.view(-1, config.vocab), targets.view(-1))
        loss.backward()
        optimizer.step()

    for _ in range(3):
        step()
    times = []
    for _ in range(num_steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def predict_s(
    spec: TransformerSpec, config: Config, cluster: Cluster, efficiency: EfficiencyModel | None
) -> float:
    plan = TrainingPlan(
        micro_batch_size=config.batch,
        global_batch_size=config.batch,
        seq_len=config.seq_len,
        precision="fp32",
    )
    return estimate_training(model=spec, cluster=cluster, plan=plan, efficiency=efficiency).step_time_s


class GivenPeak(CpuPeak):
    """A peak the user gave (``--peak-tflops``), not derived from the microarchitecture table."""

    def formulas(self) -> dict[str, str]:
        fp32 = format_flop_per_s(self.fp32_flop_per_s)
        return {
            "fp32": f"{fp32} FP32, given by the user (--peak-tflops)",
            "fp64": f"{format_flop_per_s(self.fp64_flop_per_s)} FP64: half the given {fp32} FP32 (assumed)",
        }


def local_cpu(args: argparse.Namespace) -> LocalCpu:
    """This CPU, with the figures the user gave in place of those detection lacks; refuses (one
    line naming the option to give) a CPU whose peak or memory bandwidth is still unknown."""
    clock_hz = args.cpu_ghz * 1e9 if args.cpu_ghz is not None else None
    cpu = detect_cpu(
        catalog=load_catalog(), clock_hz=clock_hz, memory_bandwidth_bytes_per_s=args.memory_bandwidth
    )
    if args.peak_tflops is not None:
        cpu = replace(cpu, peak=given_peak(cpu, args.peak_tflops * 1e12, clock_hz=clock_hz))
    lacking = []
    if cpu.peak is None:
        clock = "--cpu-ghz GHZ (the clock detection could not read) or " if "clock" in cpu.missing else ""
        lacking.append(
            f"no peak FLOP/s ({'; '.join(cpu.assumptions)}): give {clock}--peak-tflops TFLOPS (this "
            "machine's FP32 peak, e.g. from its datasheet)"
        )
    if cpu.memory_bandwidth_bytes_per_s is None:
        lacking.append(
            f"no memory bandwidth ({cpu.memory_bandwidth_note}): give --memory-bandwidth, e.g. 20GB/s "
            "(what 'lightspeed bench membw' measures, or the platform's figure)"
        )
    if lacking:
        raise UserInputError(f"this CPU lacks figures the estimate needs: {'; '.join(lacking)}")
    return cpu


def given_peak(cpu: LocalCpu, fp32_flop_per_s: float, *, clock_hz: float | None) -> CpuPeak:
    """The user's FP32 peak for the whole machine (FP64 half of it, no BF16 path)."""
    info = cpu.info
    return GivenPeak(
        fp64_flop_per_s=fp32_flop_per_s / 2,
        fp32_flop_per_s=fp32_flop_per_s,
        bf16_flop_per_s=None,
        isa="given",
        vector_bits=0,
        fma_units=0,
        bf16_path=None,
        num_sockets=info.num_sockets,
        num_cores_per_socket=max(1, info.num_physical_cores // info.num_sockets),
        clock_hz=clock_hz or info.clock_hz or 0.0,  # not used by the estimate: the peak is given
        formula=f"{format_flop_per_s(fp32_flop_per_s)} FP32, given by the user (--peak-tflops)",
        assumptions=("peak FP32 FLOP/s given by the user (--peak-tflops); FP64 assumed half of it",),
    )


def calibrate_here(spec: TransformerSpec, config: Config, quick: bool, cpu: LocalCpu) -> EfficiencyModel:
    """Benchmark this CPU, store the results, fit a profile from the store, save it."""
    device = resolve_device("cpu")
    sol = sol_from_local_cpu(cpu, num_threads=device.num_threads)  # what bench's device_sol gives
    tokens = config.batch * config.seq_len
    forward = model_shapes(spec, tp=1, num_tokens=tokens)
    # the backward of each linear: input gradient (m, k, n) and weight gradient (k, n, m)
    shapes = forward + [GemmShape(m=s.m, n=s.k, k=s.n, label=f"{s.label} dgrad") for s in forward]
    shapes += [GemmShape(m=s.k, n=s.n, k=s.m, label=f"{s.label} wgrad") for s in forward]
    results = run_gemm(device=device, sol=sol, dtypes=["fp32"], shapes=shapes, quick=quick)
    results += run_membw(device=device, sol=sol, quick=True)
    results += run_launch(device=device, sol=sol, quick=True)
    with open_store() as store:
        run_id = store.add_records(
            kind="benchmark", records=benchmark_records(results), label="cpu-step-example"
        )
        payloads, used = benchmark_payloads(store, [run_id])
    inputs = calibration_inputs(payloads, dtype="fp32", sources=used)
    result = calibrate(inputs=inputs, base=default_efficiency("cpu"), name=PROFILE)
    save_calibration(result)
    return result.model


def positive(text: str) -> float:
    """A finite number > 0 (argparse: a bad one is its one-line usage error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def bandwidth(text: str) -> float:
    """A bandwidth with its unit (20GB/s), in bytes per second."""
    try:
        value = parse_bandwidth(text)
    except UserInputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be > 0, e.g. 20GB/s, got {text!r}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller model")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all cores)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--cpu-ghz", type=positive, default=None, help="CPU clock (when detection cannot read it)"
    )
    parser.add_argument(
        "--peak-tflops",
        type=positive,
        default=None,
        help="this machine's FP32 peak (when detection has none)",
    )
    parser.add_argument(
        "--memory-bandwidth", type=bandwidth, default=None, help="memory bandwidth with its unit, e.g. 20GB/s"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except LightspeedError as error:  # bad input or an unknown figure: one line, not a traceback
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> None:
    """Measure, predict, calibrate, predict again and print the report."""
    if args.threads:
        torch.set_num_threads(args.threads)
    config = QUICK if args.quick else FULL
    spec = spec_of(config)
    cpu = local_cpu(args)  # refused here, before any measurement, when a figure is missing
    cluster = Cluster(system=local_system(cpu=cpu), num_nodes=1, fabric=None)

    # Steps measured before and after the microbenchmarks, pooled: on a shared machine the
    # load changes, and the calibration should see the same conditions as the step.
    steps_before_s = measure_steps_s(config, args.steps)
    before_s = predict_s(spec, config, cluster, None)
    calibrated = calibrate_here(spec, config, args.quick, cpu)
    steps_after_s = measure_steps_s(config, args.steps)
    measured_s = statistics.median(steps_before_s + steps_after_s)
    measured_before_s, measured_after_s = statistics.median(steps_before_s), statistics.median(steps_after_s)
    after_s = predict_s(spec, config, cluster, calibrated)
    report = {
        "model": config.__dict__,
        "threads": torch.get_num_threads(),
        "measured_step_s": measured_s,
        "measured_step_s_runs": [measured_before_s, measured_after_s],
        "measured_step_s_all": steps_before_s + steps_after_s,
        "predicted_default_s": before_s,
        "predicted_calibrated_s": after_s,
        "error_default": before_s / measured_s - 1.0,
        "error_calibrated": after_s / measured_s - 1.0,
        "within_target": abs(after_s / measured_s - 1.0) <= TARGET,
        "profile": PROFILE,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    shape = f"{config.num_layers} layers x {config.hidden} hidden, batch {config.batch} x {config.seq_len}"
    print(f"small GPT {shape}, fp32, {report['threads']} thread(s)")
    print(f"measured step:            {measured_s * 1e3:8.1f} ms  (runs: "
          f"{measured_before_s * 1e3:.1f}, {measured_after_s * 1e3:.1f} ms)")  # fmt: skip
    print(f"predicted, cpu defaults:  {before_s * 1e3:8.1f} ms  ({report['error_default']:+.0%})")
    print(f"predicted, calibrated:    {after_s * 1e3:8.1f} ms  ({report['error_calibrated']:+.0%}; "
          f"target within {TARGET:.0%}: {'met' if report['within_target'] else 'NOT met'})")  # fmt: skip
    print(f"profile saved as '{PROFILE}': lightspeed plan train ... --calibration {PROFILE}")


if __name__ == "__main__":
    sys.exit(main())
