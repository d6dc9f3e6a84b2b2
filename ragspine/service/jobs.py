"""Ingest job queues: in the server process, or on Redis through RQ for several workers.

A job's truth is its row in the service store (state, progress, error, payload); a queue only
carries its id. Any worker ``claim``s the row atomically (``queued`` → ``running``), so a job
handed out twice still runs once, and a superseded or deleted job is skipped.

* :class:`InProcessJobQueue` — a thread pool in the server (``RAGSPINE_INGEST_WORKERS``
  threads, default 1 so that uploads apply in order). At start-up ``queued`` jobs are run.
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

**Jobs always finish.** A worker writes a heartbeat on its running job every few seconds
(:func:`heartbeating`). :class:`JobWatch` — a thread in every server and ``ragspine worker`` —
sweeps every few seconds: a ``running`` job whose worker process is gone (same host, its pid
no longer alive: failed at once) or whose heartbeat is older than ``RAGSPINE_JOB_STALE_AFTER``
(a worker killed elsewhere, or cut off from the database) is marked ``failed`` with the
reason — its unfinished documents keep their previous version, since a replace commits whole
or not at all. It is not retried: a later upload of the same document may already have
superseded it. Queued jobs whose message was lost (Redis restarted empty, a server stopped
with jobs in its pool) are re-sent from the database; a job handed out twice still runs once.
``ragspine worker`` (:mod:`ragspine.service.worker`) waits out a Redis that goes away — one
line when it is lost, one when it is back — and then takes jobs again.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from ragspine.config import Settings, load_settings
from ragspine.errors import BackendError, ConfigError, MissingDependencyError

if TYPE_CHECKING:
    from ragspine.service.context import ServiceContext
    from ragspine.service.store import ServiceStore

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

    def recover(self) -> None:
        """At start-up: send the queued jobs this queue does not hold."""

    def resend(self, created_before: float) -> list[str]:
        """Send again the queued jobs older than ``created_before`` whose message is lost."""

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


def rq_key_prefix(redis_prefix: str) -> str:
    """The prefix of RQ's own keys: ``ragspine:`` → ``ragspine:rq`` (so ``ragspine:rq:queue:...``)."""
    return f"{redis_prefix.rstrip(':')}:rq" if redis_prefix.strip(":") else "rq"


def import_rq(redis_prefix: str) -> Any:
    """Import RQ with its keys under ``RAGSPINE_REDIS_PREFIX`` — or under ``RQ_KEY_PREFIX``
    when that is set — and return the ``rq`` module. RQ reads its prefix once, when first
    imported; a process that imported it earlier with another prefix would queue jobs where
    no worker looks, so that is a :class:`ConfigError` naming the fix."""
    wanted = os.environ.get("RQ_KEY_PREFIX") or rq_key_prefix(redis_prefix)
    if "rq" not in sys.modules:
        os.environ.setdefault("RQ_KEY_PREFIX", wanted)
    try:
        import rq
        from rq import defaults
    except ImportError:
        raise MissingDependencyError("rq", "server", "the Redis job queue") from None
    except ValueError as exc:
        raise ConfigError(f"RAGSPINE_REDIS_PREFIX={redis_prefix!r} cannot prefix RQ's keys ({exc})") from None
    if defaults.RQ_KEY_PREFIX != wanted:
        raise ConfigError(
            f"rq was imported before RAGSpine set its key prefix: its keys are under {defaults.RQ_KEY_PREFIX!r}, not"
            f" {wanted!r}, so workers would not see this process's jobs; set RQ_KEY_PREFIX={wanted} in the environment"
            " of every server and worker"
        )
    return rq


def make_job_queue(ctx: ServiceContext) -> JobQueue:
    target = queue_target(ctx.settings)
    if target == "inprocess":
        return InProcessJobQueue(ctx, workers=ctx.settings.ingest_workers)
    return RQJobQueue(target, name=queue_name(ctx.settings), store=ctx.store, redis_prefix=ctx.settings.redis_prefix)


class InProcessJobQueue:
    kind = "inprocess"

    def __init__(self, ctx: Any, *, workers: int = 1) -> None:
        self.ctx = ctx
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragspine-ingest")
        self._held: set[str] = set()  # submitted to this pool and not finished yet
        self._lock = threading.Lock()

    def submit(self, job_id: str) -> None:
        with self._lock:
            self._held.add(job_id)
        self._pool.submit(self._run, job_id)

    def _run(self, job_id: str) -> None:
        try:
            _run_logged(self.ctx, job_id)
        finally:
            with self._lock:
                self._held.discard(job_id)

    def recover(self) -> None:
        self.resend(time.time())

    def resend(self, created_before: float) -> list[str]:
        """Queued jobs this pool does not hold: left by a stopped server, or another replica's
        (a job is claimed atomically, so one run wins)."""
        with self._lock:
            held = set(self._held)
        lost = [job_id for job_id in self.ctx.store.queued_before(created_before) if job_id not in held]
        for job_id in lost:
            self.submit(job_id)
        return lost

    def ping(self) -> None:
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)  # cancelled ones stay queued: recovered at start-up


class RQJobQueue:
    kind = "redis"

    def __init__(self, url: str, *, name: str, store: Any = None, connection: Any = None, redis_prefix: str = "ragspine:") -> None:
        rq = import_rq(redis_prefix)
        import redis

        Queue = rq.Queue
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
        self.resend(time.time())

    def resend(self, created_before: float) -> list[str]:
        """Re-send queued jobs whose message was lost (e.g. Redis restarted without persistence)."""
        from rq.job import Job

        if self.store is None:
            return []
        queued = self.store.queued_before(created_before)
        with self.connection.pipeline(transaction=False) as pipe:
            for job_id in queued:
                pipe.exists(Job.key_for(job_id))
            present = pipe.execute() if queued else []
        lost = [job_id for job_id, there in zip(queued, present, strict=True) if not there]
        for job_id in lost:
            self.submit(job_id)
        return lost

    def ping(self) -> None:
        from redis.exceptions import RedisError

        try:
            self.connection.ping()
        except RedisError as exc:
            raise JobQueueUnavailable(f"the job queue is unavailable ({type(exc).__name__}: {exc})") from exc

    def close(self) -> None:
        if self._owns:
            self.connection.close()


# -- dead work and lost messages ------------------------------------------------------------
def heartbeat_interval(stale_after: float) -> float:
    return max(0.05, min(10.0, stale_after / 4))


def worker_name() -> str:
    """``host:pid@pid-namespace`` of this process: who claimed a job, and how a sweep on the
    same host tells that the process is gone."""
    return f"{socket.gethostname()}:{os.getpid()}@{_pid_namespace()}"


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return "-"


def _gone(worker: str | None) -> bool:
    """The worker ran on this host, in this pid namespace, and its process no longer exists."""
    if not worker or "@" not in worker or ":" not in worker:
        return False
    where, namespace = worker.rsplit("@", 1)
    host, _, pid = where.rpartition(":")
    if host != socket.gethostname() or namespace != _pid_namespace() or namespace == "-" or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (not ours to signal)
        return False
    return False


UNFINISHED = "documents it had not finished keep their previous version; upload them again"


def reap(store: ServiceStore, stale_after: float, *, now: float | None = None) -> list[str]:
    """Fail the running jobs whose worker is gone or silent; the ids failed by this call."""
    now = time.time() if now is None else now
    cutoff = now - stale_after
    reaped = []
    for job in store.running_jobs():
        who = (job.worker or "an unknown worker").split("@", 1)[0]
        if _gone(job.worker):
            reason = f"its worker {who} stopped while the job ran (the process is gone); {UNFINISHED}"
            done = store.fail_running(job.job_id, reason)
        else:
            beat = job.heartbeat_at or job.started_at or 0.0
            reason = (f"no heartbeat from its worker {who} for {now - beat:.0f} s (RAGSPINE_JOB_STALE_AFTER={stale_after:g}):"
                      f" it was killed or lost the database; {UNFINISHED}")
            done = beat < cutoff and store.fail_running(job.job_id, reason, heartbeat_before=cutoff)
        if done:
            log.warning("job %s failed: %s", job.job_id, reason)
            reaped.append(job.job_id)
    return reaped


@contextmanager
def heartbeating(store: ServiceStore, job_id: str, interval: float) -> Iterator[None]:
    """Beat on ``job_id`` every ``interval`` seconds while the block runs (a thread)."""
    stop = threading.Event()

    def beat() -> None:
        warned = False
        while not stop.wait(interval):
            try:
                if not store.heartbeat(job_id):
                    return  # no longer running (failed by a sweep, its library deleted)
                warned = False
            except Exception as exc:  # the database is away: the sweep decides, once it is back
                if not warned:
                    log.warning("job %s: heartbeat failed (%s)", job_id, exc)
                    warned = True

    thread = threading.Thread(target=beat, name=f"ragspine-heartbeat-{job_id[:8]}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval + 1)


class JobWatch:
    """A daemon thread that sweeps every ``interval`` seconds: :func:`reap`, then the queue's
    ``resend`` of queued jobs older than ``stale_after`` whose message is lost. Errors (the
    database or Redis away) are logged and the next sweep tries again."""

    def __init__(self, store: Any, queue: Any, stale_after: float, *, interval: float | None = None) -> None:
        self.store, self.queue, self.stale_after = store, queue, stale_after
        self.interval = interval if interval is not None else max(0.1, min(30.0, stale_after / 2))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> tuple[list[str], list[str]]:
        reaped = reap(self.store, self.stale_after)
        resent = self.queue.resend(time.time() - self.stale_after) if self.queue is not None else []
        if resent:
            log.warning("re-sent %d queued job(s) whose message was lost: %s", len(resent), ", ".join(resent[:5]))
        return reaped, resent

    def start(self) -> JobWatch:
        def loop() -> None:
            failing = False
            while not self._stop.wait(self.interval):
                try:
                    self.sweep()
                except Exception as exc:  # told once until a sweep works again (an outage is not a line a second)
                    if not failing:
                        log.warning("job sweep failed (%s); retrying every %.0f s", exc, self.interval)
                        failing = True
                else:
                    if failing:
                        log.warning("job sweeps work again")
                        failing = False

        self._thread = threading.Thread(target=loop, name="ragspine-job-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # a daemon: a sweep stuck on a lost backend does not hold a stop


def _run_logged(ctx: Any, job_id: str) -> None:
    from ragspine.service.ingest import run_job

    try:
        run_job(ctx, job_id)
    except Exception:  # run_job records failures itself; this is a last resort for the log
        log.exception("ingest job %s crashed", job_id)


# -- the worker side (`ragspine worker`) --------------------------------------------------------
_WORKER_CONTEXT: Any = None
_WORKER_LOCK = threading.Lock()


def set_worker_context(ctx: ServiceContext | None) -> None:
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
    """``ragspine worker`` (see :func:`ragspine.service.worker.run_worker`; kept at this path)."""
    from ragspine.service.worker import run_worker as run

    return run(settings, burst=burst)
