"""Shell completion (click's own: ``eval "$(_LIGHTSPEED_COMPLETE=bash_source lightspeed)"``) lists
the subcommands, their options and the catalog's names, run as a shell runs it: a subprocess of
the installed entry point's module."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _complete(*words: str, shell: str = "bash") -> list[str]:
    """What the shell is offered after ``lightspeed WORDS`` (the last word is being typed)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "_LIGHTSPEED_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": " ".join(("lightspeed", *words)),
        "COMP_CWORD": str(len(words)),
    }
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from lightspeed.cli.main import main; sys.exit(main())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line.startswith("plain,")]


def test_the_bash_script_is_click_s() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC), "_LIGHTSPEED_COMPLETE": "bash_source"}
    script = subprocess.run(
        [sys.executable, "-c", "import sys; from lightspeed.cli.main import main; sys.exit(main())"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "complete -o nosort -F _lightspeed_completion lightspeed" in script


def test_subcommands_and_options_complete() -> None:
    assert {"tour", "plan", "trace", "doctor", "report"} <= set(_complete(""))
    assert set(_complete("tr")) == {"trace"}
    assert {"summary", "kernels", "diff"} <= set(_complete("trace", ""))
    assert "--global-batch" in _complete("plan", "train", "--glo")


def test_catalog_and_model_names_complete() -> None:
    """The names a user otherwise looks up in 'hw list' and 'model list'."""
    assert "h100-sxm" in _complete("hw", "show", "h100")
    assert "dgx-h100" in _complete("plan", "train", "--system", "dgx-h")
    assert "llama-3-70b" in _complete("plan", "train", "--model", "llama-3-7")
    assert all(name.startswith("llama") for name in _complete("memory", "--model", "llama"))


def test_completing_a_subcommand_name_imports_no_subcommand() -> None:
    """Each Tab press starts Python: the names and their help come from the command table, not from
    importing every subcommand's module (that took ~3 s where '--help' takes 0.3 s)."""
    script = (
        "import sys\n"
        "from click.shell_completion import BashComplete\n"
        "from lightspeed.cli.main import SUBCOMMANDS, cli\n"
        "items = BashComplete(cli, {}, 'lightspeed', '_LIGHTSPEED_COMPLETE').get_completions([], 'mo')\n"
        "print(sorted((item.value, item.help) for item in items))\n"
        "print(sorted(module for module, _ in SUBCOMMANDS.values() if module in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    completed = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    names, imported = completed.stdout.splitlines()
    assert names == str(
        [
            ("model", "Model architectures: list, show."),
            ("moe", "MoE expert load: balance redundant experts, load statistics, synthetic loads."),
            ("monitor", "Counters beside a job, joined to its steps; Prometheus exporter."),
        ]
    )
    assert imported == "[]"
