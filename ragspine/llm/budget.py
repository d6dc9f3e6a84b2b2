"""A per-request LLM budget of calls and of time, and the wrapper that enforces and observes it.

``with llm_request():`` opens a request's scope (the link exits open one around each search;
a scope already open is shared, so a multi-library search and its libraries count together).
:class:`GuardedLLMProvider` wraps any provider:

* **Calls.** Inside a scope, the ``max_calls + 1``-th HTTP attempt is refused with
  :class:`~ragspine.llm.base.LLMBudgetExceeded` — a ``BackendError`` every seam already
  degrades on (fused order, every library, no automatic filter) — without reaching the model.
  A provider's retry is an attempt too: it asks :func:`take_attempt` first, and stops retrying
  when the budget is spent. Outside a scope nothing is counted.
* **Time.** Under a request's deadline (:mod:`ragspine.deadline`) a call runs inside
  ``deadline.reserve(r)``: it must end ``r`` seconds before the request's deadline
  (``RAGSPINE_LLM_RESERVE``, default a quarter of the deadline), so a hung model can never
  take the time the plain search needs — the request degrades (200), it does not time out
  (504). A provider bounds each attempt by what is left (``deadline.remaining()``); with less
  than :data:`MIN_CALL_SECONDS` left the call is not sent at all.

Each call is timed and reported to the wrapper's ``observer``
(:class:`~ragspine.llm.observe.LLMObserver`), failures included; a call refused by either
budget is reported as ``budget``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ragspine import deadline
from ragspine.errors import ConfigError
from ragspine.llm.base import LLMBudgetExceeded, LLMProvider, LLMTimeoutError
from ragspine.llm.observe import LLMObserver

__all__ = ["DEFAULT_MAX_CALLS", "DEFAULT_RESERVE_SHARE", "MIN_CALL_SECONDS", "GuardedLLMProvider", "RequestCalls",
           "llm_request", "take_attempt"]

DEFAULT_MAX_CALLS = 10
#: The share of a request's deadline kept for the search without the model when no reserve is set.
DEFAULT_RESERVE_SHARE = 0.25
#: A call with less time than this left before its reserve is not sent.
MIN_CALL_SECONDS = 0.25


class RequestCalls:
    """The LLM calls — HTTP attempts, retries included — one request has made so far (shared
    by the threads it runs in)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0

    def take(self, limit: int) -> bool:
        """Count one more call if fewer than ``limit`` were made; ``False`` when spent."""
        with self._lock:
            if self.calls >= limit:
                return False
            self.calls += 1
            return True


_REQUEST: ContextVar[RequestCalls | None] = ContextVar("ragspine_llm_request", default=None)
_ATTEMPTS: ContextVar[tuple[RequestCalls, int] | None] = ContextVar("ragspine_llm_attempts", default=None)


@contextmanager
def llm_request() -> Iterator[RequestCalls]:
    """The current request's call count: a new one, or the enclosing scope's."""
    current = _REQUEST.get()
    if current is not None:
        yield current
        return
    calls = RequestCalls()
    token = _REQUEST.set(calls)
    try:
        yield calls
    finally:
        _REQUEST.reset(token)


def take_attempt() -> bool:
    """Count one more HTTP attempt of the LLM call in progress against its request's budget: a
    provider asks before each retry, and stops retrying on ``False`` (the budget is spent).
    ``True`` outside a guarded call in a request scope (nothing is counted there)."""
    held = _ATTEMPTS.get()
    return True if held is None else held[0].take(held[1])


class GuardedLLMProvider:
    """``provider`` with a per-request budget of ``max_calls`` attempts, a ``reserve`` of the
    request's deadline it never uses (seconds; ``None``: :data:`DEFAULT_RESERVE_SHARE` of the
    deadline) and an ``observer``."""

    def __init__(self, provider: LLMProvider, *, max_calls: int = DEFAULT_MAX_CALLS, name: str | None = None,
                 observer: LLMObserver | None = None, reserve: float | None = None) -> None:
        if max_calls < 1:
            raise ConfigError(f"RAGSPINE_LLM_MAX_CALLS must be >= 1, got {max_calls}")
        if reserve is not None and reserve < 0:
            raise ConfigError(f"RAGSPINE_LLM_RESERVE must be >= 0 seconds, got {reserve}")
        self.inner = provider
        self.max_calls = max_calls
        self.name = name or type(provider).__name__
        self.observer = observer
        self.reserve = reserve

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        keep = self._reserved()
        with deadline.reserve(keep) as left:
            if left is not None and left < MIN_CALL_SECONDS:
                self._report(0.0, "budget")
                raise LLMTimeoutError(
                    f"no time left for an LLM call: the request keeps its last {keep:.3g} s for the search without the model"
                    " (RAGSPINE_LLM_RESERVE; raise RAGSPINE_REQUEST_TIMEOUT to give the model more)"
                )
            calls = _REQUEST.get()
            if calls is not None and not calls.take(self.max_calls):
                self._report(0.0, "budget")
                raise LLMBudgetExceeded(
                    f"this request already made {self.max_calls} LLM calls (retries count), its budget: the rest degrade "
                    "(raise RAGSPINE_LLM_MAX_CALLS to allow more)"
                )
            attempts = _ATTEMPTS.set((calls, self.max_calls) if calls is not None else None)
            started = time.perf_counter()
            try:
                answer = self.inner.chat(messages, **kwargs)
            except LLMTimeoutError:
                self._report(time.perf_counter() - started, "timeout")
                raise
            except Exception:
                self._report(time.perf_counter() - started, "error")
                raise
            finally:
                _ATTEMPTS.reset(attempts)
        self._report(time.perf_counter() - started, None)
        return answer

    def _reserved(self) -> float:
        """Seconds of the current deadline this call leaves to what follows it."""
        if self.reserve is not None:
            return self.reserve
        length = deadline.length()
        return 0.0 if length is None else DEFAULT_RESERVE_SHARE * length

    def observe_malformed(self, seam: str) -> None:
        if self.observer is not None:
            self.observer.llm_malformed(seam)

    def _report(self, seconds: float, failure: str | None) -> None:
        if self.observer is not None:
            self.observer.llm_call(self.name, seconds, failure)

    def __repr__(self) -> str:
        return f"GuardedLLMProvider({self.inner!r}, max_calls={self.max_calls}, reserve={self.reserve})"
