"""Rank files on Ray: one task per file, on a local Ray or a running cluster.

:func:`lightspeed.trace.summarize_ranks` and its siblings take
``engine="ray"``: each rank file becomes one Ray task that loads it (writing
its Parquet to the trace cache of the node it runs on, so a second analysis
there skips parsing) and computes that rank's part of the analysis, the same
function the local process pool runs. Only these partial results come back
to the caller, which reduces them exactly as the serial path does, so the
numbers are the same to the last digit.

``address`` is a running cluster's (``ray://head:10001``, or ``auto`` on a
node of it); without one a local Ray is started for the call (and stopped
after it) unless one is already running in this process. Ray is the ``ray``
extra (``pip install 'lightspeed[ray]'``); every node of a cluster needs
lightspeed installed (docs/trace.md says how).
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from lightspeed.errors import UserInputError
from lightspeed.extras import import_extra

_LOG = logging.getLogger(__name__)
ENGINES: Final = ("local", "ray")  # where the ranks of a job are analysed (here, or Ray)
T = TypeVar("T")
R = TypeVar("R")
LOCAL_OBJECT_STORE_BYTES = 256 << 20  # per-rank parts are small; keep a local Ray's footprint small
CONNECT_TIMEOUT_S: Final = 5.0  # Ray itself retries an address that does not answer for minutes
# HOST:PORT: an IPv6 host in brackets (``[::1]:6379``), or a name or address with no space,
# slash, bracket or ``@`` (an IPv6 one unbracketed, ``::1:6379``, as before: the port is after the
# last colon); the port in ASCII digits
_HOST_PORT: Final = re.compile(
    r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+(?:%[\w.-]+)?)\]|(?P<host>[^\s/\[\]@]+)):(?P<port>[0-9]+)"
)
_FIX_ADDRESS: Final = (
    "start one with 'ray start --head' on its head node, or give a running cluster's address "
    "(HOST:6379 on a node of it, ray://HOST:10001 from outside it, auto on a node of it)"
)


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`MissingExtraError` naming the extra."""
    return import_extra("ray", extra="ray", purpose="--engine ray (rank traces on Ray)")


def ray_map(
    function: Callable[[T, Any], R], items: Sequence[T], *, shared: Any, address: str | None = None
) -> list[R]:
    """``[function(item, shared) for item in items]``, one Ray task per item, results in order.

    ``shared`` is put in Ray's object store once (the hardware catalog) rather than sent
    with every task.
    """
    ray = import_ray()
    started_here = False
    if not ray.is_initialized():
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,
        }
        if address is None:
            options["object_store_memory"] = LOCAL_OBJECT_STORE_BYTES
        else:
            check_reachable(address)
        try:
            ray.init(address=address, **options)
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as error:
            where = f"the Ray cluster at {address!r}" if address else "a local Ray"
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0].rstrip(".")
            raise UserInputError(
                f"cannot start or reach {where}: {first_line}; fix: {_FIX_ADDRESS}"
            ) from None
        started_here = True
        _LOG.info("Ray started (%s)", address or "local")
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(function)
        shared_ref = ray.put(shared)
        return list(ray.get([task.remote(item, shared_ref) for item in items]))
    finally:
        if started_here:
            ray.shutdown()


def parse_address(address: str, option: str = "--address") -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address, ``None`` for ``auto``/``local`` (Ray's to find); a
    :class:`UserInputError` naming ``option`` for one of another form. No network is touched.

    >>> parse_address("ray://10.0.0.1:10001")
    ('10.0.0.1', 10001)
    >>> parse_address("auto") is None
    True
    >>> parse_address("http://", option="--ray-address")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: --ray-address 'http://' is not HOST:PORT, ray://HOST:PORT or auto; ...
    """
    target = address.strip().removeprefix("ray://")
    if target in ("auto", "local"):
        return None
    match = _HOST_PORT.fullmatch(target)
    if match is None:
        raise UserInputError(
            f"{option} {address!r} is not HOST:PORT, ray://HOST:PORT or auto{_address_hint(target)}; "
            f"fix: {_FIX_ADDRESS}"
        )
    port_text = match["port"]
    if len(port_text) > 5 or not 0 < int(port_text) < 65536:
        raise UserInputError(f"{option} {address!r}: the port must be 1 to 65535; fix: {_FIX_ADDRESS}")
    return match["ipv6"] or match["host"], int(port_text)


def _address_hint(target: str) -> str:
    """What is wrong with an address that is not HOST:PORT, where it can be told: a space, or an
    IPv6 host's brackets (``[::1`` unclosed, ``[::1]`` with no port)."""
    if any(character.isspace() for character in target):
        return " (it holds a space)"
    if "[" in target or "]" in target:
        return " (an IPv6 host goes in closed brackets before the port: [::1]:6379)"
    return ""


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S, option: str = "--address") -> None:
    """Refuse at once a ``HOST:PORT`` (or ``ray://HOST:PORT``) where nothing answers within
    ``timeout_s``, rather than leave Ray retrying it for minutes; ``auto`` is Ray's to find.
    ``option`` names the flag the address came from in the messages.

    >>> check_reachable("auto")  # Ray finds the cluster of this node itself
    >>> check_reachable("head-node")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: --address 'head-node' is not HOST:PORT, ray://HOST:PORT or auto; ...
    """
    parsed = parse_address(address, option)
    if parsed is None:
        return
    host, port = parsed
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UserInputError(
            f"no Ray cluster answers at {address!r} ({reason}); fix: {_FIX_ADDRESS}"
        ) from None
