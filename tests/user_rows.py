"""A user's own rows for ``lightspeed validate``: the table header and a one-GPU vLLM serving row,
written to a file and validated, its rows by id (the reader tests' shared fixture)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEADER = (
    "id\tkind\tsource\tmodel\tparams_B\tlayers\thidden\theads(kv)\tffn\tvocab\tseq\tglobal_batch\t"
    "micro_batch\tTP\tPP\tVPP\tCP\tDP\tEP\tsharding\tGPUs\thardware\tprecision\trecompute\tmetric\t"
    "measured\tderived_or_check\tconfidence"
)


def serving_row(
    row_id: str, load: str, metric: str, value: str, *, source: str = "vLLM 0.6.3 benchmark_serving.py"
) -> str:
    """Llama 3.1 8B in BF16 on one H100 SXM, 1,024 prompt and 128 output tokens, at ``load``."""
    return (
        f"{row_id}\tinfer\t{source}\tLlama 3.1 8B\t\t\t\t\t\t\t"
        f"input 1024, output 128\t{load}\t\t1\t\t\t\t\t\t\t1\tH100 SXM\tBF16\t\t{metric}\t{value}\t\tread"
    )


def validated_rows(run_cli: Any, tmp_path: Path, *rows: str) -> dict[str, Any]:
    """``validate --json`` of ``rows`` under :data:`HEADER`, each row's JSON by id (exit 0 asserted)."""
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((HEADER, *rows)) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    return {row["id"]: row for row in json.loads(result.out)["rows"]}
