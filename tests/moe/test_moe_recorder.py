"""ExpertLoadRecorder on tiny randomly initialised Hugging Face MoE models (built from a config on
the CPU, no download), checked against the router's top-k recomputed here from its inputs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import MissingExtraError, UnknownNameError, UserInputError
from lightspeed.moe import ExpertLoadRecorder, find_routers, read_expert_load

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

COMMON = {
    "vocab_size": 96,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
}
MLA = {
    "num_key_value_heads": 4,
    "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 8,
}


def _model(name: str) -> Any:
    configs = {
        "mixtral": lambda: transformers.MixtralConfig(**COMMON, num_local_experts=8, num_experts_per_tok=2),
        "qwen2_moe": lambda: transformers.Qwen2MoeConfig(
            **COMMON, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
            shared_expert_intermediate_size=16,
        ),
        "qwen3_moe": lambda: transformers.Qwen3MoeConfig(
            **COMMON, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16, head_dim=8
        ),
        "deepseek_v3": lambda: transformers.DeepseekV3Config(
            **{**COMMON, **MLA}, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
            n_group=4, topk_group=2, first_k_dense_replace=1, n_shared_experts=1,
        ),
    }  # fmt: skip
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(configs[name]()).eval()


def _softmax_top_k(hidden: np.ndarray, weight: np.ndarray, top_k: int) -> np.ndarray:
    """Mixtral/Qwen routing: softmax over ``hidden @ weight.T``, the ``top_k`` largest."""
    logits = hidden @ weight.T
    probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.argsort(-probabilities, axis=1, kind="stable")[:, :top_k]


def _group_limited_top_k(hidden: np.ndarray, router: Any) -> np.ndarray:
    """DeepSeek-V3 routing (paper, section 2.1.2 and 2.1.1): sigmoid affinities plus the
    balancing bias choose the experts; a token may use only the ``topk_group`` groups whose two
    best biased affinities sum highest."""
    weight = router.weight.detach().double().numpy()
    bias = router.e_score_correction_bias.detach().double().numpy()
    choice = 1.0 / (1.0 + np.exp(-(hidden @ weight.T))) + bias
    groups = choice.reshape(len(hidden), router.num_group, -1)
    group_score = np.sort(groups, axis=2)[:, :, -2:].sum(axis=2)
    allowed_groups = np.argsort(-group_score, axis=1, kind="stable")[:, : router.topk_group]
    mask = np.full(groups.shape, -np.inf)
    np.put_along_axis(mask, allowed_groups[:, :, None], 0.0, axis=1)
    masked = (groups + mask).reshape(len(hidden), -1)
    return np.argsort(-masked, axis=1, kind="stable")[:, : router.top_k]


def _record_with_inputs(model: Any, steps: int, window: int) -> tuple[Any, list[list[np.ndarray]]]:
    """Run ``steps`` random batches; also capture every router's input hidden states per step."""
    routers = find_routers(model)
    inputs: list[list[np.ndarray]] = []

    def capture(index: int) -> Any:
        def hook(module: Any, args: Any) -> None:
            inputs[-1][index] = np.concatenate(
                [inputs[-1][index], args[0].detach().double().reshape(-1, args[0].shape[-1]).numpy()]
            )

        return hook

    handles = [module.register_forward_pre_hook(capture(i)) for i, (_, module) in enumerate(routers)]
    generator = torch.Generator().manual_seed(1)
    with ExpertLoadRecorder(model, window_steps=window) as recorder, torch.no_grad():
        for _ in range(steps):
            inputs.append([np.zeros((0, model.config.hidden_size)) for _ in routers])
            for _ in range(2):  # two forward passes per step
                model(torch.randint(0, 96, (2, 12), generator=generator))
            recorder.step()
    for handle in handles:
        handle.remove()
    return recorder, inputs


def _expected(model: Any, inputs: list[list[np.ndarray]], route: Any) -> np.ndarray:
    routers = find_routers(model)
    counts = np.zeros((len(routers), 8))
    for step in inputs:
        for layer, (_, router) in enumerate(routers):
            chosen = route(step[layer], router)
            counts[layer] += np.bincount(chosen.ravel(), minlength=8)
    return counts


@pytest.mark.parametrize("name", ["mixtral", "qwen2_moe", "qwen3_moe"])
def test_softmax_routers_count_what_their_top_k_picks(name: str, tmp_path: Path) -> None:
    model = _model(name)
    assert [n for n, _ in find_routers(model)] == [f"model.layers.{i}.mlp.gate" for i in range(3)]
    recorder, inputs = _record_with_inputs(model, steps=3, window=8)
    load = recorder.load()

    def route(hidden: np.ndarray, router: Any) -> np.ndarray:
        return _softmax_top_k(hidden, router.weight.detach().double().numpy(), 2)

    np.testing.assert_array_equal(load.array(), _expected(model, inputs, route))
    assert load.array().sum() == 3 * 3 * 2 * 24 * 2  # layers x steps x passes x tokens x top-k
    assert (load.top_k, load.num_steps, load.window_steps, load.model) == (2, 3, 8, name)
    saved = read_expert_load(recorder.save(tmp_path / "load.json"))
    assert saved.counts == load.counts
    assert saved.layer_names == load.layer_names


def test_deepseek_v3_group_limited_routing(tmp_path: Path) -> None:
    model = _model("deepseek_v3")
    routers = find_routers(model)
    assert [n for n, _ in routers] == ["model.layers.1.mlp.gate", "model.layers.2.mlp.gate"]  # layer 0 dense
    torch.manual_seed(5)
    for _, router in routers:  # a balancing bias makes the biased choice differ from the raw one
        router.e_score_correction_bias.copy_(torch.randn(8) * 0.3)
    recorder, inputs = _record_with_inputs(model, steps=2, window=8)
    expected = _expected(model, inputs, _group_limited_top_k)
    np.testing.assert_array_equal(recorder.load().array(), expected)


def test_window_keeps_the_last_steps_and_averages_them() -> None:
    model = _model("mixtral")
    recorder, inputs = _record_with_inputs(model, steps=4, window=2)

    def route(hidden: np.ndarray, router: Any) -> np.ndarray:
        return _softmax_top_k(hidden, router.weight.detach().double().numpy(), 2)

    load = recorder.load()
    np.testing.assert_array_equal(load.array(), _expected(model, inputs[-2:], route))
    assert load.num_steps == 2
    assert recorder.num_steps == 4
    np.testing.assert_allclose(load.tokens_per_step().sum(axis=1), [2 * 24 * 2] * 3)
    # each step of the window on its own, for placing on one and scoring on the next
    steps = recorder.load(steps=True).steps_array()
    for step, batch in zip(steps, inputs[-2:], strict=True):
        np.testing.assert_array_equal(step, _expected(model, [batch], route))


class _ToyMoE(torch.nn.Module):
    """A user's MoE block: a router that returns logits or indices, named by the user."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.score = torch.nn.Identity()

    def forward(self, x: Any) -> Any:
        return self.score(x)


def test_named_modules_with_logits_or_indices() -> None:
    model = torch.nn.Sequential(_ToyMoE("a"), _ToyMoE("b"))
    with ExpertLoadRecorder(model, modules=["*.score"], num_experts=4, top_k=1) as recorder:
        model(torch.tensor([[0.1, 0.9, 0.0, 0.0], [0.0, 0.0, 0.0, 5.0]]))  # logits: experts 1, 3
    assert recorder.load().counts == ((0, 1, 0, 1), (0, 1, 0, 1))
    layer = torch.nn.Identity()
    holder = torch.nn.Sequential(layer)
    with ExpertLoadRecorder(holder, modules=["0"], num_experts=4) as recorder:
        holder(torch.tensor([[2, 2], [3, -1]]))  # indices; -1 is a dropped token
        recorder.step()
        holder(torch.tensor([[0, 2]]))
    assert recorder.load().counts == ((0.0, 0.0, 2.0, 1.0),)  # the open step waits for step()
    recorder.step()
    assert recorder.load().counts == ((1.0, 0.0, 3.0, 1.0),)


def test_bad_setups_say_what_to_give() -> None:
    with pytest.raises(UserInputError, match="no MoE router found in Linear"):
        ExpertLoadRecorder(torch.nn.Linear(2, 2))
    with pytest.raises(UnknownNameError, match=r"unknown module 'model\.nope'"):
        ExpertLoadRecorder(_model("mixtral"), modules=["model.nope"])
    holder = torch.nn.Sequential(torch.nn.Identity())
    with ExpertLoadRecorder(holder, modules=["0"], num_experts=2) as recorder:
        with pytest.raises(UserInputError, match="chose expert 5 of 2"):
            holder(torch.tensor([5]))
        with pytest.raises(UserInputError, match="returns logits: give top_k"):
            holder(torch.tensor([0.5, 0.1]))
        with pytest.raises(UserInputError, match="nothing recorded yet"):
            recorder.load()
    with pytest.raises(UserInputError, match="window_steps must be >= 1"):
        ExpertLoadRecorder(holder, modules=["0"], window_steps=0)


def test_without_torch_one_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    model = torch.nn.Sequential(torch.nn.Identity())
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'lightspeed\[bench\]'"):
        ExpertLoadRecorder(model)


@pytest.mark.gpu
def test_counts_stay_on_the_gpu_until_a_step_closes() -> None:
    model = _model("mixtral").to("cuda")
    tokens = torch.randint(0, 96, (2, 12), generator=torch.Generator().manual_seed(3))
    with ExpertLoadRecorder(model, window_steps=4) as recorder, torch.no_grad():
        model(tokens.to("cuda"))
        assert all(counts.device.type == "cuda" for counts in recorder._current)
        recorder.step()
    on_gpu = recorder.load().array()
    cpu_model = _model("mixtral")
    with ExpertLoadRecorder(cpu_model) as reference, torch.no_grad():
        cpu_model(tokens)
    assert on_gpu.sum() == 3 * 24 * 2  # every token of every layer, twice
    assert (
        np.abs(on_gpu - reference.load().array()).sum() <= 0.05 * on_gpu.sum()
    )  # TF32/kernels may flip ties
