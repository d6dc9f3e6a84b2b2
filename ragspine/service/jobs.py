"""Ingest job queues: in the server process, or on Redis through RQ for several workers.

A job's truth is its row in the service store (state, progress, error, payload); a queue only
carries its id. Any worker ``claim``s the row atomically (``queued`` → ``running``), so a job
handed out twice still runs once, and a superseded or deleted job is skipped.

* :class:`InProcessJobQueue` — a thread pool in the server (``RAGSPINE_INGEST_WORKERS``
  threads, default 1 so that uploads apply in order). At start-up, jobs left ``running`` by a
  stopped server are marked failed (their replace never committed, or committed whole) and
  ``queued`` ones are run.
* :class:`RQJobQueue` — `RQ <https://python-rq.org>`_ on Redis; ``ragspine worker`` runs the
  jobs, on any number of machines. RQ rather than Celery, Dramatiq or arq: it needs only
  Redis (which the production stack already runs), its workers are plain synchronous Python
  like our ingestion (arq is asyncio-only), it has no broker abstraction or result backend to
  configure (Celery), and a job is one importable function plus its arguments — here just the
  job id. ``ragspine worker`` uses RQ's ``SimpleWorker`` (no fork per job), so the embedding
  model and the connection pools are loaded once per worker, not once per job, and no
  database socket is shared across a fork.

With RAGSPINE_JOB_QUEUE=auto (the default) jobs go to the embedding cache's Redis when that
is ``redis://...``, else they run in-process.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ragspine.config import Settings, load_settings
from ragspine.errors import BackendError, ConfigError, MissingDependencyError

log = logging.getLogger(__name__)

JOB_TIMEOUT_S = 3600
RESULT_TTL_S = 86400
REDIS_FORMS = ("redis://", "rediss://", "unix://")


class JobQueueUnavailable(BackendError):
    """The queue could not take a job (Redis down or unreachable): the upload is refused whole
    and no job row is left behind — retrying the request is safe."""


class JobQueue(Protocol):
    kind: str

    def submit(self, job_id: str) -> None: ...

    def recover(self) -> None: ...

    def ping(self) -> None: ...

    def close(self) -> None: ...


def queue_target(settings: Settings) -> str:
    """``"inprocess"`` or the Redis URL jobs go through."""
    value = settings.job_queue.strip()
    if value.lower() == "auto":
        cache = settings.embedding_cache.strip()
        return cache if cache.lower().startswith(REDIS_FORMS) else "inprocess"
    if value.lower() in ("inprocess", "in-process", "thread", "threads"):
        return "inprocess"
    if value.lower().startswith(REDIS_FORMS):
        return value
    raise ConfigError(f"unknown RAGSPINE_JOB_QUEUE {value!r}; use auto, inprocess or redis://host:6379/0")


def queue_name(settings: Settings) -> str:
    return f"{settings.redis_prefix}ingest"


def make_job_queue(ctx: Any) -> JobQueue:
    target = queue_target(ctx.settings)
    if target == "inprocess":
        return InProcessJobQueue(ctx, workers=ctx.settings.ingest_workers)
    return RQJobQueue(target, name=queue_name(ctx.settings), store=ctx.store)


class InProcessJobQueue:
    kind = "inprocess"

    def __init__(self, ctx: Any, *, workers: int = 1) -> None:
        self.ctx = ctx
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragspine-ingest")

    def submit(self, job_id: str) -> None:
        self._pool.submit(_run_logged, self.ctx, job_id)

    def recover(self) -> None:
        store = self.ctx.store
        store.fail_jobs("running", "interrupted: the server stopped while the job ran; the previous version stays active")
        for job_id in store.job_ids("queued"):
            self.submit(job_id)

    def ping(self) -> None:
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)  # cancelled ones stay queued: recovered at start-up


class RQJobQueue:
    kind = "redis"

    def __init__(self, url: str, *, name: str, store: Any = None, connection: Any = None) -> None:
        try:
            import redis
            from rq import Queue
        except ImportError:
            raise MissingDependencyError("rq", "server", "the Redis job queue") from None
        self.url = url
        self.store = store
        self._owns = connection is None
        self.connection = connection or redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)
        self.queue = Queue(name, connection=self.connection, default_timeout=JOB_TIMEOUT_S)

    def submit(self, job_id: str) -> None:
        from redis.exceptions import RedisError

        try:
            self.queue.enqueue_call(
                "ragspine.service.jobs.run_queued_job", args=(job_id,), job_id=job_id,
                result_ttl=RESULT_TTL_S, failure_ttl=7 * RESULT_TTL_S, description=f"ragspine ingest {job_id}",
            )
        except RedisError as exc:
            raise JobQueueUnavailable(f"the job queue is unavailable ({type(exc).__name__}: {exc}); retry the upload") from exc

    def recover(self) -> None:
        """Re-send queued jobs whose message was lost (e.g. Redis restarted without persistence)."""
        from rq.job import Job

        if self.store is None:
            return
        for job_id in self.store.job_ids("queued"):
            if not Job.exists(job_id, connection=self.connection):
                self.submit(job_id)

    def ping(self) -> None:
        from redis.exceptions import RedisError

        try:
            self.connection.ping()
        except RedisError as exc:
            raise JobQueueUnavailable(f"the job queue is unavailable ({type(exc).__name__}: {exc})") from exc

    def close(self) -> None:
        if self._owns:
            self.connection.close()


def _run_logged(ctx: Any, job_id: str) -> None:
    from ragspine.service.ingest import run_job

    try:
        run_job(ctx, job_id)
    except Exception:  # run_job records failures itself; this is a last resort for the log
        log.exception("ingest job %s crashed", job_id)


# -- the worker side (`ragspine worker`) --------------------------------------------------------
_WORKER_CONTEXT: Any = None
_WORKER_LOCK = threading.Lock()


def set_worker_context(ctx: Any) -> None:
    """The context ``run_queued_job`` uses in this process (``ragspine worker`` and tests set it)."""
    global _WORKER_CONTEXT
    _WORKER_CONTEXT = ctx


def worker_context() -> Any:
    global _WORKER_CONTEXT
    with _WORKER_LOCK:
        if _WORKER_CONTEXT is None:
            from ragspine.service.context import ServiceContext

            _WORKER_CONTEXT = ServiceContext.open(load_settings())
        return _WORKER_CONTEXT


def run_queued_job(job_id: str) -> None:
    """The RQ job function: run one ingest job in this worker's context."""
    from ragspine.service.ingest import run_job

    run_job(worker_context(), job_id)


def run_worker(settings: Settings, *, burst: bool = False) -> int:
    """Process the Redis job queue until stopped (``burst``: until it is empty)."""
    from ragspine.service.context import ServiceContext
    from ragspine.service.metrics import Metrics

    target = queue_target(settings)
    if target == "inprocess":
        raise ConfigError(
            "`ragspine worker` needs a Redis job queue: set RAGSPINE_JOB_QUEUE=redis://... "
            "(or a redis:// RAGSPINE_EMBEDDING_CACHE); without Redis the server runs jobs itself"
        )
    from rq import SimpleWorker

    ctx = ServiceContext.open(settings, metrics=Metrics())
    set_worker_context(ctx)
    queue = RQJobQueue(target, name=queue_name(settings), store=ctx.store)
    try:
        queue.recover()
        SimpleWorker([queue.queue], connection=queue.connection).work(burst=burst)
    finally:
        set_worker_context(None)
        queue.close()
        ctx.close()
    return 0
