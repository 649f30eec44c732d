"""Output into a pipe whose reader has gone (``| head -1``) ends quietly with status 141 (128 +
SIGPIPE, as ``yes | head -1`` leaves it): no traceback, and neither 0 (a gate whose verdict was
never read would pass) nor 1 (a regression found)."""

from __future__ import annotations

import subprocess
import sys

import pytest

ARGS = ("search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64",
        "--top", "1000")  # fmt: skip


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_a_closed_pipe_exits_quietly(extra: tuple[str, ...]) -> None:
    code = "import sys; from lightspeed.cli.main import main; sys.exit(main(sys.argv[1:]))"
    with subprocess.Popen(
        [sys.executable, "-c", code, *ARGS, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.readline()
        process.stdout.close()  # the reader goes, as head does after one line
        err = process.stderr.read().decode()
        code_returned = process.wait(timeout=60)
    # the JSON is written in one call: where it fits the pipe's buffer it is all out before the
    # reader goes, and nothing broke
    assert code_returned in ((0, 141) if extra else (141,)), err
    assert err == ""
