"""Record the expert load of a tiny, randomly initialised Mixtral on the CPU (no download).

    python examples/record_expert_load.py --out mixtral-tiny-load.json [--steps 16] [--window 8]

The model has Mixtral-8x7B's routing shape (32 MoE layers, 8 experts, top-2)
with a 64-wide hidden state, so the file fits ``--model mixtral-8x7b``:

    lightspeed plan train --model mixtral-8x7b --system dgx-h100 --gpus 64 --tp 2 --ep 8 \\
        --pp 4 --global-batch 256 --expert-load mixtral-tiny-load.json --expert-replicas 16

Its routers are random, so the load is not Mixtral's: the script shows the path
from a recording to a prediction (hook the routers, step the window, save),
which is the same for a trained model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, MixtralConfig

from lightspeed.moe import ExpertLoadRecorder


def tiny_mixtral(num_layers: int = 32, seed: int = 0) -> torch.nn.Module:
    """Mixtral's routing shape with tiny dense parts, randomly initialised."""
    config = MixtralConfig(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=8,
        num_experts_per_tok=2,
        max_position_embeddings=256,
    )
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config).eval()


def record(out: Path, *, steps: int, window: int, batch: int = 4, seq_len: int = 64) -> Path:
    """Run ``steps`` random batches through the tiny Mixtral, one step each; save the window."""
    model = tiny_mixtral()
    generator = torch.Generator().manual_seed(1)
    recorder = ExpertLoadRecorder(model, window_steps=window, model_name="mixtral-tiny")
    with recorder, torch.no_grad():
        for _ in range(steps):
            model(torch.randint(0, 512, (batch, seq_len), generator=generator))
            recorder.step()
    return recorder.save(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Expert-load file to write.")
    parser.add_argument("--steps", type=int, default=16, help="Forward passes (one step each).")
    parser.add_argument("--window", type=int, default=8, help="Steps the load averages over.")
    args = parser.parse_args()
    path = record(args.out, steps=args.steps, window=args.window)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
