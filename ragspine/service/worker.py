"""``ragspine worker``: the Redis job queue's ingest jobs, run by RQ, through Redis outages.

The loop is RQ's ``SimpleWorker`` (no fork per job: the embedding model and the connection
pools load once per worker). Around it:

* **Redis goes away** (a restart, a network cut) while the worker waits for a job or between
  jobs: RQ's loop ends instead of retrying on its own (RQ logs every try, up to a minute
  apart, and ends with a traceback when the loss hits outside its wait). The worker says so
  once — ``lost the job queue at redis://host:6379/0 (...); waiting for it`` — and pings
  Redis with a backoff from :data:`RECONNECT_FIRST_S` to :data:`RECONNECT_MAX_S` seconds.
  When it answers: one line ``the job queue ... is back after N s``, the queued jobs whose
  message an empty restart lost are re-sent from the database, and a fresh RQ worker
  (registered and subscribed again) takes the queue. A job running when Redis went away
  finishes — its truth is its row in the database; only RQ's own record of it is lost.
* **SIGTERM / SIGINT** drains: a running job finishes, then the worker exits 0 — promptly, at
  any point, also while it waits for Redis. A second signal during a job stops at once (RQ's
  cold shutdown; the sweep fails the interrupted job with the reason).
* ``--burst`` runs until the queue is empty; a Redis that is away is an error (exit 1), not a
  wait.

RQ's pub/sub thread (its remote commands) is stopped with a bound: redis-py 8 joins that
thread in ``PubSubWorkerThread.stop()`` without a timeout, and after a Redis restart the
thread sits in a 60 s wait for a subscription — RQ's teardown then held a stopping worker for
a minute (the dead-jobs test saw "warm shut down requested" and no exit within 30 s).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ragspine.config import Settings
from ragspine.errors import ConfigError
from ragspine.service.jobs import JobWatch, RQJobQueue, import_rq, queue_name, queue_target, set_worker_context

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["RECONNECT_FIRST_S", "RECONNECT_MAX_S", "QueueLost", "rq_worker_class", "run_worker"]

log = logging.getLogger(__name__)

RECONNECT_FIRST_S = 0.5  # the first pause before pinging a lost Redis again, doubled each time
RECONNECT_MAX_S = 10.0  # the longest pause between two pings
PUBSUB_STOP_S = 1.0  # how long a stopping worker waits for RQ's pub/sub thread
_RQ_RETRY_LINES = ("could not connect to Redis instance", "Redis connection timeout")


class QueueLost(Exception):
    """Redis went away under RQ's loop: the loop ends and :func:`run_worker` waits Redis out."""


def _lost_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return (RedisConnectionError, RedisTimeoutError, QueueLost, OSError)


def run_worker(settings: Settings, *, burst: bool = False) -> int:
    """Process the Redis job queue until stopped (``burst``: until it is empty); see the module
    docstring. 0 after a stop or a burst, 1 when a burst could not reach Redis."""
    from ragspine.service.context import ServiceContext
    from ragspine.service.metrics import Metrics
    from ragspine.stores.redis_cache import redact_url

    target = queue_target(settings)
    if target == "inprocess":
        raise ConfigError(
            "`ragspine worker` needs a Redis job queue: set RAGSPINE_JOB_QUEUE=redis://... "
            "(or a redis:// RAGSPINE_EMBEDDING_CACHE); without Redis the server runs jobs itself"
        )
    import_rq(settings.redis_prefix)  # first: RQ's keys under RAGSPINE_REDIS_PREFIX
    from rq.exceptions import StopRequested

    stop = threading.Event()
    with _stop_signals(stop), _worker_log(), _quiet_rq_retries():
        ctx = ServiceContext.open(settings, metrics=Metrics())
        set_worker_context(ctx)
        name = queue_name(settings)
        # RQ raises its connection's socket timeout to minutes (its blocking wait for a job);
        # re-sending and the sweep get a connection of their own with short timeouts
        queue = RQJobQueue(target, name=name, store=ctx.store, redis_prefix=settings.redis_prefix)
        side = RQJobQueue(target, name=name, store=ctx.store, redis_prefix=settings.redis_prefix)
        outage = _Outage(side, redact_url(target), stop)
        watch = JobWatch(ctx.store, side, settings.job_stale_after)
        worker_class = rq_worker_class(stop)
        try:
            watch.start()
            lost: BaseException | None = outage.probe()
            restarts = 0
            while not stop.is_set():
                if lost is not None:
                    outage.lost(lost)
                    if burst:
                        log.error("ragspine worker --burst: the job queue at %s is away (%s): nothing more was run;"
                                  " run it again once Redis is back", outage.where, _one_line(lost))
                        return 1
                    if not outage.wait():
                        break
                    lost = None
                if not _try(side.recover, "re-sending queued jobs"):
                    lost = outage.probe()
                    if lost is not None:
                        continue
                worker = None
                try:
                    worker = worker_class([queue.queue], connection=queue.connection)  # RQ names its connection: I/O
                    worker.work(burst=burst)
                except StopRequested:
                    break  # a stop while RQ registered or tore the worker down
                except _lost_errors() as exc:  # RQ's start or teardown on a Redis that is away
                    lost = exc
                else:
                    lost = None
                finally:
                    _install_stop_signals(stop)  # RQ's handlers stay installed after its loop
                if stop.is_set() or (worker is not None and worker.stopping):
                    break
                lost = (worker.lost if worker is not None else None) or lost or outage.probe()
                if lost is None:
                    if burst:
                        break  # the queue is empty
                    restarts += 1  # RQ's loop ended on something else (its log above says what)
                    pause = min(RECONNECT_FIRST_S * 2 ** restarts, RECONNECT_MAX_S)
                    log.warning("the RQ worker loop ended unexpectedly; starting it again in %.1f s", pause)
                    stop.wait(pause)
                else:
                    restarts = 0
        finally:
            watch.stop()
            set_worker_context(None)
            side.close()
            queue.close()
            ctx.close()
    return 0


class _Outage:
    """Tells a lost Redis once, pings it with a capped backoff, and tells when it is back."""

    def __init__(self, queue: RQJobQueue, where: str, stop: threading.Event) -> None:
        self.queue, self.where, self.stop = queue, where, stop
        self.since: float | None = None

    def probe(self) -> BaseException | None:
        """``None`` when Redis answers, else the error."""
        try:
            self.queue.connection.ping()
        except _lost_errors() as exc:
            return exc
        return None

    def lost(self, error: BaseException) -> None:
        if self.since is None:
            self.since = time.monotonic()
            log.warning("lost the job queue at %s (%s); waiting for it, trying again every %g s at most — no job is"
                        " lost: queued jobs run when it is back", self.where, _one_line(error), RECONNECT_MAX_S)

    def wait(self) -> bool:
        """Until Redis answers (``True``) or a stop is requested (``False``)."""
        pause = RECONNECT_FIRST_S
        while self.probe() is not None:
            if self.stop.wait(pause):
                return False
            pause = min(pause * 2, RECONNECT_MAX_S)
        if self.since is not None:
            log.warning("the job queue at %s is back after %.0f s; re-sending queued jobs whose message was lost, then"
                        " taking jobs again", self.where, time.monotonic() - self.since)
            self.since = None
        return True


def rq_worker_class(stop: threading.Event) -> Any:
    """RQ's ``SimpleWorker`` that leaves its loop when Redis goes away, shares ``stop`` with
    :func:`run_worker` and stops its pub/sub thread with a bound."""
    from redis.exceptions import RedisError
    from rq import SimpleWorker

    lost_errors = _lost_errors()

    class Worker(SimpleWorker):
        stopping = False
        lost: BaseException | None = None

        def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
            # the first thing RQ's wait for a job does, and what follows each job: a Redis that
            # is away ends the loop here (RQ's own wait would retry, a line at a time)
            try:
                super().heartbeat(timeout, pipeline)
            except lost_errors as exc:
                self.lost = exc
                raise QueueLost(_one_line(exc)) from exc

        def _install_signal_handlers(self) -> None:
            super()._install_signal_handlers()  # type: ignore[no-untyped-call]
            if stop.is_set():  # a stop came while RQ registered the worker
                self.stopping = True
                self._stop_requested = True

        def request_stop(self, signum: Any, frame: Any) -> None:
            stop.set()
            self.stopping = True
            super().request_stop(signum, frame)  # type: ignore[no-untyped-call]  # between jobs: now; during one: after it

        def set_shutdown_requested_date(self) -> None:
            try:  # RQ notes the stop in Redis: a Redis that is away must not turn a stop into an error
                super().set_shutdown_requested_date()  # type: ignore[no-untyped-call]
            except RedisError:
                pass

        def _pubsub_exception_handler(self, exc: Exception, pubsub: Any, pubsub_thread: Any) -> None:
            if isinstance(exc, lost_errors):
                time.sleep(2.0)  # RQ's pause, without its line every 2 s: the outage is told once
                return
            super()._pubsub_exception_handler(exc, pubsub, pubsub_thread)

        def unsubscribe(self) -> None:
            thread, pubsub = getattr(self, "pubsub_thread", None), getattr(self, "pubsub", None)
            if thread is None or pubsub is None:
                return
            try:
                pubsub.unsubscribe()
            except (RedisError, OSError):
                pass
            try:
                thread.stop(timeout=PUBSUB_STOP_S)  # redis-py >= 8 joins here, unbounded without a timeout
            except TypeError:  # older redis-py: stop() takes no timeout and does not wait
                thread.stop()
                thread.join(timeout=PUBSUB_STOP_S)
            if not thread.is_alive():
                pubsub.close()  # else the thread closes it when its wait ends (it is a daemon)
            self.pubsub_thread = None

    return Worker


# -- signals and log lines ------------------------------------------------------------------
_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def _stop_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set ``stop`` outside RQ's loop (RQ installs its own inside it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    _install_stop_signals(stop)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _install_stop_signals(stop: threading.Event) -> None:
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if not stop.is_set():
            log.warning("%s: stopping", signal.Signals(signum).name)
        stop.set()

    for sig in _SIGNALS:
        signal.signal(sig, handler)


@contextmanager
def _worker_log() -> Iterator[None]:
    """The worker's own lines on stderr, timed like RQ's, unless logging is configured."""
    package = logging.getLogger("ragspine")
    mine = logging.getLogger(__name__)
    if package.hasHandlers():
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    level = mine.level
    package.addHandler(handler)
    mine.setLevel(logging.INFO)
    try:
        yield
    finally:
        mine.setLevel(level)
        package.removeHandler(handler)


class _RQRetryFilter(logging.Filter):
    """Drops RQ's lines about a lost connection — one per retry of its own wait and of its
    pub/sub thread, and the traceback of its loop ending on one: the worker tells an outage
    once (:class:`_Outage`). Every other RQ line, tracebacks included, stays."""

    def __init__(self) -> None:
        super().__init__()
        self.lost_errors = _lost_errors()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], self.lost_errors):
            return False
        return not any(line in str(record.msg) for line in _RQ_RETRY_LINES)


@contextmanager
def _quiet_rq_retries() -> Iterator[None]:
    rq_log = logging.getLogger("rq.worker")
    quiet = _RQRetryFilter()
    rq_log.addFilter(quiet)
    try:
        yield
    finally:
        rq_log.removeFilter(quiet)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _try(action: Any, what: str) -> bool:
    try:
        action()
    except Exception as exc:
        log.warning("%s failed (%s)", what, _one_line(exc))
        return False
    return True
