"""A utilization written as a fraction under a metric that says percent (``MFU %`` over ``0.57``,
the PyTorch FSDP blog's Table 1, probe-training U16-U18) is read as that fraction, with a note:
as a percentage it would be at most 1% of peak, below any published run."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.readings import read_cell
from lightspeed.workload import ModelRegistry
from probes import DATA

# Llama 2 7B (the FSDP blog's LlamaT 7B): L 32, h 4096, FFN 11008 (SwiGLU), vocab 32000, seq 4096
_LAYERS, _HIDDEN, _FFN, _VOCAB, _SEQ = 32, 4096, 11008, 32000, 4096
# A100's dense BF16 peak, FLOP/s
_A100_BF16_PEAK_FLOP_PER_S = 312e12


def _llama2_7b_mfu_by_hand(tokens_per_s_per_gpu: float) -> float:
    """MFU of a Llama 2 7B run on A100 from its tokens/s per GPU, by PaLM's 6N + 12·L·h·s."""
    per_layer = 4 * _HIDDEN * _HIDDEN + 3 * _HIDDEN * _FFN  # attention q/k/v/o + SwiGLU's 3 matrices
    params = _LAYERS * per_layer + 2 * _VOCAB * _HIDDEN  # embedding and untied output head
    flop_per_token = 6 * params + 12 * _LAYERS * _HIDDEN * _SEQ
    return tokens_per_s_per_gpu * flop_per_token / _A100_BF16_PEAK_FLOP_PER_S


@pytest.mark.parametrize("metric", ["MFU %", "MFU (%)", "HFU in percent"])
def test_a_fraction_under_a_percent_metric_is_read_as_the_fraction(metric: str) -> None:
    (reading,) = read_cell(metric, "0.57")
    assert reading.value == pytest.approx(0.57)  # 57% of peak, not 0.57%
    assert reading.unit == "fraction"
    assert reading.problem == ""
    assert any("read as the fraction 0.57 (57%)" in note for note in reading.notes)


def test_a_percentage_under_a_percent_metric_is_still_a_percentage() -> None:
    (reading,) = read_cell("MFU (%)", "57")
    assert reading.value == pytest.approx(0.57)
    assert reading.unit == "%"
    assert reading.notes == ()


def test_a_percent_sign_beside_the_number_is_kept() -> None:
    # the writer put the sign on the number itself: 0.57% as written
    (reading,) = read_cell("MFU %", "0.57%")
    assert reading.value == pytest.approx(0.0057)
    assert reading.notes == ()


def test_one_under_a_percent_metric_is_refused_as_the_whole_peak() -> None:
    # '1' under 'MFU %': 1% of peak is below any published run, 100% is more than any run reaches
    (reading,) = read_cell("MFU %", "1")
    assert reading.problem.startswith("MFU '1' is 100% of peak")


def test_the_fsdp_blog_cells_read_as_fractions() -> None:
    # probe-training U16: 'Throughput tokens/sec/GPU; MFU %; HFU %' <- '3700; 0.57; 0.57'
    readings = read_cell("Throughput tokens/sec/GPU; MFU %; HFU %", "3700; 0.57; 0.57")
    assert [(reading.key, reading.value) for reading in readings] == [
        ("tokens_per_s_per_gpu", pytest.approx(3700.0)),
        ("mfu", pytest.approx(0.57)),
        ("hfu", pytest.approx(0.57)),
    ]
    # the row's own throughput implies about 0.56 MFU by hand (6N + 12·L·h·s on A100's 312 TFLOP/s):
    # the fraction reading, not 0.0057
    assert readings[1].value == pytest.approx(_llama2_7b_mfu_by_hand(3700.0), rel=0.05)


def test_probe_training_fsdp_rows_predict_their_utilization_as_fractions(
    catalog: Catalog, models: ModelRegistry
) -> None:
    report = validate_published(
        path=DATA / "probe-training.tsv", catalog=catalog, models=models, infer=inference_predictor()
    )
    rows = {row.id: row for row in report.rows}
    # measured as the blog's Table 1 gives them (MFU, HFU): U16 57%, 57%; U17 50%, 67%; U18 34%, 45%
    by_hand = {"U16": (0.57, 0.57), "U17": (0.50, 0.67), "U18": (0.34, 0.45)}
    for row_id, (mfu, hfu) in by_hand.items():
        measured = {figure.metric: figure.measured for figure in rows[row_id].also}
        assert measured == {"mfu": pytest.approx(mfu), "hfu": pytest.approx(hfu)}, row_id
        # a utilization and its prediction are the same order of magnitude: no error of 100x
        assert all(abs(figure.rel_error) < 1.0 for figure in rows[row_id].also), row_id
