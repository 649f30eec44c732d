"""``--acceptance`` in its list form under hostile values (issue 27, S3): one rate or one per draft
position, and every malformed list is one line on stderr, exit 2, naming what is wrong (an empty
item, a bad rate by its position, a count that is neither 1 nor ``--draft-tokens``).

The cases are the fuzz suite's (``tests/fuzz/test_cli_fuzz.py``) property, run by
:func:`fuzzing.check`: exit 0 with finite JSON, or exit 2 with exactly one line, never a traceback.
"""

from __future__ import annotations

import pytest

from fuzzing import check

INFER = (
    "plan",
    "infer",
    "--model",
    "llama-3-8b",
    "--system",
    "dgx-h100",
    "--gpus",
    "1",
    "--draft-tokens",
    "3",
)
SIMULATE = (
    "simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--isl", "1000", "--osl", "200",
    "--arrival-rate", "2", "--requests", "50", "--draft-tokens", "3",
)  # fmt: skip

# (value, words the one line must hold)
REFUSED = [
    ("0.8,", "draft position 2 is empty"),
    (",0.8", "draft position 1 is empty"),
    ("0.8,,0.6", "draft position 2 is empty"),
    ("nan,0.5", "draft position 1: nan is not a finite number"),
    ("0.5,nan", "draft position 2: nan is not a finite number"),
    ("1,0.5", "draft position 1: 1 is not below the maximum of 1"),
    ("0.5,0.4,1.5", "draft position 3: 1.5 is above the limit"),
    ("-0.1", "-0.1 is below the minimum"),
    ("0.8,0.6", "--acceptance gives 2 rates and --draft-tokens is 3"),
    ("0.8,0.6,0.4,0.2", "--acceptance gives 4 rates and --draft-tokens is 3"),
    ("1e400", "1e400 overflows a 64-bit float"),
    ("0.8,1e400,0.4", "draft position 2: 1e400 overflows"),
    ("", "give one value, or one per draft position"),
    (" , ", "give one value, or one per draft position"),
    ("0.8;0.6;0.4", "cannot read"),
    ("9" * 5000, "overflows a 64-bit float"),
]


@pytest.mark.parametrize(("value", "words"), REFUSED)
def test_s3_a_malformed_acceptance_list_is_one_line(value: str, words: str) -> None:
    outcome = check([*INFER, "--acceptance", value])
    assert outcome.code == 2, outcome.out[:200]
    assert words in outcome.err, outcome.err
    assert "9" * 41 not in outcome.err  # a long value is cut short


@pytest.mark.parametrize("value", ["0.8", "0.8,0.6,0.4", " 0.8 , 0.6 , 0.4 ", "0,0,0", "0.99,0.5,0"])
def test_s3_a_well_formed_acceptance_runs(value: str) -> None:
    outcome = check([*INFER, "--acceptance", value])
    assert outcome.code == 0, outcome.err


@pytest.mark.parametrize(("value", "words"), [("0.8,", "draft position 2 is empty"), ("0.8,0.6", "2 rates")])
def test_s3_simulate_refuses_the_same_lists(value: str, words: str) -> None:
    outcome = check([*SIMULATE, "--acceptance", value])
    assert outcome.code == 2
    assert words in outcome.err, outcome.err


def test_s3_a_search_over_depths_refuses_rates_per_position() -> None:
    outcome = check(
        ["search", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--max-tpot", "20ms",
         "--search-draft-tokens", "3", "--acceptance", "0.8,0.6,0.4"]
    )  # fmt: skip
    assert outcome.code == 2
    assert "--search-draft-tokens tries every depth at one --acceptance rate" in outcome.err
