"""Entry point of the ``lightspeed`` command.

Subcommands live one per module and are imported only when used, so that
``lightspeed hw list`` never pays for numpy-heavy analyses it does not run.
User errors (:class:`lightspeed.errors.LightspeedError` and usage errors) are
caught here once: one line on stderr, exit code 2, no traceback. Output that cannot be
written (a full disk, an I/O error on stdout) is one line and exit code 2 as well; any
other exception is a bug in lightspeed: one line naming it, exit code 70 (``EX_SOFTWARE``),
the traceback only at debug level (``-vv``), so that CI never reads a crash as a
regression found (1) or as bad input (2).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import logging
import os
import select
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from lightspeed import __version__
from lightspeed.cli._common import CliContext, refuse_repeated_options
from lightspeed.cli._logging import LOG_ENVIRONMENT_VARIABLE, LOG_LEVELS, configure_logging
from lightspeed.cli.text_options import flag_of
from lightspeed.errors import LightspeedError, PlanDoesNotFitError, PlanMismatchError
from lightspeed.files import excerpt, unusable_path

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

LOG = logging.getLogger("lightspeed.cli")

# name -> (module, one-line help). The module defines ``command``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "tour": ("lightspeed.cli.tour", "Show the whole loop on this machine: SOL, measure, predict, report."),
    "doctor": ("lightspeed.cli.doctor", "Which optional parts are installed and which backends answer."),
    "hw": ("lightspeed.cli.hw", "Hardware catalog: list, show, compare, detect."),
    "model": ("lightspeed.cli.model", "Model architectures: list, show."),
    "memory": ("lightspeed.cli.memory", "Bytes to hold a model and how many GPUs that takes."),
    "flops": ("lightspeed.cli.flops", "Total training FLOPs for a token budget, formula shown."),
    "plan": ("lightspeed.cli.plan", "Predict one training or inference plan."),
    "search": ("lightspeed.cli.search", "Search every training or inference plan."),
    "simulate": (
        "lightspeed.cli.simulate",
        "Serve a workload request by request: latency percentiles, goodput at an SLO, capacity.",
    ),
    "mig": ("lightspeed.cli.mig", "MIG profiles; partition plans that serve several models on shared GPUs."),
    "moe": (
        "lightspeed.cli.moe",
        "MoE expert load: balance redundant experts, load statistics, synthetic loads.",
    ),
    "validate": ("lightspeed.cli.validate", "Predict published runs and report the error."),
    "compare": ("lightspeed.cli.compare", "Regression gate between results; or compare systems."),
    "bench": ("lightspeed.cli.bench", "Microbenchmarks of this machine against its SOL."),
    "results": ("lightspeed.cli.results", "The results store: list, show, export."),
    "calibrate": ("lightspeed.cli.calibrate", "Fit engine efficiencies from measurements."),
    "goodput": ("lightspeed.cli.goodput", "Goodput ledger of runs and logs; checkpoint planning."),
    "trace": ("lightspeed.cli.trace", "Profiler trace analyses."),
    "kernels": ("lightspeed.cli.kernels", "Nsight Compute kernels against their SOL, joined with a trace."),
    "monitor": ("lightspeed.cli.monitor", "Counters beside a job, joined to its steps; Prometheus exporter."),
    "report": ("lightspeed.cli.report", "Write the self-contained HTML report."),
    "cost": ("lightspeed.cli.cost", "Energy, power and cost of a job, cluster, upgrade or fleet."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in SUBCOMMANDS if _module_exists(SUBCOMMANDS[name][0])]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None or not _module_exists(entry[0]):
            return None
        module = importlib.import_module(entry[0])
        command = module.command
        assert isinstance(command, click.Command), f"{entry[0]}.command is not a click command"
        return command

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Subcommand names with their help from the table, importing none of them (each Tab press
        starts Python: importing every subcommand took seconds), then the group's options."""
        from click.shell_completion import CompletionItem

        names = [
            CompletionItem(name, help=SUBCOMMANDS[name][1])
            for name in self.list_commands(ctx)
            if name.startswith(incomplete)
        ]
        return names + click.Command.shell_complete(self, ctx, incomplete)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Refuse an option given twice (one place for every command) before parsing as click does."""
        if not ctx.resilient_parsing:
            refuse_repeated_options(self, ctx, args)
        return super().parse_args(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class _CatalogPaths(click.ParamType[str]):
    """Catalog paths kept as text, so that an empty element stays empty (``Path("")`` is the
    current folder, which would be read recursively)."""

    name = "path"
    envvar_list_splitter = os.pathsep

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="lightspeed")
@click.option(
    "--catalog",
    "catalog_paths",
    multiple=True,
    type=_CatalogPaths(),
    envvar="LIGHTSPEED_CATALOG",
    help="Extra hardware/model TOML file or folder that adds or overrides records "
    "(repeatable; env LIGHTSPEED_CATALOG, paths separated by ':').",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Say what lightspeed decided on stderr (profiles, calibration, catalog overrides, caches): "
    "-v info, -vv debug.",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    envvar=LOG_ENVIRONMENT_VARIABLE,
    help=f"Log level on stderr (env {LOG_ENVIRONMENT_VARIABLE}; default warning, or what -v asks).",
)
@click.pass_context
def cli(ctx: click.Context, catalog_paths: tuple[str, ...], verbose: int, log_level: str | None) -> None:
    """lightspeed: the speed of light of AI hardware, predictions, measurements and the gap."""
    configure_logging(verbose=verbose, level=log_level)
    ctx.obj = CliContext(catalog_paths=_split_env_paths(catalog_paths))
    if ctx.obj.catalog_paths:
        LOG.info("catalog and model files added: %s", ", ".join(map(str, ctx.obj.catalog_paths)))


def _split_env_paths(paths: tuple[str, ...]) -> tuple[Path, ...]:
    """Paths of --catalog values and LIGHTSPEED_CATALOG; empty elements (``/x:``) name nothing."""
    return tuple(Path(part) for path in paths for part in path.split(os.pathsep) if part.strip())


# click >= 8.2 raises this usage error for a group called with no arguments (8.1 printed the help
# and exited 0 itself, through click.exceptions.Exit)
_NO_ARGS_IS_HELP: tuple[type[click.UsageError], ...] = tuple(
    getattr(click.exceptions, name) for name in ("NoArgsIsHelpError",) if hasattr(click.exceptions, name)
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code (0 ok, 1 regression found, 2 bad input or output
    that cannot be written, 70 an internal error (a bug), 141 the reader of stdout gone)."""
    args = list(sys.argv[1:] if argv is None else argv)
    stdout_before = _stdout_identity()
    try:
        result = cli.main(args=args, prog_name="lightspeed", standalone_mode=False)
        sys.stdout.flush()  # a full disk or an I/O error shows here, not at exit
    except click.exceptions.Exit as exit_:
        return int(exit_.exit_code)
    except SystemExit as exit_:
        # click (on EPIPE) and rich (Console.on_broken_pipe) end with exit status 1 when the reader
        # of stdout has gone (``| head``): that is no failure of this command
        if exit_.code != 0 and _stdout_reader_gone(stdout_before):
            return _broken_pipe()
        raise
    except _NO_ARGS_IS_HELP as help_:
        # a bare group (``lightspeed``, ``lightspeed plan``): its help as click prints it, laid
        # out, with click's own exit status, not squashed into one error line
        help_.show()
        return int(help_.exit_code)
    except click.BadParameter as error:
        return _fail(_usage_message(error, _from_environment(error)))
    except click.UsageError as error:
        return _fail(_usage_message(error, _synonym_suggestion(error)))
    except click.ClickException as error:
        return _fail(error.format_message())
    except click.Abort:
        click.echo("lightspeed: aborted", err=True)
        return 130
    except (PlanDoesNotFitError, PlanMismatchError) as error:
        return _fail(error.describe(plan_flag))
    except LightspeedError as error:
        return _fail(str(error))
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as error:
        if _is_output_error(error):
            return _output_failed(error)
        refusal = unusable_path(error.filename or "a path", error)  # too long: any reader or writer
        if refusal is not None:
            return _fail(str(refusal))
        return _internal_error(error)
    except Exception as error:  # the last resort: a bug, never a verdict
        return _internal_error(error)
    return int(result) if isinstance(result, int) else 0


# errno values of a write to stdout that failed for good (no space, quota, file size, I/O)
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
# The status of an unexpected exception: sysexits.h EX_SOFTWARE, "internal software error",
# neither 1 (a regression found) nor 2 (bad input)
INTERNAL_ERROR_STATUS = 70


def _is_output_error(error: OSError) -> bool:
    """Whether ``error`` is a failed write of the output (a stream error names no file)."""
    return error.errno in _OUTPUT_ERRNOS and error.filename is None


def _output_failed(error: OSError) -> int:
    """One line, exit code 2; stdout pointed at the null device, so that flushing what is still
    buffered raises nothing at exit (when stdout is the process's own, not a test's stand-in)."""
    if sys.stdout is sys.__stdout__:
        _discard_stdout()
    return _fail(
        f"cannot write the output: {error.strerror or error} (errno {error.errno}); free space or "
        "write the output elsewhere"
    )


def _internal_error(error: BaseException) -> int:
    """One line naming the exception, exit code :data:`INTERNAL_ERROR_STATUS`; the traceback at
    debug level only."""
    LOG.debug("internal error, traceback:", exc_info=error)
    message = " ".join(str(error).split())
    if len(message) > 300:
        message = message[:297] + "..."
    click.echo(
        f"lightspeed: internal error: {type(error).__name__}: {message} -- this is a bug in lightspeed; "
        f"run again with -vv (or {LOG_ENVIRONMENT_VARIABLE}=debug) to see the traceback, and report it",
        err=True,
    )
    return INTERNAL_ERROR_STATUS


def _stdout_identity() -> tuple[int, int] | None:
    """(device, inode) of what file descriptor 1 is now, or ``None`` when there is none."""
    try:
        status = os.fstat(1)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _stdout_reader_gone(before: tuple[int, int] | None) -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on the write end),
    or was swapped for the null device during the run (what rich does on a broken pipe)."""
    now = _stdout_identity()
    if before is not None and now is not None and now != before:
        try:
            null = os.stat(os.devnull)
        except OSError:
            return False
        return now == (null.st_dev, null.st_ino)
    poll = getattr(select, "poll", None)
    if poll is None or now is None:
        return False
    poller = poll()
    poller.register(1, select.POLLOUT)
    try:
        events = poller.poll(0)
    except OSError:
        return False
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in events)


# The status of a process whose output pipe closed (128 + SIGPIPE, what `yes | head -1` leaves):
# not 0, which would pass a CI gate whose result was never printed, nor 1 (a regression found)
BROKEN_PIPE_STATUS = 141


def _broken_pipe() -> int:
    """Exit quietly when the reader of stdout has gone (``lightspeed ... | head -1``) with
    :data:`BROKEN_PIPE_STATUS`: point stdout at the null device, so that flushing what is still
    buffered raises nothing at exit."""
    _discard_stdout()
    return BROKEN_PIPE_STATUS


def _discard_stdout() -> None:
    """Point file descriptor 1 at the null device (what is still buffered goes nowhere)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def plan_flag(name: str, value: int | float | str | bool) -> str:
    """One plan setting as the option that sets it: ``--tp 8``, ``--zero-stage 1``, ``--kv-replication``."""
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else ""
    return f"{flag} {value}"


def _usage_message(error: click.UsageError, message: str | None = None) -> str:
    command = error.ctx.command_path if error.ctx is not None else "lightspeed"
    return f"{message or error.format_message()} (see '{command} --help')"


# options one command names otherwise: search infer's --rate is plan infer's and simulate's
# --arrival-rate (click's spelling suggestions would offer '--force', '--router', '--trace')
_OPTION_SYNONYMS: dict[str, str] = {"--rate": "--arrival-rate", "--arrival-rate": "--rate"}


def _synonym_suggestion(error: click.UsageError) -> str | None:
    """``No such option '--rate'. Did you mean '--arrival-rate'? ...`` when the command has the
    option under another name; ``None`` otherwise (click's own message)."""
    if not isinstance(error, click.NoSuchOption) or error.ctx is None:
        return None
    synonym = _OPTION_SYNONYMS.get(error.option_name)
    names = {name for param in error.ctx.command.params for name in param.opts}
    if synonym is None or synonym not in names:
        return None
    return (
        f"No such option {error.option_name!r}. Did you mean {synonym!r}? (this command's name for "
        f"{error.option_name})"
    )


def _from_environment(error: click.BadParameter) -> str | None:
    """``LIGHTSPEED_LOG='verbose' (for --log-level): ...`` when the bad value came from an
    environment variable (the option was not on the command line); ``None`` otherwise."""
    param, ctx = error.param, error.ctx
    if param is None or ctx is None or param.name is None:
        return None
    if ctx.get_parameter_source(param.name) is not ParameterSource.ENVIRONMENT:
        return None
    names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    given = [name for name in names if name in os.environ]
    if not given:
        return None
    flag = flag_of(param)
    value = excerpt(os.environ[given[0]])
    problem = error.message.rstrip(".")
    return (
        f"{given[0]}={value!r} (for {flag}): {problem}; fix: set {given[0]} to an allowed value or unset it"
    )


# a word of a message longer than this is cut short (an option's value can hold megabytes); a
# path a user wrote, even a deep one, stays whole below it: it says where the problem is
_MAX_WORD_CHARS = 400


def _fail(message: str) -> int:
    click.echo(f"lightspeed: error: {' '.join(map(_cut_short, message.split()))}", err=True)
    return 2


def _cut_short(word: str) -> str:
    """``word`` of a message, a long one cut short (its quotes and punctuation kept around it).

    >>> _cut_short("'" + "y" * 500 + "',")
    "'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy... (500 characters)',"
    >>> len(_cut_short("/data/" + "d" * 200 + "/trace.json"))  # a deep path stays whole
    217
    """
    core = word.strip("'\"(),.:;")
    if len(core) <= _MAX_WORD_CHARS:
        return word
    start = word.index(core)
    return word[:start] + excerpt(core) + word[start + len(core) :]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
