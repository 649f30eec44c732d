"""Sinks: the tracker's and the ledger's figures in the dashboards a team already reads.

Three sinks, each an optional extra imported only when the sink is made:

- :class:`TensorBoardSink` writes TensorBoard event files (``tensorboard`` extra);
- :class:`MlflowSink` logs metrics to an MLflow run (``mlflow`` extra: mlflow-skinny);
- :class:`WandbSink` logs to a Weights & Biases run, offline by default (``wandb`` extra).

What they receive (tags under ``lightspeed/``, units in every name):

- per step, live from :class:`~lightspeed.goodput.Tracker` (``sinks=``) or
  replayed from a run's logs by :func:`publish_run`: ``step_time_s``,
  ``tokens_per_s``, ``samples_per_s``, ``mfu`` (when FLOP per token and the
  peak are known), and the badput timed so far, ``badput/<bucket>_s``;
- once per run, from the ledger (:func:`publish_ledger`): ``goodput_fraction``,
  ``ettr``, ``tokens_per_s``, ``mfu``, ``step_mfu``, ``total_s``,
  ``productive_s`` and every badput bucket ``ledger/badput/<bucket>_s``.

The tracker calls sinks from its background writer thread, never from the
training loop; a sink that fails stops receiving and the training goes on
(:attr:`Tracker.sink_error` says why).

>>> import tempfile
>>> from lightspeed.goodput import Tracker
>>> log_dir = tempfile.mkdtemp()
>>> with TensorBoardSink(log_dir) as board:  # doctest: +SKIP
...     with Tracker(tempfile.mkdtemp(), sinks=[board]) as tracker:
...         with tracker.step(tokens=4096):
...             pass
"""

from __future__ import annotations

import logging
import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from lightspeed.errors import LightspeedError, UserInputError, first_line
from lightspeed.extras import import_extra
from lightspeed.files import cannot_create_in
from lightspeed.goodput.events import BUCKETS, PHASES
from lightspeed.goodput.ledger import Ledger
from lightspeed.goodput.reader import RunLog

LOG = logging.getLogger(__name__)
PREFIX: Final = "lightspeed/"
STEP_METRIC: Final = "lightspeed/step"  # the x-axis of the W&B sink's metrics


class SinkError(LightspeedError):
    """A sink could not be opened or written (its library's error, in one line)."""


class MetricSink(ABC):
    """Where figures go: ``log(step=..., values={...})``; ``close()`` when done (or ``with``)."""

    def __enter__(self) -> MetricSink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    @abstractmethod
    def log(self, *, step: int, values: Mapping[str, float], wall_time_s: float | None = None) -> None:
        """Record ``values`` (finite floats, names without the ``lightspeed/`` prefix) at ``step``."""

    @abstractmethod
    def flush(self) -> None:
        """Make what was logged visible to readers."""

    @abstractmethod
    def close(self) -> None:
        """Flush and release the sink (idempotent)."""


def _finite(values: Mapping[str, float | None]) -> dict[str, float]:
    return {key: float(value) for key, value in values.items() if value is not None and math.isfinite(value)}


class TensorBoardSink(MetricSink):
    """Scalars in TensorBoard event files under ``log_dir`` (``tensorboard --logdir DIR`` shows them).

    Written with TensorBoard's own event writer, the one PyTorch's
    ``SummaryWriter`` uses; needs the ``tensorboard`` extra.
    """

    def __init__(self, log_dir: str | Path, *, flush_interval_s: float = 2.0) -> None:
        purpose = "the TensorBoard sink"
        event = import_extra("tensorboard.compat.proto.event_pb2", extra="tensorboard", purpose=purpose)
        summary = import_extra("tensorboard.compat.proto.summary_pb2", extra="tensorboard", purpose=purpose)
        writer = import_extra(
            "tensorboard.summary.writer.event_file_writer", extra="tensorboard", purpose=purpose
        )
        self.log_dir = Path(log_dir)
        self._event, self._summary = event.Event, summary.Summary
        _check_sink_folder(self.log_dir, writes="TensorBoard events under", flag="--tensorboard")
        try:
            self._writer = writer.EventFileWriter(str(self.log_dir), flush_secs=flush_interval_s)
        except OSError as error:
            raise SinkError(f"cannot write TensorBoard events under {self.log_dir} ({error})") from None
        self._closed = False

    def log(self, *, step: int, values: Mapping[str, float], wall_time_s: float | None = None) -> None:
        summary = self._summary(
            value=[self._summary.Value(tag=PREFIX + tag, simple_value=value) for tag, value in values.items()]
        )
        self._writer.add_event(
            self._event(wall_time=wall_time_s or time.time(), step=int(step), summary=summary)
        )

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()


class MlflowSink(MetricSink):
    """Metrics of one MLflow run (a new one, or ``run_id`` to continue one).

    ``tracking_uri`` is an MLflow tracking server (``http://...``), a
    database (``sqlite:///mlflow.db``: the ``mlflow`` extra brings the
    SQLAlchemy and Alembic that mlflow-skinny needs for it) or a local folder
    (``file:///...`` or a path: MLflow 3 keeps its folder store only behind
    ``MLFLOW_ALLOW_FILE_STORE``, which the sink sets while it opens the store,
    since naming a folder asks for one; set it to ``false`` to refuse);
    default MLflow's own (``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``).
    Needs the ``mlflow`` extra. :attr:`run_id` names the run.
    """

    def __init__(
        self,
        *,
        tracking_uri: str | None = None,
        experiment: str = "lightspeed",
        run_name: str | None = None,
        run_id: str | None = None,
    ) -> None:
        purpose = "the MLflow sink"
        entities = import_extra("mlflow.entities", extra="mlflow", purpose=purpose)
        exceptions = import_extra("mlflow.exceptions", extra="mlflow", purpose=purpose)
        tracking = import_extra("mlflow.tracking", extra="mlflow", purpose=purpose)
        self._metric, self._mlflow_error = entities.Metric, exceptions.MlflowException
        self._closed = False
        uri = str(tracking_uri or tracking.get_tracking_uri())
        kind = mlflow_store_kind(uri)
        if kind == "database":  # mlflow-skinny's SQL store needs these; MLflow's own error does not say so
            for module in ("sqlalchemy", "alembic"):
                import_extra(module, extra="mlflow", purpose=f"an MLflow database store ({uri})")
        try:
            with _folder_store_allowed(uri, allow=kind == "folder"):
                self._client = tracking.MlflowClient(tracking_uri=tracking_uri)
                if run_id is None:
                    run_id = self._new_run(experiment, run_name)
                else:
                    self._client.get_run(run_id)  # opens the store now, and checks the run exists
        except exceptions.MlflowException as error:
            raise SinkError(f"MLflow at {uri}: {first_line(error)}") from None
        self.run_id: str = str(run_id)

    def _new_run(self, experiment: str, run_name: str | None) -> str:
        found = self._client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else self._client.create_experiment(experiment)
        return str(self._client.create_run(experiment_id, run_name=run_name).info.run_id)

    def log(self, *, step: int, values: Mapping[str, float], wall_time_s: float | None = None) -> None:
        stamp_ms = int(1000 * (wall_time_s or time.time()))
        metrics = [self._metric(PREFIX + key, value, stamp_ms, int(step)) for key, value in values.items()]
        try:
            self._client.log_batch(self.run_id, metrics=metrics)
        except self._mlflow_error as error:
            raise SinkError(f"MLflow run {self.run_id}: {first_line(error)}") from None

    def flush(self) -> None:
        """Nothing to do: each ``log`` is one ``log_batch`` call, stored when it returns."""

    def close(self, status: str = "FINISHED") -> None:
        """End the run with ``status`` (``FINISHED``, ``FAILED``, ``KILLED``)."""
        if not self._closed:
            self._closed = True
            self._client.set_terminated(self.run_id, status=status)


class WandbSink(MetricSink):
    """Metrics of a Weights & Biases run, written offline under ``directory`` by default.

    ``mode="offline"`` needs no account or network (``wandb sync`` uploads the
    run later); ``"online"`` logs as ``wandb.init`` would. Needs the
    ``wandb`` extra. :attr:`run_dir` is the run's folder.
    """

    def __init__(
        self,
        *,
        project: str = "lightspeed",
        directory: str | Path | None = None,
        mode: str = "offline",
        name: str | None = None,
        run_id: str | None = None,
    ) -> None:
        if mode not in ("offline", "online"):
            raise UserInputError(f"W&B mode {mode!r} is not one of offline, online")
        wandb = import_extra("wandb", extra="wandb", purpose="the Weights & Biases sink")
        if directory is not None:
            _check_wandb_folder(Path(directory))
        settings = wandb.Settings(silent=True, console="off", disable_git=True, x_disable_stats=True)
        try:
            self._run = wandb.init(
                project=project,
                dir=None if directory is None else str(directory),
                mode="offline" if mode == "offline" else "online",
                name=name,
                id=run_id,
                resume="allow" if run_id else None,
                settings=settings,
                reinit="create_new",
            )
        except (wandb.Error, OSError) as error:
            raise SinkError(f"W&B run in {directory or 'the default folder'}: {first_line(error)}") from None
        # W&B's own step must only grow, and a restarted job repeats steps: the training step is
        # logged as lightspeed/step, the x-axis of every lightspeed/ metric (W&B's define_metric).
        self._run.define_metric(STEP_METRIC)
        self._run.define_metric(f"{PREFIX}*", step_metric=STEP_METRIC)
        self.run_dir = Path(self._run.dir).parent
        self._closed = False

    def log(self, *, step: int, values: Mapping[str, float], wall_time_s: float | None = None) -> None:
        self._run.log({STEP_METRIC: int(step), **{PREFIX + key: value for key, value in values.items()}})

    def flush(self) -> None:
        """Nothing to do: W&B's service process writes the run's log as it receives it."""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._run.finish()


def _check_wandb_folder(directory: Path) -> None:
    """Make ``directory`` (``mkdir -p``) and check a file can be created in it, before
    ``wandb.init``: W&B itself only warns and writes the run to a temporary folder instead.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as file:  # doctest: +ELLIPSIS
    ...     _check_wandb_folder(Path(file.name))
    Traceback (most recent call last):
    ...
    lightspeed.goodput.sinks.SinkError: cannot write a W&B run in ... (it is a file, not a folder); ...
    """
    _check_sink_folder(directory, writes="a W&B run in", flag="--wandb")


def _check_sink_folder(directory: Path, *, writes: str, flag: str) -> None:
    """Make a sink's ``directory`` (``mkdir -p``) and check a file can be created in it, so that a
    file, a device or an unwritable folder there is one line: *cannot write {writes} {directory}
    (reason); give {flag} a folder you can write*."""
    if directory.exists() and not directory.is_dir():
        reason: str | None = "it is a file, not a folder"
    else:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = error.strerror or str(error)
        else:
            reason = cannot_create_in(directory)
    if reason is not None:
        raise SinkError(f"cannot write {writes} {directory} ({reason}); give {flag} a folder you can write")


def mlflow_store_kind(uri: str) -> str:
    """What an MLflow tracking URI names: ``folder``, ``database`` or ``server``.

    >>> [mlflow_store_kind(uri) for uri in ("file:///runs", "mlruns", "sqlite:///m.db", "http://h:5000")]
    ['folder', 'folder', 'database', 'server']
    """
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else uri.split(":", 1)[0].lower()
    if uri in ("databricks", "databricks-uc", "uc"):
        return "server"
    if "://" not in uri and not uri.startswith("file:"):
        return "folder"  # a plain path (MLflow reads it as a folder)
    if scheme == "file":
        return "folder"
    if scheme.split("+", 1)[0] in _DATABASE_SCHEMES:
        return "database"
    return "server"


_DATABASE_SCHEMES: Final = ("sqlite", "postgresql", "mysql", "mssql")
_FILE_STORE_VARIABLE: Final = "MLFLOW_ALLOW_FILE_STORE"


@contextmanager
def _folder_store_allowed(uri: str, *, allow: bool) -> Iterator[None]:
    """MLflow 3 opens a folder store only with ``MLFLOW_ALLOW_FILE_STORE`` set: the user named a
    folder, so it is set while the store opens (MLflow keeps the opened store); an explicit
    ``false`` is respected and said in one line."""
    value = os.environ.get(_FILE_STORE_VARIABLE)
    if not allow or (value is not None and value.strip().lower() in ("true", "1", "yes")):
        yield
        return
    if value is not None:
        raise SinkError(
            f"MLflow refuses the folder store {uri} while {_FILE_STORE_VARIABLE}={value}; unset it to "
            "log to a folder, or log to a database instead (--mlflow sqlite:///mlflow.db)"
        )
    LOG.info(
        "MLflow's folder store is in maintenance mode; opening %s with %s=true", uri, _FILE_STORE_VARIABLE
    )
    os.environ[_FILE_STORE_VARIABLE] = "true"
    try:
        yield
    finally:
        os.environ.pop(_FILE_STORE_VARIABLE, None)


# -- the figures -----------------------------------------------------------------


def step_figures(
    *,
    step_s: float,
    tokens: float,
    samples: float,
    model_flop_per_token: float | None = None,
    peak_flop_per_s: float | None = None,
    num_accelerators: int = 1,
) -> dict[str, float]:
    """One step's figures: ``step_time_s``, ``tokens_per_s``, ``samples_per_s``, ``mfu``.

    ``mfu = tokens * model_flop_per_token / (step_s * num_accelerators * peak_flop_per_s)``
    (PaLM's definition over this step), only when both are known.

    >>> step_figures(step_s=0.5, tokens=4096, samples=8, model_flop_per_token=1e6, peak_flop_per_s=1e10)
    {'step_time_s': 0.5, 'tokens_per_s': 8192.0, 'samples_per_s': 16.0, 'mfu': 0.8192}
    """
    if not step_s > 0:
        return {}
    figures: dict[str, float | None] = {
        "step_time_s": step_s,
        "tokens_per_s": tokens / step_s if tokens else None,
        "samples_per_s": samples / step_s if samples else None,
    }
    if tokens and model_flop_per_token and peak_flop_per_s:
        figures["mfu"] = tokens * model_flop_per_token / (step_s * num_accelerators * peak_flop_per_s)
    return _finite(figures)


def ledger_figures(ledger: Ledger) -> dict[str, float]:
    """A run's headline figures and every badput bucket, under ``ledger/``.

    Seconds end in ``_s``; fractions (goodput, ETTR, MFU) are 0..1.
    """
    figures: dict[str, float | None] = {
        "ledger/goodput_fraction": ledger.goodput_fraction,
        "ledger/ettr": ledger.ettr,
        "ledger/total_s": ledger.total_s,
        "ledger/productive_s": ledger.productive_s,
        "ledger/tokens_per_s": ledger.tokens_per_s,
        "ledger/productive_tokens_per_s": ledger.productive_tokens_per_s,
        "ledger/mfu": ledger.mfu,
        "ledger/step_mfu": ledger.step_mfu,
        "ledger/hfu": ledger.hfu,
        "ledger/efficiency": ledger.efficiency,
        "ledger/median_step_s": ledger.steps.median_s,
    }
    for bucket in BUCKETS:
        figures[f"ledger/badput/{bucket}_s"] = ledger.badput_s.get(bucket, 0.0)
    return _finite(figures)


def publish_ledger(
    ledger: Ledger, *, sinks: Iterable[MetricSink], step: int | None = None
) -> dict[str, float]:
    """Log :func:`ledger_figures` to every sink at ``step`` (default: the run's step count).

    Returns the figures logged.
    """
    figures = ledger_figures(ledger)
    at = ledger.steps.count if step is None else step
    for sink in sinks:
        sink.log(step=at, values=figures)
        sink.flush()
    return figures


def publish_run(run: RunLog, ledger: Ledger, *, sinks: Sequence[MetricSink], rank: int | None = None) -> int:
    """Replay a run's steps (one rank's, default the lowest) and then its ledger into ``sinks``.

    Per step: :func:`step_figures` (MFU from the ledger's FLOP per token and
    peak) and the badput timed so far; then :func:`publish_ledger`. Returns
    the number of steps replayed.
    """
    if not run.ranks:
        raise UserInputError(f"{run.path} holds no rank log to replay")
    chosen = run.ranks[0] if rank is None else next((r for r in run.ranks if r.rank == rank), None)
    if chosen is None:
        known = ", ".join(str(r.rank) for r in run.ranks)
        raise UserInputError(f"no rank {rank} in {run.path}; ranks: {known}")
    utilization = ledger.utilization
    per_rank = run.tokens_scope == "rank"
    timeline = _timeline(chosen.segments)
    badput: dict[str, float] = {}
    count = 0
    for kind, item in timeline:
        if kind == "phase":
            bucket = PHASES.get(item.phase, "custom")
            badput[bucket] = badput.get(bucket, 0.0) + (item.end_s - item.start_s)
            continue
        figures = step_figures(
            step_s=item.end_s - item.start_s,
            tokens=item.tokens,
            samples=item.samples,
            model_flop_per_token=utilization.model_flop_per_token,
            peak_flop_per_s=utilization.peak_flop_per_s,
            num_accelerators=1 if per_rank else (utilization.num_accelerators or run.world_size),
        )
        figures.update({f"badput/{bucket}_s": seconds for bucket, seconds in badput.items()})
        wall = run.start_epoch_s + item.end_s
        for sink in sinks:
            sink.log(step=item.step, values=figures, wall_time_s=wall)
        count += 1
    publish_ledger(ledger, sinks=sinks)
    return count


def _timeline(segments: Sequence[Any]) -> list[tuple[str, Any]]:
    events: list[tuple[float, str, Any]] = []
    for segment in segments:
        events += [(step.end_s, "step", step) for step in segment.steps]
        events += [(phase.end_s, "phase", phase) for phase in segment.phases]
    return [(kind, item) for _, kind, item in sorted(events, key=lambda event: (event[0], event[1]))]
