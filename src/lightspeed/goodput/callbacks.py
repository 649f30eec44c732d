"""Tracker callbacks for Hugging Face ``Trainer`` and PyTorch Lightning.

Neither package is a dependency: each factory imports its framework when
called and raises :class:`~lightspeed.errors.UnsupportedError` naming the
package when it is missing. The callbacks time what the frameworks' hooks
bracket:

- Hugging Face: steps from ``on_step_begin`` to ``on_step_end``; evaluation
  and checkpoint saves from the previous step end (or the previous of them) to
  ``on_evaluate`` and ``on_save``, which the Trainer calls after the work; the
  step index is ``state.global_step``, so a resumed Trainer repeats indices
  after its last checkpoint (wasted progress). Tokens: the increase of
  ``state.num_input_tokens_seen`` when the Trainer counts them
  (``include_num_input_tokens_seen=True``), else ``tokens_per_step`` (in the
  tracker's ``tokens_scope``). The Trainer's count is the whole job's (gathered
  and summed over its processes): a ``tokens_scope="global"`` tracker logs it as
  it is, a ``"rank"`` tracker (the default), whose ranks' counts are added, logs
  this rank's share of it (the count / the Trainer's ``world_size``).
- Lightning: steps from ``on_train_batch_start`` to ``on_train_batch_end``
  (one per batch, numbered from ``global_step x accumulate_grad_batches``),
  validation from ``on_validation_start`` to ``on_validation_end`` (not the
  sanity check, ``trainer.sanity_checking``), and init from ``on_fit_start``
  to ``on_train_start`` (setup, sanity checks).
  Lightning has no hook after a checkpoint is written, so saves stay in
  ``other``. Tokens: ``tokens_fn(batch)`` or ``tokens_per_step``.

The time between a step's end and the next step's start (data loading,
logging) is not timed by either framework's hooks and appears as ``other``;
wrap the loader with :meth:`Tracker.wrap_loader` where you own it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from lightspeed.errors import UnsupportedError
from lightspeed.goodput.tracker import Tracker


def hf_trainer_callback(tracker: Tracker, *, tokens_per_step: float = 0.0) -> Any:
    """A ``transformers.TrainerCallback`` that records into ``tracker``.

    Example::

        callback = hf_trainer_callback(tracker, tokens_per_step=8 * 2048)
        trainer = Trainer(..., callbacks=[callback])
    """
    base = _import_base(("transformers",), "TrainerCallback", "transformers")
    return _hf_class(base)(tracker, tokens_per_step)


def _hf_class(base: type) -> type:
    class LightspeedTrainerCallback(base):  # type: ignore[misc]
        """Records Trainer steps, evaluations and saves into a lightspeed goodput tracker."""

        def __init__(self, tracker: Tracker, tokens_per_step: float) -> None:
            self.tracker = tracker
            self.tokens_per_step = tokens_per_step
            self._mark = tracker.now_ns()
            self._step_start = self._mark  # stamps inside the tracker's segment, as it requires
            self._tokens_seen = 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.tracker.set_step(int(state.global_step))
            self._tokens_seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
            self._mark = self.tracker.now_ns()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._step_start = self.tracker.now_ns()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            end = self.tracker.now_ns()
            seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
            if seen > self._tokens_seen:
                tokens = self._logged_tokens(seen - self._tokens_seen, args)
            else:
                tokens = self.tokens_per_step
            self._tokens_seen = max(seen, self._tokens_seen)
            step = max(0, int(state.global_step) - 1)  # global_step counts completed steps
            self.tracker.record_step(start_ns=self._step_start, end_ns=end, tokens=tokens, step=step)
            self._mark = end

        def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._phase_until_now("eval")

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._phase_until_now("checkpoint_save")

        def _logged_tokens(self, job_tokens: int, args: Any) -> float:
            """The Trainer's token count (the job's: gathered and summed over its processes) in the
            tracker's scope: as it is for a global-scope tracker; for a rank-scope one, whose ranks'
            counts the ledger adds, this rank's share, so the ranks add up to the job's count."""
            if self.tracker.tokens_scope == "global":
                return float(job_tokens)
            processes = getattr(args, "world_size", None)
            if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
                processes = self.tracker.world_size
            return job_tokens / processes

        def _phase_until_now(self, phase: str) -> None:
            now = self.tracker.now_ns()
            self.tracker.record_phase(phase, start_ns=self._mark, end_ns=now)
            self._mark = now

    return LightspeedTrainerCallback


def lightning_callback(
    tracker: Tracker,
    *,
    tokens_per_step: float = 0.0,
    tokens_fn: Callable[[Any], float] | None = None,
) -> Any:
    """A Lightning ``Callback`` that records into ``tracker``.

    Example::

        callback = lightning_callback(tracker, tokens_fn=lambda batch: batch[0].numel())
        trainer = L.Trainer(callbacks=[callback])
    """
    base = _import_base(
        ("lightning.pytorch.callbacks", "pytorch_lightning.callbacks"), "Callback", "lightning"
    )
    return _lightning_class(base)(tracker, tokens_per_step, tokens_fn)


def _import_base(modules: tuple[str, ...], name: str, package: str) -> type:
    """The framework's callback base class, from the first of ``modules`` that imports."""
    for module in modules:
        try:
            base: type = getattr(importlib.import_module(module), name)
            return base
        except ImportError:
            continue
    raise UnsupportedError(f"this callback needs the '{package}' package: pip install {package}")


def _lightning_class(base: type) -> type:
    class LightspeedLightningCallback(base):  # type: ignore[misc]
        """Records Lightning batches, validation and setup into a lightspeed goodput tracker."""

        def __init__(
            self, tracker: Tracker, tokens_per_step: float, tokens_fn: Callable[[Any], float] | None
        ) -> None:
            self.tracker = tracker
            self.tokens_per_step = tokens_per_step
            self.tokens_fn = tokens_fn
            self._fit_start = tracker.now_ns()
            self._batch_start = self._fit_start  # stamps inside the tracker's segment, as it requires
            self._validation_start = self._fit_start

        def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
            self._fit_start = self.tracker.now_ns()

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self.tracker.record_phase("init", start_ns=self._fit_start, end_ns=self.tracker.now_ns())
            accumulate = int(getattr(trainer, "accumulate_grad_batches", 1) or 1)
            self.tracker.set_step(int(trainer.global_step) * accumulate)

        def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
            self._batch_start = self.tracker.now_ns()

        def on_train_batch_end(
            self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
        ) -> None:
            tokens = self.tokens_fn(batch) if self.tokens_fn is not None else self.tokens_per_step
            self.tracker.record_step(start_ns=self._batch_start, end_ns=self.tracker.now_ns(), tokens=tokens)

        def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
            self._validation_start = self.tracker.now_ns()

        def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
            if getattr(trainer, "sanity_checking", False):  # before on_train_start: inside init
                return
            self.tracker.record_phase("eval", start_ns=self._validation_start, end_ns=self.tracker.now_ns())

    return LightspeedLightningCallback
