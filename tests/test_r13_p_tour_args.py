"""The tour hands the tiny-GPT example paths that start with '-' (``tour --out=-1``) as values,
never as options (round 13, helper P)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from lightspeed.tour.steps import EXAMPLE, example_command


def _example_parser() -> object:
    spec = importlib.util.spec_from_file_location("r13_p_train_tiny_gpt", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_out_folder_starting_with_a_dash_reaches_the_example_as_paths() -> None:
    run_dir = Path("-1") / "tiny-gpt" / "run"  # the tour's folders under --out=-1
    trace = Path("-1") / "tiny-gpt" / "trace.json"
    command = example_command(run_dir=run_dir, trace=trace, quick=True)
    assert command[:2] == [sys.executable, str(EXAMPLE)]
    args = _example_parser().parse_args(command[2:])  # type: ignore[attr-defined]
    assert (args.run_dir, args.profile_trace, args.quick, args.json) == (run_dir, trace, True, True)
