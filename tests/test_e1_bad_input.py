"""Bad input across the CLI (sweep r10 E1): names too long for the file system, options given
twice, empty output paths and names, bad environment values named as such, long values cut short
in messages, the store's wording for special files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import StoreError, UserInputError

LONG = "x" * 300  # a path component of 300 bytes: Linux allows 255 (NAME_MAX)
HUGE = "y" * 10_000
PLAN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64")
SIMULATE = ("simulate", "--model", "llama-3-8b", "--system", "dgx-h100")
CHECKPOINTS = (
    "goodput", "plan-checkpoints", "--nodes", "10", "--failures-per-node-day", "0.01",
    "--checkpoint-write-s", "60", "--restart-s", "10min",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test in its own folder: nothing may be written where the tests run."""
    monkeypatch.chdir(tmp_path)


# --- 1: a name the file system refuses (ENAMETOOLONG) is bad input, not a crash ------------------


def test_e1_long_model_name_is_an_unknown_model(run_cli) -> None:  # type: ignore[no-untyped-def]
    # a bare name is no path: the registry says it knows no such model (the name cut short)
    line = one_line_error(run_cli("model", "show", LONG), "unknown model", "(300 characters)")
    assert LONG not in line


def test_e1_long_model_path_is_named_too_long(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(
        run_cli("flops", "--model", f"/tmp/{LONG}", "--tokens", "1T"), "name too long", "255 bytes"
    )


def test_e1_long_input_path_is_named_too_long(run_cli) -> None:  # type: ignore[no-untyped-def]
    for name in (LONG, f"{LONG}.json"):
        one_line_error(run_cli("trace", "summary", name), "name too long", "255 bytes")


def test_e1_long_output_path_is_named_too_long(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*CHECKPOINTS, "--plot", f"{LONG}.png"), "name too long", "255 bytes")
    assert not os.listdir(".")


def test_e1_long_store_variable(run_cli, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_STORE", str(tmp_path / LONG))
    one_line_error(run_cli("results", "list"), "name too long", "LIGHTSPEED_STORE")


def test_e1_long_home_variable(run_cli, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("LIGHTSPEED_STORE", raising=False)
    monkeypatch.setenv("LIGHTSPEED_HOME", str(tmp_path / LONG))
    one_line_error(run_cli("results", "list"), "name too long", "LIGHTSPEED_HOME")


# --- 2: an option that takes one value, given twice ----------------------------------------------


def test_e1_option_given_twice_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*PLAN, "--tp", "2", "--tp", "4"), "--tp given twice (2, then 4): give it once")
    one_line_error(
        run_cli(*PLAN, "--model", "qwen-2.5-7b"), "--model given twice (llama-3-8b, then qwen-2.5-7b)"
    )


def test_e1_root_and_default_subcommand_options_twice(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(
        run_cli("--log-level", "info", "--log-level", "debug", "hw", "list"), "--log-level given twice"
    )
    # ``compare A B`` runs ``compare runs A B``: its options are checked too
    one_line_error(
        run_cli("compare", "a.json", "b.json", "--threshold", "5%", "--threshold", "6%"),
        "--threshold given twice (5%, then 6%)",
    )


def test_e1_flags_and_repeatable_options_may_repeat(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("hw", "list", "--json", "--json").code == 0
    assert run_cli("-v", "-v", "hw", "list").code == 0
    # the same text twice leaves no doubt which was meant
    same = run_cli("memory", "--model", "llama-3-8b", "--model", "llama-3-8b", "--gpu", "h100-sxm")
    assert same.code == 0, same.err
    result = run_cli(*CHECKPOINTS, "--interval", "1h", "--interval", "2h")
    assert result.code == 0, result.err


def test_e1_same_interval_twice_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 1h and 3600 (seconds) are one interval once read
    one_line_error(
        run_cli(*CHECKPOINTS, "--interval", "1h", "--interval", "3600"), "--interval", "given twice"
    )


# --- 3: an empty or blank output path writes nothing ---------------------------------------------


@pytest.mark.parametrize("value", ["", " "])
def test_e1_empty_output_paths_are_refused(run_cli, value: str) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*SIMULATE, "--plot", value), "'--plot'", "names nothing to write")
    one_line_error(run_cli(*PLAN, "--save-config", value), "'--save-config'", "names nothing to write")
    one_line_error(
        run_cli("monitor", "run", "--out", value, "--", "true"), "'--out'", "names nothing to write"
    )
    one_line_error(run_cli("trace", "summary", "t.json", "--plot", value), "'--plot'")
    assert not os.listdir(".")


# --- 4: a bad environment value names the variable -----------------------------------------------


def test_e1_bad_environment_value_names_the_variable(run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_LOG", "verbose")
    one_line_error(run_cli("hw", "show", "h100-sxm"), "LIGHTSPEED_LOG='verbose' (for --log-level)")
    monkeypatch.delenv("LIGHTSPEED_LOG")
    monkeypatch.setenv("LIGHTSPEED_TRACE_MAX_BYTES", "nan")
    one_line_error(
        run_cli("trace", "summary", "t.json"), "LIGHTSPEED_TRACE_MAX_BYTES='nan' (for --max-bytes)"
    )


def test_e1_bad_command_line_value_names_the_option(run_cli) -> None:  # type: ignore[no-untyped-def]
    line = one_line_error(run_cli("--log-level", "verbose", "hw", "list"), "'--log-level'")
    assert "LIGHTSPEED_LOG=" not in line


# --- 5: the trace cache's and parser's variables -------------------------------------------------


@pytest.mark.parametrize("value", ["1e400", "inf", "nan", "1.5", "-1", "1e30", "2PiB", "many"])
def test_e1_cache_limit_refuses(monkeypatch, value: str) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.trace.cache import cache_limit_bytes

    monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE_MAX_BYTES", value)
    with pytest.raises(UserInputError, match="LIGHTSPEED_TRACE_CACHE_MAX_BYTES"):
        cache_limit_bytes()


def test_e1_cache_limit_accepts(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.trace.cache import cache_limit_bytes

    for text, expected in (("0", 0), ("1e9", 10**9), ("10GiB", 10 * 2**30), ("1PiB", 2**50)):
        monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE_MAX_BYTES", text)
        assert cache_limit_bytes() == expected


def test_e1_cache_switch(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.trace.cache import cache_switch_on

    for text, on in (("", True), ("on", True), ("1", True), ("OFF", False), ("no", False), ("false", False)):
        monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE", text)
        assert cache_switch_on() is on
    monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE", "foo")
    with pytest.raises(UserInputError, match="LIGHTSPEED_TRACE_CACHE='foo'"):
        cache_switch_on()


@pytest.mark.parametrize("value", ["nan", "-1", "\N{COLLISION SYMBOL}", "2.5"])
def test_e1_parse_workers_checked_for_small_files(monkeypatch, tmp_path, value: str) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.trace.io.kineto_parallel import num_workers

    small = tmp_path / "t.json"
    small.write_text("{}")
    monkeypatch.setenv("LIGHTSPEED_PARSE_WORKERS", value)
    with pytest.raises(UserInputError, match="LIGHTSPEED_PARSE_WORKERS"):
        num_workers(small)


def test_e1_parse_workers_accepted(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.trace.io.kineto_parallel import asked_workers

    for text, expected in (("", 0), ("0", 0), ("3", 3), ("9" * 5000, 4), ("auto", None)):
        monkeypatch.setenv("LIGHTSPEED_PARSE_WORKERS", text)
        assert asked_workers() == expected


# --- 6: a long value is cut short in the message -------------------------------------------------


def test_e1_long_values_cut_short(run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for result in (
        run_cli("hw", "show", HUGE),
        run_cli(*PLAN, "--stack", HUGE),
        run_cli(*PLAN, "--precision", HUGE),
        run_cli("trace", "summary", "t.json", "--time-unit", HUGE),
    ):
        line = one_line_error(result, "(10,000 characters)")
        assert len(line) < 1_000, line
    monkeypatch.setenv("LIGHTSPEED_LOG", HUGE)
    assert len(one_line_error(run_cli("hw", "list"), "LIGHTSPEED_LOG=")) < 1_000


# --- 7: an explicitly empty name is refused, not ignored -----------------------------------------


def test_e1_empty_names_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    memory = ("memory", "--model", "llama-3-8b", "--training")
    one_line_error(run_cli(*memory, "--system", ""), "'--system'", "names nothing")
    one_line_error(run_cli(*memory, "--gpu", " "), "'--gpu'", "names nothing")
    one_line_error(run_cli(*memory, "--gpu", "h100-sxm", "--grad-precision", ""), "'--grad-precision'")
    one_line_error(run_cli("bench", "gemm", "--model", ""), "'--model'", "names nothing")


def test_e1_calibrate_list_refuses_what_it_ignores(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("calibrate", "--list", "--from", "/nonexistent/x.json"), "--from", "--list")
    one_line_error(run_cli("calibrate", "--list", "--name", ""), "'--name'")
    assert run_cli("calibrate", "--list").code == 0


# --- 8: the store's wording ----------------------------------------------------------------------


def test_e1_store_on_a_device_or_fifo(run_cli, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_STORE", "/dev/null")
    one_line_error(run_cli("results", "list"), "/dev/null is a character device")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(fifo))
    one_line_error(run_cli("results", "list"), "is a FIFO")


def test_e1_store_under_a_file_names_the_store_variable(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.store.backends import connect
    from lightspeed.store.location import store_location

    (tmp_path / "afile.txt").write_text("")
    monkeypatch.setenv("LIGHTSPEED_STORE", str(tmp_path / "afile.txt" / "x.sqlite"))
    with pytest.raises(StoreError, match="fix: set LIGHTSPEED_STORE") as refused:
        connect(store_location(), timeout_s=1.0)
    assert "LIGHTSPEED_HOME" not in str(refused.value)
