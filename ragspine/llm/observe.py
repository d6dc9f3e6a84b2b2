"""What happened to LLM calls: the observer hook the service's metrics plug into.

:class:`~ragspine.llm.budget.GuardedLLMProvider` reports each call (its provider, seconds and
failure, if any) and each call a request's budget refused; a seam that got an answer it
cannot read (the listwise judge, the LLM router, the LLM filter extractor) reports it with
:func:`report_malformed` and degrades as it always does. The core stays light:
:class:`LLMStats` counts in the process; the service's ``Metrics`` turns the same calls into
Prometheus counters and a latency histogram.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Protocol

__all__ = ["FAILURES", "SEAMS", "LLMObserver", "LLMStats", "report_malformed"]

log = logging.getLogger(__name__)

#: The failure kinds a call reports: a timeout, any other error, or the request's budget spent.
FAILURES = ("timeout", "error", "budget")
#: The seams that read a model's answer (the query-time ones: ragspine/retrieval/query/).
SEAMS = ("listwise", "router", "filter_extractor", "hyde", "rag_fusion", "step_back", "decompose", "adaptive", "rewrite",
         "narrative_number")


class LLMObserver(Protocol):
    def llm_call(self, provider: str, seconds: float, failure: str | None) -> None:
        """A call to ``provider`` finished after ``seconds``: ``failure`` is ``None``, ``"timeout"``
        or ``"error"``; ``"budget"`` (with 0 seconds) when the request's budget refused it."""
        ...

    def llm_malformed(self, seam: str) -> None:
        """``seam`` got an answer it could not read (and degraded)."""
        ...


class LLMStats:
    """An :class:`LLMObserver` counting in this process (tests, scripts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()  # provider -> calls that reached it
        self.failures: Counter[tuple[str, str]] = Counter()  # (provider, failure kind)
        self.malformed: Counter[str] = Counter()  # seam -> unreadable answers
        self.seconds: list[float] = []

    def llm_call(self, provider: str, seconds: float, failure: str | None) -> None:
        with self._lock:
            if failure != "budget":
                self.calls[provider] += 1
                self.seconds.append(seconds)
            if failure is not None:
                self.failures[(provider, failure)] += 1

    def llm_malformed(self, seam: str) -> None:
        with self._lock:
            self.malformed[seam] += 1


def report_malformed(provider: object, seam: str, answer: object) -> None:
    """Log that ``seam`` could not read ``provider``'s ``answer`` and tell the provider's
    observer (a :class:`~ragspine.llm.budget.GuardedLLMProvider` has one)."""
    text = " ".join(str(answer).split())
    log.warning("the %s could not read the model's answer, degrading: %r", seam.replace("_", " "), text[:200])
    observe = getattr(provider, "observe_malformed", None)
    if callable(observe):
        observe(seam)
