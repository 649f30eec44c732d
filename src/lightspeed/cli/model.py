"""``lightspeed model list`` and ``lightspeed model show NAME | --config PATH``."""

from __future__ import annotations

from pathlib import Path

import click

from lightspeed.cli._common import emit, get_context, json_option, print_json
from lightspeed.cli._completion import model_names
from lightspeed.cli.options import SEQ_LEN
from lightspeed.errors import UserInputError
from lightspeed.report import render_model_list, render_model_summary
from lightspeed.workload import (
    describe_model,
    entry_from_hf_config,
    list_models,
    load_model_file,
    resolve_model_entry,
)


@click.group("model")
def command() -> None:
    """Model architectures: parameters, FLOPs per token and bytes."""


@command.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """Every known model (shipped and from --catalog files) with its parameter totals."""
    rows = list_models(get_context().models())
    if as_json:
        print_json({"models": rows})
    else:
        render_model_list(rows)


@command.command("show")
@click.argument("name", required=False, shell_complete=model_names)
@click.option(
    "--config",
    "config_path",
    type=click.Path(),
    help="A Hugging Face config.json (or its folder) or a model TOML file instead of a NAME.",
)
@click.option(
    "--seq",
    "seq_len",
    type=SEQ_LEN,
    help=(
        "Sequence length (tokens) for FLOPs per token "
        "[default: the length the model was pre-trained at, before any RoPE scaling]."
    ),
)
@json_option
def show(name: str | None, config_path: str | None, seq_len: int | None, as_json: bool) -> None:
    """Shape, total and active parameters, FLOPs per token under each convention, weight and KV bytes.

    NAME is a known model (see 'lightspeed model list'), an alias, or a path to a
    config.json / model TOML file.
    """
    if (name is None) == (config_path is None):
        raise click.UsageError("give a model NAME or --config PATH (exactly one)")
    if config_path is not None:
        if not config_path.strip():  # Path("") would be the working folder
            raise UserInputError(
                "--config: the path is empty; give a config.json (or its folder) or a model TOML file, "
                "or a model NAME (see 'lightspeed model list')"
            )
        path = Path(config_path)
        entry = (
            load_model_file(path, get_context().models())
            if path.suffix == ".toml"
            else entry_from_hf_config(path)
        )
    else:
        assert name is not None
        entry = resolve_model_entry(name, get_context().models())
    emit(describe_model(entry, seq_len=seq_len), as_json, render_model_summary)
