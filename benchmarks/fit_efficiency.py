"""Fit the software-stack profiles on the structured published rows and measure the error honestly.

One command regenerates the fitted values, the error bars, the fit report and
every figure the documentation quotes from it:

    python benchmarks/fit_efficiency.py --report docs/fit-report.json --write

Without ``--write`` it only reports (``--report FILE`` to save the JSON). What it
does (``lightspeed.sol.validation.fitting``, ``.crossval``, ``.fit_report``):

1. reads ``sol/validation/data/published-runs.toml`` (or ``--rows FILE``);
2. chooses, per kind, how profiles share fitted values (variants), by
   leave-one-publisher-out cross-validation and the one-standard-error rule, and
   fits the chosen values on every row (what ships);
3. runs the nested leave-one-publisher-out cross-validation: each publisher's
   rows are predicted by the whole procedure (choice, fit, error bands) run
   without them; that is the error and the 80% coverage reported;
4. with ``--write``: writes the values into ``sol/data/stacks.toml`` (with the
   rows each profile is fitted and validated on), then checks Meta's
   Llama 3 405B plans and the best Llama 3 70B plan on the default stack, and
   replaces the figures marked ``<!-- fit:KEY -->...<!-- /fit -->`` in README.md,
   docs/benchmarks.md and docs/sol.md with the report's
   (``tests/sol/test_fit_report.py`` checks they match).

``--markers-only`` rewrites those figures from an existing report (``--report``, by default
docs/fit-report.json) without fitting anything.

The error bands are calibrated after it, on its out-of-fold residuals and the
held-out tables' rows: ``python benchmarks/calibrate_bands.py --report
docs/band-calibration.json --write``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.sol import search_training
from lightspeed.sol.core import serving_stacks as serving_stacks_module
from lightspeed.sol.core import stacks as stacks_module
from lightspeed.sol.core.stacks import default_stack_name
from lightspeed.sol.validation.fit_report import fit_report
from lightspeed.tour.scenarios import LLAMA3_RUNS, llama3_405b_training
from lightspeed.workload import ModelRegistry, load_models

ROOT = Path(__file__).resolve().parents[1]
STACKS_FILE = ROOT / "src" / "lightspeed" / "sol" / "data" / "stacks.toml"
DOCS = (ROOT / "README.md", ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "sol.md")
COMMAND = "python benchmarks/fit_efficiency.py --report docs/fit-report.json --write"
# Llama 3 paper, Table 4: TFLOP/s per GPU of Meta's three runs (8K tokens on 8,192 and 16,384
# H100, 131K tokens on 16,384 with CP16), in Meta's 6N + full-attention count.
LLAMA3_TFLOPS = (430.0, 400.0, 380.0)
# The highest MFU published for a BF16 run on H100 among the rows: NVIDIA dgxc-benchmarking
# v25.04, Llama 3.1 70B on 2,048 H100, 54.32% (row T108).
MAX_PUBLISHED_H100_BF16_MFU = 0.5432


def marker(family: str) -> re.Pattern[str]:
    """The documentation's generated figures of ``family``: ``<!-- FAMILY:KEY -->...<!-- /FAMILY -->``
    (``fit`` from this script's report, ``bands`` from benchmarks/calibrate_bands.py's)."""
    return re.compile(rf"<!-- {family}:(?P<key>[\w-]+) -->(?P<text>.*?)<!-- /{family} -->", re.DOTALL)


MARKER = marker("fit")


# --- writing the data files ------------------------------------------------------------------


def _toml_list(ids: list[str]) -> str:
    if not ids:
        return "[]"
    lines, line = [], ""
    for item in (f'"{value}"' for value in ids):
        if len(line) + len(item) > 90:
            lines.append(line.rstrip())
            line = ""
        line += item + ", "
    lines.append(line.rstrip(", "))
    return (
        "[\n    " + "\n    ".join(lines) + ",\n]" if len(lines) > 1 or len(lines[0]) > 80 else f"[{lines[0]}]"
    )


def _set(body: str, key: str, value: str, after: str = "kernel_efficiency") -> str:
    """``key = value`` in a table's body: replaced where it is, else added after ``after``."""
    pattern = re.compile(rf"(?ms)^{key} = (?:\[.*?\]|[^\n]*)$")
    if pattern.search(body):
        return pattern.sub(lambda _: f"{key} = {value}", body, count=1)
    previous = re.compile(rf"(?ms)^({after} = (?:\[.*?\]|[^\n]*))$")
    return previous.sub(lambda match: f"{match.group(1)}\n{key} = {value}", body, count=1)


def _profile_values(report: dict[str, Any], name: str, table: str) -> dict[str, str]:
    values, choice = report["values"], report["choice"]
    rows = report["rows"]
    fitted_on = {item["name"]: item["fitted_on"] for item in report["parameters"]}
    validated = [row["id"] for row in rows if row["profile"] == name]
    if table == "stack":
        if name == default_stack_name():
            kernel, key = values["default"], "default"
        else:
            variant = next(v for v in _variants("train") if v.name == choice["train"]["variant"])
            group = variant.group(name)
            kernel = values["kernel"].get(group, values["default"])
            key = f"kernel {group}" if group in values["kernel"] else "default"
        return {
            "kernel_efficiency": f"{kernel:.4g}",
            "fitted_on": _toml_list(fitted_on.get(key, [])),
            "validated_on": _toml_list(validated),
        }
    return _serving_values(report, name, fitted_on, validated)


def _serving_values(
    report: dict[str, Any], name: str, fitted_on: dict[str, list[str]], validated: list[str]
) -> dict[str, str]:
    from lightspeed.sol.validation.fitting import adp_group, overhead_group

    values, choice = report["values"], report["choice"]
    variant = next(v for v in _variants("infer") if v.name == choice["infer"]["variant"])
    if variant.kernel_from_training:
        kernel, kernel_key = values["default"], "default"
    else:
        group = variant.group(name)
        fitted = values["serving_kernel"]
        kernel = fitted.get(group, sorted(fitted.values())[len(fitted) // 2] if fitted else values["default"])
        kernel_key = f"serving kernel {group}"
    adp_key = adp_group(variant, name)
    adp_values = values["attention_dp"]
    adp = adp_values.get(adp_key, sorted(adp_values.values())[len(adp_values) // 2] if adp_values else 1.0)
    used = {*fitted_on.get(kernel_key, []), *fitted_on.get(f"attention_dp {adp_key}", [])}
    overhead_key = overhead_group(name)
    used |= set(fitted_on.get(f"iteration_overhead_s {overhead_key}", []))
    rows = [row["id"] for row in report["rows"] if row["id"] in used]
    return {
        "kernel_efficiency": f"{kernel:.4g}",
        "attention_dp_efficiency": f"{adp:.4g}",
        "iteration_overhead_s": f"{values['overhead_s'].get(overhead_key, 0.0):g}",
        "fitted_on": _toml_list(rows),
        "validated_on": _toml_list(validated),
    }


def _variants(kind: str) -> tuple[Any, ...]:
    from lightspeed.sol.validation.fitting import inference_variants, training_variants

    return training_variants() if kind == "train" else inference_variants()


def write_stacks(report: dict[str, Any]) -> None:
    """The fitted values, and the rows each profile is fitted and validated on, into stacks.toml."""
    text = STACKS_FILE.read_text(encoding="utf-8")
    values = report["values"]
    text = re.sub(r"(?m)^overlap_contention = .*$", f"overlap_contention = {values['contention']:g}", text)
    text = re.sub(
        r'(?m)^training_sharing = ".*"$', f'training_sharing = "{report["choice"]["train"]["variant"]}"', text
    )
    text = re.sub(
        r'(?m)^serving_sharing = ".*"$', f'serving_sharing = "{report["choice"]["infer"]["variant"]}"', text
    )
    for table, name in re.findall(r"(?m)^\[(stack|serving)\.([\w.-]+)\]$", text):
        block = re.search(rf"(?ms)^\[{table}\.{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", text)
        assert block is not None
        body, after = block.group(1), "kernel_efficiency"
        for key, value in _profile_values(report, name, table).items():
            body = _set(body, key, value, after=after)
            after = key
        text = text[: block.start(1)] + body + text[block.end(1) :]
    STACKS_FILE.write_text(_write_caps(text, report), encoding="utf-8")
    stacks_module._load.cache_clear()
    serving_stacks_module._load_serving.cache_clear()
    stacks_module._load_caps.cache_clear()


def _write_caps(text: str, report: dict[str, Any]) -> str:
    """Per generation, the highest training kernel efficiency fitted for a profile with rows on it."""
    caps: dict[str, float] = {}
    for row in report["rows"]:
        if row["kind"] == "train":
            architecture = row["family"].split("/")[-1]
            kernel = float(_profile_values(report, row["profile"], "stack")["kernel_efficiency"])
            caps[architecture] = max(caps.get(architecture, 0.0), kernel)
    block = re.search(r"(?ms)^\[kernel_efficiency_cap\]\n(.*?)(?=^\[|\Z)", text)
    assert block is not None
    body = block.group(1)
    for architecture, cap in caps.items():
        body = re.sub(rf"(?m)^{architecture} = .*$", f"{architecture} = {cap:.4g}", body)
    return text[: block.start(1)] + body + text[block.end(1) :]


# --- checks on the default stack --------------------------------------------------------------


def checks(catalog: Catalog, models: ModelRegistry) -> dict[str, Any]:
    """Meta's Llama 3 405B plans and the best Llama 3 70B BF16 plan on 64 H100, default stack."""
    llama = []
    for (estimate, _), run, published in zip(
        llama3_405b_training(catalog, models), LLAMA3_RUNS, LLAMA3_TFLOPS, strict=True
    ):
        predicted = estimate.tflop_per_s_per_gpu
        llama.append(
            {
                "num_gpus": run[0],
                "cp": run[1],
                "seq_len": run[3],
                "published_tflop_per_s_per_gpu": published,
                "predicted_tflop_per_s_per_gpu": predicted,
                "error": predicted / published - 1.0,
                "fits": estimate.fits,
                "stack": estimate.stack,
            }
        )
    search = search_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=64),
        global_batch_size=128,
        seq_len=8192,
    )
    best = search.plans[0]
    return {
        "llama3_405b_default_stack": llama,
        "llama3_70b_64_h100_best_plan": {
            "mfu": best.mfu,
            "plan": best.plan.to_dict(),
            "max_published_h100_bf16_mfu": MAX_PUBLISHED_H100_BF16_MFU,
            "stack": best.stack,
        },
    }


# --- figures quoted in the documentation ------------------------------------------------------


def _pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def figures(report: dict[str, Any]) -> dict[str, str]:
    """Every figure the documentation quotes, as it is written there."""
    kind = report["summary"]["kind"]
    everything = report["summary"]["all"]
    train, infer = kind["train"], kind["infer"]
    check = report["checks"]
    llama = check["llama3_405b_default_stack"]
    numbers = {
        "num_rows": str(report["num_rows"]),
        "num_publishers": str(len(report["summary"]["publisher"])),
        "train_rows": str(len(train["rows"])),
        "infer_rows": str(len(infer["rows"])),
        "train_fitted_median": _pct(train["fitted"]["median_abs_error"]),
        "infer_fitted_median": _pct(infer["fitted"]["median_abs_error"]),
        "train_oof_median": _pct(train["out_of_fold"]["median_abs_error"]),
        "infer_oof_median": _pct(infer["out_of_fold"]["median_abs_error"]),
        "train_oof_p90": _pct(train["out_of_fold"]["p90_abs_error"]),
        "infer_oof_p90": _pct(infer["out_of_fold"]["p90_abs_error"]),
        "train_oof_coverage": _pct(train["out_of_fold_coverage"], 0),
        "infer_oof_coverage": _pct(infer["out_of_fold_coverage"], 0),
        "all_oof_coverage": _pct(everything["out_of_fold_coverage"], 0),
        "train_oof_covered": _covered(report, "train"),
        "infer_oof_covered": _covered(report, "infer"),
        "train_oof_outside": _outside(report, "train"),
        "infer_oof_outside": _outside(report, "infer"),
        "share_predicted": _pct(everything["share_predicted"], 0),
        "num_parameters": str(len(report["parameters"])),
        "train_variant": report["choice"]["train"]["variant"],
        "infer_variant": report["choice"]["infer"]["variant"],
        "default_kernel": f"{report['values']['default']:.4g}",
        "train_kernel_values": _kernel_values(report),
        "llama405_8k_8192": f"{llama[0]['predicted_tflop_per_s_per_gpu']:.0f}",
        "llama405_8k_16384": f"{llama[1]['predicted_tflop_per_s_per_gpu']:.0f}",
        "llama405_131k_16384": f"{llama[2]['predicted_tflop_per_s_per_gpu']:.0f}",
        "llama405_errors": " / ".join(_signed(item["error"]) for item in llama),
        "llama70_best_mfu": _pct(check["llama3_70b_64_h100_best_plan"]["mfu"]),
    }
    return numbers | {
        "table_rows": table_rows(report),
        "table_publishers": table_publishers(report),
        "table_parameters": table_parameters(report),
    }


def _with_interval(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [row for row in report["rows"] if row["kind"] == kind and row["out_of_fold_interval"] is not None]


def _covered(report: dict[str, Any], kind: str) -> str:
    """``31 of 40``: the rows of ``kind`` inside their out-of-fold 80% interval."""
    rows = _with_interval(report, kind)
    return f"{sum(1 for row in rows if row['out_of_fold_covered'])} of {len(rows)}"


def _outside(report: dict[str, Any], kind: str) -> str:
    """``T18, T25 and T34``: the rows of ``kind`` outside their out-of-fold 80% interval."""
    ids = [row["id"] for row in _with_interval(report, kind) if not row["out_of_fold_covered"]]
    if not ids:
        return "none"
    return ids[0] if len(ids) == 1 else f"{', '.join(ids[:-1])} and {ids[-1]}"


def _kernel_values(report: dict[str, Any]) -> str:
    """The training kernel efficiencies in words: ``one value, 0.825, for every named stack``."""
    kernel = report["values"]["kernel"]
    variant = report["choice"]["train"]["variant"]
    if variant == "one":
        return f"one kernel efficiency for every named stack, {kernel['all']:.4g}"
    listed = ", ".join(f"{group} {value:.4g}" for group, value in sorted(kernel.items()))
    return f"one kernel efficiency per {variant} group ({listed})"


def _interval(row: dict[str, Any]) -> str:
    interval = row["out_of_fold_interval"]
    if interval is None:
        return "-"
    text = f"{interval[0]:.4g}-{interval[1]:.4g}"
    return text if row["out_of_fold_covered"] else f"{text} (outside)"


def table_rows(report: dict[str, Any]) -> str:
    """Every row: fitted and out-of-fold error, and the out-of-fold 80% interval."""
    lines = [
        "| row | publisher | stack | metric | measured | fitted | out of fold | out-of-fold 80% interval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        errors = f"{_signed(row['fitted_error'])} | {_signed(row['out_of_fold_error'])}"
        lines.append(
            f"| {row['id']} | {row['publisher']} | {row['profile']} | {row['metric']} "
            f"| {row['measured']:.4g} | {errors} | {_interval(row)} |"
        )
    return "\n".join(lines)


def table_publishers(report: dict[str, Any]) -> str:
    """Per publisher and kind: rows, fitted and out-of-fold median error, out-of-fold coverage."""
    lines = [
        "| publisher held out | rows | train: fitted / out of fold | infer: fitted / out of fold | "
        "out-of-fold coverage | chosen without it (train / infer) |",
        "|---|---|---|---|---|---|",
    ]
    folds = {fold["publisher"]: fold for fold in report["folds"]}
    for publisher, summary in report["summary"]["publisher"].items():
        rows = [row for row in report["rows"] if row["publisher"] == publisher]
        cells = []
        for kind in ("train", "infer"):
            errors = [row for row in rows if row["kind"] == kind]
            if not errors:
                cells.append("-")
                continue
            fitted = _median([abs(row["fitted_error"]) for row in errors if row["fitted_error"] is not None])
            oof = _median(
                [abs(row["out_of_fold_error"]) for row in errors if row["out_of_fold_error"] is not None]
            )
            cells.append(f"{len(errors)} row{'s' if len(errors) > 1 else ''}: {_pct(fitted)} / {_pct(oof)}")
        fold = folds[publisher]
        chosen = f"{fold['train_variant']} / {fold['infer_variant']}"
        lines.append(
            f"| {publisher} | {len(rows)} | {cells[0]} | {cells[1]} "
            f"| {_pct(summary['out_of_fold_coverage'], 0)} | {chosen} |"
        )
    return "\n".join(lines)


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def table_parameters(report: dict[str, Any]) -> str:
    """Every fitted number, its value, the rows it is fitted on and the rival minimum of its loss
    (another value nearly as good: the fit could jump there on a small change)."""
    lines = [
        "| fitted number | value | what | rows it is fitted on | rival minimum (loss there / at the fit) |",
        "|---|---|---|---|---|",
    ]
    for item in report["parameters"]:
        ids = item["fitted_on"]
        shown = ", ".join(ids) if len(ids) <= 8 else f"{', '.join(ids[:8])} and {len(ids) - 8} more"
        rival = item.get("rival")
        other = (
            "-" if not rival else f"{rival['value']:.4g} ({rival['loss']:.4f} / {rival['loss_at_fit']:.4f})"
        )
        lines.append(
            f"| {item['name']} | {item['value']:.4g} | {item['what']} | {len(ids)}: {shown} | {other} |"
        )
    return "\n".join(lines)


def fail(message: str) -> NoReturn:
    """One line on stderr and exit status 2 (bad input: a report or a marker)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def replace_figures(text: str, numbers: dict[str, str], family: str = "fit") -> str:
    """``text`` with every ``<!-- FAMILY:KEY -->...<!-- /FAMILY -->`` holding ``numbers[KEY]``."""

    def fill(match: re.Match[str]) -> str:
        key = match.group("key")
        if key not in numbers:
            fail(f"no figure {key!r} in the report for <!-- {family}:{key} -->; name one it holds")
        value = numbers[key]
        body = f"\n{value}\n" if "\n" in value else value
        return f"<!-- {family}:{key} -->{body}<!-- /{family} -->"

    return marker(family).sub(fill, text)


def write_figures(numbers: dict[str, str], family: str = "fit") -> None:
    """Every ``FAMILY:KEY`` figure of README.md, docs/benchmarks.md and docs/sol.md from ``numbers``."""
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        replaced = replace_figures(text, numbers, family)
        if replaced != text:
            path.write_text(replaced, encoding="utf-8")
            print(f"rewrote the {family}: figures of {path.relative_to(ROOT)}", file=sys.stderr)


def figures_of_file(path: Path) -> dict[str, str]:
    """The documented figures of the report saved at ``path`` (nothing is fitted)."""
    try:
        return figures(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        fail(f"cannot read the fit report {path}: {error!r}; write it with {COMMAND}")


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=Path, help="structured rows (default: the shipped ones)")
    parser.add_argument(
        "--report", type=Path, help="write the report here (JSON); with --markers-only, read it from here"
    )
    parser.add_argument(
        "--write", action="store_true", help="write the data files and the documented figures"
    )
    parser.add_argument(
        "--markers-only",
        action="store_true",
        help="fit nothing: rewrite the documented fit: figures from the existing report "
        "(--report, default docs/fit-report.json)",
    )
    args = parser.parse_args()
    if args.markers_only:
        write_figures(figures_of_file(args.report or ROOT / "docs" / "fit-report.json"))
        return
    started = time.perf_counter()
    catalog, models = load_catalog(), load_models()
    report = fit_report(
        catalog=catalog, models=models, path=args.rows, progress=lambda text: print(text, file=sys.stderr)
    )
    if args.write:
        write_stacks(report)
    report["checks"] = checks(catalog, models)
    report["figures"] = figures(report)
    report["command"] = COMMAND
    if args.write:
        write_figures(report["figures"])
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    summary = {key: value for key, value in report["figures"].items() if not key.startswith("table_")}
    print(json.dumps(summary, indent=1))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
