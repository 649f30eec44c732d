"""Convert the free-text validation tables into the structured rows lightspeed ships (run once).

Usage:
    python benchmarks/convert_validation_rows.py [--table FILE.tsv ...]
        [--out src/lightspeed/sol/validation/data/published-runs.toml]

Each row of the tables (default: the two development files copied in
``tests/data/shared/validation``) is read by the free-text reader
(``lightspeed.sol.validation.rows`` / ``infer_rows``) into its typed fields,
which are written in the structured format
(``lightspeed.sol.validation.structured``). What a free-text row has no
column for is added from :data:`DOCUMENTS`, one entry per cited document: who
published the figure (the party that ran and reported it; cross-validation
leaves each publisher out in turn) and the document's address, built from the
repository, commit and path or the paper the source cell cites. Every converted
row was then checked by hand against its TSV line (docs/sol.md, "Validation
against published runs"). A row the reader cannot read stops the conversion.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.sol.validation.infer_rows import read_inference_row
from lightspeed.sol.validation.published import PublishedRow, read_table
from lightspeed.sol.validation.rows import read_training_row
from lightspeed.sol.validation.structured import PublishedRun
from lightspeed.sol.validation.structured_writer import dump_runs
from lightspeed.workload import ModelRegistry, load_models

ROOT = Path(__file__).resolve().parents[1]
TABLES = (
    ROOT / "tests/data/shared/validation/published-dev.tsv",
    ROOT / "tests/data/shared/validation/published-dev-2025.tsv",
)
OUT = ROOT / "src/lightspeed/sol/validation/data/published-runs.toml"
GITHUB = "https://github.com"
# (words of the source cell, publisher, address of the document), first match wins.
DOCUMENTS = (
    ("Narayanan et al. SC21", "NVIDIA", "https://arxiv.org/abs/2104.04473"),
    ("Korthikanti et al. 2022", "NVIDIA", "https://arxiv.org/abs/2205.05198"),
    ("NVIDIA/Megatron-LM README", "NVIDIA", f"{GITHUB}/NVIDIA/Megatron-LM/blob/d98e8a64/README.md"),
    ("Llama Team 2024", "Meta", "https://arxiv.org/abs/2407.21783"),
    ("DeepSeek-V3 Technical Report", "DeepSeek", "https://arxiv.org/abs/2412.19437"),
    (
        "mosaicml/llm-foundry",
        "MosaicML",
        f"{GITHUB}/mosaicml/llm-foundry/blob/main/scripts/train/benchmarking/README.md",
    ),
    (
        "perf-overview.md @00f37686",
        "NVIDIA",
        f"{GITHUB}/NVIDIA/TensorRT-LLM/blob/00f37686/docs/source/performance/perf-overview.md",
    ),
    (
        "TensorRT-LLM release/0.5.0",
        "NVIDIA",
        f"{GITHUB}/NVIDIA/TensorRT-LLM/blob/release/0.5.0/docs/source/performance.md",
    ),
    ("LLM-Viewer issue #4", "NVIDIA", f"{GITHUB}/hahnyuan/LLM-Viewer/issues/4"),
    (
        "llama3_h100_202412_torchtitan.md",
        "Meta",
        f"{GITHUB}/pytorch/torchtitan/blob/820504e2/benchmarks/llama3_h100_202412_torchtitan.md",
    ),
    (
        "trainy-whitefiber",
        "Trainy",
        f"{GITHUB}/pytorch/torchtitan/blob/cbccb387/benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md",
    ),
    (
        "torchtitan docs/performance.md",
        "Meta",
        f"{GITHUB}/pytorch/torchtitan/blob/3faaa1a0/docs/performance.md",
    ),
    ("llama3.1/README.md", "NVIDIA", f"{GITHUB}/NVIDIA/dgxc-benchmarking/blob/741c8860/llama3.1/README.md"),
    ("grok1/README.md", "NVIDIA", f"{GITHUB}/NVIDIA/dgxc-benchmarking/blob/68eaf7e1/grok1/README.md"),
    (
        "deepseek_v3/pretraining/README.md",
        "NVIDIA",
        f"{GITHUB}/NVIDIA/dgxc-benchmarking/blob/68eaf7e1/deepseek_v3/pretraining/README.md",
    ),
    (
        "Megatron-Bridge docs/performance-summary-archive.md",
        "NVIDIA",
        f"{GITHUB}/NVIDIA-NeMo/Megatron-Bridge/blob/067f987d/docs/performance-summary-archive.md",
    ),
    (
        "Best_perf_practice_on_DeepSeek-R1",
        "NVIDIA",
        f"{GITHUB}/NVIDIA/TensorRT-LLM/blob/01c4ece9/docs/source/blogs/"
        "Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md",
    ),
    ("2025-05-05-large-scale-ep", "LMSYS", "https://lmsys.org/blog/2025-05-05-large-scale-ep/"),
    ("2025-06-16-gb200-part-1", "LMSYS", "https://lmsys.org/blog/2025-06-16-gb200-part-1/"),
    ("2025-09-25-gb200-part-2", "LMSYS", "https://lmsys.org/blog/2025-09-25-gb200-part-2/"),
    (
        "open-infra-index",
        "DeepSeek",
        f"{GITHUB}/deepseek-ai/open-infra-index/blob/56d86855/202502OpenSourceWeek/"
        "day_6_one_more_thing_deepseekV3R1_inference_system_overview.md",
    ),
    (
        "Falcon180B-H200.md",
        "NVIDIA",
        f"{GITHUB}/NVIDIA/TensorRT-LLM/blob/3c44cb97/docs/source/blogs/Falcon180B-H200.md",
    ),
)
HEADER = """Published training and inference runs lightspeed is validated and fitted on, one [[row]] each.

Schema (version 1; lightspeed.sol.validation.structured, docs/sol.md "Validation against published runs"):
  id, kind (train | infer), publisher (who ran and reported the figure: cross-validation leaves
  each one out in turn), source (the citation), url (the cited document; built from the
  repository, commit and path or the paper the citation names), stack (the software profile of
  sol/data/stacks.toml the run is predicted on), metric, unit, value (the published figure in
  that unit), metric_text / value_text (as the source printed them), confidence (how it was
  read), derived (what was derived from the figure or checked against it: an implied step
  time, a peer's estimate), converted_from, notes (what the reader assumed).
  [row.model]      name = a registry model, or architecture/attention tables (model-file keys)
  [row.hardware]   system (catalog), num_gpus, fabric (catalog link), memory_gib / power_limit_w
                   (the variant the run used)
  [row.plan]       training: TrainingPlan fields; a list is a setting the source left unsaid,
                   searched over those values (the fastest plan that fits wins); recompute
                   "selective" is the predicting stack's selective policy; fsdp_under_pipeline:
                   FSDP with PP, whose ZeRO stage is the predicting stack's that keeps parameters
                   and gradients whole (zero_stage is the run's own stack's); free_degrees: the
                   degrees the source left unstated, searched if the batch does not split
  [row.flops]      training: how the publisher counted FLOPs (convention, counts_recompute,
                   causal, peak_flop_per_s of an MFU figure when the source names one)
  [row.workload]   training: num_tokens of a GPU-hours or time-to-train figure; inference:
                   input_tokens, output_tokens, concurrency or arrival_rate_per_s (requests/s),
                   batching (continuous | static | decode)
  [row.deployment] inference: InferencePlan fields (tp, pp, ep, dp_attention, replicas,
                   precision, kv_precision, kv_replication)
  [[row.also]]     training: each other figure the source publishes beside the row's own
                   (a peak memory beside a throughput), predicted from the same plan: metric,
                   unit, value, metric_text / value_text, num_tokens of a GPU-hours or
                   time-to-train figure

Converted once from the free-text tables published-dev.tsv and published-dev-2025.tsv by
benchmarks/convert_validation_rows.py and checked by hand against them; edit rows here."""


def document_of(row: PublishedRow) -> tuple[str, str]:
    """(publisher, url) of the document a row's source cell cites."""
    source = row.text("source")
    for words, publisher, url in DOCUMENTS:
        if words in source:
            return publisher, url
    raise SystemExit(f"{row.row_id}: no entry of DOCUMENTS matches its source {source!r}")


def convert(row: PublishedRow, table: Path, catalog: Catalog, models: ModelRegistry) -> PublishedRun:
    """One table row in the structured format."""
    publisher, url = document_of(row)
    common = {
        "id": row.row_id,
        "kind": row.kind,
        "publisher": publisher,
        "source": row.text("source"),
        "url": url,
        "metric_text": row.text("metric"),
        "value_text": row.text("measured"),
        "confidence": row.text("confidence"),
        "derived": row.text("derived_or_check"),
        "converted_from": f"{table.name} line {row.line}",
    }
    if row.kind == "train":
        return PublishedRun(**common, training=read_training_row(row, catalog, models))
    return PublishedRun(**common, inference=read_inference_row(row, catalog, models))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, action="append")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    catalog, models = load_catalog(), load_models()
    runs = [
        convert(row, table, catalog, models) for table in args.table or TABLES for row in read_table(table)
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump_runs(runs, HEADER), encoding="utf-8")
    print(f"wrote {len(runs)} rows to {args.out}")


if __name__ == "__main__":
    main()
