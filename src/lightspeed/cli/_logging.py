"""Logging for the command line: what lightspeed decided, on stderr, never on stdout.

The library logs with the standard :mod:`logging` module, one logger per module
under ``lightspeed``: INFO for the decisions a user would want to know (which stack
profile, which calibration, which catalog files override which records, which
caches were used), DEBUG for detail. The library itself adds only a
``NullHandler``; the CLI attaches one stderr handler, at the level ``-v`` (info),
``-vv`` (debug), ``--log-level`` or ``$LIGHTSPEED_LOG`` asks (default: warning).
Nothing on stdout changes, so ``--json`` output stays machine-readable.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_ENVIRONMENT_VARIABLE: Final = "LIGHTSPEED_LOG"


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # logging's rule: a failing handler reports itself, never raises
            self.handleError(record)


_HANDLER: Final = _StderrHandler()
_HANDLER.setFormatter(logging.Formatter("lightspeed: %(levelname)s: %(message)s"))


def configure_logging(*, verbose: int = 0, level: str | None = None) -> int:
    """Attach the stderr handler to the ``lightspeed`` logger at the level asked; return it.

    ``level`` (a name of :data:`LOG_LEVELS`) wins over ``verbose`` (1: info, 2 or more: debug).

    >>> configure_logging(verbose=1) == logging.INFO
    True
    >>> configure_logging(level="DEBUG") == logging.DEBUG
    True
    """
    if level is not None:
        chosen = getattr(logging, level.upper())
    else:
        chosen = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logger = logging.getLogger("lightspeed")
    logger.setLevel(chosen)
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    _HANDLER.setLevel(chosen)
    return int(chosen)


__all__ = ["LOG_ENVIRONMENT_VARIABLE", "LOG_LEVELS", "configure_logging"]
