"""The error tree and its messages."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import pytest

from lightspeed.errors import (
    DataFileError,
    LightspeedError,
    MissingExtraError,
    UnknownNameError,
    closest_names,
    require_extra,
)


def test_unknown_name_lists_closest() -> None:
    error = UnknownNameError("device", "h100-sx", ["h100-sxm", "h200-sxm", "mi300x"])
    assert isinstance(error, LightspeedError)
    assert "h100-sxm" in str(error).split("closest:")[1]
    assert "mi300x" not in str(error)


def test_closest_names_prefers_substrings_and_typos() -> None:
    assert closest_names("h800", ["h800-sxm", "h800-pcie", "b200"])[:2] == ["h800-sxm", "h800-pcie"]


def test_data_file_error_names_file_field_value_and_fix() -> None:
    error = DataFileError(
        "a.toml", "expected a number", field="memory.usable_gb", value="x", fix="write 80", line=3
    )
    assert str(error) == "a.toml:3: expected a number; field 'memory.usable_gb'; value 'x'; fix: write 80"


def test_a_boolean_value_is_spelled_as_data_files_spell_it() -> None:
    """TOML and JSON both write true/false; Python's True is not what the user wrote."""
    error = DataFileError("config.json", "expected a whole number", field="hidden_size", value=True)
    assert str(error) == "config.json: expected a whole number; field 'hidden_size'; value true"


def test_a_cut_list_of_known_names_says_how_many_there_are() -> None:
    """Ten profiles listed as eight read as all of them: the message counts them; none reads so."""
    names = [f"stack-{index:02d}" for index in range(10)]
    message = str(UnknownNameError("serving stack", "zzz", names))
    assert message.endswith("stack-07, ... (10 in all)")
    assert "known: none yet" in str(UnknownNameError("calibration", "zzz", []))


def test_missing_extra_names_the_pip_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'lightspeed\[bench\]'"):
        require_extra("surely_not_a_module_xyz", "bench", "GEMM benchmarks")


@pytest.mark.parametrize(
    "error",
    [
        DataFileError("/data/table.tsv", "not a tab-separated table", line=1, fix="use tabs"),
        UnknownNameError("device", "h10", ["h100-sxm", "h200-sxm"]),
        MissingExtraError("wandb", "wandb", "the W&B sink", problem="protobuf too old"),
    ],
    ids=["data-file", "unknown-name", "missing-extra"],
)
def test_an_error_crosses_a_process_boundary_as_itself(error: LightspeedError) -> None:
    # A worker process's exception is pickled; these take other __init__ arguments than the
    # message, which plain unpickling would pass them (a process pool died on DataFileError).
    with ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_raise, error)
        with pytest.raises(type(error)) as raised:
            future.result()
    assert str(raised.value) == str(error)
    assert raised.value.__dict__ == error.__dict__


def _raise(error: LightspeedError) -> None:
    raise error


def test_a_data_file_error_quotes_a_long_value_by_its_start_and_length() -> None:
    """A cell or field can hold megabytes (or an integer too long for repr): the message stays one
    short line naming the file, the field and the value's start and size."""
    long_text = DataFileError("rows.tsv", "not a number", field="measured", value="9" * 100_000, line=3)
    assert len(str(long_text)) < 200
    assert "rows.tsv:3: not a number; field 'measured'" in str(long_text)
    assert "(100,002 characters)" in str(long_text)
    huge = DataFileError("plan.toml", "above the limit", field="tp", value=10**5000)
    assert "a whole number of about 5,000 digits" in str(huge)
