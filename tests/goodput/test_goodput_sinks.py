"""Sinks: what the tracker and the ledger write, read back with each dashboard's own reader.

TensorBoard's EventAccumulator reads the event files, MLflow's client reads
its file store, and the W&B offline run's transaction log is decoded with
W&B's own protobuf schema (wandb 0.31 ships no Python reader of offline runs:
its LevelDB-style framing is decoded here, documented in leveldb's log_format).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import MissingExtraError
from lightspeed.goodput import (
    BUCKETS,
    MetricSink,
    MlflowSink,
    SinkError,
    TensorBoardSink,
    Tracker,
    WandbSink,
    build_ledger,
    publish_ledger,
    publish_run,
    read_run,
)

FLOP_PER_TOKEN = 1.0e6
PEAK_FLOP_PER_S = 1.0e10
TOKENS = [4096, 2048, 4096, 1024]


def _train(run_dir: Path, sinks: list[MetricSink]) -> Tracker:
    """Four steps of known tokens, a data wait and a checkpoint, with the sinks attached."""
    with Tracker(
        run_dir,
        flush_interval_s=0.05,
        rank=0,
        world_size=1,
        model_flop_per_token=FLOP_PER_TOKEN,
        peak_flop_per_s=PEAK_FLOP_PER_S,
        sinks=sinks,
    ) as tracker:
        with tracker.init():
            time.sleep(0.01)
        for index, tokens in enumerate(TOKENS):
            with tracker.data_wait():
                time.sleep(0.005)
            with tracker.step(tokens=tokens, samples=8):
                time.sleep(0.01 * (index + 1))
        with tracker.checkpoint_save():
            time.sleep(0.005)
    return tracker


def _check_steps(series: dict[str, list[tuple[int, float]]], *, rel: float) -> None:
    """Per-step figures agree with each other and with the tokens logged (hand formulas)."""
    times = dict(series["lightspeed/step_time_s"])
    rates = dict(series["lightspeed/tokens_per_s"])
    mfu = dict(series["lightspeed/mfu"])
    assert sorted(times) == [0, 1, 2, 3]
    for step, tokens in enumerate(TOKENS):
        assert times[step] >= 0.01 * (step + 1)  # slept at least this long
        assert rates[step] * times[step] == pytest.approx(tokens, rel=rel)
        assert mfu[step] == pytest.approx(tokens * FLOP_PER_TOKEN / (times[step] * PEAK_FLOP_PER_S), rel=rel)
    stalls = dict(series["lightspeed/badput/data_stall_s"])
    assert stalls[0] >= 0.005  # the wait before step 0 is counted by then
    assert stalls[3] >= 4 * 0.005
    assert stalls[3] > stalls[0]


def _check_ledger(figures: dict[str, float], run_dir: Path, *, rel: float) -> None:
    ledger = build_ledger(run=read_run(run_dir))
    assert figures["lightspeed/ledger/goodput_fraction"] == pytest.approx(ledger.goodput_fraction, rel=rel)
    assert figures["lightspeed/ledger/tokens_per_s"] == pytest.approx(ledger.tokens_per_s, rel=rel)
    for bucket in BUCKETS:
        assert figures[f"lightspeed/ledger/badput/{bucket}_s"] == pytest.approx(
            ledger.badput_s.get(bucket, 0.0), rel=rel, abs=1e-6
        )
    assert figures["lightspeed/ledger/badput/data_stall_s"] > 0


def test_tensorboard_event_files_read_back(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_dir = tmp_path / "tb"
    with TensorBoardSink(log_dir) as board:
        tracker = _train(tmp_path / "run", [board])
        assert tracker.sink_error is None
        publish_ledger(build_ledger(run=read_run(tmp_path / "run")), sinks=[board])
    accumulator = EventAccumulator(str(log_dir))
    accumulator.Reload()
    series = {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }
    _check_steps(series, rel=1e-5)  # TensorBoard keeps float32
    _check_ledger({tag: values[-1][1] for tag, values in series.items()}, tmp_path / "run", rel=1e-5)
    assert series["lightspeed/ledger/goodput_fraction"][0][0] == len(TOKENS)  # logged at the last step


def test_mlflow_file_store_reads_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3's opt-in for a local folder
    uri = (tmp_path / "mlruns").as_uri()
    sink = MlflowSink(tracking_uri=uri, experiment="tests", run_name="tiny")
    _train(tmp_path / "run", [sink])
    publish_ledger(build_ledger(run=read_run(tmp_path / "run")), sinks=[sink])
    sink.close()
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(sink.run_id)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "tiny"
    series = {
        key: [(metric.step, metric.value) for metric in client.get_metric_history(sink.run_id, key)]
        for key in run.data.metrics
    }
    _check_steps(series, rel=1e-9)
    _check_ledger(dict(run.data.metrics), tmp_path / "run", rel=1e-9)


def _wandb_records(path: Path) -> list[Any]:
    """The records of a W&B transaction log: a 7-byte header, then leveldb log blocks of 32 KiB
    whose chunks are crc32c (4 bytes), length (2), type (1: full, 2: first, 3: middle, 4: last)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, position = [], b"", 7
    while position + 7 <= len(data):
        room = 32768 - position % 32768
        if room < 7:  # a block's tail too short for a header is padding
            position += room
            continue
        _, length, kind = struct.unpack("<IHB", data[position : position + 7])
        payload = data[position + 7 : position + 7 + length]
        if len(payload) < length:  # W&B's service is still writing this chunk: read it on the next poll
            break
        position += 7 + length
        pending += payload
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
        elif kind == 0:
            break
    return records


@pytest.mark.slow
def test_wandb_offline_run_reads_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_SILENT", "true")
    sink = WandbSink(project="tests", directory=tmp_path, name="tiny")
    _train(tmp_path / "run", [sink])
    publish_ledger(build_ledger(run=read_run(tmp_path / "run")), sinks=[sink])
    sink.close()
    (log,) = sink.run_dir.glob("run-*.wandb")
    records = _wandb_records(log)
    deadline = time.monotonic() + 60
    # W&B's service process writes the log after finish() returns; its last record is the exit
    while not any(record.WhichOneof("record_type") == "exit" for record in records):
        assert time.monotonic() < deadline, "the W&B run never wrote its exit record"
        time.sleep(0.2)
        records = _wandb_records(log)
    series: dict[str, list[tuple[int, float]]] = {}
    for record in records:
        if record.WhichOneof("record_type") != "history":
            continue
        items = {
            item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item
        }
        for key, value in items.items():
            if key.startswith("lightspeed/") and key != "lightspeed/step":
                series.setdefault(key, []).append((int(items["lightspeed/step"]), float(value)))
    _check_steps(series, rel=1e-9)
    _check_ledger({key: values[-1][1] for key, values in series.items()}, tmp_path / "run", rel=1e-9)


class _Collect(MetricSink):
    """An in-memory sink: what a sink receives."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, dict[str, float]]] = []

    def log(self, *, step: int, values: Any, wall_time_s: float | None = None) -> None:
        self.logged.append((step, dict(values)))

    def flush(self) -> None:
        return

    def close(self) -> None:
        return


class _Broken(_Collect):
    def log(self, *, step: int, values: Any, wall_time_s: float | None = None) -> None:
        raise OSError("dashboard disk full")


def test_a_failing_sink_never_stops_the_training_or_its_log(tmp_path: Path) -> None:
    healthy = _Collect()
    tracker = _train(tmp_path / "run", [_Broken(), healthy])
    assert tracker.sink_error is not None
    assert "dashboard disk full" in tracker.sink_error
    assert [step for step, _ in healthy.logged] == [0, 1, 2, 3]
    assert build_ledger(run=read_run(tmp_path / "run")).steps.count == 4


def test_publish_run_replays_a_finished_run(tmp_path: Path) -> None:
    live = _Collect()
    _train(tmp_path / "run", [live])
    run = read_run(tmp_path / "run")
    replay = _Collect()
    assert publish_run(run, build_ledger(run=run), sinks=[replay]) == len(TOKENS)
    steps, ledger = replay.logged[:-1], replay.logged[-1][1]
    for (step, replayed), (live_step, logged) in zip(steps, live.logged, strict=True):
        assert step == live_step
        # the log keeps nanosecond stamps: the replay equals what the tracker fed live
        assert replayed["step_time_s"] == pytest.approx(logged["step_time_s"], rel=1e-9)
        assert replayed["mfu"] == pytest.approx(logged["mfu"], rel=1e-9)
        assert replayed["badput/data_stall_s"] == pytest.approx(logged["badput/data_stall_s"], rel=1e-6)
    assert "ledger/goodput_fraction" in ledger


def test_missing_extras_name_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for module, make, extra in (
        ("tensorboard", lambda: TensorBoardSink(tmp_path), "tensorboard"),
        ("mlflow", lambda: MlflowSink(tracking_uri="file:///nowhere"), "mlflow"),
        ("wandb", lambda: WandbSink(directory=tmp_path), "wandb"),
    ):
        with monkeypatch.context() as patch:
            for name in [name for name in sys.modules if name == module or name.startswith(f"{module}.")]:
                patch.delitem(sys.modules, name)
            patch.setitem(sys.modules, module, None)
            with pytest.raises(MissingExtraError, match=rf"lightspeed\[{extra}\]"):
                make()


def test_mlflow_folder_uri_needs_no_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Naming a folder asks for MLflow's folder store: it opens without MLFLOW_ALLOW_FILE_STORE
    (MLflow 3 refuses it otherwise), and the variable is not left set afterwards."""
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for uri in ((tmp_path / "a").as_uri(), str(tmp_path / "b")):
        sink = MlflowSink(tracking_uri=uri, experiment="tests")
        sink.log(step=3, values={"step_time_s": 0.25})
        sink.close()
        assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ
        with monkeypatch.context() as patch:  # the test's own reader opts in
            patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
            history = MlflowClient(tracking_uri=uri).get_metric_history(sink.run_id, "lightspeed/step_time_s")
        assert [(metric.step, metric.value) for metric in history] == [(3, 0.25)]


def test_mlflow_folder_store_refused_by_the_user_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "false")
    with pytest.raises(SinkError, match=r"MLFLOW_ALLOW_FILE_STORE=false.*sqlite:///") as caught:
        MlflowSink(tracking_uri=(tmp_path / "runs").as_uri())
    assert "\n" not in str(caught.value)


def test_mlflow_database_uri_without_sqlalchemy_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """mlflow-skinny's SQL store needs SQLAlchemy and Alembic; without them MLflow only says the
    URI is unsupported, so the sink names the extra that brings them."""
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    with pytest.raises(MissingExtraError, match=r"sqlalchemy.*lightspeed\[mlflow\]"):
        MlflowSink(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.slow
@pytest.mark.filterwarnings(
    "ignore:The ``noload`` loader strategy is deprecated"
)  # MLflow's, on SQLAlchemy 2.1
def test_mlflow_sqlite_store_reads_back(tmp_path: Path) -> None:
    """The mlflow extra logs to a database too (MLflow creates its tables on first use: slow)."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sink = MlflowSink(tracking_uri=uri, experiment="tests")
    sink.log(step=1, values={"tokens_per_s": 4096.0})
    sink.close()
    history = MlflowClient(tracking_uri=uri).get_metric_history(sink.run_id, "lightspeed/tokens_per_s")
    assert [(metric.step, metric.value) for metric in history] == [(1, 4096.0)]


def test_a_broken_extra_is_named_not_leaked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An extra that is installed but fails to import (a protobuf built for another version is the
    usual case) gives the extra to reinstall, not the library's TypeError."""
    package = tmp_path / "wandb"
    package.mkdir()
    (package / "__init__.py").write_text('raise TypeError("Descriptors cannot be created directly.")\n')
    for name in [name for name in sys.modules if name == "wandb" or name.startswith("wandb.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        MissingExtraError, match=r"installed but cannot be imported \(Descriptors.*lightspeed\[wandb\]"
    ):
        WandbSink(directory=tmp_path)
