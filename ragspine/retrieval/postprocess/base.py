"""The ``Postprocessor`` role: the last stage before the link exit (after rerank).

``process(query, results, top_k=...) -> results`` gets the fused (and reranked) candidates —
``RAGSPINE_RERANK_DEPTH`` of them when a postprocessor is configured, so a diversity stage has
more than ``top_k`` to choose from — and returns at most ``top_k``, best first. It may reorder,
drop or annotate results; it never adds a result the pipeline did not retrieve and never
changes a chunk's ``text`` or any reference field (a compression writes ``prompt_text``
only). Postprocessors see and return only non-RESTRICTED results (:func:`open_results`): the
exit would drop the others anyway, and dropping them first keeps an order or a budget built
here from being cut afterwards. They are chosen by name and chained
(``RAGSPINE_POSTPROCESSOR="a,b"``, :func:`make_postprocessor`).
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.types import RetrievalResult


@runtime_checkable
class Postprocessor(Protocol):
    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        """At most ``top_k`` of ``results`` (non-RESTRICTED), best first."""
        ...


def open_results(results: Sequence[RetrievalResult]) -> list[RetrievalResult]:
    """The non-RESTRICTED results, in order."""
    return [r for r in results if not is_restricted(str(r.chunk.sensitivity))]


class PostprocessorChain:
    """Several postprocessors, applied left to right (each given the same ``top_k``)."""

    def __init__(self, stages: Sequence[Postprocessor]) -> None:
        self.stages = list(stages)

    def __repr__(self) -> str:
        return f"PostprocessorChain({self.stages!r})"

    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        for stage in self.stages:
            results = stage.process(query, results, top_k=top_k)
        return results


def make_postprocessor(spec: str = "none", **options: object) -> Postprocessor | None:
    """The chain named by ``spec`` — comma-separated registry names (the caller's
    ``RAGSPINE_POSTPROCESSOR``; default ``none``, the seed's); ``None`` when every name is ``none``. ``options`` go to every
    stage (each takes the ones it knows: ``mmr_lambda``, ``context_chars``, ``compression_chars``)."""
    from ragspine.registries import POSTPROCESSORS

    names = [POSTPROCESSORS.canonical(part) for part in str(spec).split(",") if part.strip()]
    stages = [stage for name in names if (stage := POSTPROCESSORS.build(name, **options)) is not None]
    if not stages:
        return None
    return stages[0] if len(stages) == 1 else PostprocessorChain(stages)
