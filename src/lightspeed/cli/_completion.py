"""Shell completion of the catalog's and the model registry's names (click's ``shell_complete``).

Click completes commands and options by itself (``eval "$(_LIGHTSPEED_COMPLETE=bash_source
lightspeed)"``); these callbacks add the names a user would otherwise look up in ``hw list``
and ``model list``. They read the shipped data files plus ``LIGHTSPEED_CATALOG`` (completion
runs before the ``--catalog`` option is parsed), and never fail: a broken extra file completes
nothing rather than printing an error into the shell.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.shell_completion import CompletionItem

from lightspeed.errors import LightspeedError


def _extra_paths() -> tuple[Path, ...]:
    text = os.environ.get("LIGHTSPEED_CATALOG", "")
    return tuple(Path(part) for part in text.split(os.pathsep) if part.strip())


def _matching(names: list[str], incomplete: str) -> list[CompletionItem]:
    wanted = incomplete.lower()
    return [CompletionItem(name) for name in sorted(set(names)) if name.lower().startswith(wanted)]


def model_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Model names and their aliases."""
    from lightspeed.workload import load_models

    try:
        registry = load_models(extra_paths=_extra_paths())
    except LightspeedError:
        return []
    aliases = [alias for entry in registry.entries.values() for alias in entry.spec.aliases]
    return _matching([*registry.names(), *aliases], incomplete)


def hardware_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Systems, accelerators and named clusters of the catalog (what ``--system`` and ``--gpu`` take)."""
    from lightspeed.catalog import load_catalog

    try:
        catalog = load_catalog(extra_paths=_extra_paths())
    except LightspeedError:
        return []
    return _matching([*catalog.systems, *catalog.accelerators, *catalog.clusters], incomplete)


def any_hardware_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Every record name ``hw show`` and ``hw compare`` take: also CPUs and links."""
    from lightspeed.catalog import load_catalog

    try:
        catalog = load_catalog(extra_paths=_extra_paths())
    except LightspeedError:
        return []
    names = [*catalog.systems, *catalog.accelerators, *catalog.cpus, *catalog.links]
    return _matching(names, incomplete)
