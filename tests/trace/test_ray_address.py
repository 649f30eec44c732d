"""A Ray cluster address that does not answer is one line at once, not minutes of Ray's retries.

Kept apart from test_ray.py: these need no Ray running in this process (test_ray.py's module
fixture keeps one up, and a connected process never looks at an address again).
"""

from __future__ import annotations

from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import UserInputError
from lightspeed.trace import summarize_ranks

ray = pytest.importorskip("ray")


@pytest.fixture(autouse=True)
def _no_ray_running() -> None:
    if ray.is_initialized():
        pytest.skip("a Ray is running in this process; it would be used whatever the address")


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1", "[::1]:1"])
def test_an_address_where_nothing_listens_is_refused_at_once(
    address: str, run_cli: Any, real_trace: Any
) -> None:
    result = run_cli(
        "trace", "summary", str(real_trace("trace_filter")), "--engine", "ray", "--address", address
    )
    one_line_error(result, f"no Ray cluster answers at {address!r}", "ray start --head")
    assert not ray.is_initialized()  # refused before Ray was asked to connect


@pytest.mark.parametrize("address", ["nonsense", "host:port", ":6379"])
def test_an_address_that_is_not_host_port_is_refused(address: str, real_trace: Any) -> None:
    with pytest.raises(UserInputError, match="is not HOST:PORT, ray://HOST:PORT or auto"):
        summarize_ranks(real_trace("trace_filter"), engine="ray", address=address)


@pytest.mark.parametrize("address", ["host:0", "ray://host:99999", "host:65536"])
def test_a_port_out_of_range_says_so(address: str, real_trace: Any) -> None:
    """TCP ports are 1 to 65535: the message says that, not that the address is malformed."""
    with pytest.raises(UserInputError, match="the port must be 1 to 65535"):
        summarize_ranks(real_trace("trace_filter"), engine="ray", address=address)


def test_ray_failing_to_connect_is_one_line_naming_its_reason(
    run_cli: Any, real_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Could not find any running Ray instance.\nmore detail")

    monkeypatch.setattr(ray, "init", refuse)
    result = run_cli(
        "trace", "summary", str(real_trace("trace_filter")), "--engine", "ray", "--address", "auto"
    )
    one_line_error(result, "the Ray cluster at 'auto'", "Could not find any running Ray instance;")
