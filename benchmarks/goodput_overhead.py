"""Cost of recording one goodput event on the training thread, against references in the same run.

    python benchmarks/goodput_overhead.py [--events 200000] [--repeats 5] [--out FILE.json]

Measures, per event, on the caller's thread (best of ``--repeats``):

- ``with tracker.step(tokens=...)``: what a training loop pays per step;
- ``tracker.record_phase(...)``: the low-level call framework callbacks use;
- ``tracker_step_writer_busy``: the same with the writer flushing every 50 ms
  during the loop, so that its encoding competes with the caller for the GIL
  (a tight Python loop; in training the caller mostly waits in C++ kernels);
- ``writer_encode_and_write``: the writer thread's own cost per event;
- references: a bare ``time.perf_counter_ns()`` call (the clock the tracker
  reads twice per event), a ``queue.SimpleQueue.put`` of a tuple (the hand-off
  to the writer thread), and a peer way of logging the same event: Python's
  ``logging`` with a ``FileHandler``, which formats and writes on the caller's
  thread.

The target is < 5 us per event. Writes ``benchmarks/results/goodput_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import queue
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lightspeed.goodput import Tracker, read_run

TARGET_S = 5e-6


def per_call_s(loop: Callable[[int], None], events: int, repeats: int) -> float:
    """Best-of-``repeats`` wall time of ``loop(events)`` divided by ``events``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        loop(events)
        best = min(best, time.perf_counter() - start)
    return best / events


def empty_loop(events: int) -> None:
    for _ in range(events):
        pass


def clock_loop(events: int) -> None:
    clock = time.perf_counter_ns
    for _ in range(events):
        clock()


def queue_loop(events: int) -> None:
    sink: queue.SimpleQueue[tuple[str, int, int]] = queue.SimpleQueue()
    for index in range(events):
        sink.put(("step", index, index))


def tracker_loops(
    run_dir: Path, flush_interval_s: float
) -> tuple[Tracker, Callable[[int], None], Callable[[int], None]]:
    tracker = Tracker(run_dir, flush_interval_s=flush_interval_s, rank=0, world_size=1)

    def steps(events: int) -> None:
        for _ in range(events):
            with tracker.step(tokens=4096):
                pass

    def phases(events: int) -> None:
        now = tracker.now_ns
        for _ in range(events):
            start = now()
            tracker.record_phase("data_wait", start_ns=start, end_ns=now())

    return tracker, steps, phases


def logging_loop(path: Path) -> Callable[[int], None]:
    logger = logging.getLogger("goodput-benchmark")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(created)f %(message)s"))
    logger.addHandler(handler)

    def loop(events: int) -> None:
        for index in range(events):
            start = time.perf_counter_ns()
            logger.info("step %d start %d end %d tokens %d", index, start, time.perf_counter_ns(), 4096)

    return loop


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/goodput_overhead.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        # Caller cost: the writer sleeps through the loop (interval longer than the run) and
        # encodes everything at close, as it would while a real step runs in C++ kernels.
        tracker, steps, phases = tracker_loops(Path(folder) / "run", flush_interval_s=3600.0)
        busy, busy_steps, _ = tracker_loops(Path(folder) / "busy", flush_interval_s=0.05)
        loop_s = per_call_s(empty_loop, args.events, args.repeats)
        logging_s = per_call_s(logging_loop(Path(folder) / "log.txt"), args.events, args.repeats)
        results = {
            "perf_counter_ns": per_call_s(clock_loop, args.events, args.repeats) - loop_s,
            "simplequeue_put": per_call_s(queue_loop, args.events, args.repeats) - loop_s,
            "tracker_step": per_call_s(steps, args.events, args.repeats) - loop_s,
            "tracker_record_phase": per_call_s(phases, args.events, args.repeats) - loop_s,
            "tracker_step_writer_busy": per_call_s(busy_steps, args.events, args.repeats) - loop_s,
            "logging_filehandler": logging_s - loop_s,
        }
        start = time.perf_counter()
        tracker.close()
        results["writer_encode_and_write"] = (time.perf_counter() - start) / (2 * args.events * args.repeats)
        busy.close()
        segments = read_run(Path(folder) / "run").ranks[0].segments
        recorded = sum(len(segment.steps) + len(segment.phases) for segment in segments)
    expected = 2 * args.events * args.repeats
    summary = {
        "events_per_loop": args.events,
        "repeats": args.repeats,
        "per_event_s": results,
        "tracker_step_vs_clock": results["tracker_step"] / results["perf_counter_ns"],
        "tracker_step_vs_queue_put": results["tracker_step"] / results["simplequeue_put"],
        "logging_vs_tracker_step": results["logging_filehandler"] / results["tracker_step"],
        "target_s": TARGET_S,
        "meets_target": results["tracker_step"] < TARGET_S,
        "events_recorded": recorded,
        "events_expected": expected,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for name, value in results.items():
        print(f"{name:24s} {value * 1e6:8.3f} us/event")
    print(
        f"tracker step = {summary['tracker_step_vs_clock']:.1f} x perf_counter_ns, "
        f"{summary['tracker_step_vs_queue_put']:.1f} x SimpleQueue.put; logging is "
        f"{summary['logging_vs_tracker_step']:.1f} x slower; target < {TARGET_S * 1e6:.0f} us: "
        f"{'met' if summary['meets_target'] else 'MISSED'}; {recorded}/{expected} events on disk"
    )


if __name__ == "__main__":
    main()
