"""``RedisEmbeddingCache``: embedding vectors in Redis, shared by every RAGSpine process.

Keys are the :func:`~ragspine.retrieval.vector.base.embedding_key` strings (model namespace
``model_id@dim`` + ``chunk_id`` + a hash of the embedded text, so a chunk whose text changed
never gets its old vector back), stored under ``prefix``. Values are the raw little-endian
float32 bytes of the vector; the empty value is the empty vector, RAGSpine's record of
"this model cannot read this text".

I/O per call: ``get_many`` sends one ``MGET`` per ``batch_size`` keys; ``set_many`` sends
one non-transactional pipeline of ``SET key value [EX ttl]`` per ``batch_size`` items.

A cache never fails a query. Any Redis error or timeout (``socket_timeout``, default
0.25 s; redis-py's own retries are switched off) turns the call into a fallback — reads
answer "miss", so the vectors are computed instead, writes are skipped — and opens a
circuit: for ``retry_after`` seconds Redis is not contacted at all, so a down or hung Redis
costs one timeout per ``retry_after`` window, not one per query. The first call after the
window probes Redis again (concurrent calls keep skipping it meanwhile). An outage logs a
warning when it starts and at most once a minute while it lasts; recovery logs one line.

``stats`` counts, for ``/metrics``: ``hits`` / ``misses`` (per key), ``errors`` (Redis calls
that failed) and ``fallbacks`` (calls answered without Redis: the failed ones plus those
made while the circuit was open).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.retrieval.vector.embedding_cache import CacheStats

if TYPE_CHECKING:
    import numpy.typing as npt

    from ragspine.config import Settings
    from ragspine.stores.registry import StoreSpec

__all__ = ["RedisCacheStats", "RedisEmbeddingCache", "DEFAULT_REDIS_URL", "DEFAULT_PREFIX"]

log = logging.getLogger(__name__)

DEFAULT_REDIS_URL = "redis://localhost:6379/0"
DEFAULT_PREFIX = "ragspine:emb:"
DEFAULT_BATCH_SIZE = 1000
WARN_EVERY_S = 60.0  # while Redis keeps failing, at most one warning per minute
_DTYPE = np.dtype("<f4")  # fixed byte order: any machine reads what any other wrote

T = TypeVar("T")


@dataclass
class RedisCacheStats(CacheStats):
    fallbacks: int = 0

    def as_dict(self) -> dict[str, int]:
        return {**super().as_dict(), "fallbacks": self.fallbacks}


def encode_vector(vector: npt.ArrayLike) -> bytes:
    return np.asarray(vector, dtype=_DTYPE).reshape(-1).tobytes()


def decode_vector(raw: bytes) -> np.ndarray | None:
    """The stored bytes as a float32 vector; ``None`` (a miss) for a value that is not one."""
    if not isinstance(raw, (bytes, bytearray, memoryview)) or len(raw) % _DTYPE.itemsize:
        return None
    return np.frombuffer(raw, dtype=_DTYPE).astype(np.float32)  # a writable copy


def redact_url(url: str) -> str:
    """``url`` without its password (for logs and ``repr``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


class RedisEmbeddingCache:
    """See the module docstring. The constructor does no I/O; ``close()`` when done.

    ``client`` injects a ready ``redis.Redis`` (its settings and lifetime stay the caller's,
    and it must not decode responses); otherwise one is built from ``url``
    (default :data:`DEFAULT_REDIS_URL`). ``ttl_seconds=None`` keeps vectors until Redis
    evicts them (run it with an ``allkeys-lru`` policy) — they stay valid as long as the
    model and the text do.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Any = None,
        prefix: str = DEFAULT_PREFIX,
        ttl_seconds: int | None = None,
        socket_timeout: float = 0.25,
        connect_timeout: float = 0.25,
        retry_after: float = 5.0,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if url is not None and client is not None:
            raise ConfigError("pass url= or client=, not both")
        valid_ttl = isinstance(ttl_seconds, int) and not isinstance(ttl_seconds, bool) and ttl_seconds > 0
        if ttl_seconds is not None and not valid_ttl:
            raise ConfigError(f"ttl_seconds must be a positive integer or None, not {ttl_seconds!r}")
        for name, value in (("socket_timeout", socket_timeout), ("connect_timeout", connect_timeout)):
            if not value > 0:
                raise ConfigError(f"{name} must be > 0, not {value!r}")
        if retry_after < 0:
            raise ConfigError(f"retry_after must be >= 0, not {retry_after!r}")
        if batch_size <= 0:
            raise ConfigError(f"batch_size must be > 0, not {batch_size!r}")
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.retry_after = float(retry_after)
        self.batch_size = batch_size
        self.stats = RedisCacheStats()
        self._lock = threading.Lock()
        self._open_until = 0.0  # monotonic time before which Redis is not contacted
        self._failing = False  # the last contact failed
        self._warned_at = float("-inf")  # monotonic time of the last outage warning
        self._owns_client = client is None
        self.url: str | None = None  # None when a client was injected
        if client is None:
            self.url = url or DEFAULT_REDIS_URL
            client = _build_client(self.url, socket_timeout, connect_timeout)
        self._client = client

    @classmethod
    def parse(cls, value: str, context: object) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        return StoreSpec("redis", value.strip())

    @classmethod
    def from_config(cls, spec: StoreSpec, settings: Settings, database: object = None) -> RedisEmbeddingCache:
        """``RAGSPINE_EMBEDDING_CACHE=redis://...``: keys under ``RAGSPINE_REDIS_PREFIX`` + ``emb:``."""
        ttl = settings.embedding_cache_ttl or None
        return cls(spec.target, prefix=f"{settings.redis_prefix}emb:", ttl_seconds=ttl)

    def check(self, timeout: float = 1.0) -> None:
        """Raise unless Redis answers ``PING`` within ``timeout`` seconds (the circuit is not
        involved: this is a health probe, not a cache call)."""
        if self.url is None:
            self._client.ping()
            return
        probe = _build_client(self.url, timeout, timeout)
        try:
            probe.ping()
        finally:
            probe.close()

    def __repr__(self) -> str:
        where = redact_url(self.url) if self.url else "client"
        return f"RedisEmbeddingCache({where!r}, prefix={self.prefix!r})"

    @property
    def client(self) -> Any:
        return self._client

    @property
    def circuit_open(self) -> bool:
        """True while Redis is being skipped after a failure."""
        return time.monotonic() < self._open_until

    # -- the EmbeddingCache role ----------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        keys = list(keys)
        if not keys:
            return []

        def read() -> list[Any]:
            raw: list[Any] = []
            for start in range(0, len(keys), self.batch_size):
                part = keys[start : start + self.batch_size]
                raw.extend(self._client.mget([self.prefix + k for k in part]))
            return raw

        raw = self._guarded("read", read)
        out: list[np.ndarray | None] = [None] * len(keys) if raw is None else [None if r is None else decode_vector(r) for r in raw]
        hits = sum(v is not None for v in out)
        with self._lock:
            self.stats.hits += hits
            self.stats.misses += len(keys) - hits
        return out

    def set_many(self, items: Mapping[str, np.ndarray]) -> None:
        entries = [(self.prefix + k, encode_vector(v)) for k, v in items.items()]
        if not entries:
            return

        def write() -> bool:
            for start in range(0, len(entries), self.batch_size):
                pipe = self._client.pipeline(transaction=False)
                for key, value in entries[start : start + self.batch_size]:
                    pipe.set(key, value, ex=self.ttl_seconds)
                pipe.execute()
            return True

        self._guarded("write", write)

    def delete_many(self, keys: Sequence[str]) -> int:
        """Delete entries (``DEL`` per ``batch_size`` keys); returns how many existed, 0 when
        Redis cannot be reached (then the entries expire or are evicted as usual)."""
        names = [self.prefix + k for k in dict.fromkeys(keys)]
        if not names:
            return 0

        def delete() -> int:
            return sum(int(self._client.delete(*names[i : i + self.batch_size])) for i in range(0, len(names), self.batch_size))

        return self._guarded("delete", delete) or 0

    def close(self) -> None:
        """Release the connections (only those of a client this cache built)."""
        if self._owns_client:
            try:
                self._client.close()
            except Exception:  # closing a dead connection is not an error worth raising
                pass

    def __enter__(self) -> RedisEmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the circuit ----------------------------------------------------------------------
    def _guarded(self, what: str, call: Callable[[], T]) -> T | None:
        """``call()``, or ``None`` when the circuit is open or Redis fails (then open it)."""
        now = time.monotonic()
        with self._lock:
            if now < self._open_until:
                self.stats.fallbacks += 1
                return None
            if self._failing:  # this call is the probe; concurrent ones keep skipping Redis
                self._open_until = now + self.retry_after
        try:
            result = call()
        except Exception as exc:  # any failure of the cache is a fallback, never a failed query
            now = time.monotonic()
            with self._lock:
                self.stats.errors += 1
                self.stats.fallbacks += 1
                self._open_until = now + self.retry_after
                self._failing = True
                warn = now - self._warned_at >= WARN_EVERY_S
                if warn:
                    self._warned_at = now
            if warn:
                log.warning(
                    "Redis embedding cache %s failed (%s: %s); computing embeddings instead, "
                    "not contacting Redis for %.1f s (%d fallbacks so far)",
                    what, type(exc).__name__, exc, self.retry_after, self.stats.fallbacks,
                )
            else:
                log.debug("Redis embedding cache %s failed again: %s", what, exc)
            return None
        if self._failing:
            with self._lock:
                recovered, self._failing, self._open_until = self._failing, False, 0.0
                self._warned_at = float("-inf")
            if recovered:
                log.info("Redis embedding cache reachable again")
        return result


def _build_client(url: str, socket_timeout: float, connect_timeout: float) -> Any:
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        raise MissingDependencyError("redis", "redis", "the Redis embedding cache") from None
    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=connect_timeout,
            retry=Retry(NoBackoff(), 0),  # one timeout per failure; the circuit does the waiting
            decode_responses=False,
        )
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL {redact_url(url)!r}: {exc}") from None
