"""Speed-of-light engine: roofline, collectives, parallel plans, estimates, search."""

from lightspeed.sol.calibration import (
    CalibrationInputs,
    CalibrationResult,
    CollectivePoint,
    GemmPoint,
    calibrate,
    calibration_path,
    lightspeed_home,
    list_calibrations,
    load_calibration,
    save_calibration,
)
from lightspeed.sol.capacity import MemoryPlan, plan_memory
from lightspeed.sol.efficiency import EfficiencyModel, default_efficiency, load_efficiency_defaults
from lightspeed.sol.estimate import TrainEstimate, estimate_training
from lightspeed.sol.infer_plan import (
    INFERENCE_PRECISIONS,
    KV_PRECISIONS,
    InferencePlan,
    ServingLoad,
    SpeculativeDecoding,
)
from lightspeed.sol.infer_search import FrontierPoint, InferenceSearchResult, search_inference
from lightspeed.sol.infer_validate import inference_predictor
from lightspeed.sol.inference import InferenceEstimate, estimate_inference
from lightspeed.sol.plan import RECOMPUTE, SCHEDULES, TRAINING_PRECISIONS, TrainingPlan, validate_plan
from lightspeed.sol.scenarios import (
    DEEPSEEK_PLAN,
    DEEPSEEK_PRETRAIN_GPU_HOURS,
    DEEPSEEK_TOKENS,
    LLAMA3_RUNS,
    NvlinkCut,
    deepseek_v3_training,
    llama3_405b_training,
    nvlink_cut,
)
from lightspeed.sol.search import SearchResult, SearchSpace, default_space, search_training
from lightspeed.sol.serving import BATCHING_MODES
from lightspeed.sol.systems import (
    PLAN_FAMILIES,
    WORKLOADS,
    FabricFigures,
    RatioDecomposition,
    SystemComparison,
    SystemResult,
    auto_precision,
    compare_systems,
    decompose_ratio,
    fabric_comparison,
)
from lightspeed.sol.validate import ValidationReport, ValidationRow, validate_published

__all__ = [
    "BATCHING_MODES",
    "DEEPSEEK_PLAN",
    "DEEPSEEK_PRETRAIN_GPU_HOURS",
    "DEEPSEEK_TOKENS",
    "INFERENCE_PRECISIONS",
    "KV_PRECISIONS",
    "LLAMA3_RUNS",
    "PLAN_FAMILIES",
    "RECOMPUTE",
    "SCHEDULES",
    "TRAINING_PRECISIONS",
    "WORKLOADS",
    "CalibrationInputs",
    "CalibrationResult",
    "CollectivePoint",
    "EfficiencyModel",
    "FabricFigures",
    "FrontierPoint",
    "GemmPoint",
    "InferenceEstimate",
    "InferencePlan",
    "InferenceSearchResult",
    "MemoryPlan",
    "NvlinkCut",
    "RatioDecomposition",
    "SearchResult",
    "SearchSpace",
    "ServingLoad",
    "SpeculativeDecoding",
    "SystemComparison",
    "SystemResult",
    "TrainEstimate",
    "TrainingPlan",
    "ValidationReport",
    "ValidationRow",
    "auto_precision",
    "calibrate",
    "calibration_path",
    "compare_systems",
    "decompose_ratio",
    "deepseek_v3_training",
    "default_efficiency",
    "default_space",
    "estimate_inference",
    "estimate_training",
    "fabric_comparison",
    "inference_predictor",
    "lightspeed_home",
    "list_calibrations",
    "llama3_405b_training",
    "load_calibration",
    "load_efficiency_defaults",
    "nvlink_cut",
    "plan_memory",
    "save_calibration",
    "search_inference",
    "search_training",
    "validate_plan",
    "validate_published",
]
