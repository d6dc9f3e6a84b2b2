"""Making the one ``QdrantClient`` that every library's ``QdrantVectorStore`` shares.

``qdrant_client`` is imported here, lazily: ``import ragspine`` never loads it, and a missing
driver raises :class:`MissingDependencyError` naming the extra (``pip install
'ragspine[qdrant]'``).

Three ways to reach Qdrant:

* ``make_qdrant_client("http://host:6333", api_key=...)`` — a Qdrant server (REST);
* ``make_qdrant_client(path="/var/lib/ragspine/qdrant")`` — local mode persisted under a
  folder (the path is locked: one client per path, across processes too);
* ``make_qdrant_client(location=":memory:")`` (or ``path=":memory:"``) — local mode in memory.

Build one client per process and hand it to every store: a store is cheap (it owns no
connection), libraries share one collection per embedding model, and local mode refuses a
second client on the same path. The caller owns the client and closes it.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import TYPE_CHECKING, Any, Iterator

from ragspine.errors import BackendError, ConfigError, MissingDependencyError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["make_qdrant_client", "is_local", "is_in_memory", "describe_client", "client_guard", "is_unreachable", "root_cause"]

MEMORY = ":memory:"


def _import_qdrant() -> Any:
    try:
        import qdrant_client
    except ImportError:
        raise MissingDependencyError("qdrant-client", "qdrant", "the Qdrant vector store") from None
    return qdrant_client


def make_qdrant_client(
    url: str | None = None,
    *,
    path: str | None = None,
    location: str | None = None,
    api_key: str | None = None,
    timeout: int = 10,
) -> Any:
    """A ``QdrantClient`` for a server ``url``, a local-mode ``path`` or ``location=":memory:"``.

    Exactly one of ``url``, ``path`` and ``location`` is given. No request is sent here (the
    REST client connects on first use); local mode opens (and locks) its folder at once.
    """
    given = [name for name, value in (("url", url), ("path", path), ("location", location)) if value]
    if len(given) != 1:
        raise ConfigError(
            "make_qdrant_client needs exactly one of url= (a Qdrant server), path= (local mode "
            f"on disk) or location=':memory:'; got {', '.join(given) or 'none'}"
        )
    qdrant_client = _import_qdrant()
    if path == MEMORY:
        path, location = None, MEMORY
    if location is not None and location != MEMORY:
        url, location = location, None  # QdrantClient treats any other location as a URL
    try:
        if location == MEMORY:
            return qdrant_client.QdrantClient(location=MEMORY)
        if path is not None:
            return qdrant_client.QdrantClient(path=path)
        # check_compatibility=False: the version check is a request on a background thread
        # that only warns; an unreachable server is reported by the first store call instead.
        return qdrant_client.QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
    except RuntimeError as exc:  # local mode: the folder is locked by another client
        raise BackendError(
            f"cannot open Qdrant local mode at {path}: {exc} Share one client per path "
            "(make_qdrant_client once per process) or run a Qdrant server for concurrent access"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"cannot use Qdrant URL {url!r}: {exc}") from exc


def is_local(client: QdrantClient) -> bool:
    """True for a local-mode (in-process) client."""
    try:
        from qdrant_client.local.qdrant_local import QdrantLocal
    except ImportError:  # pragma: no cover - qdrant_client without local mode
        return False
    return isinstance(getattr(client, "_client", None), QdrantLocal)


def is_in_memory(client: QdrantClient) -> bool:
    """True for a local-mode client on ``:memory:``: its points die with the process."""
    return is_local(client) and getattr(getattr(client, "_client", None), "location", None) == ":memory:"


def describe_client(client: QdrantClient) -> str:
    """``"Qdrant at http://host:6333"`` or ``"Qdrant local mode (:memory:)"`` for messages."""
    inner = getattr(client, "_client", None)
    if is_local(client):
        return f"Qdrant local mode ({getattr(inner, 'location', '?')})"
    uri = getattr(inner, "rest_uri", None)
    return f"Qdrant at {uri}" if uri else "Qdrant"


# -- shared by the stores: a lock for local mode, and recognising an unreachable server ----
_LOCAL_LOCKS: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()
_LOCAL_LOCKS_GUARD = threading.Lock()


def client_guard(client: QdrantClient) -> Any:
    """A context manager serializing calls on a local-mode client (which is not thread-safe;
    every store sharing the client takes the same lock); a no-op for a server client."""
    if not is_local(client):
        return contextlib.nullcontext()
    with _LOCAL_LOCKS_GUARD:
        lock = _LOCAL_LOCKS.get(client)
        if lock is None:
            lock = _LOCAL_LOCKS[client] = threading.RLock()
        return lock


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        source = getattr(current, "source", None)  # qdrant_client's ResponseHandlingException
        current = source if isinstance(source, BaseException) else (current.__cause__ or current.__context__)


def root_cause(exc: BaseException) -> BaseException:
    return list(_chain(exc))[-1]


def is_unreachable(exc: BaseException) -> bool:
    """Did ``exc`` come from failing to connect (REST or gRPC)?"""
    for e in _chain(exc):
        if isinstance(e, ConnectionError) or type(e).__name__ in ("ConnectError", "ConnectTimeout"):
            return True
        code = getattr(e, "code", None)
        if callable(code) and getattr(code(), "name", "") == "UNAVAILABLE":  # grpc.RpcError
            return True
    return False
