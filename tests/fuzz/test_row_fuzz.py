"""Free-text validation rows under fuzzing (issue 28, reading; docs/limits.md).

``lightspeed validate FILE.tsv`` reads cells written by people, in every way sources write them.
Each example builds one training or inference row from fragments sources use (``ISL/OSL``,
``MTP 3``, ``acceptance length``, ``nodes x 8``, ``16M tokens``, ``req/s``) mixed with numbers
built to break parsers, and holds the command to the CLI's property (:func:`fuzzing.check`):
exit 0 with finite numbers in the JSON, a predicted row positive, or exit 2 with one line; never
a traceback. Derandomized, as the rest of the fuzz suite.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import check

FUZZ = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "max_examples": 80,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}
NUMBERS = st.sampled_from(
    ["0", "-1", "1", "3", "8", "64", "1.5", "0.7", "2.5", "70%", "1e400", "nan", "inf", "99999999999",
     "16M", "16.8M", "8K", "2K", "1k", "1,000", "16,777,216", "4.5", "1024", "2048", "128"]
)  # fmt: skip
WORDS = st.sampled_from(
    ["ISL/OSL", "input", "output", "tokens", "--input-len", "--output-len", "max_tokens", "prompt",
     "concurrency", "in flight", "req/s", "QPS", "request rate", "batch", "bs", "MTP", "draft tokens",
     "acceptance", "acceptance length", "AL", "EAGLE-3", "speculative", "nodes x", "x", "/", ":",
     "ShareGPT", "sonnet", "random", "offline", "max throughput", "FSDP", "ZeRO stage", "SHARD_GRAD_OP",
     "DDP", "fully_shard", "activation checkpointing", "selective", "full", "interleaved 1F1B", "v=",
     "Float8", "E4M3", "bfloat16", "half", "FP8", "NVFP4", "TP", "DP attention", "per GPU", "ms", "s",
     "(", ")", ";", ",", "n/r", ""]
)  # fmt: skip
CELL = st.lists(st.one_of(WORDS, NUMBERS), max_size=6).map(" ".join)
METRICS = st.sampled_from(
    ["output tokens/s", "output tokens/s/user", "TTFT", "Median TTFT (ms)", "mean ITL", "TPS per GPU",
     "TFLOP/s per GPU", "MFU", "sec/it", "samples/sec", "Model FLOPs Utilization", "req/s"]
)  # fmt: skip
HEADER = (
    "id\tkind\tsource\tmodel\tseq\tglobal_batch\tmicro_batch\tTP\tPP\tVPP\tDP\tsharding\trecompute"
    "\tGPUs\thardware\tprecision\tmetric\tmeasured"
)


# Two well-formed rows the examples start from: most cells stay readable, so the fuzzed ones reach
# the prediction, not only the first refusal.
COLUMNS = HEADER.split("\t")
BASES = (
    dict(zip(COLUMNS, (
        "F1", "train", "torchtitan 2024", "Llama 3.1 8B", "8192", "64", "1", "1", "1", "", "8",
        "FSDP2 full shard", "selective", "8", "H100 SXM", "bf16", "TPS per GPU", "6,000",
    ), strict=True)),
    dict(zip(COLUMNS, (
        "F1", "infer", "vLLM 2025", "Llama 3.1 8B", "ISL/OSL 1000/200", "concurrency 8", "", "1", "1", "", "",
        "", "", "1", "H100 SXM", "FP8", "output tokens/s", "2,000",
    ), strict=True)),
)  # fmt: skip
FUZZED = [column for column in COLUMNS if column not in ("id", "kind", "source")]


@st.composite
def _rows(draw: st.DrawFn) -> str:
    """One table row: a well-formed base with one to three cells replaced by fragments and numbers
    (the metric by a metric sources write)."""
    row = dict(draw(st.sampled_from(BASES)))
    for column in draw(st.lists(st.sampled_from(FUZZED), min_size=1, max_size=3, unique=True)):
        row[column] = draw(METRICS) if column == "metric" else draw(CELL)
    return "\t".join(row[column] for column in COLUMNS)


@settings(**FUZZ)  # type: ignore[call-overload]
@given(row=_rows())
def test_a_row_of_fragments_is_read_or_refused(tmp_path_factory: object, row: str) -> None:
    folder = Path(tmp_path_factory.mktemp("rows"))  # type: ignore[attr-defined]
    table = folder / "rows.tsv"
    table.write_text(f"{HEADER}\n{row}\n", encoding="utf-8")
    outcome = check(["validate", str(table)])
    if outcome.code == 0:
        for result in json.loads(outcome.out)["rows"]:
            assert result["status"] in ("ok", "error")
            if result["status"] == "ok":
                assert math.isfinite(result["predicted"]), result
                assert result["predicted"] > 0, result
            else:
                assert result["reason"], result
