"""Round 14 fix S2: ``lightspeed simulate``'s options.

Defect 4: a token budget below the sequence cap is refused when both are given (vLLM refuses it),
and noted on stderr when the cap is the scheduler's own.
Defect 6: a length column the file lacks: one line naming the header and its columns.
Defect 7: an out-of-order trace says in the run's assumptions that it was sorted.
Defect 8: --plot's help says it runs the sweep it draws.
Defect 9: a request past the model's context is a warning on stderr, not only an assumption.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from expect import one_line_error
from lightspeed.cli.simulate import command as simulate_command

BASE = ("simulate", "--model", "llama-3-8b", "--system", "h100-sxm", "--precision", "fp8")


# --- defect 4 ----------------------------------------------------------------------------------


def test_a_budget_below_the_sequence_cap_given_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *BASE, "--isl", "1", "--osl", "50", "--requests", "20", "--concurrency", "8",
        "--max-num-batched-tokens", "1", "--max-num-seqs", "64",
    )  # fmt: skip
    one_line_error(
        result,
        "--max-num-batched-tokens 1 is below --max-num-seqs 64",
        "raise --max-num-batched-tokens to at least 64, or lower --max-num-seqs",
    )


def test_a_budget_equal_to_the_sequence_cap_runs(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *BASE, "--isl", "1", "--osl", "5", "--requests", "8", "--concurrency", "4",
        "--max-num-batched-tokens", "4", "--max-num-seqs", "4", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "max-num-batched-tokens" not in result.err


def test_a_budget_below_the_schedulers_own_cap_is_noted(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *BASE, "--isl", "1", "--osl", "20", "--requests", "16", "--concurrency", "8",
        "--max-num-batched-tokens", "1", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    notes = [line for line in result.err.splitlines() if "--max-num-batched-tokens 1 caps" in line]
    assert len(notes) == 1, result.err
    assert notes[0].startswith("lightspeed: note: --max-num-batched-tokens 1 caps the batch at 1 sequence,")
    assert "each running sequence takes a token of it a step" in notes[0]
    assert "give --max-num-seqs 1" in notes[0]
    # and the run shows it: one sequence running at a time
    assert json.loads(result.out)["max_running"] == 1


def test_under_speculation_each_sequence_takes_the_drafts_and_one(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 3 drafts + 1 = 4 tokens a running sequence; a budget of 10 admits while any is left:
    # 0, 4, 8 tokens used before the 1st, 2nd, 3rd (all below 10), 12 before a 4th: ceil(10 / 4) = 3
    result = run_cli(
        *BASE, "--isl", "1", "--osl", "20", "--requests", "16", "--concurrency", "8",
        "--max-num-batched-tokens", "10", "--draft-tokens", "3", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "--max-num-batched-tokens 10 caps the batch at 3 sequences," in result.err
    assert "4 tokens (the drafts + 1)" in result.err


def test_separate_prefill_steps_are_not_capped_by_the_budget(run_cli) -> None:  # type: ignore[no-untyped-def]
    # decodes run in steps of their own: the budget is the prompts', so nothing is noted
    result = run_cli(
        *BASE, "--isl", "1", "--osl", "20", "--requests", "16", "--concurrency", "8",
        "--max-num-batched-tokens", "1", "--prefill-steps", "separate", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "caps the batch" not in result.err


def test_a_disaggregated_decode_pool_is_not_capped_by_the_budget(run_cli) -> None:  # type: ignore[no-untyped-def]
    # decodes run on replicas of their own, which take prefilled requests whatever the budget
    result = run_cli(
        "simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--precision", "fp8", "--tp", "4",
        "--disaggregated", "1:1", "--isl", "1", "--osl", "20", "--requests", "16", "--concurrency", "8",
        "--max-num-batched-tokens", "1", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "caps the batch" not in result.err


# --- defect 6 ----------------------------------------------------------------------------------


def test_a_length_column_the_file_lacks_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lengths = tmp_path / "lens.csv"
    lengths.write_text("a,b\n650,66\n2431,244\n")
    result = run_cli(
        *BASE, "--arrival-rate", "5", "--isl-dist", f"file:{lengths}:zz", "--osl", "10", "--requests", "5"
    )
    one_line_error(result, f"{lengths}:1: no zz column (the header names a, b)", f"file:{lengths}:a")


# --- defect 7 ----------------------------------------------------------------------------------


def test_an_out_of_order_trace_says_it_was_sorted(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "unsorted.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n10,1000,10\n0,2000,20\n5,500,5\n")
    result = run_cli(*BASE, "--trace", str(trace), "--requests", "2", "--json")
    assert result.code == 0, result.err
    assumptions = json.loads(result.out)["assumptions"]
    sorted_notes = [line for line in assumptions if "rows sorted by arrival time" in line]
    assert sorted_notes == [
        f"trace {trace}: rows sorted by arrival time: 2 of 3 were out of order (earlier than a row above "
        "them), and --requests N replays the first N to arrive"
    ]


# --- defect 8 ----------------------------------------------------------------------------------


def test_plot_help_says_it_runs_the_sweep() -> None:
    plot = next(param for param in simulate_command.params if param.name == "plot_path")
    assert isinstance(plot, click.Option)
    assert plot.help is not None
    assert "--sweep" in plot.help
    assert "whether or not --sweep is given" in plot.help


# --- defect 9 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_a_request_past_the_context_is_a_warning_on_stderr(  # type: ignore[no-untyped-def]
    run_cli, json_flag: tuple[str, ...]
) -> None:
    # llama-3-8b's context is 8,192 tokens; 10,000 + 50 = 10,050 runs past it
    result = run_cli(
        *BASE, "--isl", "10000", "--osl", "50", "--arrival-rate", "1", "--requests", "4", *json_flag
    )
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if line.startswith("lightspeed: warning:")]
    assert warnings == [
        "lightspeed: warning: isl+osl 10,050 is above llama-3-8b's context of 8,192 tokens (max_seq_len): "
        "simulated as if llama-3-8b could run it (a rope-scaled variant would); keep --isl + --osl within "
        "8,192 tokens, or pass a model file with a longer max_seq_len (--model-config)"
    ]


def test_a_request_within_the_context_warns_nothing(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *BASE, "--isl", "8000", "--osl", "192", "--arrival-rate", "1", "--requests", "4", "--json"
    )
    assert result.code == 0, result.err
    assert "warning" not in result.err
