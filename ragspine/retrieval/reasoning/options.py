"""What query-time reasoning a search runs, and the observer its counters go to.

:class:`ReasoningOptions` is one hashable value: the query transform, the decomposer, the
Adaptive-RAG classifier, the corrective loop and the fan-out cap. The configured ones come
from ``RAGSPINE_QUERY_TRANSFORM``, ``RAGSPINE_QUERY_DECOMPOSE``, ``RAGSPINE_ADAPTIVE``,
``RAGSPINE_CORRECTIVE`` and ``RAGSPINE_QUERY_FANOUT``; a request (``/v1/retrieve``, ``ragspine
query``) may choose others, its fan-out at most the configured one. Every option off is the
plain pipeline, byte for byte. The security gate is not an option: when a deny list is
configured, every search passes it.

:class:`ReasoningObserver` is the hook the service's Prometheus metrics implement (like
:class:`~ragspine.llm.observe.LLMObserver`): refusals, transforms and corrective rounds.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ragspine.errors import ConfigError

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = ["ReasoningObserver", "ReasoningOptions", "ReasoningStats"]


@dataclass(frozen=True)
class ReasoningOptions:
    transform: str = "none"
    decompose: str = "none"
    adaptive: str = "none"
    corrective: bool = False
    fanout: int = 3

    @property
    def active(self) -> bool:
        return self.transform != "none" or self.decompose != "none" or self.adaptive != "none" or self.corrective

    @classmethod
    def from_settings(cls, settings: Settings) -> ReasoningOptions:
        return cls(settings.query_transform, settings.query_decompose, settings.adaptive, settings.corrective, settings.query_fanout)

    def override(self, *, transform: str | None = None, decompose: str | None = None, adaptive: str | None = None,
                 corrective: bool | None = None, fanout: int | None = None) -> ReasoningOptions:
        """These options with a request's choices (checked against the registries; the
        fan-out at most this one's, so a request cannot make more calls than configured)."""
        from ragspine.registries import COMPLEXITY_CLASSIFIERS, QUERY_DECOMPOSERS, QUERY_TRANSFORMS

        if fanout is not None and not 1 <= fanout <= self.fanout:
            raise ConfigError(f"query_fanout must be within 1..{self.fanout} (RAGSPINE_QUERY_FANOUT), got {fanout}")
        return replace(
            self,
            transform=self.transform if transform is None else QUERY_TRANSFORMS.canonical(transform),
            decompose=self.decompose if decompose is None else QUERY_DECOMPOSERS.canonical(decompose),
            adaptive=self.adaptive if adaptive is None else COMPLEXITY_CLASSIFIERS.canonical(adaptive),
            corrective=self.corrective if corrective is None else bool(corrective),
            fanout=self.fanout if fanout is None else fanout,
        )

    def describe(self) -> list[tuple[str, str]]:
        return [
            ("query transform", self.transform if self.transform == "none" else f"{self.transform} (fan-out {self.fanout})"),
            ("decomposition", self.decompose),
            ("adaptive", self.adaptive),
            ("corrective", "on (grade → drop filters → rewrite → refuse, at most 2 rounds)" if self.corrective else "off"),
        ]


@runtime_checkable
class ReasoningObserver(Protocol):
    def query_refused(self, reason: str) -> None:
        """A text was refused: ``gate`` (the user's question), ``gate_probe`` (a generated
        text: a variant, HyDE's passage, a sub-question, a rewrite) or ``corrective`` (the
        answer graded weak after every round)."""
        ...

    def query_transform(self, transform: str, outcome: str) -> None:
        """``transform`` (``hyde | rag_fusion | step_back | decompose | adaptive``) was asked:
        ``applied``, ``degraded`` (the model failed: the plain question) or ``single``
        (nothing to add: Adaptive-RAG chose single-shot, or no sub-questions)."""
        ...

    def corrective_round(self, action: str) -> None:
        """The corrective loop graded an answer and acted: ``keep``, ``drop_filters``,
        ``rewrite`` or ``refuse``."""
        ...


class ReasoningStats:
    """A :class:`ReasoningObserver` counting in this process (tests, scripts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.refused: Counter[str] = Counter()
        self.transforms: Counter[tuple[str, str]] = Counter()
        self.rounds: Counter[str] = Counter()

    def query_refused(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] += 1

    def query_transform(self, transform: str, outcome: str) -> None:
        with self._lock:
            self.transforms[(transform, outcome)] += 1

    def corrective_round(self, action: str) -> None:
        with self._lock:
            self.rounds[action] += 1


def notify(observer: ReasoningObserver | None, method: str, *args: str) -> None:
    """Call ``observer.method(*args)`` when there is an observer (never raises)."""
    if observer is None:
        return
    try:
        getattr(observer, method)(*args)
    except Exception:  # metrics never fail a search
        pass
