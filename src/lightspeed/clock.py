"""One clock for every process of a host: epoch time as ``anchor_ns + time.perf_counter_ns()``.

The goodput tracker and the monitor's sampler stamp events with the monotonic clock (durations
survive NTP steps) plus an anchor, the wall clock minus the monotonic clock at start. Two
processes that each take their own anchor disagree when the wall clock steps between their
starts (an NTP step, a paused and resumed virtual machine: the wall clock jumps, the monotonic
clock does not): a job restarted after the step would sit minutes away from the samples taken
beside it. So ``monitor run`` hands its anchor to the command it runs (``LIGHTSPEED_CLOCK_ANCHOR``,
with this boot's id), and a tracker on the same boot of the same host takes it: both then read
the one system-wide monotonic clock through the same anchor. A value from another host or boot
(a launcher that copies the environment to other nodes) is ignored, since monotonic clocks of
different machines share no origin.

    >>> anchor = clock_anchor_ns({})
    >>> abs(anchor + time.perf_counter_ns() - time.time_ns()) < 10**9
    True
    >>> clock_anchor_ns({CLOCK_ANCHOR_ENV: anchor_env_value(123)}) == 123 or boot_id() is None
    True
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

_LOG = logging.getLogger(__name__)
CLOCK_ANCHOR_ENV: Final = "LIGHTSPEED_CLOCK_ANCHOR"
_BOOT_ID_FILE: Final = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str | None:
    """This boot's id (Linux), ``None`` where the system does not say."""
    try:
        text = _BOOT_ID_FILE.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def anchor_env_value(anchor_ns: int) -> str:
    """``LIGHTSPEED_CLOCK_ANCHOR``'s value for ``anchor_ns`` (empty where no boot id is known:
    without it a process cannot tell it shares this host's monotonic clock)."""
    boot = boot_id()
    return f"{boot}:{anchor_ns}" if boot else ""


def clock_anchor_ns(environ: Mapping[str, str] | None = None) -> int:
    """The anchor to stamp events with: the one ``monitor run`` handed down when it comes from this
    boot of this host, else the wall clock minus the monotonic clock now."""
    value = (os.environ if environ is None else environ).get(CLOCK_ANCHOR_ENV, "")
    own = time.time_ns() - time.perf_counter_ns()
    if not value:
        return own
    boot, _, number = value.rpartition(":")
    if boot != boot_id() or not number.lstrip("-").isdigit() or len(number) > 20:
        _LOG.info("%s ignored: it comes from another host or boot, or is malformed", CLOCK_ANCHOR_ENV)
        return own
    return int(number)


__all__ = ["CLOCK_ANCHOR_ENV", "anchor_env_value", "boot_id", "clock_anchor_ns"]
