"""A per-request LLM call budget, and the wrapper that enforces and observes it.

``with llm_request():`` opens a request's scope (the link exits open one around each search;
a scope already open is shared, so a multi-library search and its libraries count together).
:class:`GuardedLLMProvider` wraps any provider: inside a scope, the ``max_calls + 1``-th call
raises :class:`~ragspine.llm.base.LLMBudgetExceeded` — a ``BackendError`` every seam already
degrades on (fused order, every library, no automatic filter) — without reaching the model.
Outside a scope calls are not counted. Each call is timed and reported to the wrapper's
``observer`` (:class:`~ragspine.llm.observe.LLMObserver`), failures included.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ragspine.errors import ConfigError
from ragspine.llm.base import LLMBudgetExceeded, LLMProvider, LLMTimeoutError
from ragspine.llm.observe import LLMObserver

__all__ = ["DEFAULT_MAX_CALLS", "GuardedLLMProvider", "RequestCalls", "llm_request"]

DEFAULT_MAX_CALLS = 10


class RequestCalls:
    """The calls one request has made so far (shared by the threads it runs in)."""

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


class GuardedLLMProvider:
    """``provider`` with a per-request budget of ``max_calls`` and an ``observer``."""

    def __init__(self, provider: LLMProvider, *, max_calls: int = DEFAULT_MAX_CALLS, name: str | None = None,
                 observer: LLMObserver | None = None) -> None:
        if max_calls < 1:
            raise ConfigError(f"RAGSPINE_LLM_MAX_CALLS must be >= 1, got {max_calls}")
        self.inner = provider
        self.max_calls = max_calls
        self.name = name or type(provider).__name__
        self.observer = observer

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        calls = _REQUEST.get()
        if calls is not None and not calls.take(self.max_calls):
            self._report(0.0, "budget")
            raise LLMBudgetExceeded(
                f"this request already made {self.max_calls} LLM calls, its budget: the rest degrade "
                "(raise RAGSPINE_LLM_MAX_CALLS to allow more)"
            )
        started = time.perf_counter()
        try:
            answer = self.inner.chat(messages, **kwargs)
        except LLMTimeoutError:
            self._report(time.perf_counter() - started, "timeout")
            raise
        except Exception:
            self._report(time.perf_counter() - started, "error")
            raise
        self._report(time.perf_counter() - started, None)
        return answer

    def observe_malformed(self, seam: str) -> None:
        if self.observer is not None:
            self.observer.llm_malformed(seam)

    def _report(self, seconds: float, failure: str | None) -> None:
        if self.observer is not None:
            self.observer.llm_call(self.name, seconds, failure)

    def __repr__(self) -> str:
        return f"GuardedLLMProvider({self.inner!r}, max_calls={self.max_calls})"
