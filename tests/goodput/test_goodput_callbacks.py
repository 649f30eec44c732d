"""Framework callbacks, driven in the order each framework calls its hooks."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lightspeed.errors import UnsupportedError
from lightspeed.goodput import Tracker, build_ledger, hf_trainer_callback, lightning_callback, read_run

pytestmark = pytest.mark.slow


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


# The frameworks' own deprecation and performance warnings are theirs, not ours.
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_real_lightning_fit_records_every_batch(tmp_path: Path) -> None:
    lightning = pytest.importorskip("lightning")
    torch = pytest.importorskip("torch")

    class Tiny(lightning.LightningModule):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            inputs, targets = batch
            return torch.nn.functional.mse_loss(self.layer(inputs), targets)

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            inputs, targets = batch
            self.log("val", torch.nn.functional.mse_loss(self.layer(inputs), targets))

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    generator = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(
        torch.randn(24, 4, generator=generator), torch.randn(24, 1, generator=generator)
    )
    loader = torch.utils.data.DataLoader(data, batch_size=4)  # 6 batches per epoch
    with Tracker(tmp_path) as tracker:
        trainer = lightning.Trainer(
            max_epochs=2,
            callbacks=[lightning_callback(tracker, tokens_per_step=4)],
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            accelerator="cpu",
            devices=1,
        )
        trainer.fit(Tiny(), loader, loader)
    run = read_run(tmp_path)
    segment = run.ranks[0].segments[0]
    assert len(segment.steps) == 12  # 2 epochs x 6 batches, each bracketed by the batch hooks
    assert {phase.phase for phase in segment.phases} >= {"init", "eval"}
    assert build_ledger(run=run).steps.count == 12


# The frameworks' own deprecation and performance warnings are theirs, not ours.
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_real_transformers_trainer_records_every_step(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=32, n_positions=16)
    model = transformers.GPT2LMHeadModel(config)  # built locally: no download
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 32, (16, 8), generator=generator)

    class Data(torch.utils.data.Dataset):  # type: ignore[misc,name-defined]
        def __len__(self) -> int:
            return len(tokens)

        def __getitem__(self, index: int) -> dict[str, Any]:
            return {"input_ids": tokens[index], "labels": tokens[index]}

    arguments = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        per_device_train_batch_size=4,
        max_steps=5,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    with Tracker(tmp_path / "run") as tracker:
        trainer = transformers.Trainer(
            model=model,
            args=arguments,
            train_dataset=Data(),
            callbacks=[hf_trainer_callback(tracker, tokens_per_step=4 * 8)],
        )
        trainer.train()
    segment = read_run(tmp_path / "run").ranks[0].segments[0]
    assert [step.step for step in segment.steps] == [0, 1, 2, 3, 4]
    assert all(step.tokens == 32 for step in segment.steps)
