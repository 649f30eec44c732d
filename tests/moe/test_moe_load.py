"""Expert-load files (lightspeed's JSON, SGLang's CSV, wide CSV, JSON tables), synthetic loads and
load statistics, with values worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.moe import (
    combine_loads,
    expert_load_from_array,
    load_stats,
    read_expert_load,
    synthetic_load,
    write_expert_load,
)
from lightspeed.moe.synthetic import _draw_distinct


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_own_format_round_trips(tmp_path: Path) -> None:
    load = expert_load_from_array(
        [[3, 0, 1.5], [2, 2, 2]], layer_names=["a", "b"], model="m", top_k=2, num_steps=4, window_steps=8
    )
    path = write_expert_load(load, tmp_path / "sub" / "load.json")
    document = json.loads(path.read_text())
    assert document["format"] == "lightspeed-expert-load"
    assert document["layers"][0] == {"name": "a", "counts": [3, 0, 1.5]}
    again = read_expert_load(path)
    assert (again.counts, again.layer_names, again.model, again.top_k) == (load.counts, ("a", "b"), "m", 2)
    assert (again.num_steps, again.window_steps) == (4, 8)
    assert not list(path.parent.glob(".*tmp"))  # the temporary file is gone


def test_sglang_csv_is_sparse_and_starts_at_its_first_moe_layer(tmp_path: Path) -> None:
    # SGLang's expert_distribution_rank*_timestamp*.csv: layer 3 is DeepSeek's first MoE layer
    path = _write(tmp_path, "dist.csv", "layer_id,expert_id,count\n3,0,10\n3,2,5\n4,1,7\n3,0,1\n")
    load = read_expert_load(path)
    assert load.layer_names == ("3", "4")
    assert load.counts == ((11.0, 0.0, 5.0), (0.0, 7.0, 0.0))  # repeated rows add, missing are 0
    padded = read_expert_load(path, num_experts=5)
    assert padded.num_experts == 5
    with pytest.raises(DataFileError, match="expert id 2 is beyond the 2 experts given"):
        read_expert_load(path, num_experts=2)


def test_long_csv_with_other_column_names(tmp_path: Path) -> None:
    text = "layer_idx,expert_idx,count_all_topk,count_top1\n0,0,4,2\n0,1,6,3\n"
    assert read_expert_load(_write(tmp_path, "a.csv", text)).counts == ((4.0, 6.0),)


def test_wide_csv_with_and_without_labels(tmp_path: Path) -> None:
    # (the first row is not 1,2,3: counts that are exactly the expert ids 1..E read as a header too,
    # and such a file is refused as ambiguous; see test_moe_wide_csv_header.py)
    plain = read_expert_load(_write(tmp_path, "plain.csv", "3,1,2\n4,5,6\n"))
    assert plain.counts == ((3.0, 1.0, 2.0), (4.0, 5.0, 6.0))
    assert plain.layer_names == ("0", "1")
    labelled = read_expert_load(_write(tmp_path, "lab.csv", "layer,e0,e1\nL7,1,2\nL8,3,4\n"))
    assert labelled.layer_names == ("L7", "L8")
    assert labelled.counts == ((1.0, 2.0), (3.0, 4.0))


@pytest.mark.parametrize(
    "document",
    [
        [[1, 2], [3, 4]],
        {"weight": [[1, 2], [3, 4]]},
        {"tokens_per_expert": [[1, 2], [3, 4]], "note": "x"},
        {"layer.0": [1, 2], "layer.1": [3, 4]},
    ],
)
def test_json_tables_from_other_tools(tmp_path: Path, document: object) -> None:
    load = read_expert_load(_write(tmp_path, "load.json", json.dumps(document)))
    assert load.counts == ((1.0, 2.0), (3.0, 4.0))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.json", "", "file is empty"),
        ("a.json", "{", "not valid JSON"),
        ("a.json", "[[1, NaN]]", "NaN is not a number JSON allows"),
        ("a.json", "[[1, -1]]", "expected a token count >= 0"),
        ("a.json", "[[1, 2], [3]]", "different numbers of experts"),
        ("a.json", "[]", "no layers"),
        ("a.json", '{"a": 1}', "not an expert-load document"),
        ("a.json", "[" * 100_000 + "]" * 100_000, "nested 100000 levels deep"),
        ("a.json", '{"format": "lightspeed-expert-load", "schema_version": 9}', "unsupported schema_version"),
        (
            "a.json",
            '{"format": "lightspeed-expert-load", "schema_version": 1, "layers": [{"counts": [1]}],'
            ' "num_steps": 0}',
            "expected a whole number >= 1",
        ),
        ("a.csv", "layer_id,expert_id,count\n0,x,1\n", "expert is not a whole number"),
        ("a.csv", "layer_id,expert_id,count\n0,1,inf\n", "expected a token count >= 0"),
        ("a.csv", "layer_id,expert_id,count\n0,1\n", "row has too few columns"),
        ("a.csv", "2,1\n3,oops\n", "count is not a number"),  # (1,2 would be expert ids 1..2)
        ("a.csv", "\n", "file is empty"),
        ("a.csv", b"\xff\xfe".decode("latin-1"), "not UTF-8"),
    ],
)
def test_malformed_files_name_the_problem(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    if "not UTF-8" in message:
        path.write_bytes(b"\xff\xfe\x00")
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError, match=message):
        read_expert_load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="no such file"):
        read_expert_load(tmp_path / "none.json")


def test_a_csv_of_names_without_counts_is_a_data_file_error(tmp_path: Path) -> None:
    # found by the property test below: rows that are labels only made a (2, 0) table, which
    # failed later as a plain input error without naming the file
    path = tmp_path / "names.csv"
    path.write_text("layer a\nlayer b\n", encoding="utf-8")
    with pytest.raises(DataFileError, match="no expert counts"):
        read_expert_load(path)


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_a_load_or_a_data_file_error(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for suffix in (".json", ".csv"):
            path = Path(folder) / f"x{suffix}"
            path.write_bytes(data)
            try:
                load = read_expert_load(path)
            except DataFileError:
                continue
            assert np.isfinite(load.array()).all()


def test_combine_adds_ranks_and_refuses_other_shapes() -> None:
    a = expert_load_from_array([[1, 2], [0, 0]], num_steps=3)
    b = expert_load_from_array([[3, 0], [1, 1]], num_steps=3)
    total = combine_loads([a, b])
    assert total.counts == ((4.0, 2.0), (1.0, 1.0))
    assert total.num_steps == 3
    with pytest.raises(UserInputError, match="cannot be added"):
        combine_loads([a, expert_load_from_array([[1, 2, 3]])])


def test_synthetic_skew_orders_as_stated() -> None:
    def hottest_over_mean(distribution: str, skew: float, top_k: int = 4) -> float:
        load = synthetic_load(
            num_layers=8, num_experts=64, distribution=distribution, skew=skew, num_tokens=20_000, top_k=top_k
        )
        counts = load.array()
        assert counts.sum(axis=1).tolist() == [20_000.0 * top_k] * 8  # tokens x top-k pairs per layer
        return float((counts.max(axis=1) / counts.mean(axis=1)).mean())

    # Zipf s over 64 experts, top-1: the hottest share is 1/H(64, s); H(64, 1) = 4.74 -> 64/4.74 = 13.5x
    assert hottest_over_mean("zipf", 1.0, top_k=1) == pytest.approx(
        64 / sum(1 / r for r in range(1, 65)), rel=0.05
    )
    assert hottest_over_mean("zipf", 0.0) < hottest_over_mean("zipf", 0.5) < hottest_over_mean("zipf", 1.0)
    assert (
        hottest_over_mean("dirichlet", 0.3)
        > hottest_over_mean("dirichlet", 3.0)
        > hottest_over_mean("uniform", 0.0)
    )
    assert (
        synthetic_load(num_layers=2, num_experts=8, seed=3).counts
        == synthetic_load(num_layers=2, num_experts=8, seed=3).counts
    )


def test_synthetic_top_k_experts_are_distinct() -> None:
    """Issue 28: a token goes to k different experts, so no expert gets more tokens than there are."""
    # top-8 of 8: every token reaches every expert, each exactly 10 times (was 35 of 10 for one)
    every = synthetic_load(num_layers=2, num_experts=8, top_k=8, num_tokens=10, skew=1.0)
    assert every.counts == ((10.0,) * 8,) * 2
    for distribution, skew in (("zipf", 3.0), ("zipf", 1.2), ("dirichlet", 0.05), ("uniform", 0.0)):
        load = synthetic_load(
            num_layers=3, num_experts=16, top_k=6, num_tokens=500, distribution=distribution, skew=skew
        )
        counts = load.array()
        assert counts.max() <= 500, distribution
        assert counts.sum(axis=1).tolist() == [3000.0] * 3


def test_synthetic_top_k_draws_one_expert_after_another() -> None:
    """Successive sampling, by hand: Zipf 1 over 3 experts has shares 6/11, 3/11, 2/11; with top-2 the
    hottest is drawn first (6/11), or second after expert 2 (3/11 x (6/11)/(8/11)) or after expert 3
    (2/11 x (6/11)/(9/11)): 6/11 + 9/44 + 4/33 = 0.8712 of the tokens."""
    tokens = 200_000
    load = synthetic_load(num_layers=4, num_experts=3, top_k=2, num_tokens=tokens, skew=1.0, seed=5)
    hottest = load.array().max(axis=1) / tokens
    expected = 6 / 11 + 9 / 44 + 4 / 33
    np.testing.assert_allclose(hottest, expected, atol=0.004)  # 5 sigma of the binomial noise (0.00075)


@pytest.mark.parametrize("rare", [1e-3, 1e-10])
def test_rare_experts_are_drawn_in_proportion_to_their_shares(rare: float) -> None:
    """Shares 1, 2r, r with top-2: expert 1 is in a token's pair when drawn first, or second after
    expert 0 or expert 2: 2r/t + (1/t)(2r/3r) + (r/t)(2r/(1+2r)), t = 1 + 3r (about 2/3). With
    r = 1e-10 the share left after expert 0 is too small for a point in [0, 1): those tokens finish
    by the Gumbel top-k of the experts left, which must give the same odds."""
    tokens = 100_000
    counts = _draw_distinct(np.random.default_rng(11), np.log([1.0, 2 * rare, rare]), tokens, 2)
    assert counts.sum() == 2 * tokens
    assert counts[0] <= tokens
    total = 1 + 3 * rare
    expected = 2 * rare / total + (1 / total) * (2 / 3) + (rare / total) * (2 * rare / (1 + 2 * rare))
    assert counts[1] / tokens == pytest.approx(expected, abs=0.0075)  # 5 sigma (0.0015)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"distribution": "pareto"}, "not one of zipf, dirichlet, uniform"),
        ({"skew": -1.0}, "skew must be >= 0"),
        ({"distribution": "dirichlet", "skew": 0.0}, "skew must be > 0"),
        ({"skew": float("nan")}, "skew must be"),
        ({"top_k": 9}, "top-k 9 exceeds the 8 experts"),
        ({"num_tokens": 0}, "needs >= 1 tokens"),
        ({"num_tokens": 10**9, "top_k": 4}, "token-expert pairs to draw one by one"),
        ({"num_steps": 0}, "needs >= 1 steps"),
    ],
)
def test_synthetic_refuses_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        synthetic_load(num_layers=1, num_experts=8, **kwargs)  # type: ignore[arg-type]


def test_stats_by_hand() -> None:
    # one layer, 4 experts: 6, 2, 0, 0 tokens (mean 2); on 2 GPUs in order: 8 vs 0 -> 2.0
    load = expert_load_from_array([[6, 2, 0, 0]])
    stats = load_stats(load=load, num_gpus=2, num_replicas=[4, 6])
    layer = stats.layers[0]
    assert layer.hottest_over_mean == 3.0
    assert layer.coefficient_of_variation == pytest.approx(np.sqrt((16 + 0 + 4 + 4) / 4) / 2)
    # shares 0.75, 0.25: entropy 0.5623 nats -> 1.755 equally loaded experts
    assert layer.effective_experts == pytest.approx(np.exp(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25))))
    # the hottest eighth of 4 experts is half an expert: half of the hottest's 0.75 share (this
    # was 0.75, the whole hottest expert, labelled "top 1/8" though it was the top quarter)
    assert layer.top_eighth_share == 0.375
    assert layer.hottest_experts == (0, 1, 2)
    assert stats.unbalanced_overall_gpu_load_max_over_mean == 2.0
    # 4 replicas, 2 per GPU: 6+0 vs 2+0 -> 6/4 = 1.5; 6 replicas, 3 per GPU: 6 in three
    # replicas of 2 -> (2, 2, 0) vs (2, 2, 0) -> 1.0
    assert [effect.overall_gpu_load_max_over_mean for effect in stats.replicas] == [1.5, 1.0]
    assert stats.hot_experts[0].expert == 0
    assert stats.hot_experts[0].share == 0.75
    assert stats.hot_experts[0].over_mean == 3.0
