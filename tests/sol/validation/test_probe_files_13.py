"""The thirty-ninth session's probe table (``tests/data/validation/probe-serving-13.tsv``: five
serving rows of the Gated DeltaNet hybrids from SGLang's cookbook, Qwen3-Coder-Next on two B200
and Qwen3.5-397B-A17B on eight H200 with MTP), on the conventions of ``test_probe_files_9.py``:
rows read by hand from their cells. No accuracy is asserted: these rows probe the reader and the
engines, they fit nothing (their errors are in ``docs/benchmarks.md``)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_serving_read, probe, validated_rows

_serving_rows, _read_serving = probe("probe-serving-13.tsv")


@pytest.fixture(scope="module")
def serving(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return validated_rows(DATA / "probe-serving-13.tsv", catalog, models)


# id: (model, GPUs, ISL, OSL, concurrency), read by hand: SGLang's random dataset draws each length
# up to the flag, so the lengths are the run's totals over its '--num-prompts'
SERVING_BY_HAND: dict[str, tuple[str, int, int, int, int]] = {
    "G01": ("qwen3-next-80b-a3b", 2, 610, 422, 1),  # 6,101 / 4,220 tokens over 10 prompts
    "G02": ("qwen3-next-80b-a3b", 2, 496, 510, 16),  # 39,668 / 40,805 over 80
    "G03": ("qwen3-next-80b-a3b", 2, 500, 505, 100),  # 249,831 / 252,662 over 500
    "G04": ("qwen3.5-397b-a17b", 8, 610, 422, 1),
    "G05": ("qwen3.5-397b-a17b", 8, 502, 500, 100),  # 502,493 / 500,251 over 1,000
}


@pytest.mark.parametrize("row_id", sorted(SERVING_BY_HAND))
def test_the_thirteenth_serving_probe_is_read_as_written(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    model, gpus, isl, osl, concurrency = SERVING_BY_HAND[row_id]
    assert_serving_read(_read_serving(row_id, catalog, models), model, gpus, (isl, osl), concurrency)


def test_the_mtp_rows_decode_speculatively_at_their_stated_acceptance(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # '--speculative-num-steps 3', 'accept length 3.12': 3 drafts whose verify passes yield 3.12
    for row_id, length in (("G04", 3.12), ("G05", 3.31)):
        speculative = _read_serving(row_id, catalog, models).plan.speculative
        assert speculative is not None
        assert speculative.num_draft_tokens == 3
        rate = speculative.acceptance_rate
        assert 1 + rate + rate**2 + rate**3 == pytest.approx(length, rel=1e-6)
    assert _read_serving("G03", catalog, models).plan.speculative is None


def test_every_row_is_predicted(serving: dict[str, ValidationRow]) -> None:
    assert all(row.predicted is not None and row.predicted > 0 for row in serving.values())
    assert (serving["G01"].metric, serving["G01"].measured) == ("tpot_s", pytest.approx(0.00619))
    assert (serving["G05"].metric, serving["G05"].measured) == ("output_tokens_per_s", 1767.45)
