"""A search's probes: the texts one question's search runs, each with the legs it may use and
its weight in the fusion.

A :class:`~ragspine.retrieval.request.SearchRequest` carries the probes a query transform
generated for its question (:class:`~ragspine.retrieval.reasoning.ReasoningRetriever` asks the
configured transform once per question, passes every generated text through the security gate
and adds the survivors with :func:`transform_probes`). A
:class:`~ragspine.retrieval.pipeline.LibraryPipeline` runs the question's own variants (the
question first, then the glossary's: every leg, weight 1) and then the request's probes
(:func:`search_probes`): RAG-Fusion's variants and the step-back query run every leg, HyDE's
passage the dense leg only — the lexical leg in its place where there is none (economy mode) or
the dense gate cannot read it. Everything is fused by the pipeline's one RRF, reranked against
the question itself.

Which legs a probe runs is part of the probe, never read off its text: a HyDE passage whose
text equals the question, or a glossary variant, is still a dense-leg probe of weight
:data:`PROBE_WEIGHT`, and the glossary variant keeps every leg.

A probe's rankings count :data:`PROBE_WEIGHT` in that RRF, the question's own (and its glossary
variants') 1: a document that only a generated text ranks first scores below the question's
own first, instead of tying it (with equal weights a poor step-back query's first document won
half those ties). A probe still reorders the question's near-ties — that is what it is for, and
why a poor one costs quality (``docs/benchmarks.md``, *Query transforms*).

A probe is only ever a query: it is never returned, stored or cited. A request without probes
(the default path) searches exactly the question's own variants.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["DENSE_LEG", "EVERY_LEG", "PROBE_WEIGHT", "Probe", "search_probes", "transform_probes"]

#: The RRF weight of a generated probe's rankings (the question's own weigh 1).
PROBE_WEIGHT = 0.5
#: The legs a query runs (those the library has).
EVERY_LEG: frozenset[str] = frozenset({"bm25", "vector"})
#: A HyDE passage's: the dense leg only (BM25 in its place where the dense leg cannot run).
DENSE_LEG: frozenset[str] = frozenset({"vector"})


@dataclass(frozen=True)
class Probe:
    """One text a search runs: ``legs`` it may use (of those the library has; with none of
    them runnable, BM25 in their place) and the ``weight`` of its rankings in the fusion."""

    text: str
    legs: frozenset[str] = EVERY_LEG
    weight: float = 1.0


def transform_probes(queries: Iterable[str] = (), dense: Iterable[str] = ()) -> tuple[Probe, ...]:
    """A query transform's probes: ``queries`` (RAG-Fusion's variants, the step-back query) on
    every leg, ``dense`` (HyDE's passages) on the dense leg only, each of :data:`PROBE_WEIGHT`."""
    return (*(Probe(q, EVERY_LEG, PROBE_WEIGHT) for q in queries), *(Probe(p, DENSE_LEG, PROBE_WEIGHT) for p in dense))


def search_probes(variants: Sequence[str], probes: Sequence[Probe] = ()) -> list[Probe]:
    """What one search runs: ``variants`` (the question first: every leg, weight 1), then
    ``probes``; a probe with the text and legs of an earlier text is left out (it would repeat
    a ranking already there)."""
    out = [Probe(v) for v in variants]
    seen = {(p.text, p.legs) for p in out}
    for probe in probes:
        if (probe.text, probe.legs) not in seen:
            seen.add((probe.text, probe.legs))
            out.append(probe)
    return out
