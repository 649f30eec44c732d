"""A search over speculative depths (issue 27: "no search over speculative settings"): ``search
infer --search-draft-tokens N`` runs the deployment search without speculation and with 1 to N
draft tokens a step, and keeps the depth whose best deployment serves the most tokens/s per GPU
under the bounds. The winner must be the best of the depths searched one at a time, and a draft
nothing accepts (acceptance 0) can only cost: one token a verify pass, more work a step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import InferenceSearchResult, ServingLoad, SpeculativeDecoding, search_inference
from lightspeed.sol.infer.draft_search import search_draft_depths
from lightspeed.workload import load_models

LOAD = ServingLoad(1024, 256)


def _search(max_tpot_s: float | None):
    model, cluster = load_models().get("llama-3-8b"), load_catalog().cluster("dgx-h100")

    def at(speculative: SpeculativeDecoding | None) -> InferenceSearchResult:
        return search_inference(
            model=model,
            cluster=cluster,
            load=LOAD,
            precision="fp8",
            max_tpot_s=max_tpot_s,
            speculative=speculative,
        )

    return at


def _tokens_per_gpu(search: Any, depth: int, acceptance: float) -> float | None:
    try:
        result = search(SpeculativeDecoding(depth, acceptance) if depth else None)
    except InvalidPlanError:
        return None
    return float(result.best.output_tokens_per_s_per_gpu)


def test_the_winner_is_the_best_depth_searched_alone() -> None:
    search = _search(0.006)
    result = search_draft_depths(search, SpeculativeDecoding(1, 0.7), 3)
    alone = {depth: _tokens_per_gpu(search, depth, 0.7) for depth in range(4)}
    assert [depth.draft_tokens for depth in result.draft_depths] == [0, 1, 2, 3]
    for depth in result.draft_depths:
        assert depth.output_tokens_per_s_per_gpu == (
            pytest.approx(alone[depth.draft_tokens]) if alone[depth.draft_tokens] is not None else None
        )
    best_depth = max((rate, depth) for depth, rate in alone.items() if rate is not None)[1]
    chosen = result.best.plan.speculative
    assert (chosen.num_draft_tokens if chosen else 0) == best_depth
    assert result.best.output_tokens_per_s_per_gpu == pytest.approx(alone[best_depth])
    # a 6 ms bound on an 8B model admits only small batches, where drafting pays
    assert best_depth > 0


def test_drafts_nothing_accepts_never_win() -> None:
    # acceptance 0: every verify pass yields its one token, and each draft step only adds work
    result = search_draft_depths(_search(None), SpeculativeDecoding(1, 0.0), 2)
    assert result.best.plan.speculative is None
    rates = [depth.output_tokens_per_s_per_gpu for depth in result.draft_depths]
    assert rates[0] is not None
    assert all(rate is not None and rate < rates[0] for rate in rates[1:])


def test_the_merged_frontier_is_a_frontier() -> None:
    result = search_draft_depths(_search(None), SpeculativeDecoding(1, 0.7), 2)
    points = [(p.output_tokens_per_s_per_gpu, p.output_tokens_per_s_per_user) for p in result.frontier]
    assert len(points) > 1
    for gpu, user in points:
        assert not any(g > gpu and u > user for g, u in points)  # none beaten on both axes
    # drawn from the depths' own frontiers, it reaches as far as the best of them on each axis
    search = _search(None)
    own = [search(SpeculativeDecoding(depth, 0.7) if depth else None).frontier for depth in (0, 1, 2)]
    assert max(gpu for gpu, _ in points) == pytest.approx(
        max(p.output_tokens_per_s_per_gpu for frontier in own for p in frontier)
    )
    assert max(user for _, user in points) == pytest.approx(
        max(p.output_tokens_per_s_per_user for frontier in own for p in frontier)
    )


def test_a_depth_that_meets_no_bound_says_why() -> None:
    # 2 ms a token for an 8B model on H100 is past what one token a step reaches (TP 8 at batch 1:
    # 2.4 ms), not what several tokens a verify pass reach
    result = search_draft_depths(_search(0.002), SpeculativeDecoding(1, 0.8), 4)
    plain = result.draft_depths[0]
    assert plain.plan is None
    assert plain.output_tokens_per_s_per_gpu is None
    assert "TPOT" in plain.reason
    assert result.best.plan.speculative is not None


def test_the_cli_searches_depths_and_keeps_each_finalists_own(run_cli: Any) -> None:
    args = ("search", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--precision", "fp8")
    result = run_cli(*args, "--max-tpot", "6ms", "--search-draft-tokens", "2", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert [depth["draft_tokens"] for depth in payload["draft_depths"]] == [0, 1, 2]
    assert payload["config"]["search_draft_tokens"] == 2
    text = run_cli(*args, "--max-tpot", "6ms", "--search-draft-tokens", "2")
    assert "Speculative depths" in text.out
    assert "(best)" in text.out
    both = run_cli(*args, "--draft-tokens", "2", "--search-draft-tokens", "2")
    assert both.code == 2
    assert "not both" in both.err
    assert "Traceback" not in both.err


def test_the_cli_and_the_engine_bound_the_depths_alike() -> None:
    from lightspeed.cli.options import SEARCHED_DRAFT_TOKENS
    from lightspeed.sol.infer.draft_search import MAX_SEARCHED_DRAFT_TOKENS

    assert SEARCHED_DRAFT_TOKENS.maximum == MAX_SEARCHED_DRAFT_TOKENS
    with pytest.raises(InvalidPlanError, match="1 to 16 draft tokens"):
        search_draft_depths(_search(None), SpeculativeDecoding(1, 0.7), MAX_SEARCHED_DRAFT_TOKENS + 1)


def test_bounds_no_depth_meets_say_the_drafts_were_tried() -> None:
    with pytest.raises(
        InvalidPlanError, match="with 1 to 2 draft tokens a step no deployment meets them either"
    ):
        search_draft_depths(_search(0.0001), SpeculativeDecoding(1, 0.7), 2)
