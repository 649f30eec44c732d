"""``lightspeed doctor``: which optional parts are installed and which backends this machine reaches."""

from __future__ import annotations

import click

from lightspeed.cli._common import emit, json_option
from lightspeed.cli.options import TIMEOUT
from lightspeed.doctor import exporter_url, refuse_malformed_ray_address, run_checks
from lightspeed.report import render_doctor


def _exporter_form(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an ``--exporter`` that is not ``HOST:PORT`` or an http(s) URL (``ftp://x``, ``notaurl``,
    ``127.0.0.1:0``) in one line before any check runs: it is bad input, where a well-formed
    address nothing answers at is a doctor finding. An empty value is :func:`run_checks`' to refuse."""
    if value is not None and value.strip():
        exporter_url(value)
    return value


def _ray_address_form(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a ``--ray-address`` of another form (``http://``) in one line before any check runs,
    as :func:`_exporter_form` does for ``--exporter``."""
    if value is not None and value.strip():
        refuse_malformed_ray_address(value)
    return value


@click.command("doctor")
@click.option(
    "--exporter",
    metavar="HOST:PORT",
    callback=_exporter_form,
    help="Also scrape this Prometheus exporter (a running 'lightspeed monitor serve --port P').",
)
@click.option(
    "--ray-address",
    metavar="HOST:PORT",
    callback=_ray_address_form,
    help="The Ray cluster to reach: HOST:PORT, ray://HOST:PORT or auto (the cluster 'ray start' "
    "started on this node); default $RAY_ADDRESS; none: a local Ray is started when needed.",
)
@click.option("--dcgm-host", default="localhost", show_default=True, help="Where DCGM's nv-hostengine runs.")
@click.option(
    "--timeout",
    "timeout_s",
    type=TIMEOUT,
    default=2.0,
    show_default=True,
    help="Seconds to wait for each backend.",
)
@json_option
def command(
    *, exporter: str | None, ray_address: str | None, dcgm_host: str, timeout_s: float, as_json: bool
) -> int:
    """Each optional extra (installed or not, with versions) and each backend (NVML, DCGM, Ray,
    PostgreSQL at $LIGHTSPEED_STORE, a Prometheus exporter) with whether it answers: one line each.

    Exit code 0 whatever is missing or unreachable: the doctor reports, it does not fail. An
    --exporter that is not HOST:PORT or an http(s) URL, or a --ray-address that is not HOST:PORT,
    ray://HOST:PORT or auto, is bad input (exit code 2).
    """
    report = run_checks(exporter=exporter, ray_address=ray_address, dcgm_host=dcgm_host, timeout_s=timeout_s)
    emit(report, as_json, render_doctor)
    return 0
