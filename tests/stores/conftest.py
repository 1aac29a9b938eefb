"""Fixtures for the session-store tests: a real PostgreSQL server (no mocks) and store factories.

The server comes from ``scripts/pg-test-cluster.sh`` (installs PostgreSQL from Debian's packages
when it is missing, runs it on a free loopback port) once per test session, or from
``FOLDLOG_TEST_DSN`` when that names an existing server. When the server cannot be started the
tests that need it FAIL with the script's reason; they are never skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.stores.store_helpers import stop_workers

REPO = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO / "scripts" / "pg-test-cluster.sh"

STORE_KINDS = ["postgres", "file"]


@pytest.fixture(autouse=True)
def _stop_workers() -> Iterator[None]:
    """Each test's worker processes end with it, their pipes closed."""
    yield
    stop_workers()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """DSN of a PostgreSQL server's maintenance database (``postgres``)."""
    external = os.environ.get("FOLDLOG_TEST_DSN")
    if external:
        yield external
        return
    folder = tempfile.mkdtemp(prefix="foldlog-pg-test-")
    try:
        proc = subprocess.run(
            ["bash", str(CLUSTER_SCRIPT), "start", folder],
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"starting PostgreSQL timed out: {exc}", pytrace=False)
    if proc.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(
            f"could not start PostgreSQL for the store tests (scripts/pg-test-cluster.sh exit "
            f"{proc.returncode}):\n{proc.stderr.strip()}",
            pytrace=False,
        )
    dsn = proc.stdout.strip().splitlines()[-1]
    try:
        yield dsn
    finally:
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop", folder], capture_output=True, timeout=120)


def _with_dbname(dsn: str, dbname: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return str(make_conninfo("", **params))


def create_database(server_dsn: str) -> str:
    """A new empty database on the test server; returns its DSN."""
    import psycopg

    name = f"foldlog_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return _with_dbname(server_dsn, name)


@pytest.fixture(scope="session")
def pg_dsn(pg_server: str) -> str:
    """A database with the foldlog schema (``foldlog db init`` applied), shared by the session."""
    from foldlog.stores.postgres import init_db

    dsn = create_database(pg_server)
    init_db(dsn)
    return dsn


@pytest.fixture
def pg_empty_db(pg_server: str) -> str:
    """A database without the foldlog schema."""
    return create_database(pg_server)


def _truncate(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE foldlog.checkpoints, foldlog.events, foldlog.sessions")


@pytest.fixture
def pstore(pg_dsn: str) -> Any:
    """A PostgreSQL store on the shared test database, emptied first."""
    from foldlog.stores.postgres import PostgresStore

    _truncate(pg_dsn)
    with PostgresStore(pg_dsn) as store:
        yield store


@pytest.fixture(params=STORE_KINDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """How to build the store under test, as JSON (child processes build their own from it)."""
    kind = request.param
    if kind == "postgres":
        dsn = request.getfixturevalue("pg_dsn")
        _truncate(dsn)
        return {"kind": "postgres", "dsn": dsn}
    root = tmp_path / "sessions"
    root.mkdir()
    return {"kind": "file", "root": str(root)}


def make_store(spec: dict[str, Any]) -> Any:
    if spec["kind"] == "postgres":
        from foldlog.stores.postgres import PostgresStore

        return PostgresStore(spec["dsn"])
    from foldlog.stores.file import FileStore

    return FileStore(spec["root"])


@pytest.fixture
def store(store_spec: dict[str, Any]) -> Iterator[Any]:
    s = make_store(store_spec)
    try:
        yield s
    finally:
        close = getattr(s, "close", None)
        if close is not None:
            close()
