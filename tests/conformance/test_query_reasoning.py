"""Conformance of query-time reasoning (issue 14: HyDE, RAG-Fusion, step-back, decomposition,
Adaptive-RAG, the corrective loop, the security gate), in every mode, one library or routed:

* isolation — no RESTRICTED snippet and no RESTRICTED text in *any* prompt (the transforms',
  the decomposer's, the classifier's, the rewrite's and the listwise judge's: a recording
  provider sees them all), whatever the RESTRICTED chunk's rank; no other library's chunk;
* provenance — every snippet carries its fields and its text is its source's substring;
* generated text is never evidence — a token planted in every generated text (passage,
  variants, step-back, sub-questions, rewrite) appears in no snippet, in no field, and the
  number planted with it nowhere in the answer (the trace shows generated texts masked);
* byte-identical default — every option unset or ``none`` gives the plain exit, the same JSON.

Each checker is shown to fail on a deliberately broken implementation (no vacuous pass).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragspine.config import load_settings
from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, Retrieval, build_narrative_retriever
from ragspine.retrieval.query.adaptive import LLMComplexityClassifier
from ragspine.retrieval.query.base import Probes
from ragspine.retrieval.query.decompose import LLMQueryDecomposer, QueryRewrite
from ragspine.retrieval.query.transforms import HyDETransform, RAGFusionTransform, StepBackTransform
from ragspine.retrieval.reasoning import CORRECTIVE_REFUSAL, ReasoningRetriever
from ragspine.retrieval.reasoning.retriever import _Run
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.security import SecurityGate
from ragspine.stack import Stack
from ragspine.testing.llm import ScriptedLLMProvider
from ragspine.testing.reasoning import seam_of
from tests.conformance.conftest import (
    DESCRIPTIONS,
    QUERY,
    assert_no_restricted,
    assert_provenance,
    ingest,
    library_a_docs,
    library_b_docs,
)

MARK = "zqgeneratedprobezq"  # in every generated text
INVENTED = "987654"  # a number every generated text invents
MODES = ("economy", "hybrid", "vector")


def generated(prompt: str) -> str:
    """Every seam's answer carries MARK; the judge's is an order; Rival is deny-listed."""
    return {
        "hyde": f"Gearbox supply delays were explained {MARK} by the plant managers, {INVENTED} units.",
        "rag_fusion": f"gearbox supply {MARK} {INVENTED}\ndelays of gearbox {MARK}\nRival gearbox supply {INVENTED}",
        "step_back": f"gearbox supply chain {MARK} {INVENTED}",
        "decompose": f"gearbox supply {MARK} {INVENTED}\nwarranty claims gearbox {MARK}\nRival claims {INVENTED}",
        "adaptive": "COMPLEX",
        "rewrite": f"gearbox delays {MARK} {INVENTED}",
    }.get(seam_of(prompt), "1, 0, 2")


def configs(provider: Any) -> dict[str, dict[str, Any]]:
    return {
        "hyde": {"transform": HyDETransform(provider)},
        "rag_fusion": {"transform": RAGFusionTransform(provider)},
        "step_back": {"transform": StepBackTransform(provider)},
        "decompose": {"decomposer": LLMQueryDecomposer(provider)},
        "adaptive": {"classifier": LLMComplexityClassifier(provider), "decomposer": LLMQueryDecomposer(provider)},
        "corrective": {"corrective": True, "rewrite": QueryRewrite(provider), "owns_retry": True},
        "gate": {"gate": SecurityGate({"RIVAL": ["Rival", "竞品"]}), "transform": RAGFusionTransform(provider),
                 "decomposer": LLMQueryDecomposer(provider)},
    }


def build(db: Any, mode: str, routed: bool, provider: Any) -> tuple[Any, dict[str, str], dict[str, Any]]:
    """The exits over libraries whose lexical index holds RESTRICTED chunks (they reach both
    exits and must be dropped there), with the provider's listwise judge."""
    libs = {"lib-a": library_a_docs(), "lib-b": library_b_docs()}
    retrievers, sources, stores = {}, {}, {}
    for lib in libs if routed else ["lib-a"]:
        db.ensure_library(lib, DESCRIPTIONS[lib])
        store = db.chunk_store(lib)
        retriever, _ = build_narrative_retriever(
            store, provider, embedding_backend=DeterministicEmbeddingBackend(), mode=mode, library_id=lib,
            lexical_index=InMemoryLexicalIndex(store, include_restricted=True),
        )
        sources.update(ingest(retriever.index, libs[lib]))
        retrievers[lib], stores[lib] = retriever, store
    if routed:
        return MultiIndexRetriever({k: NarrativeIndexRetriever(r.index, retry_without_filters=False, share_expansions=False)
                                    for k, r in retrievers.items()}, descriptions=DESCRIPTIONS), sources, stores
    return NarrativeIndexRetriever(retrievers["lib-a"].index, retry_without_filters=False), sources, stores


def assert_never_evidence(answer: Retrieval, stores: dict[str, Any], marker: str = MARK) -> None:
    """No generated text in any field of any snippet, every snippet a stored chunk, and no
    generated number anywhere in the answer (snippets, trace, refusals)."""
    whole = json.dumps([answer.snippets, getattr(answer, "trace", []), getattr(answer, "refused", [])], ensure_ascii=False)
    assert INVENTED not in whole, "a generated number is in the answer"
    for s in answer.snippets:
        assert marker not in json.dumps(s, ensure_ascii=False), f"generated text in snippet {s.get('chunk_id')!r}"
        stored = stores[s["library_id"]].get_chunks([s["chunk_id"]])
        assert stored and stored[0].text == s["text"], f"snippet {s['chunk_id']!r} is not a stored chunk"


@pytest.mark.parametrize("routed", [False, True], ids=["single", "routed"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["hyde", "rag_fusion", "step_back", "decompose", "adaptive", "corrective", "gate"])
def test_reasoning_keeps_isolation_provenance_and_never_cites_generated_text(db, name, mode, routed):
    provider = ScriptedLLMProvider(generated)
    exit_, sources, stores = build(db, mode, routed, provider)
    assert any(is_restricted(r.chunk.sensitivity) for r in next(iter(exit_.retrievers.values())).index.retrieve(QUERY, top_k=3)) \
        if routed else any(is_restricted(r.chunk.sensitivity) for r in exit_.index.retrieve(QUERY, top_k=3))  # RESTRICTED ranks high
    retriever = ReasoningRetriever(exit_, retry_without_filters=True, **configs(provider)[name])
    answers = [retriever.search(QUERY, top_k=10), retriever.search(QUERY, filters=parse_filter({"region": "nowhere"}), top_k=10)]
    if name == "corrective":
        answers.append(retriever.search("zqunknowntermzq", top_k=10))
        assert answers[1].filters_dropped and answers[2].refusal == CORRECTIVE_REFUSAL
    assert answers[0].snippets and provider.prompts, "non-vacuous: snippets came back and the model was asked"
    for answer in answers:
        assert_no_restricted(answer.snippets, provider.prompts)
        assert_provenance(answer.snippets, sources)
        assert_never_evidence(answer, stores)
        assert {s["library_id"] for s in answer.snippets} <= set(stores)
    if name == "gate":
        assert {r["query"] for r in answers[0].refused} == {"Rival gearbox supply #", "Rival claims #"}
        assert all("rival" not in p.split("Question:")[-1].lower() for p in provider.prompts)  # never asked about either


def test_every_option_off_is_the_plain_exit_byte_for_byte(settings_env):
    base = settings_env("economy")
    off = {**base, "RAGSPINE_QUERY_TRANSFORM": "none", "RAGSPINE_QUERY_DECOMPOSE": "none", "RAGSPINE_ADAPTIVE": "none",
           "RAGSPINE_CORRECTIVE": "off", "RAGSPINE_SECURITY_DENYLIST": ""}
    provider = ScriptedLLMProvider(generated)
    with Stack(load_settings(base), provider=provider) as stack:
        stack.ensure_library("lib-a")
        ingest(stack.pipeline("lib-a"), library_a_docs())
        unset = stack.retriever(["lib-a"])
        plain = json.dumps(unset.search(QUERY, top_k=10).snippets, sort_keys=True)
    with Stack(load_settings(off), provider=provider) as stack:
        none = stack.retriever(["lib-a"])
        assert type(none) is type(unset) is NarrativeIndexRetriever
        assert json.dumps(none.search(QUERY, top_k=10).snippets, sort_keys=True) == plain
    assert provider.prompts == []


# -- the inverse proofs --------------------------------------------------------------------------
class LeakyHyDE(ReasoningRetriever):
    """Broken on purpose: shows HyDE's passage as if it were a snippet."""

    def _search(self, run: Any, question: str, filters: Any, top_k: int) -> Retrieval:
        answer = super()._search(run, question, filters, top_k)
        fake = dict(answer.snippets[0], text=self.transform.probes(question).dense[0])  # type: ignore[union-attr]
        return Retrieval([fake, *answer.snippets], answer.filters_dropped, answer.dense_incomplete)


class PromptingWithResults:
    """Broken on purpose: a transform whose prompt carries the raw (pre-exit) results."""

    name = "step_back"

    def __init__(self, provider: Any, index: Any) -> None:
        self.provider, self.index = provider, index

    def probes(self, question: str) -> Probes:
        context = "\n".join(r.chunk.text for r in self.index.retrieve(question, top_k=5))
        self.provider.chat([{"role": "user", "content": f"Context:\n{context}\nQuestion: {question}"}])
        return Probes(queries=("gearbox",))


def test_a_trace_showing_generated_numbers_fails_the_checker(db, monkeypatch):
    provider = ScriptedLLMProvider(generated)
    exit_, _, stores = build(db, "economy", False, provider)
    monkeypatch.setattr(_Run, "show", lambda self, text: text)  # broken on purpose: no masking
    answer = ReasoningRetriever(exit_, transform=RAGFusionTransform(provider)).search(QUERY, top_k=5)
    with pytest.raises(AssertionError, match="generated number"):
        assert_never_evidence(answer, stores)


def test_the_checkers_fail_on_broken_implementations(db):
    provider = ScriptedLLMProvider(generated)
    exit_, _, stores = build(db, "economy", False, provider)
    leaky = LeakyHyDE(exit_, transform=HyDETransform(provider)).search(QUERY, top_k=5)
    with pytest.raises(AssertionError, match="generated"):
        assert_never_evidence(leaky, stores)
    prompting = ReasoningRetriever(exit_, transform=PromptingWithResults(provider, exit_.index))  # type: ignore[arg-type]
    answer = prompting.search(QUERY, top_k=5)
    with pytest.raises(AssertionError, match="reached a prompt"):
        assert_no_restricted(answer.snippets, provider.prompts)
