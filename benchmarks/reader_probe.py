"""How rows written the way other sources write them are read: a rephrasing probe of the free-text reader.

Usage:
    python benchmarks/reader_probe.py [--out benchmarks/results/reader_probe.json]

Takes dev rows of ``tests/data/shared/validation/`` (I3: Llama 3.3 70B on one H200 in FP8 under
TensorRT-LLM; T45: Meta's Llama 3 405B plan; T101: torchtitan's Llama 3.1 8B on 8 H100) and
rewrites one cell at a time as other sources write the same thing (``float8_e4m3fn`` for FP8,
``sec/it`` for a step time, ``1024 nodes x 8`` for 8,192 GPUs, ``--input-len 1000 --output-len
1000`` for ISL/OSL 1000/1000, ``2048 x 8192 tokens`` for a batch of 2,048). Each variant means
exactly what its row means, so the reading is right when the variant is predicted and its
prediction equals the row's (to 1e-6); a variant predicted differently is a misreading, one
refused a gap. Variants whose meaning differs on purpose (a precision, a load) are in the tests
(``tests/sol/validation/test_spelled_cells.py``), not here. Prints the counts and every variant
read wrong or refused, and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.workload import load_models

ROWS = Path(__file__).resolve().parents[1] / "tests" / "data" / "shared" / "validation"
DEFAULT_OUT = Path(__file__).parent / "results" / "reader_probe.json"

# (row id, column, text meaning what the row's cell means; a column of ``+`` joined names takes
# ``+`` joined texts: ``GPUs+hardware`` moves the GPU count into the hardware cell)
VARIANTS: tuple[tuple[str, str, str], ...] = (
    # I3: Llama 3.3 70B, one H200, FP8, ISL/OSL 1000/1000 at the most load, output tokens/s
    *(("I3", "precision", text) for text in (
        "fp8 (e4m3)", "FP8 E4M3", "float8_e4m3fn", "torch.float8_e4m3fn", "Float8", "W8A8 FP8",
        "FP8 (ModelOpt)", "8-bit float (FP8)",
    )),
    *(("I3", "seq", text) for text in (
        "ISL 1000 / OSL 1000", "1000 input tokens, 1000 output tokens", "in=1000 out=1000",
        "prompt 1000 tokens, generation 1000 tokens", "ISL:1000, OSL:1000", "1000 in / 1000 out",
        "--input-len 1000 --output-len 1000", "input_len=1000, output_len=1000",
        "random_input_len=1000, random_output_len=1000", "prompt 1000, max_tokens 1000",
        "context 1000, generate 1000", "1000:1000", "random 1000/1000", "1000/1000",
        "Input Length 1000 Output Length 1000",
        # benchmark tools' own flags: vLLM's and SGLang's random dataset, genai-perf's synthetic one
        "--random-input-len 1000 --random-output-len 1000", "--random-input 1000 --random-output 1000",
        "--synthetic-input-tokens-mean 1000 --output-tokens-mean 1000",
        "input_tokens_mean=1000, output_tokens_mean=1000",
        "--input-sequence-length 1000 --output-sequence-length 1000", "prompt_len=1000 gen_len=1000",
    )),
    *(("I3", "metric", text) for text in (
        "output throughput (tok/s)", "Output token throughput (tokens/s)", "output tokens per second",
        "generation throughput, tok/s", "output tok/sec", "output TPS", "Output Throughput (tokens/second)",
        # as benchmark tools label it: genai-perf, trtllm-bench, LLMPerf (snake case), vLLM's log
        "Output Token Throughput (per sec)", "Total Output Throughput (tokens/sec)",
        "mean_output_throughput_token_per_s",
    )),
    # the unit beside the number only (vLLM's engine log: "Avg generation throughput: 2909.0 tokens/s")
    *(("I3", "metric+measured", text) for text in (
        "Avg generation throughput+2909.0 tokens/s", "generation throughput+2,909 tokens/s",
    )),
    *(("I3", "measured", text) for text in ("2909", "2909.0", "~2,909", "2,909 tok/s")),
    *(("I3", "hardware", text) for text in (
        "H200 SXM 141GB", "NVIDIA H200-SXM-141GB", "H200 141GB HBM3e", "DGX H200", "H200s",
        "NVIDIA H200 Tensor Core GPU",
    )),
    *(("I3", "model", text) for text in (
        "Llama-3.3-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct", "Llama 3.3 70B Instruct",
        "llama3.3-70b", "LLaMA-3.3-70B-Instruct",
    )),
    # T45: Meta's Llama 3 405B on 8,192 H100: TP8 PP16 DP64, 2,048 sequences of 8,192, TFLOP/s/GPU
    *(("T45", "GPUs", text) for text in (
        "8,192", "1024 nodes x 8", "1024 nodes (8 GPUs each)", "8K", "1024x8",
    )),
    *(("T45", "TP", text) for text in ("TP=8", "8-way", "tp8", "TP 8")),
    *(("T45", "PP", text) for text in ("PP=16", "pp16", "16 stages")),
    *(("T45", "TP+PP", text) for text in ("TP8 PP16+", "TP=8, PP=16+", "tp8/pp16+")),
    *(("T45", "seq", text) for text in ("8K", "8k tokens", "seq len 8192", "8,192", "8192 tokens")),
    *(("T45", "global_batch", text) for text in (
        "2048", "2K", "GBS=2048", "16M tokens", "16.8M tokens", "16,777,216 tokens", "2048 x 8192 tokens",
        "2048 sequences of 8192",
    )),
    *(("T45", "metric", f"{text}; BF16 MFU") for text in (
        "TFLOPS/GPU", "TFLOP/s per GPU", "Throughput per GPU (TFLOP/s)", "achieved TFLOPs per GPU",
    )),
    # T34: Megatron-Core GPT 1.7B on 48 H100: the count written in the hardware cell instead
    *(("T34", "GPUs+hardware", f"+{text}") for text in (
        "48x H100", "48 H100s", "6x DGX H100", "6 nodes of 8 H100", "6 nodes x 8 H100", "6 x 8 H100",
        "48 H100 GPUs (6 nodes)", "H100 x 48",
    )),
    # T101: torchtitan, Llama 3.1 8B on 8 H100 (500 W), FSDP2, bf16, tokens/s per GPU
    *(("T101", "precision", text) for text in (
        "bfloat16", "torch.bfloat16", "BF16 mixed precision", "bf16 AMP", "mixed precision (bf16)",
        "BF16/FP32 mixed",
    )),
    *(("T101", "sharding", text) for text in (
        "FSDP2", "fully_shard", "FSDP (FULL_SHARD)", "ZeRO-3", "ZeRO stage 3", "DeepSpeed ZeRO-3", "HSDP",
    )),
    *(("T101", "metric", f"{text}; peak memory GiB") for text in (
        "TPS per GPU", "tokens/sec/GPU", "tok/s/gpu", "WPS per GPU", "tokens per second per GPU",
    )),
)  # fmt: skip


def _table(rows: dict[str, list[str]], header: list[str], variants: list[tuple[str, str, str]]) -> str:
    column = {name: index for index, name in enumerate(header)}
    lines = ["\t".join(header)]
    for base in sorted({base for base, _, _ in variants}):
        lines.append("\t".join(rows[base]))
    for number, (base, names, texts) in enumerate(variants):
        cells = list(rows[base])
        cells[0] = f"{base}-v{number}"
        for name, text in zip(names.split("+"), texts.split("+"), strict=True):
            cells[column[name]] = text
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def probe() -> dict[str, Any]:
    """Validate every variant beside its row; the variants read wrong and those refused."""
    rows: dict[str, list[str]] = {}
    header: list[str] = []
    for path in sorted(ROWS.glob("published-dev*.tsv")):
        lines = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
        header = lines[0]
        rows.update({cells[0]: cells for cells in lines[1:] if cells and not cells[0].startswith("#")})
    variants = list(VARIANTS)
    with tempfile.TemporaryDirectory() as folder:
        table = Path(folder) / "variants.tsv"
        table.write_text(_table(rows, header, variants), encoding="utf-8")
        report = validate_published(
            path=table, catalog=load_catalog(), models=load_models(), infer=inference_predictor()
        )
    results = {row.id: row for row in report.rows}
    misread, refused = [], []
    for number, (base, name, text) in enumerate(variants):
        row, reference = results[f"{base}-v{number}"], results[base]
        entry = {"row": base, "column": name, "text": text}
        if row.predicted is None:
            refused.append({**entry, "reason": row.reason})
        elif reference.predicted is None or abs(row.predicted / reference.predicted - 1.0) > 1e-6:
            misread.append({**entry, "predicted": row.predicted, "row_predicted": reference.predicted})
    return {"variants": len(variants), "misread": misread, "refused": refused}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    result = probe()
    misread, refused = result["misread"], result["refused"]
    print(f"{result['variants']} variants: {len(misread)} read wrong, {len(refused)} refused")
    for entry in misread:
        print(f"  read wrong: {entry['row']} {entry['column']} {entry['text']!r}")
    for entry in refused:
        print(f"  refused: {entry['row']} {entry['column']} {entry['text']!r}: {entry['reason']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
