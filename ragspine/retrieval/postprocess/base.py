"""The ``Postprocessor`` role: the last stage before the link exit (after rerank).

``process(query, results) -> results`` may reorder, drop or annotate results; it never adds a
result the pipeline did not retrieve and never changes a chunk's ``text`` or any reference
field (a compression writes ``prompt_text`` only). Postprocessors are chosen by name and
chained (``RAGSPINE_POSTPROCESSOR="a,b"``, :func:`make_postprocessor`).
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from ragspine.retrieval.types import RetrievalResult


@runtime_checkable
class Postprocessor(Protocol):
    def process(self, query: str, results: list[RetrievalResult]) -> list[RetrievalResult]:
        """The results to hand on, best first: a subset of ``results``, possibly reordered."""
        ...


class PostprocessorChain:
    """Several postprocessors, applied left to right."""

    def __init__(self, stages: Sequence[Postprocessor]) -> None:
        self.stages = list(stages)

    def __repr__(self) -> str:
        return f"PostprocessorChain({self.stages!r})"

    def process(self, query: str, results: list[RetrievalResult]) -> list[RetrievalResult]:
        for stage in self.stages:
            results = stage.process(query, results)
        return results


def make_postprocessor(spec: str | None = None, **options: object) -> Postprocessor | None:
    """The chain named by ``spec`` — comma-separated registry names (default
    ``RAGSPINE_POSTPROCESSOR``); ``None`` when every name is ``none``."""
    from ragspine.registries import POSTPROCESSORS

    if spec is None:
        from ragspine.config import load_settings

        spec = load_settings().postprocessor
    names = [POSTPROCESSORS.canonical(part) for part in str(spec).split(",") if part.strip()]
    stages = [stage for name in names if (stage := POSTPROCESSORS.build(name, **options)) is not None]
    if not stages:
        return None
    return stages[0] if len(stages) == 1 else PostprocessorChain(stages)
