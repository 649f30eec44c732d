"""Measure a plain PyTorch training step of a registry model on one GPU, with the goodput tracker.

Usage (on a machine with a CUDA GPU; ``--device cpu --layers 1 --seq 64`` only checks the script):
    python benchmarks/gpu_train_step.py --model llama-3.2-1b --seq 4096 --micro-batch 4 \\
        --run-dir runs/train-1b --out train-1b.json [--compile]

The model is built from the shapes of ``lightspeed``'s model registry (the same
``TransformerSpec`` the engine prices): token embedding, per layer RMSNorm, bias-free Q/K/V/O
projections with rotary positions, PyTorch's ``scaled_dot_product_attention`` (causal, grouped
KV heads: cuDNN attention on Hopper in PyTorch 2.11, FlashAttention-2 in 2024-25), RMSNorm and
a SwiGLU MLP; a final norm and the LM head (tied when the registry says so); cross-entropy over
the whole vocabulary. Parameters in fp32,
matrix work under ``torch.autocast`` in bf16, fused AdamW, random tokens already on the GPU (no
data stall), no activation recomputation: what the ``torchtitan-2026`` profile of a one-GPU run
is (eager, SDPA), and with ``--compile`` (each block compiled, as torchtitan does) what
``torchtitan-2026-compile`` is.

Every optimizer step runs inside ``Tracker.step(..., sync=True)`` (``lightspeed.goodput``), so
``lightspeed goodput report RUN_DIR`` shows the steps, MFU and badput, and a surrounding
``lightspeed monitor run`` joins the GPU's counters to them. ``--out`` gets the median step time
of the steps after ``--warmup``, tokens/s, model FLOPs (6N + attention, the engine's convention
for this stack), peak memory and the environment. ``benchmarks/measured_training.py`` compares
such files with ``plan train``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from lightspeed.goodput import Tracker
from lightspeed.workload import TransformerSpec, load_models

ROPE_THETA = 500_000.0


class Block(nn.Module):
    """One pre-norm decoder layer: GQA attention with rotary positions, then a SwiGLU MLP."""

    def __init__(self, spec: TransformerSpec) -> None:
        super().__init__()
        attention = spec.attention
        self.heads, self.kv_heads, self.head_dim = (
            attention.num_heads,
            attention.num_kv_heads,
            attention.head_dim,
        )
        hidden = spec.hidden_size
        self.attention_norm = nn.RMSNorm(hidden)
        self.qkv = nn.Linear(hidden, (self.heads + 2 * self.kv_heads) * self.head_dim, bias=False)
        self.out = nn.Linear(self.heads * self.head_dim, hidden, bias=False)
        self.mlp_norm = nn.RMSNorm(hidden)
        self.gate_up = nn.Linear(hidden, 2 * spec.ffn_hidden_size, bias=False)
        self.down = nn.Linear(spec.ffn_hidden_size, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        qkv = self.qkv(self.attention_norm(x))
        q, k, v = qkv.split(
            [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1
        )
        q = _rotate(q.view(batch, seq, self.heads, self.head_dim), cos, sin).transpose(1, 2)
        k = _rotate(k.view(batch, seq, self.kv_heads, self.head_dim), cos, sin).transpose(1, 2)
        v = v.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, seq, -1))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(functional.silu(gate) * up)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions on the last dimension's two halves (Llama's ``rotate_half`` form)."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


class Model(nn.Module):
    """The registry model's decoder: embeddings, ``layers`` blocks, final norm, LM head."""

    def __init__(self, spec: TransformerSpec, *, layers: int, seq: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(spec.vocab_size, spec.hidden_size)
        self.blocks = nn.ModuleList(Block(spec) for _ in range(layers))
        self.norm = nn.RMSNorm(spec.hidden_size)
        self.head = nn.Linear(spec.hidden_size, spec.vocab_size, bias=False)
        if spec.tied_embeddings:
            self.head.weight = self.embed.weight
        half = spec.attention.head_dim // 2
        frequencies = ROPE_THETA ** (-torch.arange(half, dtype=torch.float32) / half)
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), frequencies)
        # (seq, 1, half): broadcast over batch and heads of a (batch, seq, heads, half) tensor
        self.register_buffer("cos", angles.cos()[:, None, :], persistent=False)
        self.register_buffer("sin", angles.sin()[:, None, :], persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))


def model_flop_per_token(spec: TransformerSpec, *, layers: int, seq: int) -> float:
    """6 N (N: the non-embedding parameters plus the LM head) + 6 L s H d for causal attention
    (12 L s H d halved): the ``6N+attention`` convention of the torchtitan profiles."""
    attention = spec.attention
    per_layer = spec.hidden_size * (attention.num_heads + 2 * attention.num_kv_heads) * attention.head_dim
    per_layer += attention.num_heads * attention.head_dim * spec.hidden_size
    per_layer += 3 * spec.hidden_size * spec.ffn_hidden_size
    params = layers * per_layer + spec.vocab_size * spec.hidden_size
    return 6.0 * params + 6.0 * layers * seq * attention.num_heads * attention.head_dim


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.2-1b")
    parser.add_argument("--layers", type=int, default=None, help="fewer layers than the model's")
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--compile", action="store_true", help="torch.compile each block")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--system", default="h200-sxm", help="catalog accelerator, for the tracker's MFU")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu to check the script", file=sys.stderr)
        return 2
    spec = load_models().get(args.model)
    layers = args.layers or spec.num_layers
    torch.manual_seed(0)
    model = Model(spec, layers=layers, seq=args.seq).to(device)
    if args.compile:
        for block in model.blocks:
            block.compile()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    tokens_per_step = args.micro_batch * args.seq
    flop_per_token = model_flop_per_token(spec, layers=layers, seq=args.seq)
    batches = torch.randint(0, spec.vocab_size, (4, args.micro_batch, args.seq + 1), device=device)
    tracker = Tracker(
        args.run_dir,
        model_flop_per_token=flop_per_token,
        system=args.system,
        seq_len=args.seq,
        num_accelerators=1,
        meta={"model": args.model, "layers": layers, "compile": args.compile},
    )
    times: list[float] = []
    with tracker:
        with tracker.init():
            step_once(model, optimizer, batches[0], device)  # first call: allocations, kernel choice
        for step in range(args.warmup + args.steps):
            start = time.perf_counter()
            with tracker.step(tokens=tokens_per_step, sync=True):
                step_once(model, optimizer, batches[step % len(batches)], device)
            times.append(time.perf_counter() - start)
    measured = times[args.warmup :]
    parameters = sum(p.numel() for p in model.parameters())  # a tied head counted once
    result = summary(
        args,
        parameters=parameters,
        layers=layers,
        measured=measured,
        flop_per_token=flop_per_token,
        tokens_per_step=tokens_per_step,
        device=device,
    )
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0


def step_once(
    model: Model, optimizer: torch.optim.Optimizer, batch: torch.Tensor, device: torch.device
) -> None:
    with torch.autocast(device.type, dtype=torch.bfloat16):
        logits = model(batch[:, :-1])
    loss = functional.cross_entropy(logits.float().flatten(0, 1), batch[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if not math.isfinite(float(loss.detach())):
        raise RuntimeError("the loss is not finite")


def summary(
    args: argparse.Namespace,
    *,
    parameters: int,
    layers: int,
    measured: list[float],
    flop_per_token: float,
    tokens_per_step: int,
    device: torch.device,
) -> dict[str, Any]:
    step_s = statistics.median(measured)
    out: dict[str, Any] = {
        "model": args.model,
        "layers": layers,
        "seq": args.seq,
        "micro_batch": args.micro_batch,
        "compile": args.compile,
        "steps_timed": len(measured),
        "step_s_median": step_s,
        "step_s_min": min(measured),
        "step_s_max": max(measured),
        "tokens_per_s": tokens_per_step / step_s,
        "model_flop_per_token": flop_per_token,
        "model_flop_per_s": flop_per_token * tokens_per_step / step_s,
        "parameters": parameters,
        "torch": torch.__version__,
    }
    if device.type == "cuda":
        out["device"] = torch.cuda.get_device_name(device)
        out["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        out["cuda"] = torch.version.cuda
    return out


if __name__ == "__main__":
    raise SystemExit(main())
