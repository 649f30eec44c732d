"""Search over speculative depths: :func:`~lightspeed.sol.infer.search.search_inference` run without
speculation and with 1 to N draft tokens a step, the best depth kept and the frontiers merged."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Final

import numpy as np

from lightspeed import limits
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.infer.plan import SpeculativeDecoding
from lightspeed.sol.infer.search import (
    DraftDepth,
    FrontierPoint,
    InferenceSearchResult,
    pareto_front,
)

# The most draft tokens a search over speculative depths tries (MTP and EAGLE deployments run 1-7:
# SGLang's DeepSeek recipes 1-3 steps, TensorRT-LLM's MTP up to 3, EAGLE-3 trees 6-7 deep).
MAX_SEARCHED_DRAFT_TOKENS: Final = limits.MAX_SEARCHED_DRAFT_TOKENS


def search_draft_depths(
    search: Callable[[SpeculativeDecoding | None], InferenceSearchResult],
    speculative: SpeculativeDecoding,
    max_draft_tokens: int,
) -> InferenceSearchResult:
    """The best of ``search`` run without speculation and with 1 to ``max_draft_tokens`` draft
    tokens a step (each accepted at ``speculative``'s rate, drafted at its cost): the depth whose best
    deployment has the most tokens/s per GPU under the bounds wins, the frontiers merge into one,
    and ``draft_depths`` says what each depth reached. Deeper drafts multiply the tokens a verify
    pass yields while each step verifies more tokens per sequence, so a latency bound that admits
    small batches favours depth and a throughput run favours none. Raises the search's own
    :class:`~lightspeed.errors.InvalidPlanError` when no depth meets the bounds.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.sol.infer import ServingLoad, search_inference
    >>> from lightspeed.workload import load_models
    >>> def at(depth):
    ...     return search_inference(model=load_models().get("llama-3-8b"),
    ...         cluster=load_catalog().cluster("dgx-h100"), load=ServingLoad(1024, 256),
    ...         precision="fp8", max_tpot_s=0.005, speculative=depth)
    >>> result = search_draft_depths(at, SpeculativeDecoding(1, 0.7), 3)
    >>> [depth.draft_tokens for depth in result.draft_depths]
    [0, 1, 2, 3]
    """
    if not 1 <= max_draft_tokens <= MAX_SEARCHED_DRAFT_TOKENS:
        raise InvalidPlanError(
            f"a search over speculative depths tries 1 to {MAX_SEARCHED_DRAFT_TOKENS} draft tokens "
            f"(got {max_draft_tokens})"
        )
    started = time.perf_counter()
    results: list[InferenceSearchResult] = []
    depths: list[DraftDepth] = []
    failure: InvalidPlanError | None = None
    for tokens in range(max_draft_tokens + 1):
        depth = replace(speculative, num_draft_tokens=tokens) if tokens else None
        try:
            result = search(depth)
        except InvalidPlanError as error:
            failure = failure or error
            depths.append(DraftDepth(tokens, None, None, None, None, reason=str(error)))
            continue
        results.append(result)
        best = result.best
        depths.append(
            DraftDepth(
                tokens,
                best.plan.describe(),
                best.output_tokens_per_s_per_gpu,
                best.output_tokens_per_s_per_user,
                best.tpot_s,
            )
        )
    if not results:
        assert failure is not None
        if type(failure) is InvalidPlanError:  # the bounds, not the memory: say the drafts were tried
            raise InvalidPlanError(
                f"{failure}; with 1 to {max_draft_tokens} draft tokens a step no deployment meets them either"
            ) from failure
        raise failure
    winner = max(results, key=lambda result: result.best.output_tokens_per_s_per_gpu)
    return replace(
        winner,
        frontier=_merged_frontier(
            [point for result in results for point in result.frontier], len(winner.frontier)
        ),
        num_points_evaluated=sum(result.num_points_evaluated for result in results),
        num_points_feasible=sum(result.num_points_feasible for result in results),
        feasible_shapes=_best_shapes(
            [point for result in results for point in result.feasible_shapes], len(winner.feasible_shapes)
        ),
        elapsed_s=time.perf_counter() - started,
        draft_depths=tuple(depths),
    )


def _best_shapes(points: list[FrontierPoint], limit: int) -> tuple[FrontierPoint, ...]:
    """Each deployment's fastest point of several searches' ``feasible_shapes``, best first."""
    best: dict[str, FrontierPoint] = {}
    for point in sorted(points, key=lambda point: -point.output_tokens_per_s_per_gpu):
        best.setdefault(point.plan, point)
    return tuple(best.values())[:limit]


def _merged_frontier(points: list[FrontierPoint], limit: int) -> tuple[FrontierPoint, ...]:
    """The Pareto frontier of several searches' frontier points, thinned to ``limit`` points as
    each search's own is."""
    if not points:
        return ()
    per_gpu = np.array([point.output_tokens_per_s_per_gpu for point in points])
    per_user = np.array([point.output_tokens_per_s_per_user for point in points])
    front = pareto_front(per_gpu, per_user)
    if front.size > max(limit, 1):
        front = front[np.linspace(0, front.size - 1, max(limit, 1)).round().astype(int)]
    return tuple(points[int(index)] for index in front)


__all__ = ["MAX_SEARCHED_DRAFT_TOKENS", "search_draft_depths"]
