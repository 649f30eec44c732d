"""What the front page and the architecture page say about the code stays true: the tree of
docs/architecture.md has one line per package and top-level module, the base modules are listed
in full where they are listed, the module counts it quotes are the ones an import loads, and the
host-bound serving example of README.md and docs/inference.md quotes the engine's numbers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.test_layers import BASE

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "lightspeed"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
INFERENCE = (ROOT / "docs" / "inference.md").read_text(encoding="utf-8")
_ENTRY = re.compile(r"^((?:│   |    )*)[├└]── (\S+)")


def _tree_entries() -> set[str]:
    """The paths the ``src/lightspeed/`` tree of docs/architecture.md draws (``sol/serve/``)."""
    block = ARCHITECTURE.split("```\nsrc/lightspeed/\n", 1)[1].split("```", 1)[0]
    stack: list[str] = []
    entries = set()
    for line in block.splitlines():
        match = _ENTRY.match(line)
        if match is None:
            continue  # a description's second line
        depth = len(match.group(1)) // 4
        stack[depth:] = [match.group(2)]
        entries.add("".join(stack))
    return entries


def test_the_architecture_tree_draws_every_package_and_top_level_module() -> None:
    packages = {f"{path.parent.relative_to(SRC).as_posix()}/" for path in SRC.rglob("__init__.py")} - {"./"}
    modules = {path.name for path in SRC.glob("*.py")} - {"__main__.py"}
    drawn = _tree_entries()
    assert packages <= drawn, f"packages missing from docs/architecture.md: {sorted(packages - drawn)}"
    assert modules <= drawn, f"modules missing from docs/architecture.md: {sorted(modules - drawn)}"
    assert all((SRC / entry).exists() for entry in drawn), sorted(e for e in drawn if not (SRC / e).exists())


def _base_list(text: str, opening: str) -> set[str]:
    listed = text.split(opening, 1)[1].split(")", 1)[0]
    return set(re.findall(r"`(\w+)`", listed))


def test_the_base_modules_are_listed_in_full() -> None:
    assert _base_list(README, "base modules\n(") == BASE
    assert _base_list(ARCHITECTURE, "| base modules (") == BASE


@pytest.mark.parametrize("module", ["sol.core.roofline", "gate", "gate.compare"])
def test_the_quoted_module_counts_are_what_an_import_loads(module: str) -> None:
    quoted = re.search(rf"`{re.escape(module)}`: (\d+)", ARCHITECTURE)
    assert quoted is not None, module
    script = (
        f"import sys, lightspeed.{module}\n"
        "print(len([name for name in sys.modules if name.split('.')[0] == 'lightspeed']))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert int(loaded) == int(quoted.group(1))


def test_the_host_bound_example_quotes_the_engine(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "qwen3-30b-a3b", "--system", "b200", "--gpus", "1",
        "--precision", "nvfp4", "--isl", "128", "--osl", "128", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    estimate = json.loads(result.out)
    parts = estimate["iteration_breakdown_s"]
    gpu_ms = 1e3 * (sum(parts.values()) - parts["host"])  # every part but the host's is the GPU's
    # a steady step decodes B - (B - 1) / (OSL - 1 + 1 chunk) = 4,096 - 4,095 / 128 = 4,064 sequences
    decoding = 4096 - (4096 - 1) / 128
    host_ms = decoding * 29.4e-3  # TensorRT-LLM's 29.4 us per sequence per step
    issue_ms = 1152 * 4e-3  # 48 MoE layers x 24 kernels, each issued in 4 us
    assert estimate["batch_per_replica"] == 4096
    assert round(estimate["iteration_s"] * 1e3, 1) == round(host_ms + issue_ms, 1)  # the host's step
    assert round(gpu_ms, 1) == 31.5
    assert round(parts["host"] * 1e3, 1) == round(host_ms + issue_ms - gpu_ms, 1) == 92.6
    assert f"{round(host_ms, 1)} ms" == "119.5 ms"
    quoted = ("4,064", "29.4 us = 119.5 ms", "4.6 ms", "1,152 kernels", "31.5 ms GPU step", "124 ms")
    for text in (README, " ".join(INFERENCE.split())):
        assert [phrase for phrase in quoted if phrase not in text] == []
