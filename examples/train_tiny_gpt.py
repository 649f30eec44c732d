"""Train a tiny GPT on CPU with the goodput tracker, crash it, resume it, report the ledger.

    python examples/train_tiny_gpt.py --run-dir runs/tiny-gpt
    python examples/train_tiny_gpt.py --run-dir runs/tiny-gpt --quick --json
    python examples/train_tiny_gpt.py --run-dir runs/tiny --profile-trace runs/tiny/trace.json
    python examples/train_tiny_gpt.py --quick --tensorboard runs/tb --mlflow runs/mlruns

The parent process runs the training twice in child processes sharing one
run directory. The first child initializes, trains, saves a checkpoint every
``--checkpoint-every`` steps and then kills itself with SIGKILL at step
``--crash-at`` (no clean shutdown: the event log keeps what its background
writer had flushed). The second child restores the last checkpoint and
finishes the run; the steps it repeats are counted as wasted progress. The
parent then prints the goodput ledger (``lightspeed goodput report RUN_DIR``
prints the same). ``--profile-trace PATH`` writes a PyTorch profiler (Kineto)
trace of three training steps of the first child.

Model FLOPs use PaLM's convention, 6 N + 12 L s d per token (N parameters,
L layers, s sequence length, d model width); MFU needs a peak (``--peak-tflops``,
e.g. this CPU's fp32 peak), otherwise the report says it is unavailable.

``--tensorboard DIR`` and ``--mlflow URI`` attach the tracker's sinks: both
segments log each step's time, tokens/s, MFU and badput so far (the killed one
up to its last flush), into one TensorBoard folder and one MLflow run (the
resumed segment continues the run the first one made); the parent then logs
the ledger (goodput, badput buckets, MFU). A plain folder for ``--mlflow`` is
an MLflow file store (the sink sets ``MLFLOW_ALLOW_FILE_STORE`` while opening it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MARKER = ".tiny-gpt-run"
TEXT = (__doc__ or "lightspeed goodput example").encode() * 8


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--run-dir", type=Path, default=Path("runs/tiny-gpt"), help="where logs and checkpoints go"
    )
    parser.add_argument("--steps", type=int, default=60, help="optimizer steps of the whole run")
    parser.add_argument("--quick", action="store_true", help="a short run (24 steps, smaller model)")
    parser.add_argument("--crash-at", type=int, default=None, help="step at which the first child dies")
    parser.add_argument("--checkpoint-every", type=int, default=10, help="steps between checkpoints")
    parser.add_argument("--eval-every", type=int, default=20, help="steps between evaluations")
    parser.add_argument("--peak-tflops", type=float, default=None, help="peak of this machine, for MFU")
    parser.add_argument("--profile-trace", type=Path, default=None, help="write a Kineto trace of 3 steps")
    parser.add_argument("--json", action="store_true", help="print the ledger as JSON")
    parser.add_argument("--tensorboard", type=Path, default=None, help="TensorBoard event folder (sink)")
    parser.add_argument("--mlflow", default=None, help="MLflow tracking URI or a local folder (sink)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    check_args(parser, args)
    if args.quick:
        args.steps = min(args.steps, 24)
        args.checkpoint_every = min(args.checkpoint_every, 6)
        args.eval_every = min(args.eval_every, 12)
    if args.crash_at is None:
        args.crash_at = min(max(2, (args.steps * 3) // 5), args.steps - 1)
    elif not 1 <= args.crash_at < args.steps:
        capped = f", --quick runs {args.steps} steps at most" if args.quick else ""
        parser.error(
            f"--crash-at must be between 1 and --steps - 1 ({args.steps - 1}{capped}), got {args.crash_at}"
        )
    return args


# The fewest steps of a run: the first child dies after step 1 at the earliest, the second resumes.
MIN_STEPS = 2


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before any training, what the run cannot use (``parser.error``: one line, exit 2)."""
    if args.steps < MIN_STEPS:
        parser.error(
            f"--steps must be {MIN_STEPS} or more (a run killed after a step, then resumed), got {args.steps}"
        )
    for option, value in (("--checkpoint-every", args.checkpoint_every), ("--eval-every", args.eval_every)):
        if value < 1:
            parser.error(f"{option} must be 1 or more (steps between them), got {value}")
    if args.peak_tflops is not None and not 0 < args.peak_tflops < math.inf:
        parser.error(
            f"--peak-tflops must be a finite number > 0 (this machine's peak), got {args.peak_tflops}"
        )


def model_config(quick: bool) -> dict[str, int]:
    """Layers, width, heads, context and batch of the tiny GPT."""
    if quick:
        return {"layers": 2, "width": 64, "heads": 4, "seq_len": 32, "batch": 8, "vocab": 256}
    return {"layers": 4, "width": 128, "heads": 4, "seq_len": 64, "batch": 16, "vocab": 256}


def build_model(config: dict[str, int]) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            width = config["width"]
            self.norm1 = nn.LayerNorm(width)
            self.attention = nn.MultiheadAttention(width, config["heads"], batch_first=True)
            self.norm2 = nn.LayerNorm(width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x: Any) -> Any:
            length = x.shape[1]
            mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
            h = self.norm1(x)
            x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))

    class TinyGPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(config["vocab"], config["width"])
            self.position = nn.Embedding(config["seq_len"], config["width"])
            self.blocks = nn.Sequential(*[Block() for _ in range(config["layers"])])
            self.norm = nn.LayerNorm(config["width"])
            self.head = nn.Linear(config["width"], config["vocab"], bias=False)

        def forward(self, tokens: Any) -> Any:
            positions = torch.arange(tokens.shape[1])
            x = self.embed(tokens) + self.position(positions)
            return self.head(self.norm(self.blocks(x)))

    return TinyGPT()


def flop_per_token(model: Any, config: dict[str, int]) -> float:
    """PaLM's training FLOP per token: 6 N + 12 L s d."""
    num_params = sum(parameter.numel() for parameter in model.parameters())
    return 6.0 * num_params + 12.0 * config["layers"] * config["seq_len"] * config["width"]


def batches(config: dict[str, int], seed: int) -> Any:
    """Endless random windows of the example's own text (bytes as tokens)."""
    import torch

    data = torch.tensor(list(TEXT), dtype=torch.long)
    generator = torch.Generator().manual_seed(seed)
    span = config["seq_len"] + 1
    while True:
        starts = torch.randint(0, len(data) - span, (config["batch"],), generator=generator)
        window = torch.stack([data[start : start + span] for start in starts.tolist()])
        yield window[:, :-1], window[:, 1:]


def mlflow_uri(text: str) -> str:
    """A tracking URI; a plain folder becomes a file store (the sink opens MLflow's folder store)."""
    if "://" in text:
        return text
    return Path(text).resolve().as_uri()


def open_sinks(args: argparse.Namespace) -> list[Any]:
    """The sinks asked for; one MLflow run for the whole job (its id kept in the run folder)."""
    from lightspeed.goodput import MlflowSink, TensorBoardSink

    sinks: list[Any] = []
    if args.tensorboard is not None:
        sinks.append(TensorBoardSink(args.tensorboard, flush_interval_s=0.5))
    if args.mlflow is not None:
        id_file = args.run_dir / "mlflow_run_id"
        known = id_file.read_text().strip() if id_file.exists() else None
        sink = MlflowSink(tracking_uri=mlflow_uri(args.mlflow), run_name=args.run_dir.name, run_id=known)
        id_file.write_text(sink.run_id)
        sinks.append(sink)
    return sinks


def worker(args: argparse.Namespace) -> None:
    """One job segment: build, restore if a checkpoint exists, train, checkpoint, maybe crash."""
    sinks = open_sinks(args)
    try:
        train(args, sinks)
    finally:
        for sink in sinks:
            sink.close()


def train(args: argparse.Namespace, sinks: list[Any]) -> None:
    """Train under the tracker, feeding ``sinks``."""
    import torch

    from lightspeed.goodput import Tracker

    torch.manual_seed(0)
    torch.set_num_threads(1)  # steady step times on a shared 2-core machine
    config = model_config(args.quick)
    checkpoint = args.run_dir / "checkpoint.pt"
    flops = flop_per_token(build_model(config), config)  # a throwaway copy, to count parameters
    peak = args.peak_tflops * 1e12 if args.peak_tflops else None
    with Tracker(
        args.run_dir,
        flush_interval_s=0.5,
        world_size=1,
        rank=0,
        seq_len=config["seq_len"],
        precision="fp32",
        model_flop_per_token=flops,
        peak_flop_per_s=peak,
        system="cpu" if peak else None,
        sinks=sinks,
    ) as tracker:
        with tracker.init():
            model = build_model(config)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
            loss_fn = torch.nn.CrossEntropyLoss()
        first_step = 0
        if checkpoint.exists():
            with tracker.checkpoint_restore():
                state = torch.load(checkpoint, weights_only=True)  # our own file, tensors only
                model.load_state_dict(state["model"])
                optimizer.load_state_dict(state["optimizer"])
                first_step = int(state["next_step"])
            tracker.set_step(first_step)
        loader = tracker.wrap_loader(batches(config, seed=first_step))
        profiler = start_profiler(args) if first_step == 0 else None
        for step in range(first_step, args.steps):
            inputs, targets = next(loader)
            with tracker.step(tokens=inputs.numel(), samples=inputs.shape[0]):
                logits = model(inputs)
                loss = loss_fn(logits.reshape(-1, config["vocab"]), targets.reshape(-1))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            profiler = step_profiler(profiler, args, step)
            if (step + 1) % args.eval_every == 0:
                with tracker.eval(), torch.no_grad():
                    eval_inputs, eval_targets = next(batches(config, seed=10_000))
                    loss_fn(model(eval_inputs).reshape(-1, config["vocab"]), eval_targets.reshape(-1))
            if (step + 1) % args.checkpoint_every == 0:
                with tracker.checkpoint_save():
                    state = {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "next_step": step + 1,
                    }
                    torch.save(state, checkpoint)
            if first_step == 0 and step + 1 == args.crash_at:
                time.sleep(0.6)  # let the background writer flush (interval 0.5 s), then die hard
                os.kill(os.getpid(), signal.SIGKILL)


def start_profiler(args: argparse.Namespace) -> Any:
    if args.profile_trace is None:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule

    # A schedule makes profiler.step() write ProfilerStep#N spans (torch records step
    # markers only with one); wait=0, warmup=1 keeps every step after the first.
    profiler = profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=1000),
    )
    profiler.__enter__()
    return profiler


def step_profiler(profiler: Any, args: argparse.Namespace, step: int) -> Any:
    """Mark a step boundary (a ``ProfilerStep#N`` span in the trace, which per-step
    analyses and the regression gate need); after three steps write the Kineto trace."""
    if profiler is None:
        return None
    profiler.step()
    if step < 2:
        return profiler
    profiler.__exit__(None, None, None)
    args.profile_trace.parent.mkdir(parents=True, exist_ok=True)
    profiler.export_chrome_trace(str(args.profile_trace))
    return None


def prepare_run_dir(run_dir: Path) -> str | None:
    """Start from an empty run directory; only ever delete one this example created. Returns why
    ``run_dir`` cannot be used (one line for the user), else ``None``."""
    if run_dir.exists() and not run_dir.is_dir():
        return f"--run-dir {run_dir} is a file, not a folder; choose another --run-dir"
    try:
        if run_dir.is_dir() and any(run_dir.iterdir()):
            if not (run_dir / MARKER).exists():
                return (
                    f"--run-dir {run_dir} exists and was not made by this example (it deletes only "
                    "folders it made); choose another --run-dir"
                )
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / MARKER).write_text("made by examples/train_tiny_gpt.py\n", encoding="utf-8")
    except OSError as error:  # a file in the way, no permission, a read-only or virtual file system
        return f"--run-dir {run_dir} cannot be used: {error.strerror or error}; choose a folder you can write"
    return None


def run_child(argv: list[str]) -> tuple[int, str]:
    """Run one segment; its exit code and the last line of its stderr (passed on as it came)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", *argv]
    completed = subprocess.run(command, check=False, stderr=subprocess.PIPE, text=True, errors="replace")
    sys.stderr.write(completed.stderr)
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    return completed.returncode, lines[-1] if lines else ""


def segment_failure(segment: str, code: int, last_line: str) -> str:
    """One line for a segment that ended otherwise than planned, with its own last word (a
    traceback's last line says why; the tour shows the example's last line)."""
    return f"error: the {segment} segment exited with {code}: {last_line or 'no error message'}"


def without_option(argv: list[str], option: str) -> list[str]:
    """``argv`` without ``option VALUE`` / ``option=VALUE``."""
    kept: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
        elif item == option:
            skip = True
        elif not item.startswith(f"{option}="):
            kept.append(item)
    return kept


def main(argv: list[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(raw)
    if args.worker:
        worker(args)
        return 0
    from lightspeed.errors import LightspeedError, require_extra

    try:
        require_extra("torch", "bench", "the tiny GPT example")
    except LightspeedError as error:  # missing, or installed but broken: one line, not a traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    problem = prepare_run_dir(args.run_dir)
    if problem is not None:
        print(f"{Path(__file__).name}: error: {problem}", file=sys.stderr)
        return 2
    first, last_line = run_child(raw)
    if first == 0:
        print("error: the first segment should have been killed, it exited with 0", file=sys.stderr)
        return 1
    if first != -signal.SIGKILL:
        print(segment_failure("first", first, last_line), file=sys.stderr)
        return 1
    second, last_line = run_child(without_option(raw, "--profile-trace"))
    if second != 0:
        print(segment_failure("resumed", second, last_line), file=sys.stderr)
        return 1
    report(args)
    return 0


def report(args: argparse.Namespace) -> None:
    from lightspeed.goodput import build_ledger, publish_ledger, read_run
    from lightspeed.records import to_jsonable
    from lightspeed.report import render_ledgers

    ledger = build_ledger(run=read_run(args.run_dir))
    sinks = open_sinks(args)
    publish_ledger(ledger, sinks=sinks)
    for sink in sinks:
        sink.close()
    if args.json:
        print(json.dumps(to_jsonable(ledger), indent=2))
    else:
        render_ledgers([ledger])


if __name__ == "__main__":
    sys.exit(main())
