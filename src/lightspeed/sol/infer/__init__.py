"""The inference SOL engine: serving plans, prefill/decode costs, KV memory, batching,
the deployment estimate and the search under latency bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.sol.infer.draft_search import search_draft_depths
    from lightspeed.sol.infer.estimate import InferenceEstimate, estimate_inference
    from lightspeed.sol.infer.plan import (
        INFERENCE_PRECISIONS,
        KV_PRECISIONS,
        PLAN_FAMILIES,
        InferencePlan,
        ServingLoad,
        SpeculativeDecoding,
    )
    from lightspeed.sol.infer.search import (
        DraftDepth,
        FrontierPoint,
        InferenceSearchResult,
        search_inference,
    )
    from lightspeed.sol.infer.serving import BATCHING_MODES


__all__ = [
    "BATCHING_MODES",
    "INFERENCE_PRECISIONS",
    "KV_PRECISIONS",
    "PLAN_FAMILIES",
    "DraftDepth",
    "FrontierPoint",
    "InferenceEstimate",
    "InferencePlan",
    "InferenceSearchResult",
    "ServingLoad",
    "SpeculativeDecoding",
    "estimate_inference",
    "search_draft_depths",
    "search_inference",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
