"""A measured expert load in the predictions: per-layer imbalance after balancing, its cost.

:class:`ExpertLoadBalance` answers the engines' :class:`~lightspeed.sol.core.experts.ExpertBalance`
question from a load (tokens per expert per MoE layer): for a plan whose EP
group has ``ep`` GPUs over ``num_nodes`` nodes it places the experts (and
``num_physical_experts - experts`` redundant replicas) with
:func:`~lightspeed.moe.placement.balance_experts`, takes each layer's busiest GPU
over the mean GPU, and turns those into the one factor the engines multiply
the busiest GPU's expert work by: each pipeline stage runs its MoE layers one
after another (so their factors average within the stage) and the slowest
stage paces the pipeline (so the factor is the largest stage average).

:func:`training_load_effect` and :func:`inference_load_effect` say what that
costs: the same plan with perfectly balanced experts, and with the experts
placed in order without replicas (what a framework does without a balancer),
beside the plan as predicted; and the memory the redundant experts take.

>>> from lightspeed.workload import load_models
>>> import numpy as np
>>> model = load_models().get("mixtral-8x7b")
>>> load = np.tile([[4.0, 1, 1, 1, 1, 1, 1, 2]], (32, 1))
>>> balance = expert_load_balance(load=load, model=model, num_physical_experts=16)
>>> float(balance.imbalance(ep=np.array([8.0]), num_nodes=np.array([1.0]), pp=np.array([1.0]),
...                         vpp=np.array([1.0]))[0])
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lightspeed.catalog import Cluster
from lightspeed.errors import UserInputError
from lightspeed.moe.placement import as_load_array, balance_experts, contiguous_imbalance
from lightspeed.records import Record
from lightspeed.sol.core.collectives import fabric_of
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.experts import expert_nodes
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.infer.estimate import InferenceEstimate, deployment_memory, pool_split, serve
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.infer.serving import ServingContext
from lightspeed.sol.train.estimate import estimate_training
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.sol.train.result import TrainingEstimate
from lightspeed.workload import TransformerSpec

FloatArray = npt.NDArray[np.float64]
LAYOUT_CODE_BASE: Final = 1 << 14  # EP sizes, node counts, stages and chunks stay below it


@dataclass(frozen=True)
class _Layout:
    """One plan's expert-parallel layout: what the balance depends on."""

    ep: int
    num_nodes: int
    pp: int
    vpp: int


class ExpertLoadBalance:
    """A model's measured expert load, balanced for any EP layout (see the module docstring).

    ``load`` is ``[MoE layers, routed experts]`` of ``model`` (or one layer, used for every
    MoE layer); ``num_physical_experts`` the routed experts with their redundant replicas
    (``None``: no replicas; a plan without expert parallelism never gets any). With
    group-limited routing (``num_expert_groups`` and
    ``top_k_groups``) placement is hierarchical when the groups divide over the nodes.
    """

    def __init__(
        self,
        load: FloatArray,
        *,
        model: TransformerSpec,
        num_physical_experts: int | None,
        source: str = "",
    ) -> None:
        assert model.moe is not None
        self.load = load
        self.model = model
        self.num_physical_experts = num_physical_experts
        self.source = source
        moe = model.moe
        self.num_groups = moe.num_expert_groups if moe.num_expert_groups and moe.top_k_groups else 1
        self.moe_layer_index = np.array(
            [index for index in range(model.num_layers) if model.is_moe_layer(index)], dtype=np.int64
        )
        self._layers: dict[tuple[int, int], tuple[FloatArray, FloatArray | None, str]] = {}

    @property
    def num_logical_experts(self) -> int:
        """Routed experts per layer."""
        return int(self.load.shape[1])

    @property
    def num_replicas(self) -> int:
        """Physical experts placed (routed experts when there are no replicas)."""
        return self.num_physical_experts or self.num_logical_experts

    def replicas_for(self, ep: int) -> int | None:
        """The physical experts a plan of EP size ``ep`` holds: none extra without expert
        parallelism (one GPU holds every expert; copies would balance nothing)."""
        return self.num_physical_experts if ep > 1 else None

    def nodes_for(self, ep: int, num_nodes: int) -> int:
        """The node count placement uses: ``num_nodes`` when it divides the EP GPUs, else 1."""
        return num_nodes if num_nodes >= 1 and ep % num_nodes == 0 else 1

    def layers(self, ep: int, num_nodes: int) -> tuple[FloatArray, FloatArray | None, str]:
        """(per-layer busiest over mean GPU after balancing, the same for experts in order without
        replicas or ``None`` when ``ep`` does not divide the experts, the policy) on ``ep`` GPUs."""
        num_nodes = self.nodes_for(ep, num_nodes)
        key = (ep, num_nodes)
        if key not in self._layers:
            if ep == 1:
                ones = np.ones(self.load.shape[0])
                self._layers[key] = (ones, ones, "one GPU")
            else:
                placement = balance_experts(
                    load=self.load,
                    num_replicas=self.num_replicas,
                    num_groups=self.num_groups,
                    num_nodes=num_nodes,
                    num_gpus=ep,
                )
                balanced = np.asarray(placement.gpu_load_max_over_mean, dtype=np.float64)
                self._layers[key] = (balanced, contiguous_imbalance(self.load, ep), placement.policy)
        return self._layers[key]

    def training_effect(
        self,
        *,
        estimate: TrainingEstimate,
        model: TransformerSpec,
        cluster: Cluster,
        efficiency: EfficiencyModel | None,
    ) -> ExpertLoadEffect:
        """:func:`training_load_effect` of this load (``compare systems`` asks it through
        :class:`lightspeed.sol.systems.LoadEffects`)."""
        return training_load_effect(
            estimate=estimate, balance=self, model=model, cluster=cluster, efficiency=efficiency
        )

    def inference_effect(
        self,
        *,
        estimate: InferenceEstimate,
        model: TransformerSpec,
        cluster: Cluster,
        efficiency: EfficiencyModel | None,
    ) -> ExpertLoadEffect:
        """:func:`inference_load_effect` of this load."""
        return inference_load_effect(
            estimate=estimate, balance=self, model=model, cluster=cluster, efficiency=efficiency
        )

    def stage_factor(self, per_layer: FloatArray, pp: int, vpp: int) -> float:
        """The engines' factor: the largest over pipeline stages of the mean over the stage's MoE
        layers (``vpp`` chunks per stage, chunk ``c`` on stage ``c % pp``)."""
        if per_layer.shape[0] == 1:
            return float(per_layer[0])
        chunks = np.array_split(np.arange(self.model.num_layers), max(pp * vpp, 1))
        stage_of_layer = np.empty(self.model.num_layers, dtype=np.int64)
        for chunk_index, chunk in enumerate(chunks):
            stage_of_layer[chunk] = chunk_index % max(pp, 1)
        stages = stage_of_layer[self.moe_layer_index]
        means = [per_layer[stages == stage].mean() for stage in np.unique(stages)]
        return float(max(means))

    def imbalance(
        self, *, ep: npt.ArrayLike, num_nodes: npt.ArrayLike, pp: npt.ArrayLike, vpp: npt.ArrayLike
    ) -> FloatArray:
        """The factor for every plan (aligned arrays; each distinct layout is placed once)."""
        columns = [np.asarray(column, dtype=np.int64).reshape(-1) for column in (ep, num_nodes, pp, vpp)]
        code = columns[0]
        for column in columns[1:]:
            code = code * LAYOUT_CODE_BASE + column  # one integer per layout: a fast unique
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        factors = np.array(
            [
                self.stage_factor(self.layers(int(e), int(n))[0], int(p), int(v))
                for e, n, p, v in zip(*(column[first] for column in columns), strict=True)
            ]
        )
        return np.asarray(factors[inverse.reshape(-1)], dtype=np.float64)


def expert_load_balance(
    *,
    load: npt.ArrayLike,
    model: TransformerSpec,
    num_physical_experts: int | None = None,
    source: str = "",
) -> ExpertLoadBalance:
    """Check ``load`` against ``model`` and return its :class:`ExpertLoadBalance`.

    Raises :class:`~lightspeed.errors.UserInputError` when the model is dense, the load's
    experts or MoE layers do not match the model's, or the replicas cannot hold the experts.
    """
    if model.moe is None:
        raise UserInputError(f"{model.name} is dense: an expert load needs a mixture-of-experts model")
    array = as_load_array(load)
    experts, layers = model.moe.num_routed_experts, model.num_moe_layers
    if array.shape[1] != experts:
        raise UserInputError(
            f"the expert load has {array.shape[1]} experts per layer, {model.name} routes to {experts}: "
            "record the same model (or pad a sparse log with its expert count)"
        )
    if array.shape[0] not in (1, layers):
        raise UserInputError(
            f"the expert load has {array.shape[0]} layers, {model.name} has {layers} MoE layers: "
            "give one row per MoE layer, or one row for all of them"
        )
    if num_physical_experts is not None and num_physical_experts < experts:
        raise UserInputError(
            f"{num_physical_experts} replicas cannot hold the {experts} experts of {model.name}; "
            f"use at least {experts}"
        )
    return ExpertLoadBalance(array, model=model, num_physical_experts=num_physical_experts, source=source)


@dataclass(frozen=True)
class ExpertLoadEffect(Record):
    """What a measured expert load does to one prediction.

    ``layer_imbalance`` is each MoE layer's busiest GPU over the mean GPU of the EP
    group after balancing; ``expert_imbalance`` the factor the engine used (see the module
    docstring); the ``unbalanced_`` fields the same for experts placed in order without
    replicas (``None`` when the EP size does not divide the experts). ``step_s`` is the
    training step or the inference iteration as predicted; ``balanced_step_s`` the same
    plan with perfectly balanced experts; ``imbalance_cost_s`` their difference and
    ``imbalance_share`` its share of ``step_s``. ``redundant_expert_bytes`` is the
    memory per GPU the redundant replicas take (weights, and for training their
    gradients and optimizer state).
    """

    workload: str
    source: str
    policy: str
    ep: int
    num_nodes: int
    pp: int
    num_moe_layers: int
    num_logical_experts: int
    num_physical_experts: int
    num_redundant_experts: int
    layer_imbalance: tuple[float, ...]
    expert_imbalance: float
    unbalanced_layer_imbalance: tuple[float, ...] | None
    unbalanced_expert_imbalance: float | None
    step_s: float
    balanced_step_s: float
    imbalance_cost_s: float
    imbalance_share: float
    unbalanced_step_s: float | None
    redundant_expert_bytes: float


def _layout(
    balance: ExpertLoadBalance, cluster: Cluster, *, ep: int, stride: int, pp: int, vpp: int
) -> _Layout:
    domain_size = fabric_of(cluster, 1.0).scale_up.domain_size  # as the engines see the cluster
    nodes = int(expert_nodes(np.array([float(ep)]), np.array([float(stride)]), domain_size)[0])
    return _Layout(ep=ep, num_nodes=balance.nodes_for(ep, nodes), pp=pp, vpp=vpp)


def training_layout(balance: ExpertLoadBalance, plan: TrainingPlan, cluster: Cluster) -> _Layout:
    """The EP layout of a training plan (EP ranks ``tp x cp`` apart in rank order)."""
    return _layout(balance, cluster, ep=plan.ep, stride=plan.tp * plan.cp, pp=plan.pp, vpp=plan.vpp)


def inference_layout(balance: ExpertLoadBalance, plan: InferencePlan, cluster: Cluster) -> _Layout:
    """The EP layout of a serving plan (an expert's TP slices on neighbouring GPUs)."""
    stride = plan.stage_gpus // plan.ep
    return _layout(balance, cluster, ep=plan.ep, stride=stride, pp=plan.pp, vpp=1)


def _factors(balance: ExpertLoadBalance, layout: _Layout) -> tuple[FloatArray, FloatArray | None, str, float]:
    per_layer, unbalanced, policy = balance.layers(layout.ep, layout.num_nodes)
    return per_layer, unbalanced, policy, balance.stage_factor(per_layer, layout.pp, layout.vpp)


def plan_with_load(plan: TrainingPlan, *, balance: ExpertLoadBalance, cluster: Cluster) -> TrainingPlan:
    """``plan`` with the expert imbalance of its layout and the balance's redundant experts."""
    factor = _factors(balance, training_layout(balance, plan, cluster))[3]
    return plan.with_changes(expert_imbalance=factor, num_physical_experts=balance.replicas_for(plan.ep))


def inference_plan_with_load(
    plan: InferencePlan, *, balance: ExpertLoadBalance, cluster: Cluster
) -> InferencePlan:
    """``plan`` with the expert imbalance of its layout and the balance's redundant experts."""
    factor = _factors(balance, inference_layout(balance, plan, cluster))[3]
    return plan.with_changes(expert_imbalance=factor, num_physical_experts=balance.replicas_for(plan.ep))


def _effect(
    workload: str,
    balance: ExpertLoadBalance,
    layout: _Layout,
    steps: tuple[float, float, float | None],
    redundant_bytes: float,
) -> ExpertLoadEffect:
    per_layer, unbalanced, policy, factor = _factors(balance, layout)
    step, balanced, unbalanced_step = steps
    physical = balance.replicas_for(layout.ep) or balance.num_logical_experts
    return ExpertLoadEffect(
        workload=workload,
        source=balance.source,
        policy=policy,
        ep=layout.ep,
        num_nodes=layout.num_nodes,
        pp=layout.pp,
        num_moe_layers=int(balance.moe_layer_index.size),
        num_logical_experts=balance.num_logical_experts,
        num_physical_experts=physical,
        num_redundant_experts=physical - balance.num_logical_experts,
        layer_imbalance=tuple(float(value) for value in per_layer),
        expert_imbalance=factor,
        unbalanced_layer_imbalance=None if unbalanced is None else tuple(float(v) for v in unbalanced),
        unbalanced_expert_imbalance=(
            None if unbalanced is None else balance.stage_factor(unbalanced, layout.pp, layout.vpp)
        ),
        step_s=step,
        balanced_step_s=balanced,
        imbalance_cost_s=step - balanced,
        imbalance_share=(step - balanced) / step if step > 0 else 0.0,
        unbalanced_step_s=unbalanced_step,
        redundant_expert_bytes=redundant_bytes,
    )


def _state_bytes(estimate: TrainingEstimate) -> float:
    return sum(estimate.memory_bytes[part] for part in ("weights", "gradients", "optimizer"))


def training_load_effect(
    *,
    estimate: TrainingEstimate,
    balance: ExpertLoadBalance,
    model: TransformerSpec,
    cluster: Cluster,
    efficiency: EfficiencyModel | None = None,
    sharp: bool = False,
) -> ExpertLoadEffect:
    """How much of ``estimate``'s step its expert imbalance costs (``estimate`` is a plan from
    :func:`plan_with_load`), what experts in order without replicas would cost, and the
    memory of the redundant experts."""
    plan = estimate.plan
    layout = training_layout(balance, plan, cluster)
    unbalanced = _factors(balance, layout)[1]

    def step_of(changed: TrainingPlan) -> TrainingEstimate:
        return estimate_training(
            model=model, cluster=cluster, plan=changed, efficiency=efficiency, sharp=sharp
        )

    ideal = step_of(plan.with_changes(expert_imbalance=1.0))
    plain = plan.with_changes(num_physical_experts=None)
    unbalanced_step = None
    if unbalanced is not None:
        factor = balance.stage_factor(unbalanced, layout.pp, layout.vpp)
        unbalanced_step = step_of(plain.with_changes(expert_imbalance=factor)).step_time_s
    redundant = _state_bytes(estimate) - _state_bytes(step_of(plain))
    steps = (estimate.step_time_s, ideal.step_time_s, unbalanced_step)
    return _effect("train", balance, layout, steps, redundant)


def _hardware_of(
    estimate: InferenceEstimate,
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    efficiency: Any,
) -> InferenceHardware:
    """``plan``'s figures on ``cluster`` under the serving profile ``estimate`` was made with."""
    serving = load_serving_stack(estimate.serving or None)
    return inference_hardware_for(cluster, plan, efficiency, serving, model=model)


def _iteration_s(
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    estimate: InferenceEstimate,
    efficiency: Any,
) -> float:
    """The iteration time of ``plan`` at ``estimate``'s batch and load."""
    inference_hardware = _hardware_of(estimate, model, cluster, plan, efficiency)
    load = estimate.load
    split = pool_split(plan, inference_hardware, model, load) if plan.disaggregated is not None else None
    ctx = ServingContext(model, inference_hardware, load, plan.speculative)
    batching = "continuous" if estimate.batching == "disaggregated" else estimate.batching
    arrays = serve(ctx, plan, estimate.batch_per_replica, batching, split)
    return float(sum(np.asarray(part).reshape(-1)[0] for part in arrays.iteration.parts.values()))


def inference_load_effect(
    *,
    estimate: InferenceEstimate,
    balance: ExpertLoadBalance,
    model: TransformerSpec,
    cluster: Cluster,
    efficiency: EfficiencyModel | None = None,
) -> ExpertLoadEffect:
    """How much of ``estimate``'s iteration its expert imbalance costs (at the same batch), what
    experts in order without replicas would cost, and the memory of the redundant experts."""
    plan = estimate.plan
    layout = inference_layout(balance, plan, cluster)
    unbalanced = _factors(balance, layout)[1]
    ideal = _iteration_s(model, cluster, plan.with_changes(expert_imbalance=1.0), estimate, efficiency)
    plain = plan.with_changes(num_physical_experts=None)
    unbalanced_step = None
    if unbalanced is not None:
        factor = balance.stage_factor(unbalanced, layout.pp, layout.vpp)
        unbalanced_step = _iteration_s(model, cluster, plain.with_changes(expert_imbalance=factor), estimate,
                                       efficiency)  # fmt: skip
    inference_hardware = _hardware_of(estimate, model, cluster, plan, efficiency)
    load = ServingLoad(estimate.load.input_tokens, estimate.load.output_tokens)
    weights = deployment_memory(model, inference_hardware, plan, load).weights_bytes[0]
    redundant = float(weights - deployment_memory(model, inference_hardware, plain, load).weights_bytes[0])
    return _effect("infer", balance, layout, (estimate.iteration_s, ideal, unbalanced_step), redundant)


__all__ = [
    "ExpertLoadBalance",
    "ExpertLoadEffect",
    "expert_load_balance",
    "inference_layout",
    "inference_load_effect",
    "inference_plan_with_load",
    "plan_with_load",
    "training_layout",
    "training_load_effect",
]
