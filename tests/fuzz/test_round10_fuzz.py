"""The fuzz property (exit 0 with finite JSON, or exit 2 with one line, never a traceback) on the
inputs the tenth round of expert checks found broken: an option given two values, empty output
paths and names, names past the file system's limits, a length file of comma lines, a host name
IDNA cannot encode, an expert-load file named twice. Each case also names the words its one line
must hold, so a refusal for another reason (an option the command lacks) fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzzing import check

PLAN_TRAIN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64")
SERVE = ("simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--arrival-rate", "2", "--requests", "20")
SIMULATE = (*SERVE, "--isl", "500", "--osl", "50")
TWO_MODELS = ("plan", "train", "--model", "llama-3-8b", "--model", "llama-3-70b", "--system", "dgx-h100")
SERVE_BAD_HOST = ("monitor", "serve", "--port", "0", "--host", "a..b", "--duration", "1s")
REPLAY = Path(__file__).resolve().parents[1] / "fixtures" / "h200-train" / "monitor" / "capture-vm-597.jsonl"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((*PLAN_TRAIN, "--tp", "2", "--tp", "4"), "--tp given twice (2, then 4)"),
        (TWO_MODELS, "--model given twice"),
        ((*SIMULATE, "--plot", ""), "an empty value names nothing to write"),
        ((*SIMULATE, "--plot", " "), "a blank value (' ') names nothing to write"),
        (("memory", "--model", "llama-3-8b", "--training", "--system", ""), "--system"),
        (("model", "show", "x" * 300), "unknown model"),
        (("model", "show", "/tmp/" + "x" * 300 + "/config.json"), "name too long"),
        ((*SERVE_BAD_HOST, "--replay", str(REPLAY)), "cannot listen on --host a..b"),
    ],
)  # fmt: skip
def test_round10_inputs_are_one_line(args: tuple[str, ...], words: str) -> None:
    outcome = check(list(args))
    assert outcome.code == 2, outcome.out[:200]
    assert words in outcome.err, outcome.err


def test_round10_a_length_file_of_comma_lines_is_refused(tmp_path: Path) -> None:
    lengths = tmp_path / "p.txt"
    lengths.write_text("100,20\n200,30\n150,25\n", encoding="utf-8")
    outcome = check([*SERVE, "--osl", "50", "--isl-dist", f"file:{lengths}"])
    assert outcome.code == 2
    assert "several comma-separated values" in outcome.err, outcome.err


def test_round10_thousands_separators_still_read(tmp_path: Path) -> None:
    lengths = tmp_path / "p.txt"
    lengths.write_text("1,024\n2,048\n", encoding="utf-8")
    outcome = check([*SERVE, "--osl", "50", "--isl-dist", f"file:{lengths}"])
    assert outcome.code == 0, outcome.err


def test_round10_an_expert_load_named_twice_is_refused(tmp_path: Path) -> None:
    from lightspeed.moe import synthetic_load, write_expert_load

    synthetic = synthetic_load(num_layers=2, num_experts=8, skew=1.0, num_tokens=1000, top_k=2)
    load = write_expert_load(synthetic, tmp_path / "load.json")
    outcome = check(["moe", "stats", str(load), str(load)])
    assert outcome.code == 2
    assert "the same file is named twice" in outcome.err, outcome.err
