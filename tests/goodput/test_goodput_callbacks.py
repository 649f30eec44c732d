"""Framework callbacks, driven in the order each framework calls its hooks."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from lightspeed.errors import UnsupportedError
from lightspeed.goodput import Tracker, build_ledger, hf_trainer_callback, lightning_callback, read_run


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attributes: object) -> None:
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


def test_hf_callback_records_steps_eval_and_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_module(monkeypatch, "transformers", TrainerCallback=object)
    with Tracker(tmp_path) as tracker:
        callback = hf_trainer_callback(tracker, tokens_per_step=100)
        state = SimpleNamespace(global_step=4, num_input_tokens_seen=0)  # resumed after 4 steps
        callback.on_train_begin(None, state, None)
        for _ in range(3):  # the Trainer: step begin, step end (global_step already incremented)
            callback.on_step_begin(None, state, None)
            state.global_step += 1
            callback.on_step_end(None, state, None)
        callback.on_evaluate(None, state, None)
        callback.on_save(None, state, None)
        state.num_input_tokens_seen = 5000  # the Trainer counts tokens from here on
        callback.on_step_begin(None, state, None)
        state.global_step += 1
        callback.on_step_end(None, state, None)
    segment = read_run(tmp_path).ranks[0].segments[0]
    assert [step.step for step in segment.steps] == [4, 5, 6, 7]
    assert [step.tokens for step in segment.steps] == [100, 100, 100, 5000]
    assert [phase.phase for phase in segment.phases] == ["eval", "checkpoint_save"]
    assert segment.phases[0].start_s == pytest.approx(segment.steps[2].end_s)


def test_lightning_callback_records_batches_validation_and_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_module(monkeypatch, "lightning", pytorch=None)
    _fake_module(monkeypatch, "lightning.pytorch")
    _fake_module(monkeypatch, "lightning.pytorch.callbacks", Callback=object)
    with Tracker(tmp_path) as tracker:
        callback = lightning_callback(tracker, tokens_fn=len)
        trainer = SimpleNamespace(global_step=0, accumulate_grad_batches=1)
        callback.on_fit_start(trainer, None)
        callback.on_validation_start(trainer, None)  # sanity check before training
        callback.on_validation_end(trainer, None)
        callback.on_train_start(trainer, None)
        for index, batch in enumerate(([1, 2], [3, 4, 5])):
            callback.on_train_batch_start(trainer, None, batch, index)
            callback.on_train_batch_end(trainer, None, None, batch, index)
            trainer.global_step += 1
    ledger = build_ledger(run=read_run(tmp_path))
    segment = read_run(tmp_path).ranks[0].segments[0]
    assert [step.tokens for step in segment.steps] == [2, 3]
    assert [phase.phase for phase in segment.phases] == ["eval", "init"]
    assert ledger.steps.count == 2


def test_missing_framework_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setitem(sys.modules, "lightning.pytorch.callbacks", None)
    monkeypatch.setitem(sys.modules, "pytorch_lightning.callbacks", None)
    with Tracker(tmp_path) as tracker:
        with pytest.raises(UnsupportedError, match="pip install transformers"):
            hf_trainer_callback(tracker)
        with pytest.raises(UnsupportedError, match="pip install lightning"):
            lightning_callback(tracker)


def test_real_transformers_base_class(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    with Tracker(tmp_path) as tracker:
        assert isinstance(hf_trainer_callback(tracker), transformers.TrainerCallback)


def test_real_lightning_base_class(tmp_path: Path) -> None:
    callbacks = pytest.importorskip("lightning.pytorch.callbacks")
    with Tracker(tmp_path) as tracker:
        assert isinstance(lightning_callback(tracker), callbacks.Callback)
