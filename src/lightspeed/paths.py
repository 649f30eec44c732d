"""Where lightspeed keeps its files (the results store, calibration profiles)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

HOME_ENVIRONMENT_VARIABLE: Final = "LIGHTSPEED_HOME"


def lightspeed_home() -> Path:
    """The folder lightspeed writes to: ``$LIGHTSPEED_HOME``, else the user-data directory.

    Linux: ``$XDG_DATA_HOME/lightspeed`` (default ``~/.local/share/lightspeed``);
    macOS: ``~/Library/Application Support/lightspeed``; Windows:
    ``%LOCALAPPDATA%\\lightspeed``. The folder is not created here.

    >>> isinstance(lightspeed_home(), Path)
    True
    """
    configured = os.environ.get(HOME_ENVIRONMENT_VARIABLE)
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
    ``$LIGHTSPEED_HOME/cache`` when ``LIGHTSPEED_HOME`` is set, else the user cache directory.

    Linux: ``$XDG_CACHE_HOME/lightspeed`` (default ``~/.cache/lightspeed``); macOS:
    ``~/Library/Caches/lightspeed``; Windows: ``%LOCALAPPDATA%\\lightspeed\\cache``. The
    folder is not created here; deleting it loses nothing that cannot be rebuilt.

    >>> lightspeed_cache().name in ("cache", "lightspeed") or "LIGHTSPEED_CACHE" in os.environ
    True
    """
    configured = os.environ.get(CACHE_ENVIRONMENT_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    if os.environ.get(HOME_ENVIRONMENT_VARIABLE):
        return lightspeed_home() / "cache"
    if sys.platform == "win32":
        return lightspeed_home() / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "lightspeed"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lightspeed"
