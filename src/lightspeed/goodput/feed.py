"""The tracker's live feed into sinks, run on its background writer thread.

The writer thread hands every batch of events it wrote to :class:`SinkFeed`,
which turns steps into :func:`~lightspeed.goodput.sinks.step_figures` and
adds up the timed phases into ``badput/<bucket>_s`` so far. Nothing here runs
on the training thread. A sink that raises is dropped from the feed and the
reason kept in :attr:`SinkFeed.error`; the training and the event log go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lightspeed.goodput.events import PHASES
from lightspeed.goodput.sinks import MetricSink, step_figures

NS: Final = 1e-9


class SinkFeed:
    """Feed written events to ``sinks`` (callable with the writer's list of event tuples)."""

    def __init__(
        self,
        sinks: Sequence[MetricSink],
        *,
        anchor_ns: int,
        model_flop_per_token: float | None,
        peak_flop_per_s: float | None,
        num_accelerators: int,
    ) -> None:
        self.sinks = list(sinks)
        self.anchor_ns = anchor_ns
        self.model_flop_per_token = model_flop_per_token
        self.peak_flop_per_s = peak_flop_per_s
        self.num_accelerators = num_accelerators
        self.badput_s: dict[str, float] = {}
        self.error: str | None = None

    def __call__(self, items: Sequence[tuple[Any, ...]]) -> None:
        for item in items:
            if item[0] == "phase":
                _, phase, _, _, start_ns, end_ns = item
                bucket = PHASES.get(phase, "custom")
                self.badput_s[bucket] = self.badput_s.get(bucket, 0.0) + (end_ns - start_ns) * NS
            elif item[0] == "step":
                self._step(item)
        self.flush()

    def _step(self, item: tuple[Any, ...]) -> None:
        _, step, start_ns, end_ns, tokens, samples, _ = item
        figures = step_figures(
            step_s=(end_ns - start_ns) * NS,
            tokens=tokens,
            samples=samples,
            model_flop_per_token=self.model_flop_per_token,
            peak_flop_per_s=self.peak_flop_per_s,
            num_accelerators=self.num_accelerators,
        )
        figures.update({f"badput/{bucket}_s": seconds for bucket, seconds in self.badput_s.items()})
        wall_time_s = (self.anchor_ns + end_ns) * NS
        for sink in list(self.sinks):
            self._call(sink, lambda sink=sink: sink.log(step=step, values=figures, wall_time_s=wall_time_s))

    def flush(self) -> None:
        """Flush every sink still fed."""
        for sink in list(self.sinks):
            self._call(sink, sink.flush)

    def _call(self, sink: MetricSink, action: Any) -> None:
        try:
            action()
        except Exception as error:  # a dashboard's failure must not stop the training or its log
            self.sinks.remove(sink)
            self.error = f"{type(sink).__name__} stopped: {type(error).__name__}: {error}"
