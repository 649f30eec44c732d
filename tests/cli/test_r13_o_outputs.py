"""Round 13, helper O: output paths a user names (a FIFO, a trailing separator, an empty or blank
value, a missing folder), list options of whole values, the results store's location, and the
environment variables that name folders or switch caches.

Each test fails on the code before the fix (see the report of fix helper O): a FIFO with a reader
already open (so that the old code wrote into it instead of refusing; with no reader it blocked in
``open()`` forever), files written where a folder was named, values read silently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from expect import one_line_error
from lightspeed.cli.options import DistinctList, Integer
from lightspeed.cli.text_options import InputFile, OutputPath
from lightspeed.errors import UserInputError

PLAN = ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "1")
# a lightspeed expert load: 2 layers of 8 experts (the numbers do not matter here)
LOAD = {
    "format": "lightspeed-expert-load",
    "schema_version": 1,
    "num_steps": 1,
    "layers": [
        {"name": "layer0", "counts": [90, 132, 40, 61, 104, 165, 39, 4]},
        {"name": "layer1", "counts": [20, 107, 104, 64, 19, 197, 187, 157]},
    ],
}


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO with a reader open without blocking: writing into it would succeed (and the old code
    did, exit 0); a writer that waits for a reader would not hang the test."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield path
    finally:
        os.close(reader)


@pytest.fixture
def load_file(tmp_path: Path) -> Path:
    path = tmp_path / "load.json"
    path.write_text(json.dumps(LOAD), encoding="utf-8")
    return path


# --- 1. a FIFO named as an output is refused, never opened ---------------------------------------
def test_save_config_to_a_fifo_is_refused(run_cli, fifo: Path) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*PLAN, "--save-config", str(fifo)), "is a FIFO (named pipe)", "--save-config")


def test_results_export_to_a_fifo_is_refused(run_cli, fifo: Path) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("results", "export", "--json", "--output", str(fifo)), "is a FIFO (named pipe)")


def test_a_fifo_made_after_the_check_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer opens without blocking: a FIFO put in place after the check (no reader: the
    open fails with ENXIO at once) is one line, not a wait."""
    from lightspeed import files

    path = tmp_path / "late"
    os.mkfifo(path)
    monkeypatch.setattr(files, "check_output", lambda *_, **__: None)
    with pytest.raises(UserInputError, match="is a FIFO"):
        files.write_output_text(path, "x\n", what="plan file")


def test_write_output_text_writes_and_refuses_a_device(tmp_path: Path) -> None:
    from lightspeed.files import write_output_text

    target = tmp_path / "plan.toml"
    write_output_text(target, "x = 1\n", what="plan file")
    assert target.read_text(encoding="utf-8") == "x = 1\n"
    with pytest.raises(UserInputError, match="is a character device, not a file to write the plan file"):
        write_output_text(Path("/dev/null"), "x", what="plan file")


# --- 3. moe's output options are the house types -------------------------------------------------
@pytest.mark.parametrize("value", ["", " "])
def test_moe_stats_plot_empty_or_blank_is_refused(
    run_cli, load_file: Path, tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    one_line_error(
        run_cli("moe", "stats", str(load_file), "--plot", value), "names nothing to write", "--plot"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["load.json"]  # no ./expert-load.png


@pytest.mark.parametrize(("value", "said"), [("", "an empty value"), (" ", "a blank value")])
def test_moe_synth_out_empty_or_blank_is_refused(
    run_cli, tmp_path: Path, value: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run_cli("moe", "synth", "--layers", "2", "--experts", "8", "--out", value)
    one_line_error(result, said, "names nothing to write", "--out")
    assert list(tmp_path.iterdir()) == []  # no file named ' '


def test_moe_synth_out_in_a_missing_folder_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "missing" / "load.json"
    result = run_cli("moe", "synth", "--layers", "2", "--experts", "8", "--out", str(target))
    one_line_error(result, f"no folder {tmp_path / 'missing'}; create it first")


# --- 4. moe stats --replicas: whole values, each once ----------------------------------------------
@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("8,", "value 2 is empty"),
        ("8,,16", "value 2 is empty"),
        (",8", "value 1 is empty"),
        ("8,8", "8 physical experts given twice: give each value once"),
        ("8,16,08", "8 physical experts given twice: give each value once"),
    ],
)
def test_moe_stats_replicas_refuses_empty_and_repeated_values(
    run_cli, load_file: Path, value: str, said: str
) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("moe", "stats", str(load_file), f"--replicas={value}"), "--replicas", said)


def test_moe_stats_replicas_list_still_reads(run_cli, load_file: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("moe", "stats", str(load_file), "--replicas", "8, 16", "--json")
    assert result.code == 0, result.err
    assert [row["num_replicas"] for row in json.loads(result.out)["replicas"]] == [8, 16]


def test_distinct_list_type() -> None:
    kind = DistinctList(Integer(minimum=1, maximum=64, unit="GPUs"), example="8,16")
    assert kind.convert("8,16", None, None) == (8, 16)
    with pytest.raises(click.BadParameter, match="8 GPUs given twice"):
        kind.convert("8, 8", None, None)
    with pytest.raises(click.BadParameter, match="value 2 is empty"):
        kind.convert("8,", None, None)


# --- 5. an empty or blank store location names no store --------------------------------------------
@pytest.mark.parametrize(("value", "said"), [("", "--to is empty"), (" ", "--to is blank")])
def test_push_to_empty_or_blank_is_refused(
    run_cli, tmp_path: Path, value: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    one_line_error(run_cli("results", "push", "--to", value), said, "give a path or URL")


def test_push_from_blank_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("results", "push", "--to", str(tmp_path / "to.sqlite"), "--from", "  ")
    one_line_error(result, "--from is blank; give a path or URL")
    assert not (tmp_path / "to.sqlite").exists()


def test_blank_store_variable_is_refused(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_STORE", "  ")
    one_line_error(run_cli("results", "list"), "LIGHTSPEED_STORE is blank", "unset it")


def test_empty_store_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    from lightspeed.store import default_store_path
    from lightspeed.store.location import store_location

    monkeypatch.setenv("LIGHTSPEED_STORE", "")
    assert store_location().path == default_store_path()


# --- 6. a blank LIGHTSPEED_HOME or LIGHTSPEED_CACHE is unset, as an empty one is -------------------
@pytest.mark.parametrize("variable", ["LIGHTSPEED_HOME", "LIGHTSPEED_CACHE"])
def test_blank_folder_variable_counts_as_unset(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.paths import lightspeed_cache, lightspeed_home

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LIGHTSPEED_CACHE", raising=False)
    monkeypatch.setenv(variable, "")
    unset = (lightspeed_home(), lightspeed_cache())
    monkeypatch.setenv(variable, "  ")
    assert (lightspeed_home(), lightspeed_cache()) == unset
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_cli("hw", "list", "--json").code == 0
    assert list(work.iterdir()) == []  # no folder named by spaces


# --- 7. LIGHTSPEED_CATALOG_CACHE is on or off ------------------------------------------------------
@pytest.mark.parametrize("value", ["of", "maybe", "nan", "\N{ROCKET}"])
def test_catalog_cache_switch_neither_on_nor_off_is_refused(
    run_cli, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_CATALOG_CACHE", value)
    one_line_error(
        run_cli("hw", "list"), "LIGHTSPEED_CATALOG_CACHE=", "is neither on nor off", "catalog cache"
    )


@pytest.mark.parametrize("value", ["off", " OFF ", "0", "on", "yes", ""])
def test_catalog_cache_switch_words_are_read(run_cli, monkeypatch: pytest.MonkeyPatch, value: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_CATALOG_CACHE", value)
    assert run_cli("hw", "list", "--json").code == 0


# --- 8. --tensorboard at a file ----------------------------------------------------------------------
@pytest.mark.parametrize("target", ["file", "/dev/null"])
def test_tensorboard_at_a_file_is_said_as_wandb_says_it(tmp_path: Path, target: str) -> None:
    pytest.importorskip("tensorboard")
    from lightspeed.goodput.sinks import SinkError, TensorBoardSink

    path = tmp_path / "existing.txt" if target == "file" else Path(target)
    if target == "file":
        path.write_text("x", encoding="utf-8")
    with pytest.raises(SinkError) as caught:
        TensorBoardSink(path)
    assert str(caught.value) == (
        f"cannot write TensorBoard events under {path} (it is a file, not a folder); "
        "give --tensorboard a folder you can write"
    )


# --- 9. a trailing separator names a folder ----------------------------------------------------------
def test_save_config_ending_in_a_separator_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*PLAN, "--save-config", f"{tmp_path}/newdir/")
    one_line_error(result, "ends in a separator, so it names a folder", f"{tmp_path}/newdir/plan.toml")
    assert list(tmp_path.iterdir()) == []  # no file named newdir


def test_results_export_ending_in_a_separator_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("results", "export", "--output", f"{tmp_path}/newdir2/"), "names a folder")
    assert list(tmp_path.iterdir()) == []


def test_plot_ending_in_a_separator_needs_that_folder(run_cli, load_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = run_cli("moe", "stats", str(load_file), "--plot", f"{tmp_path}/plots/")
    one_line_error(missing, f"there is no folder {tmp_path}/plots; create it first")
    assert not (tmp_path / "plots.png").exists()
    (tmp_path / "plots").mkdir()
    made = run_cli("moe", "stats", str(load_file), "--plot", f"{tmp_path}/plots/", "--json")
    assert made.code == 0, made.err
    assert sorted(Path(path).parent.name for path in json.loads(made.out)["plots"]) == ["plots", "plots"]


def test_output_path_type_keeps_folders_it_makes() -> None:
    """``tensorboard/`` (a folder the command makes) and ``file_okay=False`` take a separator."""
    assert OutputPath(example="tensorboard/").convert("runs/tb/", None, None) == Path("runs/tb")
    assert OutputPath(file_okay=False, example="runs/").convert("runs/new/", None, None) == Path("runs/new")


# --- 10. a folder where a file is expected: the house wording ---------------------------------------
def test_save_config_at_a_folder_says_so_in_house_words(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    line = one_line_error(
        run_cli(*PLAN, "--save-config", str(tmp_path)), f"name a file, e.g. {tmp_path}/plan.toml"
    )
    assert "is a directory" not in line


def test_config_at_a_folder_says_so_in_house_words(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    line = one_line_error(
        run_cli(*PLAN, "--config", str(tmp_path)),
        "found a folder where a plan file",
        "fix: pass a file inside it",
    )
    assert "is a directory" not in line


def test_input_file_type_house_wording(tmp_path: Path) -> None:
    @click.command()
    @click.option("--trace", type=InputFile(what="request trace", example="trace.csv"))
    def command(trace: Path | None) -> None:
        click.echo(str(trace))

    runner = CliRunner()
    folder = runner.invoke(command, ["--trace", str(tmp_path)])
    assert folder.exit_code == 2
    assert "found a folder where a request trace was expected; fix: pass a file inside it" in folder.output
    assert "is a directory" not in folder.output
    blank = runner.invoke(command, ["--trace", " "])
    assert blank.exit_code == 2
    assert "names no request trace; give a path, e.g. --trace trace.csv" in blank.output
    missing = runner.invoke(command, ["--trace", str(tmp_path / "later.csv")])  # the reader says it
    assert missing.exit_code == 0, missing.output


def test_fifo_without_reader_fails_fast_in_check_output(tmp_path: Path) -> None:
    from lightspeed.files import check_output

    path = tmp_path / "pipe"
    os.mkfifo(path)
    with pytest.raises(UserInputError, match=f"{path} is a FIFO"):
        check_output(path, what="records")
