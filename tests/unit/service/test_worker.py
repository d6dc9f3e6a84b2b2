"""``ragspine worker``'s RQ worker in the process: a stop is never held by RQ's pub/sub thread,
and RQ's lines about a lost connection give way to the worker's one line per outage.

The outages of a real ``ragspine worker`` process (Redis stopped while it waits and while a
job runs, SIGTERM during an outage and after a restart) are in ``test_dead_jobs.py``.
"""

from __future__ import annotations

import logging
import threading
import time

from tests.helpers import needs

needs("rq")

import redis as redis_client  # noqa: E402

from ragspine.service.jobs import import_rq  # noqa: E402
from ragspine.service.worker import QueueLost, _RQRetryFilter, rq_worker_class  # noqa: E402


def test_a_stopping_worker_is_not_held_by_rqs_pubsub_thread(private_redis) -> None:
    """RQ's teardown unsubscribes and then stops its pub/sub thread; once the thread has read
    the unsubscribe reply it waits up to 60 s for a subscription (as after a Redis restart),
    and redis-py 8's ``stop()`` joined it without a bound: plain ``rq.SimpleWorker`` (what
    ``ragspine worker`` ran) takes 60 s here."""
    rq = import_rq("ragspine-test:")
    connection = redis_client.Redis.from_url(private_redis.url)
    worker = rq_worker_class(threading.Event())([rq.Queue("q", connection=connection)], connection=connection)
    worker.subscribe()
    worker.pubsub.unsubscribe()
    deadline = time.monotonic() + 10
    while worker.pubsub.subscribed:  # the thread read the reply: it now waits for a subscription
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)
    started = time.monotonic()
    stopping = threading.Thread(target=worker.unsubscribe, daemon=True)
    stopping.start()
    stopping.join(10)
    assert not stopping.is_alive() and time.monotonic() - started < 3
    connection.close()


def test_rqs_lines_about_a_lost_connection_are_dropped_and_every_other_line_stays() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    quiet = _RQRetryFilter()

    def record(msg: str, exc: BaseException | None = None) -> logging.LogRecord:
        info = (type(exc), exc, None) if exc is not None else None
        return logging.LogRecord("rq.worker", logging.ERROR, __file__, 1, msg, ("w1", "boom", 2), info)

    lost = RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    assert not quiet.filter(record("Worker %s: could not connect to Redis instance: %s retrying in %d seconds..."))
    assert not quiet.filter(record("Worker %s: found an unhandled exception, quitting...", lost))
    assert not quiet.filter(record("Worker %s: found an unhandled exception, quitting...", QueueLost("gone")))
    assert quiet.filter(record("Worker %s: found an unhandled exception, quitting...", ValueError("a bug")))
    assert quiet.filter(record("Worker %s: job %s: exception raised while executing (%s)\n%s"))
