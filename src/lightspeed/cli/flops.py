"""``lightspeed flops``: total training FLOPs for a token budget, formula shown with numbers."""

from __future__ import annotations

from typing import Any

import click

from lightspeed.cli._common import emit, get_context, json_option
from lightspeed.cli._completion import model_names
from lightspeed.cli.options import FLOP_TOTAL, SEQ_LEN, TOKENS
from lightspeed.errors import UserInputError
from lightspeed.report import render_training_flop
from lightspeed.workload import CONVENTIONS, resolve_model, training_flop


@click.command("flops")
@click.option(
    "--model",
    "model_name",
    required=True,
    help="Model name, alias, or path to a config.json/TOML.",
    shell_complete=model_names,
)
@click.option(
    "--tokens",
    "num_tokens",
    type=TOKENS,
    required=True,
    help="Training tokens (whole, at least 1), e.g. 29e12 or 29T.",
)
@click.option(
    "--seq",
    "seq_len",
    type=SEQ_LEN,
    help="Sequence length [default: the length the model was pre-trained at].",
)
@click.option(
    "--convention",
    type=click.Choice(list(CONVENTIONS)),
    help="How FLOPs are counted (docs/workload.md) [default: 6N].",
)
@click.option(
    "--causal",
    is_flag=True,
    help="Halve the attention term (causal mask) of 6N+attention or megatron (6N+causal-attention "
    "halves it already and counts N without the input embedding).",
)
@click.option("--recompute", is_flag=True, help="Add the forward pass of full activation recomputation.")
@click.option(
    "--claim", "claimed_flop", type=FLOP_TOTAL, help="A published FLOP total to check against, e.g. 1.2e29."
)
@json_option
def command(
    *,
    model_name: str,
    num_tokens: float,
    seq_len: int | None,
    convention: str | None,
    causal: bool,
    recompute: bool,
    claimed_flop: float | None,
    as_json: bool,
) -> None:
    """Total training FLOPs of a model for a number of tokens, with the formula and its numbers.

    For MoE models both the active-parameter figure and a dense model of the same
    total size are shown. --claim explains what a published total would imply.
    """
    options: dict[str, Any] = {
        "seq_len": seq_len,
        "convention": convention,
        "claimed_flop": claimed_flop,
    }
    result = training_flop(
        resolve_model(model_name, get_context().models()),
        num_tokens=num_tokens,
        causal=causal,
        recompute=recompute,
        **{key: value for key, value in options.items() if value is not None},
    )
    used = result.per_token.convention
    attention = CONVENTIONS[used].attention
    if causal and attention != "full":
        counted = "counts none" if attention == "none" else "counts it causal (halved) already"
        raise UserInputError(
            f"--causal halves the attention term, and the {used} convention {counted}, so it would "
            "change nothing; leave it out or pick --convention 6N+attention (or megatron)"
        )
    emit(result, as_json, render_training_flop)
