"""Rendering: the only code that formats text, draws plots and writes HTML.

Names are imported lazily (PEP 562, :mod:`lightspeed.lazy`): ``from lightspeed.report import
render_table`` loads ``report/console.py`` only, so a command pays for the
renderers it uses (matplotlib, the HTML report, trace tables) and nothing else.
The imports under ``TYPE_CHECKING`` below say where each name lives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.report.bench import (
        check_roofline_plot,
        progress_bar,
        render_calibration,
        render_results,
        roofline_figure,
        save_roofline,
    )
    from lightspeed.report.console import make_console, render_table
    from lightspeed.report.cost import (
        inputs_caption,
        render_deepseek_cost,
        render_fleet,
        render_inference_cost,
        render_rack_plan,
        render_system_costs,
        render_tco,
        render_training_cost,
        render_upgrade,
        save_tornado,
        tornado_figure,
    )
    from lightspeed.report.doctor import render_doctor
    from lightspeed.report.goodput import (
        checkpoint_plan_figure,
        goodput_waterfall_figure,
        render_checkpoint_plan,
        render_ledgers,
        save_goodput_plot,
    )
    from lightspeed.report.hardware import (
        render_detected_machine,
        render_hardware_comparison,
        render_hardware_description,
        render_hardware_list,
        render_system_totals,
    )
    from lightspeed.report.html import ReportSection, render_written_report, write_report
    from lightspeed.report.html_cost import cost_section
    from lightspeed.report.html_inputs import gather_inputs, metric_history_or_reason, predicted_step
    from lightspeed.report.html_sections import BenchInputs, ReportInputs, build_sections
    from lightspeed.report.inference import (
        pareto_figure,
        render_attention_sensitivity,
        render_fabric_comparison,
        render_inference_estimate,
        render_inference_search,
        render_ratio_decomposition,
        render_system_comparison,
        save_pareto_plot,
    )
    from lightspeed.report.kernels import kernel_section, kernel_sol_figure, render_kernel_report
    from lightspeed.report.mig import (
        mig_figure,
        render_layout_check,
        render_mig_plan,
        render_mig_profiles,
        save_mig_plot,
    )
    from lightspeed.report.moe import (
        load_stats_figure,
        render_expert_load_effect,
        render_expert_placement,
        render_holdout_score,
        render_load_stats,
        render_synthetic_load,
        save_load_stats_plot,
    )
    from lightspeed.report.monitor import (
        monitor_counters_figure,
        monitor_section,
        render_counter_ledger,
        render_findings,
        render_monitor_report,
        save_monitor_plot,
        watch_table,
    )
    from lightspeed.report.progress import delayed_progress
    from lightspeed.report.regression import render_gate
    from lightspeed.report.results import records_csv, render_push, render_run, render_runs
    from lightspeed.report.serving import (
        latency_load_figure,
        render_capacity,
        render_goodput_ranking,
        render_load_band,
        render_load_sweep,
        render_simulated_against_analytic,
        render_simulation,
        render_slo,
        save_latency_load_plot,
        simulated_against_analytic,
    )
    from lightspeed.report.simulation_section import is_simulation_result, series_figure, serving_section
    from lightspeed.report.sol import (
        render_search_result,
        render_training_estimate,
        render_validation,
        step_breakdown_figure,
    )
    from lightspeed.report.trace import (
        render_trace_cache,
        render_trace_comms,
        render_trace_diff,
        render_trace_idle,
        render_trace_kernels,
        render_trace_launch,
        render_trace_stragglers,
        render_trace_summary,
        save_temporal_breakdown,
        temporal_breakdown_figure,
        trace_section,
        trace_summary_json,
    )
    from lightspeed.report.validation_rows import render_validation_explained
    from lightspeed.report.workload import (
        render_memory_plan,
        render_model_list,
        render_model_summary,
        render_training_flop,
    )

__all__ = [
    "BenchInputs",
    "ReportInputs",
    "ReportSection",
    "build_sections",
    "check_roofline_plot",
    "checkpoint_plan_figure",
    "cost_section",
    "delayed_progress",
    "gather_inputs",
    "goodput_waterfall_figure",
    "inputs_caption",
    "is_simulation_result",
    "kernel_section",
    "kernel_sol_figure",
    "latency_load_figure",
    "load_stats_figure",
    "make_console",
    "metric_history_or_reason",
    "mig_figure",
    "monitor_counters_figure",
    "monitor_section",
    "pareto_figure",
    "predicted_step",
    "progress_bar",
    "records_csv",
    "render_attention_sensitivity",
    "render_calibration",
    "render_capacity",
    "render_checkpoint_plan",
    "render_counter_ledger",
    "render_deepseek_cost",
    "render_detected_machine",
    "render_doctor",
    "render_expert_load_effect",
    "render_expert_placement",
    "render_fabric_comparison",
    "render_findings",
    "render_fleet",
    "render_gate",
    "render_goodput_ranking",
    "render_hardware_comparison",
    "render_hardware_description",
    "render_hardware_list",
    "render_holdout_score",
    "render_inference_cost",
    "render_inference_estimate",
    "render_inference_search",
    "render_kernel_report",
    "render_layout_check",
    "render_ledgers",
    "render_load_band",
    "render_load_stats",
    "render_load_sweep",
    "render_memory_plan",
    "render_mig_plan",
    "render_mig_profiles",
    "render_model_list",
    "render_model_summary",
    "render_monitor_report",
    "render_push",
    "render_rack_plan",
    "render_ratio_decomposition",
    "render_results",
    "render_run",
    "render_runs",
    "render_search_result",
    "render_simulated_against_analytic",
    "render_simulation",
    "render_slo",
    "render_synthetic_load",
    "render_system_comparison",
    "render_system_costs",
    "render_system_totals",
    "render_table",
    "render_tco",
    "render_trace_cache",
    "render_trace_comms",
    "render_trace_diff",
    "render_trace_idle",
    "render_trace_kernels",
    "render_trace_launch",
    "render_trace_stragglers",
    "render_trace_summary",
    "render_training_cost",
    "render_training_estimate",
    "render_training_flop",
    "render_upgrade",
    "render_validation",
    "render_validation_explained",
    "render_written_report",
    "roofline_figure",
    "save_goodput_plot",
    "save_latency_load_plot",
    "save_load_stats_plot",
    "save_mig_plot",
    "save_monitor_plot",
    "save_pareto_plot",
    "save_roofline",
    "save_temporal_breakdown",
    "save_tornado",
    "series_figure",
    "serving_section",
    "simulated_against_analytic",
    "step_breakdown_figure",
    "temporal_breakdown_figure",
    "tornado_figure",
    "trace_section",
    "trace_summary_json",
    "watch_table",
    "write_report",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
