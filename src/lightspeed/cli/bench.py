"""``lightspeed bench SUITE``: microbenchmarks of this machine beside its SOL."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any, Final

import click

from lightspeed.bench import (
    COLLECTIVES,
    GEMM_DTYPES,
    SUITES,
    BenchDevice,
    BenchResult,
    DeviceSol,
    default_config,
    device_sol,
    model_shapes,
    resolve_device,
    run_collectives,
    run_collectives_in_world,
    run_copy,
    run_gemm,
    run_launch,
    run_membw,
    supported_dtypes,
    torchrun_rank,
)
from lightspeed.cli._common import get_context, given_flags, json_option, print_json, refuse_together
from lightspeed.cli._sol_options import model_by_name_or_path
from lightspeed.cli.options import ARRAY_SIZE, GEMM_ROWS, NAME, PROCESSES, THREADS, TIMEOUT, Integer, SizeList
from lightspeed.cli.text_options import NonEmptyText, OutputPath
from lightspeed.errors import UserInputError
from lightspeed.gate import benchmark_records
from lightspeed.limits import MAX_BYTES
from lightspeed.report import check_roofline_plot, progress_bar, render_results, save_roofline
from lightspeed.store import open_store
from lightspeed.units import parse_items


def _split(values: Sequence[str], *, flag: str, example: str) -> list[str]:
    """Comma-separated values of repeated options, lower-cased, in the order given.

    A value that names nothing (empty, blank or only commas) is refused rather than read as the
    option left out (the default sweep); so are an empty item (``bf16,,fp32``: a stray comma) and a
    value given twice (``bf16,bf16``, or in two options), as every list option refuses them
    (:func:`~lightspeed.units.parse_items`)."""
    for value in values:
        if not value.replace(",", "").strip():
            raise UserInputError(
                f"{flag} {value!r} names nothing; give one or more, e.g. {flag} {example}, "
                f"or leave {flag} out"
            )
    if not values:
        return []
    return [part.lower() for part in parse_items(",".join(values), flag, example=f"{flag} {example}")]


MAX_LABEL_CHARS: Final = 200  # a label is a line of 'results list', not a document
_LINE_BREAKING: Final = ("Cc", "Zl", "Zp")  # control characters (newline, tab, escape), line separators


class RunLabel(NonEmptyText):
    """A stored run's label: one short line of text. Blank, over :data:`MAX_LABEL_CHARS`
    characters, or holding a control character (a newline, a tab, an escape) is refused: it would
    show as nothing, or break or flood every listing of the runs.

    >>> RunLabel().convert("nightly gemm", None, None)
    'nightly gemm'
    """

    name = "label"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(super().convert(value, param, ctx))
        if len(text) > MAX_LABEL_CHARS:
            self.fail(
                f"a label of {len(text):,} characters is too long; use at most {MAX_LABEL_CHARS}", param, ctx
            )
        control = next((char for char in text if unicodedata.category(char) in _LINE_BREAKING), None)
        if control is not None:
            self.fail(
                f"{text[:40]!r} holds the control character {control!r}; give the label on one line, "
                "without control characters",
                param,
                ctx,
            )
        return text


PLOTTED_SUITES = ("gemm", "membw")  # the suites with points on a roofline (FLOP/s over FLOP per byte)


def _run_suite(
    suite: str, device: BenchDevice, sol: DeviceSol, options: dict[str, Any], progress: Any
) -> Any:
    quick = options["quick"]
    if suite == "gemm":
        dtypes = options["dtypes"] or ["fp32" if not device.is_gpu else "bf16"]
        if "all" in dtypes:
            dtypes = _all_dtypes(device)
        shapes = options["model_shapes"]  # None: the sweep
        return run_gemm(device=device, sol=sol, dtypes=dtypes, shapes=shapes, quick=quick, progress=progress)
    if suite == "membw":
        return run_membw(
            device=device, sol=sol, array_bytes=options["array_size"], quick=quick, progress=progress
        )
    if suite == "copy":
        return run_copy(device=device, sol=sol, quick=quick, progress=progress)
    if suite == "launch":
        return run_launch(device=device, sol=sol, quick=quick, progress=progress)
    return _run_collectives(device, sol, options, progress)


def _all_dtypes(device: BenchDevice) -> list[str]:
    """``--dtype all``: every dtype ``device`` multiplies natively, saying on stderr which it leaves
    out (a CPU: tf32, a GPU mode, and fp8, which torch emulates for hours)."""
    dtypes = supported_dtypes(device)
    left_out = [dtype for dtype in GEMM_DTYPES if dtype not in dtypes]
    if left_out:
        where = device.name or device.kind
        click.echo(
            f"lightspeed: note: --dtype all runs {', '.join(dtypes)} on {where}; it leaves out "
            f"{', '.join(left_out)}, which {where} has no native GEMM for ('--dtype {left_out[-1]}' "
            "says why)",
            err=True,
        )
    return dtypes


def _run_collectives(device: BenchDevice, sol: DeviceSol, options: dict[str, Any], progress: Any) -> Any:
    names = options["collectives"] or list(COLLECTIVES)
    config = default_config(quick=options["quick"], gpu=device.is_gpu, collectives=names)
    if options["sizes"]:
        sizes = tuple(int(size) for group in options["sizes"] for size in group)
        config = type(config)(**{**config.to_dict(), "collectives": tuple(names), "sizes": sizes})
    if torchrun_rank() is not None:
        return run_collectives_in_world(
            config=config, sol=sol, gpu=device.is_gpu, timeout_s=options["timeout"], progress=progress
        )
    return run_collectives(
        config=config,
        sol=sol,
        num_processes=options["num_processes"],
        gpu=device.is_gpu,
        timeout_s=options["timeout"],
        progress=progress,
    )


def _saves(suite: str, options: dict[str, Any]) -> bool:
    """Whether this process writes the results: not with --no-save, and of a collectives run under
    torchrun only rank 0 (the others return no results)."""
    if options["no_save"]:
        return False
    world = torchrun_rank()  # (rank, world size, local rank) under torchrun
    return suite != "collectives" or world is None or world[0] == 0


def _check_store() -> None:
    """Open (creating it if needed) the store the results go to, before anything is timed: a store
    that cannot be opened fails in one line at once, not after minutes of measuring."""
    with open_store(create=True):
        pass


def _save(results: Sequence[BenchResult], suite: str, label: str | None) -> str:
    with open_store(create=True) as store:
        return store.add_records(kind="benchmark", records=benchmark_records(results), label=label or suite)


@click.command("bench")
@click.argument("suite", type=click.Choice(SUITES))
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N.")
@click.option("--threads", type=THREADS, default=None, help="CPU threads for torch (default: all cores).")
@click.option("--quick", is_flag=True, help="A reduced sweep (under a minute on a laptop CPU).")
@click.option(
    "--dtype",
    "dtypes",
    multiple=True,
    help=f"GEMM dtypes, comma-separated ({', '.join(GEMM_DTYPES)}), or 'all' that the device supports.",
)
@click.option(
    "--model",
    type=NAME,
    default=None,
    help="GEMM: benchmark this model's own GEMM shapes instead of the sweep (a model name, or a path to "
    "a config.json, its folder or a model TOML).",
)
@click.option(
    "--tp",
    default=1,
    show_default=True,
    type=Integer(minimum=1, maximum=1024),
    help="GEMM: tensor-parallel size.",
)
@click.option(
    "--tokens",
    default=4096,
    show_default=True,
    type=GEMM_ROWS,
    help="GEMM: rows (tokens); each routed expert's GEMMs get tokens x top-k / experts (even routing).",
)
@click.option(
    "--array-size",
    type=ARRAY_SIZE,
    default=None,
    help="membw: bytes per array (default 4x the last-level caches of all sockets; at most 256 MiB "
    "with --quick).",
)
@click.option("--collective", "collectives", multiple=True, help="Collectives to run, comma-separated.")
@click.option(
    "--sizes",
    type=SizeList(minimum=1.0, maximum=MAX_BYTES),
    multiple=True,
    help="Collective sizes, comma-separated (e.g. 1MiB,64MiB).",
)
@click.option("--num-processes", default=2, show_default=True, type=PROCESSES, help="Local ranks to spawn.")
@click.option(
    "--timeout", default=60.0, show_default=True, type=TIMEOUT, help="Seconds for ranks to connect."
)
@click.option(
    "--sol-device",
    default=None,
    help="Catalog device or CPU record to use as the SOL instead of detection (see 'lightspeed hw list').",
)
@click.option(
    "--label",
    type=RunLabel(),
    default=None,
    help=f"Label of the stored run, one line of at most {MAX_LABEL_CHARS} characters (default: the suite).",
)
@click.option("--no-save", is_flag=True, help="Do not write the results to the store.")
@click.option(
    "--plot", "plot_path", type=OutputPath(example="roofline.png"), default=None, help="Roofline chart file."
)
@json_option
def command(suite: str, as_json: bool, **options: Any) -> int:
    """Run a microbenchmark SUITE and show each result beside its speed of light.

    Results (with the environment fingerprint) are saved to the results store
    unless --no-save. Exit code 1 when a result fails its correctness check.
    """
    if suite != "gemm" and (options["dtypes"] or options["model"]):
        raise UserInputError("--dtype and --model apply to the gemm suite only")
    if not options["model"]:  # the sweep has its own shapes: --tp and --tokens would change nothing
        refuse_together(given_flags("tp", "tokens"), "only with --model NAME (they shape a model's GEMMs)")
    if suite != "membw":
        refuse_together(given_flags("array_size"), "only with the membw suite")
    if suite not in PLOTTED_SUITES:  # the roofline has no point for a latency, a copy or a collective
        refuse_together(given_flags("plot_path"), f"only with the {' and '.join(PLOTTED_SUITES)} suites")
    if suite != "collectives":
        refuse_together(
            given_flags("collectives", "sizes", "num_processes", "timeout"),
            "only with the collectives suite",
        )
    if options["plot_path"] is not None:  # a path the chart cannot go to fails before any timing
        check_roofline_plot(options["plot_path"])
    options["dtypes"] = _split(options["dtypes"], flag="--dtype", example="fp32,bf16")
    options["collectives"] = _split(options["collectives"], flag="--collective", example="all_reduce")
    # shapes first: a model that does not load or a TP that does not split it fails before any timing
    options["model_shapes"] = (
        model_shapes(model_by_name_or_path(options["model"]), tp=options["tp"], num_tokens=options["tokens"])
        if options["model"]
        else None
    )
    device = resolve_device(options["device"], num_threads=options["threads"])
    sol = device_sol(device=device, catalog=get_context().catalog(), sol_device=options["sol_device"])
    saves = _saves(suite, options)
    if saves:
        _check_store()
    with progress_bar(enabled=not as_json, title=f"bench {suite}") as progress:
        results = _run_suite(suite, device, sol, options, progress)
    if not results:  # a non-zero torchrun rank: rank 0 reports
        return 0
    # what was measured is shown first and saved before the plot is drawn: a store that fails to
    # take it (the disk filled up during the run) costs the saving, and a plot that cannot be
    # written the plot, never the minutes of measurements
    if as_json:
        print_json(results)
    else:
        render_results(results, title=f"bench {suite}", device_name=device.name)
    if saves:
        run_id = _save(results, suite, options["label"])
        if not as_json:
            click.echo(f"saved as run {run_id} (lightspeed results show {run_id})")
    if options["plot_path"] is not None:
        precision = results[0].dtype if suite == "gemm" and results[0].dtype else "fp32"
        written = save_roofline(results, sol=sol, precision=precision, title=f"{suite} on {device.name}",
                                path=options["plot_path"])  # fmt: skip
        click.echo(f"roofline written to {', '.join(str(path) for path in written)}", err=as_json)
    return 0 if all(result.correct for result in results) else 1
