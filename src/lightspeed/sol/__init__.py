"""Speed-of-light engines: what a training or inference job should reach on given hardware.

Subpackages, bottom up: :mod:`~lightspeed.sol.core` (roofline, efficiency,
collectives, calibration), :mod:`~lightspeed.sol.train` and
:mod:`~lightspeed.sol.infer` (the two engines), :mod:`~lightspeed.sol.validation`
(published rows predicted). Top modules use both engines: :mod:`~lightspeed.sol.capacity`
and :mod:`~lightspeed.sol.systems` (its ratios split by :mod:`~lightspeed.sol.decomposition`).
This package re-exports each one's public names,
loaded on first use. Domain tools built on the engines have packages of their own:
:mod:`lightspeed.cost`, :mod:`lightspeed.mig`, :mod:`lightspeed.moe`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.sol.capacity import MemoryPlan, plan_memory
    from lightspeed.sol.config import (
        JobConfig,
        TrainingConfig,
        TrainingJob,
        TrainingSearchConfig,
        check_plan_kind,
        parse_plan_text,
        plan_file_kind,
        read_plan_file,
    )
    from lightspeed.sol.core import (
        Band,
        CalibrationInputs,
        CalibrationResult,
        CollectivePoint,
        EfficiencyModel,
        GemmPoint,
        ServingStack,
        Stack,
        calibrate,
        calibration_path,
        default_efficiency,
        default_stack_name,
        interval_for,
        list_calibrations,
        load_calibration,
        load_efficiency_defaults,
        load_serving_stack,
        load_serving_stacks,
        load_stack,
        load_stacks,
        save_calibration,
    )
    from lightspeed.sol.decomposition import (
        AttentionSensitivity,
        RatioDecomposition,
        attention_sensitivity,
        decompose_ratio,
        shapley_factors,
    )
    from lightspeed.sol.infer import (
        BATCHING_MODES,
        INFERENCE_PRECISIONS,
        KV_PRECISIONS,
        PLAN_FAMILIES,
        DraftDepth,
        FrontierPoint,
        InferenceEstimate,
        InferencePlan,
        InferenceSearchResult,
        ServingLoad,
        SpeculativeDecoding,
        estimate_inference,
        search_draft_depths,
        search_inference,
    )
    from lightspeed.sol.serving_config import ServingConfig, ServingJob, ServingSearchConfig
    from lightspeed.sol.systems import (
        WORKLOADS,
        FabricFigures,
        SystemComparison,
        SystemResult,
        auto_precision,
        compare_systems,
        fabric_comparison,
    )
    from lightspeed.sol.train import (
        RECOMPUTE,
        SCHEDULES,
        TRAINING_PRECISIONS,
        PlanComparison,
        SearchResult,
        SearchSpace,
        TrainEstimate,
        TrainingEstimate,
        TrainingPlan,
        data_parallel_degree,
        default_space,
        estimate_training,
        search_training,
        validate_plan,
    )
    from lightspeed.sol.validation import (
        ValidationReport,
        ValidationRow,
        inference_predictor,
        validate_published,
    )


__all__ = [
    "BATCHING_MODES",
    "INFERENCE_PRECISIONS",
    "KV_PRECISIONS",
    "PLAN_FAMILIES",
    "RECOMPUTE",
    "SCHEDULES",
    "TRAINING_PRECISIONS",
    "WORKLOADS",
    "AttentionSensitivity",
    "Band",
    "CalibrationInputs",
    "CalibrationResult",
    "CollectivePoint",
    "DraftDepth",
    "EfficiencyModel",
    "FabricFigures",
    "FrontierPoint",
    "GemmPoint",
    "InferenceEstimate",
    "InferencePlan",
    "InferenceSearchResult",
    "JobConfig",
    "MemoryPlan",
    "PlanComparison",
    "RatioDecomposition",
    "SearchResult",
    "SearchSpace",
    "ServingConfig",
    "ServingJob",
    "ServingLoad",
    "ServingSearchConfig",
    "ServingStack",
    "SpeculativeDecoding",
    "Stack",
    "SystemComparison",
    "SystemResult",
    "TrainEstimate",
    "TrainingConfig",
    "TrainingEstimate",
    "TrainingJob",
    "TrainingPlan",
    "TrainingSearchConfig",
    "ValidationReport",
    "ValidationRow",
    "attention_sensitivity",
    "auto_precision",
    "calibrate",
    "calibration_path",
    "check_plan_kind",
    "compare_systems",
    "data_parallel_degree",
    "decompose_ratio",
    "default_efficiency",
    "default_space",
    "default_stack_name",
    "estimate_inference",
    "estimate_training",
    "fabric_comparison",
    "inference_predictor",
    "interval_for",
    "list_calibrations",
    "load_calibration",
    "load_efficiency_defaults",
    "load_serving_stack",
    "load_serving_stacks",
    "load_stack",
    "load_stacks",
    "parse_plan_text",
    "plan_file_kind",
    "plan_memory",
    "read_plan_file",
    "save_calibration",
    "search_draft_depths",
    "search_inference",
    "search_training",
    "shapley_factors",
    "validate_plan",
    "validate_published",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
