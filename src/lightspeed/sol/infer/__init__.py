"""The inference SOL engine: serving plans, prefill/decode costs, KV memory, batching,
the deployment estimate and the search under latency bounds."""

from __future__ import annotations

from lightspeed.sol.infer.estimate import InferenceEstimate, estimate_inference
from lightspeed.sol.infer.plan import (
    INFERENCE_PRECISIONS,
    KV_PRECISIONS,
    InferencePlan,
    ServingLoad,
    SpeculativeDecoding,
)
from lightspeed.sol.infer.search import FrontierPoint, InferenceSearchResult, search_inference
from lightspeed.sol.infer.serving import BATCHING_MODES

__all__ = [
    "BATCHING_MODES",
    "INFERENCE_PRECISIONS",
    "KV_PRECISIONS",
    "FrontierPoint",
    "InferenceEstimate",
    "InferencePlan",
    "InferenceSearchResult",
    "ServingLoad",
    "SpeculativeDecoding",
    "estimate_inference",
    "search_inference",
]
