"""Recording expert load from a PyTorch MoE model: forward hooks on its routers.

:class:`ExpertLoadRecorder` finds the router of every MoE layer (Hugging Face
Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3 and any model whose MoE block has
a ``gate`` beside its ``experts``; or the modules you name), and counts, per
layer, how many tokens each expert receives. Counts collect into the current
step; :meth:`~ExpertLoadRecorder.step` closes it, and the recorder keeps the
last ``window_steps`` steps: the sliding window over which deployments
(vLLM's and SGLang's expert-parallel load balancers) average load before they
rebalance. Counting stays on the router's device until a step closes (one
copy per step, not per layer).

A router's output may be the selected expert indices (an integer tensor, or a
tuple holding one: Hugging Face routers return ``(logits, weights, indices)``)
or router logits alone (a float tensor, as a bare ``nn.Linear`` gate gives); from
logits the recorder takes the ``top_k`` largest, which is what softmax-then-top-k
routing selects. Negative indices (dropped tokens) are not counted. Every token
the router sees counts, padding included. A router that runs during a backward
pass is not counted: that is activation checkpointing recomputing a forward
whose tokens were counted already (``torch.utils.checkpoint``, reentrant or
not, and Hugging Face's ``gradient_checkpointing_enable``).

PyTorch is imported when a recorder is made (the ``bench`` extra).
"""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.extras import import_extra
from lightspeed.moe.load import ExpertLoad, expert_load_from_array, write_expert_load

if TYPE_CHECKING:
    from torch import nn

EXPERT_COUNT_ATTRIBUTES: Final = ("num_experts", "n_routed_experts", "num_local_experts")
TOP_K_ATTRIBUTES: Final = ("top_k", "num_experts_per_tok")
INDEX_ATTRIBUTES: Final = ("router_indices", "topk_indices", "topk_idx", "expert_indices", "indices")


def _torch() -> Any:
    return import_extra("torch", extra="bench", purpose="recording expert load")


def _backward_check(torch: Any) -> Any:
    """A function telling whether the autograd engine is running a backward pass now (where
    activation checkpointing recomputes forwards): its graph task id is -1 outside one."""
    task_id = getattr(torch._C, "_current_graph_task_id", None)
    if task_id is None:  # a torch without it: nothing is taken for a recompute
        return lambda: False
    return lambda: task_id() != -1


def _is_router(name: str, module: Any, parent: Any) -> bool:
    """A module named ``gate`` (or a ``...Router`` class) inside a block that has ``experts``."""
    if parent is None or not hasattr(parent, "experts"):
        return False
    leaf = name.rsplit(".", 1)[-1]
    return leaf == "gate" or type(module).__name__.lower().endswith("router")


def find_routers(model: nn.Module, names: Sequence[str] | None = None) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of every router of ``model`` in layer order.

    ``names`` are exact module names or glob patterns (``model.layers.*.mlp.gate``);
    without them, routers are found by the convention in the module docstring.
    """
    modules = dict(model.named_modules())
    if names:
        found: list[tuple[str, nn.Module]] = []
        for pattern in names:
            matched = [name for name in modules if fnmatch.fnmatchcase(name, pattern)]
            if not matched:
                raise UnknownNameError("module", pattern, modules, hint="names from model.named_modules()")
            found.extend((name, modules[name]) for name in matched if name not in {n for n, _ in found})
        return found
    routers = []
    for name, module in modules.items():
        parent = modules.get(name.rsplit(".", 1)[0]) if "." in name else None
        if name and _is_router(name, module, parent):
            routers.append((name, module))
    if not routers:
        raise UserInputError(
            f"no MoE router found in {type(model).__name__}: name the router modules "
            "(modules=['model.layers.*.mlp.gate'])"
        )
    return routers


def _attribute(module: Any, names: Sequence[str], config: Any) -> int | None:
    for source in (module, config):
        for name in names:
            value = getattr(source, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _num_experts(module: Any, config: Any, given: int | None) -> int | None:
    found = given or _attribute(module, EXPERT_COUNT_ATTRIBUTES, None)
    weight = getattr(module, "weight", None)
    if found is None and weight is not None and getattr(weight, "ndim", 0) == 2:
        found = int(weight.shape[0])  # a gate's weight is [experts, hidden]
    return found or _attribute(config, EXPERT_COUNT_ATTRIBUTES, None)


class ExpertLoadRecorder:
    """Counts tokens per expert of every MoE layer of a PyTorch ``model`` (see the module docstring).

    ``modules`` names the routers (exact names or glob patterns); ``num_experts``
    and ``top_k`` are needed only when the router does not say them itself (a
    bare linear gate without a model config). Use as a context manager, or call
    :meth:`close` to remove the hooks::

        with ExpertLoadRecorder(model, window_steps=32) as recorder:
            for batch in batches:
                model(batch)
                recorder.step()
        recorder.save("expert-load.json")
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        modules: Sequence[str] | None = None,
        num_experts: int | None = None,
        top_k: int | None = None,
        window_steps: int = 100,
        model_name: str | None = None,
    ) -> None:
        if window_steps < 1:
            raise UserInputError(f"window_steps must be >= 1 (got {window_steps})")
        self._torch = _torch()
        self._in_backward = _backward_check(self._torch)
        config = getattr(model, "config", None)
        self.routers = find_routers(model, modules)
        self.layer_names = tuple(name for name, _ in self.routers)
        self._num_experts = [_num_experts(module, config, num_experts) for _, module in self.routers]
        self._top_k = [top_k or _attribute(module, TOP_K_ATTRIBUTES, config) for _, module in self.routers]
        self.window_steps = window_steps
        self.model_name = model_name or str(getattr(config, "model_type", "") or type(model).__name__)
        self._current: list[Any] = [None] * len(self.routers)
        self._window: deque[np.ndarray] = deque(maxlen=window_steps)
        self.num_steps = 0
        self._handles = [
            module.register_forward_hook(self._hook(index)) for index, (_, module) in enumerate(self.routers)
        ]

    def _hook(self, index: int) -> Any:
        def record(module: Any, inputs: Any, output: Any) -> None:
            if not self._in_backward():  # a checkpointed forward recomputed: its tokens are counted
                self._count(index, output)

        return record

    def _indices(self, index: int, output: Any) -> Any:
        torch = self._torch
        candidates = list(output) if isinstance(output, tuple | list) else [output]
        candidates += [getattr(output, name) for name in INDEX_ATTRIBUTES if hasattr(output, name)]
        tensors = [item for item in candidates if isinstance(item, torch.Tensor)]
        integers = [item for item in tensors if not item.is_floating_point()]
        if integers:
            return integers[-1]
        if not tensors:
            raise UserInputError(
                f"router {self.layer_names[index]} returned no tensor of expert indices or logits"
            )
        top_k = self._top_k[index]
        if top_k is None:
            raise UserInputError(
                f"router {self.layer_names[index]} returns logits: give top_k=<experts per token>"
            )
        return torch.topk(tensors[0], top_k, dim=-1).indices

    def _count(self, index: int, output: Any) -> None:
        torch = self._torch
        with torch.no_grad():
            indices = self._indices(index, output).reshape(-1)
            indices = indices[indices >= 0]
            experts = self._num_experts[index]
            if experts is None:
                raise UserInputError(f"router {self.layer_names[index]}: give num_experts=<routed experts>")
            if indices.numel() and int(indices.max()) >= experts:
                raise UserInputError(
                    f"router {self.layer_names[index]} chose expert {int(indices.max())} of {experts}: "
                    "give num_experts"
                )
            counts = torch.bincount(indices.to(torch.int64), minlength=experts)
            current = self._current[index]
            self._current[index] = counts if current is None else current + counts

    def step(self) -> None:
        """Close the current step: its counts join the window (the oldest step leaves it when full)."""
        sizes = {experts or 0 for experts in self._num_experts}
        if len(sizes) != 1:
            raise UserInputError(f"the routers have different numbers of experts ({sorted(sizes)})")
        width = sizes.pop()
        rows = [
            np.zeros(width) if counts is None else counts.detach().to("cpu").numpy().astype(np.float64)
            for counts in self._current
        ]
        self._window.append(np.stack(rows))
        self._current = [None] * len(self.routers)
        self.num_steps += 1

    def load(self, *, steps: bool = False) -> ExpertLoad:
        """Counts summed over the window's steps (the current partial step alone if none closed yet);
        ``steps`` keeps each step's counts too (to place on early steps and score on later ones)."""
        if not self._window:
            if all(counts is None for counts in self._current):
                raise UserInputError("nothing recorded yet: run the model forward first")
            self.step()
        window = np.stack(list(self._window))
        total = np.sum(window, axis=0)
        top_ks = {k for k in self._top_k if k is not None}
        return expert_load_from_array(
            total,
            layer_names=self.layer_names,
            model=self.model_name,
            top_k=top_ks.pop() if len(top_ks) == 1 else None,
            num_steps=len(self._window),
            window_steps=self.window_steps,
            source="ExpertLoadRecorder",
            step_counts=window if steps else None,
        )

    def save(self, path: str | Path, *, steps: bool = False) -> Path:
        """Write :meth:`load` to ``path`` in lightspeed's expert-load format (``steps``: with each
        step's counts, for ``moe balance --holdout-fraction``)."""
        return write_expert_load(self.load(steps=steps), Path(path))

    def close(self) -> None:
        """Remove the hooks (the counts stay readable)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self) -> ExpertLoadRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["ExpertLoadRecorder", "find_routers"]
