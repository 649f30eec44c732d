"""Where lightspeed keeps its files (the results store, calibration profiles, caches), and the
switches that turn its caches off."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.files import excerpt

HOME_ENVIRONMENT_VARIABLE: Final = "LIGHTSPEED_HOME"


def configured_path(variable: str) -> str | None:
    """The path the environment ``variable`` gives; ``None`` when it is unset, empty or blank (only
    spaces), which name no folder (``Path(" ")`` would be a folder named by a space in the current
    folder). A relative path is relative to the current folder.

    >>> os.environ["LIGHTSPEED_EXAMPLE_PATH"] = "  "
    >>> configured_path("LIGHTSPEED_EXAMPLE_PATH") is None
    True
    >>> del os.environ["LIGHTSPEED_EXAMPLE_PATH"]
    """
    value = os.environ.get(variable)
    return value if value is not None and value.strip() else None


def lightspeed_home() -> Path:
    """The folder lightspeed writes to: ``$LIGHTSPEED_HOME`` (unset when empty or blank), else the
    user-data directory.

    Linux: ``$XDG_DATA_HOME/lightspeed`` (default ``~/.local/share/lightspeed``);
    macOS: ``~/Library/Application Support/lightspeed``; Windows:
    ``%LOCALAPPDATA%\\lightspeed``. The folder is not created here.

    >>> isinstance(lightspeed_home(), Path)
    True
    """
    configured = configured_path(HOME_ENVIRONMENT_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "lightspeed"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "lightspeed"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lightspeed"


PACKAGE_ROOT: Final = Path(__file__).resolve().parent


def package_data(package: str, *parts: str) -> Path:
    """A data file shipped inside ``lightspeed.<package>``, found without importing that package.

    ``package`` is dotted below ``lightspeed`` (``"sol"``, ``"catalog"``); ``parts`` the path
    inside it. A lower layer can read a higher package's data this way without loading its code.

    >>> package_data("sol", "data", "stacks.toml").name
    'stacks.toml'
    >>> package_data("catalog", "data").is_dir()
    True
    """
    return PACKAGE_ROOT.joinpath(*package.split("."), *parts)


CACHE_ENVIRONMENT_VARIABLE: Final = "LIGHTSPEED_CACHE"


def lightspeed_cache() -> Path:
    """The folder of files lightspeed can rebuild (parsed traces): ``$LIGHTSPEED_CACHE``, else
    ``$LIGHTSPEED_HOME/cache`` when ``LIGHTSPEED_HOME`` is set, else the user cache directory
    (either variable empty or blank counts as unset).

    Linux: ``$XDG_CACHE_HOME/lightspeed`` (default ``~/.cache/lightspeed``); macOS:
    ``~/Library/Caches/lightspeed``; Windows: ``%LOCALAPPDATA%\\lightspeed\\cache``. The
    folder is not created here; deleting it loses nothing that cannot be rebuilt.

    >>> lightspeed_cache().name in ("cache", "lightspeed") or "LIGHTSPEED_CACHE" in os.environ
    True
    """
    configured = configured_path(CACHE_ENVIRONMENT_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    if configured_path(HOME_ENVIRONMENT_VARIABLE):
        return lightspeed_home() / "cache"
    if sys.platform == "win32":
        return lightspeed_home() / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "lightspeed"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lightspeed"


SWITCH_OFF: Final = frozenset({"off", "0", "no", "false"})
SWITCH_ON: Final = frozenset({"", "on", "1", "yes", "true"})


def switch_on(variable: str, *, what: str) -> bool:
    """Whether the environment ``variable`` leaves ``what`` (``the trace cache``) on: unset, empty,
    ``on``, ``1``, ``yes``, ``true`` keep it, ``off``, ``0``, ``no``, ``false`` turn it off (any
    case, spaces around ignored); any other value is a :class:`UserInputError` naming the variable.

    >>> os.environ["LIGHTSPEED_EXAMPLE_SWITCH"] = " Off "
    >>> switch_on("LIGHTSPEED_EXAMPLE_SWITCH", what="the example cache")
    False
    >>> del os.environ["LIGHTSPEED_EXAMPLE_SWITCH"]
    """
    text = os.environ.get(variable, "").strip()
    if text.lower() in SWITCH_OFF:
        return False
    if text.lower() in SWITCH_ON:
        return True
    raise UserInputError(
        f"{variable}={excerpt(text)!r} is neither on nor off; give off (or 0, no, false) to turn {what} "
        "off, on (or 1, yes, true) or nothing to keep it"
    )
