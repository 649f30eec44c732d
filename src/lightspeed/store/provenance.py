"""Where a run was made from: the git commit checked out in the working directory.

Stored in the run's environment fingerprint (``git_commit``), so that
``lightspeed results list --where git_commit=<full id>`` finds the runs of a
commit. Outside a git checkout, without ``git``, or when ``git`` does not
answer within ``timeout_s``, there is no commit and the key is left out.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Final

GIT_TIMEOUT_S: Final = 2.0
_COMMIT: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names


def git_commit(folder: Path | None = None, *, timeout_s: float = GIT_TIMEOUT_S) -> str | None:
    """The full commit id checked out in ``folder`` (default: the working directory), or ``None``."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
            cwd=folder if folder is not None else Path.cwd(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):  # no git, no folder, too slow
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and _COMMIT.fullmatch(commit) else None


def provenance() -> dict[str, str]:
    """What the default fingerprint of a run adds to the environment: ``{"git_commit": ...}`` in a
    git checkout, else nothing."""
    commit = git_commit()
    return {"git_commit": commit} if commit else {}
