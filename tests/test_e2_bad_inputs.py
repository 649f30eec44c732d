"""Bad inputs an adversarial sweep found: a length file's comma-separated line read with its digits
run together, a --host IDNA cannot encode, a --wandb folder that cannot be written, and an
expert-load file named twice."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.goodput.sinks import SinkError, _check_wandb_folder
from lightspeed.sol.serve import load_lengths

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "h200-train"
SIMULATE = ("simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "1", "--requests", "20")


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- 1, 2: length files --------------------------------------------------------------------------


def test_a_length_line_of_two_values_is_refused_not_run_together(tmp_path: Path) -> None:
    # the old reader dropped every comma: 100,20 / 200,30 / 150,25 became 10020, 20030, 15025
    path = _file(tmp_path, "p.txt", "100,20\n200,30\n150,25\n")
    with pytest.raises(DataFileError) as error:
        load_lengths(path)
    message = str(error.value)
    assert "p.txt:1: the line holds several comma-separated values" in message
    assert "'100,20'" in message
    assert "file:PATH:COLUMN" in message


@pytest.mark.parametrize("line", ["1024,128", "1,0245", "12,34", "1,024,5", ",1024", "1, 024"])
def test_a_comma_that_does_not_group_thousands_is_refused(tmp_path: Path, line: str) -> None:
    with pytest.raises(DataFileError, match="several comma-separated values"):
        load_lengths(_file(tmp_path, "lengths.txt", f"10\n{line}\n"))


def test_thousands_separators_still_read(tmp_path: Path) -> None:
    # by hand: 1,024 = 1 x 1000 + 24; 12,345,678 = 12 x 1,000,000 + 345 x 1000 + 678
    path = _file(tmp_path, "lengths.txt", "1,024\n12,345,678\n999\n")
    assert load_lengths(path).values == (1024, 12_345_678, 999)


def test_a_fraction_with_thousands_separators_is_not_a_whole_number(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"lengths\.txt:1: not a whole number; value '1,024\.5'"):
        load_lengths(_file(tmp_path, "lengths.txt", "1,024.5\n"))


def test_a_csv_with_a_header_is_read_by_its_column(tmp_path: Path) -> None:
    path = _file(tmp_path, "lengths.csv", "isl,osl\n100,20\n200,30\n150,25\n")
    assert load_lengths(path, column="isl").values == (100, 200, 150)
    assert load_lengths(path, column="osl").values == (20, 30, 25)


def test_a_bad_length_names_the_column_syntax_not_a_missing_option(tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as error:
        load_lengths(_file(tmp_path, "lengths.txt", "ten\n"))
    assert "--column" not in str(error.value)
    assert "file:PATH:COLUMN" in str(error.value)


def test_simulate_refuses_the_comma_separated_length_file(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _file(tmp_path, "p.txt", "100,20\n200,30\n150,25\n")
    result = run_cli(*SIMULATE, "--isl-dist", f"file:{path}", "--osl", "64")
    one_line_error(result, "p.txt:1", "several comma-separated values", "file:PATH:COLUMN")
    assert "15025" not in result.out


# -- 3: monitor serve --host ---------------------------------------------------------------------


@pytest.mark.parametrize("host", ["a..b", "a" * 64 + ".example"])
def test_a_host_idna_cannot_encode_is_the_hosts_fault(run_cli, host: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("prometheus_client")
    replay = FIXTURES / "monitor" / "capture-vm-597.jsonl"
    args = ("monitor", "serve", "--port", "0", "--host", host, "--duration", "1s", "--replay", str(replay))
    result = run_cli(*args)
    one_line_error(
        result, f"cannot listen on --host {host}", "not a valid host name", "label empty or too long"
    )


# -- 4: --wandb folder ---------------------------------------------------------------------------


def test_a_file_is_no_wandb_folder(tmp_path: Path) -> None:
    path = _file(tmp_path, "version", "x")
    with pytest.raises(
        SinkError, match=r"cannot write a W&B run in .*version \(it is a file, not a folder\)"
    ):
        _check_wandb_folder(path)
    assert path.read_text() == "x"


def test_a_folder_under_a_file_is_no_wandb_folder(tmp_path: Path) -> None:
    inside = _file(tmp_path, "some_file", "x") / "x"
    with pytest.raises(SinkError, match=r"some_file/x \(Not a directory\); give --wandb a folder"):
        _check_wandb_folder(inside)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_no_wandb_folder(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    try:
        with pytest.raises(SinkError, match="give --wandb a folder you can write"):
            _check_wandb_folder(folder / "runs")
    finally:
        folder.chmod(0o700)


def test_proc_is_no_wandb_folder_even_for_root() -> None:
    if not Path("/proc/version").is_file():
        pytest.skip("no /proc")
    with pytest.raises(SinkError, match="cannot write a W&B run in /proc/version"):
        _check_wandb_folder(Path("/proc/version"))
    with pytest.raises(SinkError, match="cannot write a W&B run in /proc"):
        _check_wandb_folder(Path("/proc"))


def test_a_good_wandb_folder_is_made_and_left_empty(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    _check_wandb_folder(folder)
    assert folder.is_dir()
    assert list(folder.iterdir()) == []  # the probe is gone


@pytest.fixture
def wandb_never_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """wandb.init fails the test if called; anything that falls back to a temporary folder lands
    in tmp_path, not /tmp."""
    wandb = pytest.importorskip("wandb")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("wandb.init was called for a folder that cannot be written")

    monkeypatch.setattr(wandb, "init", refuse)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    return temporary


def test_the_wandb_sink_checks_its_folder_before_wandb_starts(
    wandb_never_starts: Path, tmp_path: Path
) -> None:
    from lightspeed.goodput.sinks import WandbSink

    with pytest.raises(SinkError, match="it is a file, not a folder"):
        WandbSink(directory=_file(tmp_path, "version", "x"))
    assert list(wandb_never_starts.iterdir()) == []


def test_goodput_report_refuses_an_unwritable_wandb_folder(
    run_cli, wandb_never_starts: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    target = _file(tmp_path, "some_file", "x") / "x"
    result = run_cli(
        "goodput", "report", str(FIXTURES / "run"), "--system", "h200-sxm", "--wandb", str(target)
    )
    one_line_error(result, "some_file/x", "give --wandb a folder you can write")
    assert list(wandb_never_starts.iterdir()) == []


# -- 5: an expert-load file named twice ----------------------------------------------------------


@pytest.fixture
def load_file(tmp_path: Path) -> Path:
    return _file(tmp_path, "load.json", json.dumps([[90, 10, 40, 60], [20, 100, 30, 50]]))


def test_moe_stats_refuses_a_file_named_twice(run_cli, load_file: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("moe", "stats", str(load_file), str(load_file), "--json")
    one_line_error(result, f"{load_file}: the same file is named twice; fix: name each file once")


def test_moe_stats_refuses_the_same_file_under_another_name(run_cli, load_file: Path) -> None:  # type: ignore[no-untyped-def]
    link = load_file.parent / "link.json"
    link.symlink_to(load_file)
    result = run_cli("moe", "stats", str(load_file), str(load_file.parent / "." / "link.json"))
    one_line_error(result, "the same file is named twice")


def test_moe_balance_refuses_a_load_given_twice(run_cli, load_file: Path) -> None:  # type: ignore[no-untyped-def]
    args = (
        "moe",
        "balance",
        "--load",
        str(load_file),
        "--load",
        str(load_file),
        "--replicas",
        "4",
        "--gpus",
        "2",
    )
    one_line_error(run_cli(*args), "the same file is named twice")


def test_moe_stats_still_adds_two_ranks(run_cli, load_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = _file(tmp_path, "rank1.json", json.dumps([[10, 0, 0, 0], [0, 0, 0, 10]]))
    result = run_cli("moe", "stats", str(load_file), str(other), "--json", "--gpus", "2")
    assert result.code == 0, result.err
    layers = json.loads(result.out)["layers"]
    # by hand: layer 0 is 90+10+40+60 + 10 = 210 token-expert pairs, layer 1 is 20+100+30+50 + 10 =
    # 210 (the files record no top-k, so how many tokens those are is unknown)
    assert [layer["num_token_expert_pairs"] for layer in layers] == [210, 210]
    assert [layer["num_tokens"] for layer in layers] == [None, None]
