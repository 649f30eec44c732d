"""Shared fixtures: the copy of ../shared data in tests/data/shared, CLI runner, GPU skip (the isolated home
is in ../conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# the repository's copy of ../shared (data and validation rows, with their licences)
SHARED = Path(os.environ.get("LIGHTSPEED_SHARED", REPO / "tests" / "data" / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def shared() -> Path:
    """The test data copied from ../shared (data, validation); a missing copy is an error, not a skip."""
    if not SHARED.is_dir():
        raise FileNotFoundError(
            f"test data not found at {SHARED} (tests/data/shared is part of the repository)"
        )
    return SHARED


class CliResult:
    """Exit code and captured streams of one ``lightspeed`` invocation."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Call ``lightspeed.cli.main.main(args)`` in-process and capture its output."""
    from lightspeed.cli.main import main

    def _run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return _run


def _write_step_trace(path: Path, step_us: list[int], rank: int | None = None) -> Path:
    """A minimal Kineto trace: one ProfilerStep#N user annotation per step, back to back."""
    events, start = [], 1_000
    for number, duration in enumerate(step_us):
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{number}",
                "pid": 1,
                "tid": 1,
                "ts": start,
                "dur": duration,
            }
        )
        start += duration
    document: dict[str, object] = {"schemaVersion": 1, "traceEvents": events}
    if rank is not None:
        document["distributedInfo"] = {"rank": rank, "world_size": 2, "backend": "nccl"}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture
def write_step_trace():  # type: ignore[no-untyped-def]
    """``write_step_trace(path, step_us, rank=None)`` writes a trace of ProfilerStep spans."""
    return _write_step_trace


# -- a throwaway PostgreSQL server for the store's tests -----------------------


class PostgresServer:
    """A cluster made by initdb in a temporary folder, listening on 127.0.0.1 only."""

    def __init__(self, bin_dir: Path, root: Path, user: str | None) -> None:
        import secrets
        import socket

        self.bin_dir = bin_dir
        self.root = root
        self.data = root / "data"
        self.user = user  # the system user the server runs as (PostgreSQL refuses root)
        self.password = "pw-" + secrets.token_hex(8)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    def _run(self, *args: str) -> None:
        import subprocess

        result = subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]],
            user=self.user,
            cwd=self.root,  # a folder the server's user may enter (CI's checkout may be private to root)
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")

    def start(self) -> None:
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n", encoding="utf-8")
        if self.user is not None:
            shutil.chown(self.root, user=self.user)
            shutil.chown(password_file, user=self.user)
        self._run(
            "initdb", "-D", str(self.data), "-U", "lightspeed", "--auth-host=scram-sha-256",
            "--auth-local=trust", f"--pwfile={password_file}", "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c fsync=off -c max_connections=60"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://lightspeed:{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        import secrets

        import psycopg

        name = "store_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")  # a name made here, not input
        return self.url(name)


def _postgres_bin_dir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def _missing_postgres(why: str) -> None:
    """Fail in CI (the PostgreSQL tests must run there), skip elsewhere."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run in CI: {why} (./dev test installs postgresql as root)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def postgres_server():  # type: ignore[no-untyped-def]
    """A real PostgreSQL server for the whole session (initdb + pg_ctl), stopped at the end."""
    import importlib.util
    import pwd

    bin_dir = _postgres_bin_dir()
    if bin_dir is None:
        _missing_postgres("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
    if importlib.util.find_spec("psycopg") is None:
        _missing_postgres("psycopg is not installed (pip install -e '.[postgres]')")
    user = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres").pw_name
        except KeyError:
            _missing_postgres("running as root and there is no 'postgres' system user to run the server")
    assert bin_dir is not None
    # Not under pytest's temp folder: that one is private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="lightspeed-postgres-"))
    server = PostgresServer(bin_dir, root, user)
    try:
        server.start()
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL (with its password) of a fresh, empty database on the session's server."""
    return postgres_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store location on each backend: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database()
