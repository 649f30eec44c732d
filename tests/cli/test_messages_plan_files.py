"""Plan-file errors name the file and the key, and the plan file's kind before any option it
would have filled (a bad kind, not a "missing --system")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

HEAD = 'schema_version = 1\nkind = "serving-plan"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\n'


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("kind_line", "fragment"),
    [
        ("", "kind = ... is missing"),
        ("kind = 5\n", "kind = 5 is not a string"),
        ("[kind]\n", "[kind] is a table"),
    ],
)
def test_a_bad_kind_is_said_before_a_missing_option(
    run_cli: Any, tmp_path: Path, kind_line: str, fragment: str
) -> None:
    body = 'schema_version = 1\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\n'
    path = _plan(tmp_path, body + kind_line)  # a [kind] table must come last in TOML
    line = one_line_error(run_cli("plan", "infer", "--config", str(path)), "plan.toml", fragment)
    assert 'kind = "serving-plan"' in line
    assert "--system" not in line


def test_an_unknown_kind_is_named(run_cli: Any, tmp_path: Path) -> None:
    path = _plan(tmp_path, HEAD.replace('"serving-plan"', '"servng-plan"'))
    one_line_error(run_cli("plan", "infer", "--config", str(path)), "plan.toml", "'servng-plan'")


def test_a_bad_value_names_the_file_and_key(run_cli: Any, tmp_path: Path) -> None:
    path = _plan(tmp_path, HEAD + "input_tokens = 0\n")
    line = one_line_error(run_cli("plan", "infer", "--config", str(path)), "plan.toml: input_tokens = 0 ")
    assert "Invalid value for" not in line


def test_a_bad_choice_names_the_file_and_key(run_cli: Any, tmp_path: Path) -> None:
    path = _plan(tmp_path, HEAD + 'precision = "fp7"\n')
    one_line_error(run_cli("plan", "infer", "--config", str(path)), 'plan.toml: precision = "fp7" ')


def test_schema_version_as_a_string_says_to_write_the_integer(run_cli: Any, tmp_path: Path) -> None:
    path = _plan(tmp_path, HEAD.replace("schema_version = 1", 'schema_version = "1"'))
    result = run_cli("plan", "infer", "--config", str(path))
    one_line_error(result, "plan.toml", "schema_version = 1 (the integer")


def test_a_good_plan_file_still_runs(run_cli: Any, tmp_path: Path) -> None:
    path = _plan(tmp_path, HEAD + "input_tokens = 512\n")
    result = run_cli("plan", "infer", "--config", str(path), "--json")
    assert result.code == 0, result.err
