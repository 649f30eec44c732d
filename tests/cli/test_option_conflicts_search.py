"""``search train`` refuses the comma lists and named plans it would misread: a schedule named twice
(every plan ranked twice, a tie with itself), an empty item, a --compare-plan setting given twice
or none, virtual stages without pipeline stages, and a dispatcher on a dense model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

SEARCH = ["search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--schedules", "1f1b,1f1b"], ("--schedules", "1f1b is given twice")),
        (["--schedules", "1f1b,gpipe,1F1B"], ("--schedules", "1F1B is given twice")),
        (["--schedules", "1f1b,,gpipe"], ("--schedules", "empty item")),
        (["--schedules", "1f1b,"], ("--schedules", "empty item")),
        (["--schedules", ""], ("--schedules", "names nothing")),
        (["--compare-plan", "tp=2,tp=4"], ("--compare-plan", "tp is given twice")),
        (["--compare-plan", "mb=2,micro-batch=4"], ("--compare-plan", "mb and micro-batch are one setting")),
        (["--compare-plan", ""], ("--compare-plan", "names no plan")),
        (["--compare-plan", "tp=2,,pp=2"], ("--compare-plan", "empty item")),
        (["--compare-plan", "vpp=4"], ("--compare-plan", "vpp=4", "pp=2 or more")),
        (["--compare-plan", "pp=1,vpp=2"], ("--compare-plan", "vpp=2", "pp=2 or more")),
        (["--ep-dispatcher", "deepep"], ("--ep-dispatcher", "llama-3-8b is dense")),
    ],
)
def test_search_train_refuses(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*SEARCH, *args), *words)


def test_search_train_still_takes_distinct_schedules_and_a_named_plan(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SEARCH, "--schedules", "1f1b, gpipe", "--compare-plan", "tp=2,pp=2,vpp=2", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["compared"]["vpp"] == 2
    assert payload["margin_over_runner_up"] != 0.0


def test_a_plan_file_is_held_to_the_same_rules(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    written = run_cli(*SEARCH, "--json")
    assert written.code == 0, written.err
    plan = tmp_path / "search.json"
    plan.write_text(written.out)
    assert run_cli("search", "train", "--config", str(plan), "--json").code == 0  # its own values pass
    doubled = tmp_path / "doubled.toml"
    doubled.write_text(
        'kind = "training-search"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\nglobal_batch_size = 64\n'
        'schedules = "1f1b,1f1b"\n'
    )
    one_line_error(run_cli("search", "train", "--config", str(doubled)), "--schedules", "given twice")
