"""``lightspeed mig profiles|plan`` and ``--gpu <accelerator>/<profile>`` in plan/search infer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mig-workloads.toml"
LGI = REPO / "tests" / "fixtures" / "mig" / "h100-lgi-dcgm-issue-138.txt"


def test_profiles_table_and_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("mig", "profiles", "--gpu", "h100-sxm")
    assert result.code == 0
    assert "3g.40gb" in result.out
    assert "0,2,4,6" in result.out  # 1g.20gb start slots
    payload = json.loads(run_cli("mig", "profiles", "--gpu", "h100", "--json").out)
    assert [p["num_sms"] for p in payload["profiles"]] == [16, 16, 26, 32, 60, 64, 132]


@pytest.mark.slow
def test_plan_json_with_replayed_layout_and_plot(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "layout.png"
    result = run_cli(
        "mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm",
        "--current", str(LGI), "--plot", str(plot), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    plan = payload["plan"]
    assert plan["choice"] == "mig"
    assert {s["name"] for s in plan["strategies"]} == {"mig", "whole-gpu", "time-sharing"}
    assert len(plan["layout"]) == next(s["num_gpus"] for s in plan["strategies"] if s["name"] == "mig")
    assert payload["check"]["matches"] is False
    assert all(command.startswith("nvidia-smi") for command in payload["check"]["commands"])
    assert plot.is_file()
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_plan_text_draws_the_slots(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm", "--gpus", "8")
    assert result.code == 0, result.err
    assert "GPU 0 |" in result.out
    assert "whole GPU, MIG off: assistant-70b" in result.out
    assert "time-sharing: not possible" in result.out
    assert "choice: mig" in result.out


def test_plan_bad_inputs_are_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("mig", "plan", "--workloads", str(tmp_path / "none.toml"), "--gpu", "h100-sxm"))
    one_line_error(run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "mi300x"))
    garbage = tmp_path / "lgi.txt"
    garbage.write_bytes(b"\xff\xfe not text")
    one_line_error(
        run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm", "--current", str(garbage))
    )
    bad = tmp_path / "w.toml"
    bad.write_text('schema_version = 1\nkind = "mig-workloads"\n[[services]]\nname = "x"\n', encoding="utf-8")
    one_line_error(run_cli("mig", "plan", "--workloads", str(bad), "--gpu", "h100-sxm"))
    unknown = bad.read_text(encoding="utf-8") + (
        'model = "no-such-model"\ninput_tokens = 1\noutput_tokens = 1\nrequests_per_s = 1\n'
        "max_ttft_s = 1\nmax_tpot_s = 1\n"
    )
    bad.write_text(unknown, encoding="utf-8")
    one_line_error(run_cli("mig", "plan", "--workloads", str(bad), "--gpu", "h100-sxm"))


def test_plan_infer_on_a_slice(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "infer", "--model", "llama-3.1-8b", "--gpu", "h100-sxm/3g.40gb", "--precision", "fp8",
        "--isl", "1024", "--osl", "256", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["num_gpus"] == 1
    # what nvidia-smi reports for 3g.40gb on an H100 80GB (39.50 GiB), the units a whole GPU is sized in
    # (its reported 79.65 GiB), no longer 4/8 of the listed 80 GB
    assert payload["usable_memory_bytes"] == pytest.approx(39.50 * 2**30)


def test_search_infer_on_a_slice_is_slower_than_the_whole_gpu(run_cli) -> None:  # type: ignore[no-untyped-def]
    rates = {}
    for gpu in ("h100-sxm/3g.40gb", "h100-sxm"):
        result = run_cli(
            "search", "infer", "--model", "llama-3-8b", "--gpu", gpu, "--precision", "fp8",
            "--isl", "1024", "--osl", "256", "--max-tpot", "50ms", "--json",
        )  # fmt: skip
        assert result.code == 0, result.err
        rates[gpu] = json.loads(result.out)["best"]["output_tokens_per_s"]
    # 60 of 132 SMs and half the bandwidth: between a third and a half of the whole GPU
    assert rates["h100-sxm"] / 3 < rates["h100-sxm/3g.40gb"] < rates["h100-sxm"] / 2


def test_hw_show_a_slice_and_one_gpu_limits(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "h100-sxm/3g.40gb")
    assert result.code == 0, result.err
    assert "449.8 TFLOP/s" in result.out  # 989.5 x 60/132 SMs, dense BF16
    one_line_error(
        run_cli("plan", "infer", "--model", "llama-3-8b", "--gpu", "h100-sxm/3g.40gb", "--gpus", "2")
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # the real -lgi of the fixture with one row changed; each was accepted before
        (("MIG 3g.40gb          9 ", "MIG 5g.99gb          9 "), "GPU 0: unknown MIG profile"),
        (
            ("MIG 3g.40gb          9        2          4:4", "MIG 3g.40gb          9        2          0:4"),
            "GPU 0",
        ),
        (("19       10          3:1", "19       10          2:1"), "GPU 0: 1g.10gb at slot 2 overlaps"),
        (("19       10          3:1", "19        9          3:1"), "GPU 0: instance id 9 appears twice"),
    ],
)
def test_a_current_layout_no_gpu_can_hold_is_refused(run_cli, tmp_path: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    text = LGI.read_text(encoding="utf-8")
    assert edit[0] in text
    current = tmp_path / "lgi.txt"
    current.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    line = one_line_error(
        run_cli("mig", "plan", "--workloads", str(EXAMPLE), "--gpu", "h100-sxm", "--current", str(current)),
        message,
    )
    assert str(current) in line


def test_an_empty_name_is_refused_as_empty(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("mig", "profiles", "--gpu", ""), "the device name is empty")
    workloads = tmp_path / "w.toml"
    workloads.write_text(
        EXAMPLE.read_text(encoding="utf-8").replace('name = "chat"', 'name = " "'), encoding="utf-8"
    )
    one_line_error(run_cli("mig", "plan", "--workloads", str(workloads), "--gpu", "h100-sxm"), "empty name")
