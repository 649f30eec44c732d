"""Counters over time windows: time-weighted means, increases and peaks of sampled series.

NVML and psutil report what happened over the period before a sample
(utilisation over the last sample period, CPU share since the last tick), so
a sample's value is held *backwards* over ``(previous sample, this sample]``
(the first sample covers one interval before it). The integral of a series
is then piecewise linear in time and one ``np.interp`` gives it at any window
edge, so the mean over a window shorter than the interval (a 50 ms step
sampled every second) is the value of the sample that covers it, and means
over many windows add up to the mean over their union. A window's peak takes
the samples whose periods overlap it (a sample taken at a window's start
describes the time before it and is left out). Cumulative counters (the
energy counter) are interpolated linearly between samples; a counter that
goes down restarted from 0 (a driver reload, a GPU reset), so, as
Prometheus's ``increase()`` does, the reading after a drop counts in full as
the increase over that period (what the counter gained between the last
reading before the reset and the reset is lost). A window the samples do not
reach gives ``NaN``; a window they reach in part is averaged over the part
they cover (``covered_s``).

>>> import numpy as np
>>> series = Series(times_s=np.array([1.0, 2.0, 3.0]), values=np.array([0.2, 0.4, 0.8]), interval_s=1.0)
>>> series.mean(np.array([0.5, 1.0]), np.array([1.0, 3.0]))  # (0,1] holds 0.2; (1,3] holds 0.4 then 0.8
array([0.2, 0.6])
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

FloatArray: TypeAlias = NDArray[np.float64]


class Series:
    """One counter of one device: sample times (any common clock, seconds) and values (NaN = none)."""

    def __init__(self, *, times_s: FloatArray, values: FloatArray, interval_s: float) -> None:
        valid = ~np.isnan(np.asarray(values, dtype=np.float64))
        times = np.asarray(times_s, dtype=np.float64)[valid]
        kept = np.asarray(values, dtype=np.float64)[valid]
        starts = np.concatenate(([times[0] - interval_s], times[:-1])) if len(times) else times
        self.interval_s = interval_s
        self._times = times
        self._values = kept
        self._knots = np.concatenate((starts[:1], times)) if len(times) else times
        self._cumulative = (
            np.concatenate(([0.0], np.cumsum(kept * (times - starts)))) if len(times) else times
        )

    @property
    def empty(self) -> bool:
        """Whether the series has no value at all."""
        return len(self._times) == 0

    def integral(self, starts: FloatArray, ends: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(integral of the held values, seconds covered) over each window ``[starts[i], ends[i]]``."""
        knots = self._knots
        if len(knots) == 0:
            zeros = np.zeros(len(starts))
            return zeros, zeros
        low = np.clip(starts, knots[0], knots[-1])
        high = np.clip(ends, knots[0], knots[-1])
        high = np.maximum(high, low)
        cumulative = self._cumulative
        return np.interp(high, knots, cumulative) - np.interp(low, knots, cumulative), high - low

    def mean(self, starts: FloatArray, ends: FloatArray) -> FloatArray:
        """Time-weighted mean over each window (NaN where no sample covers it)."""
        area, covered = self.integral(starts, ends)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(covered > 0, area / np.where(covered > 0, covered, 1.0), np.nan)
        # A window too short to measure (zero length) takes the value of the sample covering it.
        instant = (np.asarray(ends) - np.asarray(starts)) <= 0
        if instant.any():
            means = np.where(instant, self.at(np.asarray(starts)), means)
        return means

    def at(self, times: FloatArray) -> FloatArray:
        """The held value at each time (NaN outside the sampled span)."""
        sample_times = self._times
        if len(sample_times) == 0:
            return np.full(len(times), np.nan)
        index = np.searchsorted(sample_times, times, side="left")
        inside = (times > self._knots[0]) & (index < len(sample_times))
        return np.where(inside, self._values[np.minimum(index, len(sample_times) - 1)], np.nan)

    def increase(self, starts: FloatArray, ends: FloatArray) -> FloatArray:
        """For a cumulative counter: its increase over each window (NaN where not covered); a drop
        is a restart from 0, so the reading after it counts in full (see :meth:`reset_times`)."""
        times = self._times
        if len(times) < 2:
            return np.full(len(starts), np.nan)
        steps = np.diff(self._values)
        steps = np.where(steps < 0, self._values[1:], steps)  # restarted from 0: it gained its new value
        values = np.concatenate(([0.0], np.cumsum(steps)))
        low = np.clip(starts, times[0], times[-1])
        high = np.maximum(np.clip(ends, times[0], times[-1]), low)
        rise = np.interp(high, times, values) - np.interp(low, times, values)
        return np.where(high > low, rise, np.where(np.asarray(ends) > np.asarray(starts), np.nan, 0.0))

    def counter_span(self, starts: FloatArray, ends: FloatArray) -> FloatArray:
        """For a cumulative counter: the seconds of each window between its first and last reading,
        the time :meth:`increase` measures (0 with fewer than two readings)."""
        times = self._times
        if len(times) < 2:
            return np.zeros(len(starts))
        low = np.clip(starts, times[0], times[-1])
        return np.maximum(np.clip(ends, times[0], times[-1]), low) - low

    def reset_times(self) -> FloatArray:
        """For a cumulative counter: the sample times at which it read less than before (it restarted)."""
        values = self._values
        return self._times[1:][np.diff(values) < 0] if len(values) > 1 else self._times[:0]

    def peak(self, starts: FloatArray, ends: FloatArray) -> FloatArray:
        """The largest sample whose period ``(previous sample, sample]`` overlaps each window
        ``(start, end]`` (NaN where none does); a window of no length takes the sample covering it."""
        times = self._times
        values = self._values
        peaks = np.full(len(starts), np.nan)
        if len(times) == 0:
            return peaks
        # the first sample taken after the window starts, the first taken at or after its end
        first = np.searchsorted(times, starts, side="right")
        last = np.searchsorted(times, ends, side="left")
        for index, (low, high) in enumerate(zip(first.tolist(), last.tolist(), strict=True)):
            high = min(high, len(times) - 1)
            if low <= high and ends[index] > self._knots[0]:
                peaks[index] = values[low : high + 1].max()
        instant = np.asarray(ends) <= np.asarray(starts)
        if instant.any():
            peaks = np.where(instant, self.at(np.asarray(starts)), peaks)
        return peaks

    def covered_span(self) -> tuple[float, float] | None:
        """The time span the samples describe, or ``None`` without samples."""
        knots = self._knots
        return (float(knots[0]), float(knots[-1])) if len(knots) else None
