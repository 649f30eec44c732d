"""The parsed catalog kept between commands: ``<lightspeed cache>/catalog/<key>.pickle``.

Parsing the ~80 TOML files of the shipped catalog costs about 50 ms in every command that
needs hardware; reading the parsed records back costs about 2 ms. The key is a digest of
lightspeed's version, this module's format version, the Python version and every file's
resolved path, size and modification time, so an edited, added or removed file (shipped or
``--catalog``) makes a new entry and an old one is never read. An entry that cannot be read
(truncated, corrupt, written by another version) is ignored and rebuilt; a cache folder that
cannot be written leaves the command to parse every time. ``$LIGHTSPEED_CATALOG_CACHE=off``
switches it off (a value that is neither on nor off is refused: :func:`~lightspeed.paths.switch_on`).
Only lightspeed writes these files, in the user's own cache folder, and an entry
is unpickled only where no one else could have written it: on POSIX the entry and its folder must
belong to this user and be writable by no group or other user (the folder is made ``0700``); a
shared or loosened cache folder is parsed from TOML every time, never trusted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

from lightspeed.paths import lightspeed_cache, switch_on

LOG = logging.getLogger(__name__)
# bumped when the parsed records change shape or meaning (3: System.spec_name,
# Accelerator.memory_reported_source, aliases each once; 4: per-device ceilings and the sparse/dense
# ratio refuse figures that older code accepted; 5: the scale-up domain, num_cpus, the power limit
# and range and the compute rows are checked, and Accelerator.tdp_includes_cpu), so older code's
# entries are never read
FORMAT_VERSION: Final = 5
SWITCH_VARIABLE: Final = "LIGHTSPEED_CATALOG_CACHE"
_UNREADABLE: Final = (
    OSError,
    EOFError,
    pickle.UnpicklingError,
    AttributeError,
    ImportError,
    TypeError,
    ValueError,
)

T = TypeVar("T")


def files_key(files: Sequence[Path]) -> str:
    """The digest of the files a catalog is parsed from (see the module docs)."""
    from lightspeed import __version__

    digest = hashlib.sha256(f"{__version__}|{FORMAT_VERSION}|{sys.version_info[:2]}".encode())
    for path in files:
        resolved = Path(path).resolve()
        stat = resolved.stat()
        digest.update(f"|{resolved}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:40]


def cached(files: Sequence[Path], kind: type[T], build: Callable[[], T]) -> T:
    """What ``build`` parses from ``files``, read from the cache when an entry for exactly these
    files exists, else built and stored (an instance of ``kind`` either way)."""
    if not switch_on(SWITCH_VARIABLE, what="the catalog cache"):
        return build()
    try:
        entry = lightspeed_cache() / "catalog" / f"{files_key(files)}.pickle"
    except OSError:  # a file vanished between listing and stat: parse and let that error speak
        return build()
    found = _read(entry, kind)
    if found is not None:
        return found
    value = build()
    _write(entry, value)
    return value


def _only_ours(entry: Path) -> bool:
    """Whether ``entry`` and its folder could only have been written by this user (always true
    where the platform has no owners: Windows)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return True
    for path in (entry, entry.parent):
        status = path.stat()
        if status.st_uid != getuid() or status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            LOG.info("catalog cache: %s may be written by another user; parsing instead", path)
            return False
    return True


def _read(entry: Path, kind: type[T]) -> T | None:
    try:
        if not _only_ours(entry):
            return None
        with entry.open("rb") as handle:
            value = pickle.load(handle)
    except FileNotFoundError:
        return None
    except _UNREADABLE as error:
        LOG.info("catalog cache: %s is unreadable (%s); parsing again", entry, type(error).__name__)
        return None
    if not isinstance(value, kind):
        LOG.info("catalog cache: %s holds no %s; parsing again", entry, kind.__name__)
        return None
    LOG.debug("catalog cache: hit %s", entry)
    return value


def _write(entry: Path, value: object) -> None:
    """Store ``value`` atomically (a temporary file renamed into place); failures only log."""
    temporary: Path | None = None
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=entry.parent, suffix=".tmp", delete=False) as handle:
            temporary = Path(handle.name)
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, entry)
    except (OSError, pickle.PicklingError) as error:
        LOG.debug("catalog cache: not written (%s)", error)
        if temporary is not None:
            temporary.unlink(missing_ok=True)


__all__ = ["SWITCH_VARIABLE", "cached", "files_key"]
