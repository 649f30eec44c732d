"""Stored payloads as a database people can query: --where on both backends, JSONB on a real PostgreSQL."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from lightspeed.errors import UserInputError
from lightspeed.store import NewRecord, open_store

FINGERPRINT = {"host_name": "node-7", "gpus": ["H100"]}


def _runs(location: str) -> dict[str, str]:
    """Three runs with payloads a team filters by; returns label -> run id."""
    payloads = {
        "h100-llama": {
            "system": "dgx-h100",
            "model": "llama-3-8b",
            "git_commit": "1a2b3c",
            "plan": {"tp": 8},
        },
        "h100-mixtral": {"system": "dgx-h100", "model": "mixtral", "git_commit": "1a2b3c", "plan": {"tp": 4}},
        "a100-llama": {"system": "dgx-a100", "model": "llama-3-8b", "plan": {"tp": "8"}, "fp8": False},
    }
    ids = {}
    with open_store(location) as store:
        for label, payload in payloads.items():
            record = NewRecord(name="step", metric="step_time_s", value=1.0, unit="s", payload=payload)
            fingerprint = {**FINGERPRINT, "host_name": label.split("-")[0]}
            ids[label] = store.add_records(
                kind="prediction", records=[record], label=label, fingerprint=fingerprint
            )
    return ids


def _labels(location: str, *where: str) -> set[str]:
    with open_store(location, create=False) as store:
        return {run.label for run in store.runs(where=where)}


def test_where_on_both_backends(store_url: str) -> None:
    _runs(store_url)
    assert _labels(store_url, "model=llama-3-8b") == {"h100-llama", "a100-llama"}
    assert _labels(store_url, "model=llama-3-8b", "system=dgx-h100") == {"h100-llama"}
    assert _labels(store_url, "git_commit=1a2b3c") == {"h100-llama", "h100-mixtral"}
    # typed: the number 8 is not the text "8"; a quoted value asks for the text
    assert _labels(store_url, "plan.tp=8") == {"h100-llama"}
    assert _labels(store_url, 'plan.tp="8"') == {"a100-llama"}
    assert _labels(store_url, "fp8=false") == {"a100-llama"}
    assert _labels(store_url, "env.host_name=h100") == {"h100-llama", "h100-mixtral"}
    assert _labels(store_url, "label=a100-llama") == {"a100-llama"}
    assert _labels(store_url, "model=nothing-like-it") == set()
    assert _labels(store_url, "no_such_field=1") == set()
    with open_store(store_url, create=False) as store:
        records = store.records(where=["plan.tp=4"])
    assert [record.payload["model"] for record in records] == ["mixtral"]


def test_a_value_that_looks_like_sql_is_only_a_value(store_url: str) -> None:
    _runs(store_url)
    assert _labels(store_url, "model=x' OR '1'='1") == set()
    assert _labels(store_url, "model=llama-3-8b") == {"h100-llama", "a100-llama"}  # the table is intact


@pytest.mark.parametrize("bad", ["model", "=x", "a..b=1", "mod el=x", "a;drop=1"])
def test_a_malformed_condition_is_a_user_error(tmp_path: Any, bad: str) -> None:
    with open_store(tmp_path / "r.sqlite") as store, pytest.raises(UserInputError, match="key=value"):
        store.runs(where=[bad])


def test_cli_where(run_cli: Any) -> None:
    from lightspeed.store import default_store_path

    _runs(str(default_store_path()))
    result = run_cli("results", "list", "--where", "model=llama-3-8b", "--where", "system=dgx-a100", "--json")
    assert result.code == 0
    assert [run["label"] for run in json.loads(result.out)] == ["a100-llama"]
    exported = run_cli("results", "export", "--where", "plan.tp=4")
    assert [record["payload"]["model"] for record in json.loads(exported.out)] == ["mixtral"]


# -- PostgreSQL: TEXT payloads of schema 2 become JSONB without loss ------------------------------

# Payload texts as schema 2 stored them, chosen to catch a lossy conversion: floats that
# print long, a tiny and a huge number, unicode, nesting, key order, a payload that is not
# JSON at all, and one with NaN (Python's json writes it; JSON and PostgreSQL do not).
TEXTS = [
    json.dumps({"value": 0.1, "tiny": 1e-300, "huge": 123456789012345678901, "ratio": 2 / 3}),
    json.dumps({"name": "Grüße ∑ 東京", "nested": {"list": [1, 2.5, None, True], "b": {"c": "d"}}}),
    '{"z": 1, "a": 2}',
    "this is not JSON (hand-edited)",
    '{"value": NaN}',
]


def _schema_2_store(url: str) -> None:
    """A store at schema 2 (TEXT payloads), written by this lightspeed then taken back to 2."""
    import psycopg

    with open_store(url) as store:
        store.add_records(kind="benchmark", records=[], fingerprint=FINGERPRINT, label="old")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("DELETE FROM schema_version WHERE version = 3")
        for index in ("records_payload", "records_by_system", "records_by_model", "records_by_git_commit"):
            connection.execute(f"DROP INDEX {index}")  # names written here, not input
        connection.execute("ALTER TABLE records ALTER COLUMN payload TYPE TEXT USING payload::text")
        connection.execute("ALTER TABLE fingerprints ALTER COLUMN payload TYPE TEXT USING payload::text")
        (run_id,) = connection.execute("SELECT run_id FROM runs").fetchone()
        (fingerprint_id,) = connection.execute("SELECT fingerprint_id FROM runs").fetchone()
        for number, text in enumerate(TEXTS):
            connection.execute(
                "INSERT INTO records(run_id, kind, created_s, name, metric, value, unit, sol, "
                "fingerprint_id, payload) VALUES (%s, 'benchmark', 1.0, %s, 'm', 1.0, 's', NULL, %s, %s)",
                (run_id, f"row {number}", fingerprint_id, text),
            )


def _not_json(name: str) -> Any:
    raise ValueError(name)


def test_text_payloads_become_jsonb_without_loss(postgres_url: str) -> None:
    import psycopg

    _schema_2_store(postgres_url)
    with open_store(postgres_url) as store:  # migrates to schema 3
        assert store.schema_version() == 3
        records = {record.name: record.stored_payload for record in store.records(kind="benchmark")}
    for number, text in enumerate(TEXTS):
        stored = records[f"row {number}"]
        try:
            expected = json.loads(text, parse_constant=_not_json)
        except ValueError:
            expected = text  # not JSON (or NaN, which PostgreSQL's JSON lacks): kept whole, as a string
        assert stored == expected, text
        if isinstance(expected, dict) and "ratio" in expected:  # floats bit for bit
            assert stored["ratio"].hex() == (2 / 3).hex()
            assert stored["tiny"] == 1e-300
            assert not math.isnan(stored["value"])
    with psycopg.connect(postgres_url) as connection:
        types = dict(
            connection.execute(
                "SELECT table_name, data_type FROM information_schema.columns WHERE column_name = 'payload'"
            ).fetchall()
        )
        indexes = {row[0] for row in connection.execute("SELECT indexname FROM pg_indexes").fetchall()}
    assert types == {"records": "jsonb", "fingerprints": "jsonb"}
    assert {"records_payload", "records_by_system", "records_by_model", "records_by_git_commit"} <= indexes
    assert "runs_by_kind" in indexes


def test_where_on_postgres_is_served_by_the_gin_index(postgres_url: str) -> None:
    import psycopg

    _runs(postgres_url)
    with psycopg.connect(postgres_url) as connection:
        connection.execute("SET enable_seqscan = off")  # three rows: make the planner show it can
        plan = connection.execute(
            "EXPLAIN SELECT 1 FROM records r WHERE r.payload @> %s::jsonb", ('{"model": "mixtral"}',)
        ).fetchall()
    assert "records_payload" in " ".join(row[0] for row in plan)


def test_sqlite_has_the_expression_indexes(tmp_path: Any) -> None:
    import sqlite3

    path = tmp_path / "r.sqlite"
    open_store(path).close()
    names = {
        row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='index'")
    }
    assert {"records_by_system", "records_by_model", "records_by_git_commit", "runs_by_kind"} <= names
