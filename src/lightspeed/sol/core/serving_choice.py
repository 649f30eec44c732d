"""Which serving profile a deployment or a published row runs: the server it names, in its release
or year, on its vendor's accelerators; the vendor's default where it names none; a named server
with no profile said so (``[unprofiled_servers]``). The profiles themselves are
:mod:`lightspeed.sol.core.serving_stacks`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, UnsupportedError
from lightspeed.sol.core.serving_stacks import VENDORS, ServingStack, load_serving_stack, load_serving_stacks
from lightspeed.sol.core.sharding import stacks_file
from lightspeed.sol.core.stacks import (
    year_distance,
)


@functools.lru_cache(maxsize=4)
def _vendor_defaults(file: Path) -> Mapping[str, str]:
    fields = Fields(str(file), load_toml(file))
    table = fields.table("serving_default_by_vendor")
    assert table is not None
    defaults = {vendor: table.string(vendor).lower() for vendor in table.data}
    for vendor, framework in defaults.items():
        if vendor not in VENDORS:
            raise DataFileError(
                table.path, f"unknown vendor (known: {', '.join(VENDORS)})", field=vendor, value=framework
            )
    return defaults


@functools.lru_cache(maxsize=4)
def unprofiled_servers(path: Path | None = None) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(name, the words sources write it in) of each server with no serving profile
    (``[unprofiled_servers]`` in ``sol/data/stacks.toml``): a separator in a word (space, ``-``,
    ``_``) matches any of them or none, each word whole.

    >>> names = dict(unprofiled_servers())
    >>> bool(names["TGI"].search("text-generation-inference 2.0")), bool(names["TGI"].search("tgis"))
    (True, False)
    """
    file = path or stacks_file()
    table = Fields(str(file), load_toml(file)).table("unprofiled_servers")
    assert table is not None
    servers = []
    for name in table.data:
        words = [re.escape(word.lower()) for word in table.strings(name)]
        if not words:
            raise DataFileError(
                table.path, "lists no words a source writes the server in", field=name, value=[]
            )
        spelled = (re.sub(r"(?:\\ |\\-|_)", r"[\\s_-]?", word) for word in words)
        servers.append((name, re.compile(r"\b(?:" + "|".join(spelled) + r")\b")))
    return tuple(servers)


def default_serving_stack(
    vendor: str, year: int | None = None, *, unprofiled: str = ""
) -> tuple[ServingStack, str]:
    """(profile, why) a deployment on ``vendor``'s accelerators takes when it names no server with
    a profile: the current default where it runs there, else the server
    ``[serving_default_by_vendor]`` names for the vendor, in the profile nearest ``year`` (the newest
    without one). ``unprofiled`` says why no profile was named where a server was (``the row names
    LMDeploy, which has no serving profile``); the note says ``no server named`` without it.

    >>> default_serving_stack("NVIDIA")[0].name
    'trtllm-2025'
    >>> default_serving_stack("AMD", 2024)[0].name, default_serving_stack("AMD")[0].name
    ('vllm-2024', 'vllm-2026')
    """
    default = load_serving_stack()
    unnamed = unprofiled or "no server named"
    if vendor in default.vendors and (year is None or year >= default.from_year):
        return default, f"serving stack {default.name}: {unnamed}, the current default"
    if vendor in default.vendors and year is not None:
        older = [
            stack
            for stack in load_serving_stacks().values()
            if vendor in stack.vendors and set(stack.frameworks) & set(default.frameworks)
        ]
        chosen = _nearest_year(older, year)
        return chosen, f"serving stack {chosen.name}: {unnamed}; the current default's release of {year}"
    framework = _vendor_defaults(stacks_file()).get(vendor)
    stacks = [
        stack
        for stack in load_serving_stacks().values()
        if vendor in stack.vendors and (framework is None or framework in stack.frameworks)
    ]
    if framework is None or not stacks:
        raise UnsupportedError(f"no serving profile runs on {vendor} accelerators (sol/data/stacks.toml)")
    if year is None:
        chosen, when = max(stacks, key=lambda stack: (stack.to_year, stack.from_year, stack.name)), ""
    else:
        chosen, when = _nearest_year(stacks, year), f", its release of {year}"
    return chosen, (
        f"serving stack {chosen.name}: {unnamed}; {default.name} does not run on {vendor} "
        f"accelerators, and {framework} is the server {vendor} documents for them{when}"
    )


def serving_stack_on(serving: str | ServingStack | None, vendor: str) -> ServingStack:
    """The serving profile ``serving`` names (a profile, its name, or ``None``: the default for
    ``vendor``'s accelerators, :func:`default_serving_stack`), checked to run on them."""
    if serving is None:
        return default_serving_stack(vendor)[0]
    stack = serving if isinstance(serving, ServingStack) else load_serving_stack(serving)
    if vendor not in stack.vendors:
        usable = [name for name, other in load_serving_stacks().items() if vendor in other.vendors]
        raise UnsupportedError(
            f"serving stack {stack.name} ({stack.display_name}) does not run on {vendor} accelerators; "
            f"use one that does: {', '.join(usable) or 'none is known'}"
        )
    return stack


def serving_stack_for(
    text: str,
    year: int,
    version: tuple[int, int] | None = None,
    vendor: str | None = None,
    *,
    server: str | None = None,
    unprofiled: str = "",
) -> tuple[ServingStack, str]:
    """(profile, why) for a published inference row: the framework its text names, in its
    release ``version`` when the row gives one (a profile's ``versions``), else its year; when it
    names none, the default for the ``vendor`` of its accelerators (:func:`default_serving_stack`;
    the current default without a vendor), the note saying ``unprofiled`` (why a server the row
    names has no profile) where it is given. A named server that does not run on that vendor's
    accelerators is refused. Of several servers the text names (a page comparing two), ``server``
    (a framework name, the one the row's release is written beside) is the row's.

    >>> serving_stack_for("NVIDIA/TensorRT-LLM release/0.5.0 docs", 2023, (0, 5))[0].name
    'trtllm-2023'
    >>> serving_stack_for("TensorRT-LLM v0.7a", 2023, (0, 7))[0].name
    'trtllm-2023-xqa'
    >>> serving_stack_for("MLPerf Inference v5.0 closed, AMD", 2025, vendor="AMD")[0].name
    'vllm-2025'
    >>> serving_stack_for("TensorRT-LLM perf-overview", 2024)[0].name
    'trtllm-2025'
    >>> serving_stack_for("TensorRT-LLM v0.17", 2025, (0, 17))[0].name
    'trtllm-2024'
    """
    lowered = text.lower()
    stacks = list(load_serving_stacks().values())
    mentioned = [stack for stack in stacks if any(word in lowered for word in stack.frameworks)]
    mentioned, others = _the_rows_server(mentioned, lowered, server)
    stack, note = _named_stack(mentioned, year, version, vendor, unprofiled)
    return stack, f"{note} (named first; the text also names {', '.join(others)})" if others else note


def _the_rows_server(
    mentioned: list[ServingStack], lowered: str, server: str | None
) -> tuple[list[ServingStack], list[str]]:
    """(the profiles of the row's server, the other servers the text names): ``server`` when the
    text names it, else the server named first in the text."""
    if server is None or not any(server in stack.frameworks for stack in mentioned):
        if len({stack.frameworks[0] for stack in mentioned}) < 2:
            return mentioned, []
        server = min(mentioned, key=lambda stack: _first_mention(stack, lowered)).frameworks[0]
        others = sorted({stack.frameworks[0] for stack in mentioned} - {server})
    else:
        others = []
    return [stack for stack in mentioned if server in stack.frameworks], others


def _first_mention(stack: ServingStack, lowered: str) -> int:
    return min(lowered.find(word) for word in stack.frameworks if word in lowered)


def _named_stack(
    mentioned: list[ServingStack],
    year: int,
    version: tuple[int, int] | None,
    vendor: str | None,
    unprofiled: str = "",
) -> tuple[ServingStack, str]:
    """(profile, why) of the server the row names (``mentioned``: its profiles), in its release or
    year, on ``vendor``'s accelerators; the vendor's default when it names none (``unprofiled``:
    why a server it names has no profile, :func:`serving_stack_for`)."""
    named = [stack for stack in mentioned if vendor is None or vendor in stack.vendors]
    if mentioned and not named:
        raise UnsupportedError(
            f"the row names {mentioned[0].frameworks[0]}, which does not run on {vendor} accelerators"
        )
    if not named:
        if vendor is not None:
            return default_serving_stack(vendor, year, unprofiled=unprofiled)
        stack = load_serving_stack()
        unnamed = unprofiled or "the row names no server"
        return stack, f"serving stack {stack.name}: {unnamed}, the current default"
    if version is not None:
        released = [stack for stack in named if stack.versions and stack.covers_version(version)]
        if released:
            chosen = released[0]
            number = ".".join(map(str, version))
            return chosen, f"serving stack {chosen.name}: the row names {chosen.frameworks[0]} {number}"
    chosen = _nearest_year(named, year)
    return chosen, f"serving stack {chosen.name}: the row names {chosen.frameworks[0]}, {year}"


def _nearest_year(stacks: list[ServingStack], year: int) -> ServingStack:
    """The serving profile nearest ``year``; of profiles covering it alike, the newer (a release
    profile inside a later one's years, as TensorRT-LLM 0.8-0.21's, is picked by its release)."""
    return min(stacks, key=lambda stack: (year_distance(stack, year), -stack.to_year, stack.name))


__all__ = ["default_serving_stack", "serving_stack_for", "serving_stack_on", "unprofiled_servers"]
