"""Steps with prompt tokens run eagerly where a server's CUDA graphs cover decode only (SGLang's
extend batches, TensorRT-LLM's PyTorch backend, vLLM V0), or only up to a step size (vLLM V1's
piecewise graphs, 512 tokens): the host then issues every kernel, and a short prompt's step takes
at least that long. Hand calculations below; the kernel count is the model's (stage_kernels)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from grids import iteration_grid
from lightspeed.catalog import Catalog
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import iteration_cost
from lightspeed.sol.infer.per_gpu import stage_kernels
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.timing import IterationTimer
from lightspeed.workload import ModelRegistry


def test_which_steps_the_host_issues() -> None:
    sglang, vllm, old = (load_serving_stack(name) for name in ("sglang-2025", "vllm-2025", "trtllm-2023"))
    assert float(sglang.issues_kernels(0.0, 64.0)) == 0.0  # a decode step replays its graph
    assert float(sglang.issues_kernels(16.0, 80.0)) == 1.0  # any prompt token: eager
    assert float(vllm.issues_kernels(100.0, 300.0)) == 0.0  # 300 tokens: inside the 512 captured
    assert float(vllm.issues_kernels(100.0, 600.0)) == 1.0
    assert float(old.issues_kernels(0.0, 64.0)) == 1.0  # no graphs at all
    assert load_serving_stack("trtllm-2025").prefill_graph_tokens == 0


def test_a_short_prompt_step_takes_the_hosts_issue_of_every_kernel(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Qwen3-30B-A3B (48 MoE layers) on one B200 under TensorRT-LLM's PyTorch backend: a step
    with a one-token prompt lasts its kernels at 4 us each from the host (1,152 x 4 us = 4.608 ms),
    its GPU work being shorter: the same step where graphs covered it, and a decode
    step of one sequence, take less. The simulator's timer gives the eager step too."""
    model = models.get("qwen3-30b-a3b")
    plan = InferencePlan(tp=1, precision="fp8")
    serving = load_serving_stack("trtllm-2025")
    cluster = catalog.cluster("dgx-b200")
    hardware = inference_hardware_for(cluster, plan, serving=serving, model=model)
    graphed = inference_hardware_for(
        cluster, plan, serving=replace(serving, prefill_graph_tokens=4096), model=model
    )
    kernels = float(np.asarray(stage_kernels(model, 1.0)))
    launch_s = hardware.hardware.efficiency.kernel_launch_s
    assert (kernels, launch_s) == (1152.0, 4e-6)
    issue_s = kernels * launch_s
    prompt = iteration_grid(prefill_tokens=1.0, prefill_context=0.5, prefill_requests=1.0)
    decode = iteration_grid(decode_sequences=1.0, query_tokens=1.0, decode_context=100.0)
    eager_s = float(iteration_cost(prompt, model, hardware).time_s[0])
    assert eager_s == pytest.approx(issue_s, rel=1e-9)  # the host's issue binds: the step is it
    assert float(iteration_cost(prompt, model, graphed).time_s[0]) < 0.9 * issue_s
    assert float(iteration_cost(decode, model, hardware).time_s[0]) < 0.9 * issue_s
    timer = IterationTimer(model=model, hardware=hardware, plan=plan, max_sequences=64)
    assert timer.seconds(0, 0.0, 1.0, 0.5) == pytest.approx(eager_s, rel=0.03)
