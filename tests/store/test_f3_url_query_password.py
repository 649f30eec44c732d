"""A password in a PostgreSQL URL's query (libpq's ``password=``, ``sslpassword=``) is masked in
every message, as the user part's password is (docs/store.md)."""

from __future__ import annotations

import re
import socket

import pytest

from expect import one_line_error
from lightspeed.errors import StoreError
from lightspeed.store import NewRecord, open_store, store_location
from lightspeed.store.location import mask_password


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ci@db/perf?password=hunter2", "postgresql://ci@db/perf?password=***"),
        (
            "postgresql://ci@db/perf?sslmode=require&sslpassword=k3y&application_name=x",
            "postgresql://ci@db/perf?sslmode=require&sslpassword=***&application_name=x",
        ),
        ("postgres://ci:pw@db/perf?PASSWORD=two", "postgres://ci:***@db/perf?PASSWORD=***"),
        ("postgresql://ci@db/perf?pass%77ord=enc", "postgresql://ci@db/perf?pass%77ord=***"),
        (
            "postgresql://ci@db/perf?password=a#b&sslpassword=c",
            "postgresql://ci@db/perf?password=***&sslpassword=***",
        ),
        ("postgresql://ci@db/perf?sslmode=require", "postgresql://ci@db/perf?sslmode=require"),
    ],
)
def test_query_passwords_are_masked_in_the_display(url: str, shown: str) -> None:
    assert mask_password(url) == shown
    where = store_location(url)
    assert where.display == shown
    assert where.url == url  # the connection still gets the secret


def test_scrub_removes_query_secrets_from_driver_messages() -> None:
    where = store_location("postgresql://ci@db/perf?password=s%40cret&sslpassword=other")
    text = where.scrub('connection failed: password "s@cret" and key other for postgresql://ci@db/perf')
    assert "s@cret" not in text
    assert "other" not in text
    assert "s%40cret" not in repr(where)


def test_unparseable_url_masks_the_query_password() -> None:
    with pytest.raises(Exception, match=r"password=\*\*\*") as caught:
        store_location("postgresql://u@[::1/db?password=hunter2")
    assert "hunter2" not in str(caught.value)


def _query_form(postgres_url: str) -> tuple[str, str]:
    """``postgresql://lightspeed:PW@host/db`` as ``postgresql://lightspeed@host/db?password=PW``."""
    match = re.fullmatch(r"postgresql://(\w+):([^@]+)@(.+)", postgres_url)
    assert match is not None
    user, secret, rest = match.groups()
    return f"postgresql://{user}@{rest}?password={secret}", secret


def test_cli_never_prints_a_query_password(run_cli, postgres_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    url, secret = _query_form(postgres_url)
    with open_store() as local:  # the isolated home's SQLite store
        local.add_records(
            kind="benchmark",
            fingerprint={"host_name": "h"},
            records=[NewRecord(name="n", metric="bytes_per_s", value=1.0, unit="B/s")],
        )
    pushed = run_cli("results", "push", "--to", url)
    assert pushed.code == 0, pushed.err
    assert "password=***" in pushed.out
    monkeypatch.setenv("LIGHTSPEED_STORE", url)
    listed = run_cli("results", "list")
    assert listed.code == 0, listed.err
    assert "password=***" in listed.out.replace("\n", "")
    for result in (pushed, listed):
        assert secret not in result.out + result.err


def test_unreachable_server_message_masks_the_query_password(run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    secret = "hunter2-query"
    url = f"postgresql://me@127.0.0.1:{closed_port}/perf?password={secret}&connect_timeout=2"
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError, match="cannot be reached") as caught:
        open_store(url, timeout_s=2)
    assert secret not in str(caught.value)
    assert "password=***" in str(caught.value)
    monkeypatch.setenv("LIGHTSPEED_STORE", url)
    line = one_line_error(run_cli("results", "list"), "cannot be reached", "password=***")
    assert secret not in line
