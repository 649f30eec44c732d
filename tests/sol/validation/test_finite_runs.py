"""A benchmark that sends a stated number of requests at once (trtllm-bench throughput, vLLM's
benchmark_serving at ``--request-rate inf``) divides the tokens by the time to the last completion,
so its figure includes the ramp-up and the drain; only an MLPerf Offline run (ten minutes or more)
is read at the deployment's steady state (issue 27, workloads)."""

from __future__ import annotations

from pathlib import Path

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"


def _predicted(tmp_path: Path, catalog: Catalog, models: ModelRegistry, requests: int) -> float:
    path = tmp_path / f"rows-{requests}.tsv"
    load = f"{requests} requests, request rate inf, max batch 64"
    path.write_text(
        f"{HEADER}\nR1\tinfer\tx\tLlama 3.1 8B\tISL/OSL 128/512\t{load}\t1\t1\tH100 SXM\tFP8"
        "\toutput tokens/s\t1,000\n",
        encoding="utf-8",
    )
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    (row,) = report.rows
    assert row.predicted is not None, row.reason
    assert any("ramp-up and drain included" in note for note in row.assumptions), row.assumptions
    return row.predicted


def test_one_request_over_the_cap_doubles_the_run(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # By hand: at most 64 sequences run at once and every request decodes 512 tokens, so 128
    # requests are two full waves (the steady rate), while 65 are one full wave and a 65th request
    # decoding alone for as long: 65 x 512 tokens in about twice one wave's time, 65/128 = 0.51 of
    # the rate; a batch-1 step is a little faster than a batch-64 one (the same weights streamed,
    # less KV and fewer FLOPs), so 0.5-0.65.
    one_over = _predicted(tmp_path, catalog, models, 65)
    two_waves = _predicted(tmp_path, catalog, models, 128)
    assert 0.5 < one_over / two_waves < 0.65


def test_a_request_count_is_a_whole_number_of_its_own(tmp_path: Path) -> None:
    # "49,152 requests" is a count; "1e400 requests" is not 400 of them.
    from lightspeed.sol.validation.infer_load import row_requests
    from lightspeed.sol.validation.published import read_table

    path = tmp_path / "rows.tsv"
    path.write_text(
        f"{HEADER}\nR1\tinfer\tx\tLlama 3.1 8B\tISL/OSL 128/512\t49,152 requests\t1\t1\tH100 SXM\tFP8"
        "\toutput tokens/s\t1,000\n"
        "R2\tinfer\tx\tLlama 3.1 8B\tISL/OSL 128/512\t1e400 requests\t1\t1\tH100 SXM\tFP8"
        "\toutput tokens/s\t1,000\n",
        encoding="utf-8",
    )
    first, second = read_table(path)
    assert row_requests(first) == 49_152
    assert row_requests(second) is None
