"""``ReasoningRetriever``: the security gate, Adaptive-RAG, decomposition, query transforms
and the corrective loop around a link exit (one library's, or the multi-library one).

One search, left to right (one request of the LLM call budget, every call included):

1. **Gate** the user's question (:class:`~ragspine.security.SecurityGate`): refused → no
   search at all, no model call, and the fixed :data:`GATE_REFUSAL`.
2. **Route** (``RAGSPINE_ADAPTIVE``): single-shot or decomposition; with
   ``RAGSPINE_QUERY_DECOMPOSE=llm`` and no classifier, always decomposition.
3. **Decompose**: sub-questions, each gated; the question and every allowed sub-question run
   the whole guarded pipeline (the inner exit: both RESTRICTED exits) and their answers are
   fused deterministically (:func:`~ragspine.retrieval.reasoning.fuse.fuse_answers`).
4. **Transform** each searched question (``RAGSPINE_QUERY_TRANSFORM``): the generated probes,
   each gated, join that question's request (:mod:`~ragspine.retrieval.query.probes`).
5. **Correct** (``RAGSPINE_CORRECTIVE``): grade the answer
   (:mod:`~ragspine.retrieval.reasoning.grade`); while it is not relevant, act — at most two
   rounds: drop the filters (when the caller allows it), then rewrite the question (gated) —
   each round the whole search again; still weak: refuse with the fixed
   :data:`CORRECTIVE_REFUSAL` and no snippet.

Each step hands the inner exit a copy of the caller's
:class:`~ragspine.retrieval.request.SearchRequest` (its question, probes and filter changed;
its ranking, weights and RAPTOR choice as they are). The answer (:class:`ReasonedRetrieval`)
says what was refused (``refused``: the kind, the
text — never HyDE's passage — and the entity) and carries the ``trace`` of every step. A
generated text is only ever a query: never a snippet, a citation or a number (where the trace
shows one, a number the user's question does not contain is masked as ``#``). Every model
failure degrades to the plain question and is counted (:class:`ReasoningObserver`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ragspine.llm.budget import llm_request
from ragspine.numerals import mask_numbers
from ragspine.retrieval.fusion import DEFAULT_RRF_K
from ragspine.retrieval.link.narrative_link import NarrativeRetriever
from ragspine.retrieval.query.base import ComplexityClassifier, QueryDecomposer, QueryTransform
from ragspine.retrieval.query.decompose import QueryRewrite
from ragspine.retrieval.query.probes import Probe, transform_probes
from ragspine.retrieval.reasoning.fuse import fuse_answers
from ragspine.retrieval.reasoning.grade import Grade, grade
from ragspine.retrieval.reasoning.options import notify
from ragspine.retrieval.request import Answer, RequestRetriever, SearchRequest, ask
from ragspine.security.gate import SecurityGate

if TYPE_CHECKING:
    from ragspine.retrieval.filtering.filters import MetadataFilter

__all__ = ["CORRECTIVE_REFUSAL", "GATE_REFUSAL", "MAX_ROUNDS", "ReasonedRetrieval", "ReasoningRetriever"]

#: The answer to a question the security gate refused (fixed; no digits).
GATE_REFUSAL = "Refused: the question names an entity this service does not answer about, so nothing was searched."
#: The answer when the corrective loop's last grade is still weak (fixed; no digits).
CORRECTIVE_REFUSAL = "No passage answers this question well enough, so none is returned rather than a weak one."
#: Corrective rounds after the first search (drop filters, then rewrite).
MAX_ROUNDS = 2
#: The refused-list kind of each transform's probes.
PROBE_KIND = {"rag_fusion": "variant", "step_back": "step_back", "hyde": "hyde"}


@dataclass(frozen=True)
class ReasonedRetrieval(Answer):
    """An :class:`~ragspine.retrieval.request.Answer` where reasoning ran: what was
    ``refused`` and the ``trace`` of every step are lists (empty ones by default), and the fixed
    ``refusal`` message when the whole question was refused (no snippets then)."""

    refused: list[dict[str, Any]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    refusal: str | None = None


@dataclass
class _Run:
    """One search's trace and refusals. Texts go in through :meth:`show`: a number a model
    wrote that the user's question does not contain is masked (``#``) — a generated text is
    shown as the probe it was, never as a number to read."""

    question: str
    request: SearchRequest | None = None  # the caller's: what each step's request copies
    trace: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    library_runs: list[tuple[str, Answer]] = field(default_factory=list)  # of the inner exit's answers

    def show(self, text: str) -> str:
        """``text`` with every number (digits of any script, CJK numerals, number words:
        :mod:`ragspine.numerals`) the question does not state masked as ``#``."""
        return mask_numbers(text, keep=self.question)


class ReasoningRetriever(RequestRetriever):
    """See the module docstring. ``owns_retry``: the inner exit does not retry without filters
    (decomposition, Adaptive-RAG or the corrective loop decide it here, on the whole answer);
    ``retry_without_filters``: whether the caller allows dropping its filters at all."""

    def __init__(
        self,
        inner: NarrativeRetriever,
        *,
        gate: SecurityGate | None = None,
        transform: QueryTransform | None = None,
        decomposer: QueryDecomposer | None = None,
        classifier: ComplexityClassifier | None = None,
        corrective: bool = False,
        rewrite: QueryRewrite | None = None,
        retry_without_filters: bool = True,
        owns_retry: bool = False,
        observer: Any = None,
        rrf_k: int = DEFAULT_RRF_K,
    ) -> None:
        self.inner = inner
        self.gate = gate
        self.transform = transform
        self.decomposer = decomposer
        self.classifier = classifier
        self.corrective = corrective
        self.rewriter = rewrite if rewrite is not None else QueryRewrite()
        self.retry_without_filters = retry_without_filters
        self.owns_retry = owns_retry
        self.observer = observer
        self.rrf_k = rrf_k

    def search(self, request: SearchRequest | str, *, filters: MetadataFilter | None = None, top_k: int | None = None) -> ReasonedRetrieval:
        return self._answer(SearchRequest.of(request, filters=filters, top_k=top_k))

    def _answer(self, request: SearchRequest) -> ReasonedRetrieval:
        with llm_request():  # one budget for the transforms, the classifier, the judge and the router
            query, filters, top_k = request.question, request.filter, request.top_k
            run = _Run(query, request)
            if not self._allowed(run, query, "question"):
                notify(self.observer, "query_refused", "gate")
                return ReasonedRetrieval(refused=run.refused, trace=run.trace, refusal=GATE_REFUSAL)
            answer = self._reason(run, query, filters, top_k)
            if self.corrective:
                return self._correct(run, query, filters, top_k, answer)
            if self.owns_retry and not answer.snippets and filters is not None and self._may_drop(run):
                run.trace.append({"step": "retry", "action": "drop_filters"})
                answer = _dropped(self._reason(run, query, None, top_k))
            return self._done(run, answer)

    def _may_drop(self, run: _Run) -> bool:
        """Whether the filters may be dropped: this retriever's choice and the request's."""
        return self.retry_without_filters and (run.request is None or run.request.retry_without_filters)

    # -- the steps ------------------------------------------------------------------------------
    def _allowed(self, run: _Run, text: str, kind: str) -> bool:
        """The gate's decision on ``text``, recorded (HyDE's passage is never echoed)."""
        if self.gate is None:
            return True
        decision = self.gate.check(text)
        if kind == "question":
            run.trace.append({"step": "gate", "query": run.show(text), "allowed": decision.allowed, **({"entity": decision.entity} if decision.entity else {})})
        if not decision.allowed:
            refused: dict[str, Any] = {"kind": kind, "entity": decision.entity}
            if kind != "hyde":
                refused["query"] = run.show(text)
            run.refused.append(refused)
            if kind != "question":
                notify(self.observer, "query_refused", "gate_probe")
        return decision.allowed

    def _reason(self, run: _Run, question: str, filters: MetadataFilter | None, top_k: int) -> Answer:
        """The answer to ``question``: one search, or its decomposition's fused."""
        decompose = self.decomposer is not None and self.classifier is None
        if self.classifier is not None:
            complexity = self.classifier.classify(question)
            run.trace.append({"step": "adaptive", "route": complexity.route, "signals": list(complexity.signals)})
            outcome = "degraded" if "degraded" in complexity.signals else "applied" if complexity.decompose else "single"
            notify(self.observer, "query_transform", "adaptive", outcome)
            decompose = complexity.decompose and self.decomposer is not None
        if not decompose:
            return self._search(run, question, filters, top_k)
        assert self.decomposer is not None
        subs = self.decomposer.decompose(question)
        allowed = [s for s in subs if self._allowed(run, s, "sub_question")]
        run.trace.append({"step": "decompose", "question": run.show(question), "sub_questions": [run.show(s) for s in subs],
                          "searched": [run.show(s) for s in allowed]})
        notify(self.observer, "query_transform", "decompose", "applied" if subs else "single")
        answers = [self._search(run, q, filters, top_k) for q in [question, *allowed]]
        return fuse_answers(answers, top_k=top_k, rrf_k=self.rrf_k)

    def _search(self, run: _Run, question: str, filters: MetadataFilter | None, top_k: int) -> Answer:
        """One search of ``question`` by the inner exit: the caller's request asking
        ``question`` with ``filters`` and ``top_k``, and the probes the transform generated for
        it (the caller's own probes stay where it asks the caller's very question)."""
        request = run.request if run.request is not None else SearchRequest(question)
        own: tuple[Probe, ...] = request.probes if question == request.question else ()
        if self.transform is not None:
            name = self.transform.name
            probes = self.transform.probes(question)
            kind = PROBE_KIND.get(name, "variant")
            queries = tuple(q for q in probes.queries if self._allowed(run, q, kind))
            dense = tuple(p for p in probes.dense if self._allowed(run, p, "hyde"))
            own += transform_probes(queries, dense)
            step: dict[str, Any] = {"step": "transform", "transform": name, "question": run.show(question),
                                    "probes": [run.show(q) for q in queries]}
            if probes.dense:
                step["hyde_passages"] = len(dense)  # counted, never shown: a passage is a probe, not text to read
            step["refused"] = len(probes.queries) + len(probes.dense) - len(queries) - len(dense)
            step["degraded"] = probes.degraded
            run.trace.append(step)
            notify(self.observer, "query_transform", name, "degraded" if probes.degraded else "applied")
        answer = ask(self.inner, replace(request, question=question, probes=own, filter=filters, top_k=top_k))
        run.library_runs.extend(answer.library_runs)
        run.trace.append({"step": "search", "question": run.show(question), "filtered": filters is not None, "snippets": len(answer.snippets)})
        return answer

    def _correct(self, run: _Run, query: str, filters: MetadataFilter | None, top_k: int, answer: Answer) -> ReasonedRetrieval:
        actions = (["drop_filters"] if filters is not None and self._may_drop(run) else []) + ["rewrite"]
        verdict = self._grade(run, query, answer, 0)
        question, dropped = query, False
        for number, action in enumerate(actions[:MAX_ROUNDS], 1):
            if verdict.relevant:
                break
            if not self._allowed(run, question, "question"):  # every round passes the gate again
                break
            if action == "drop_filters":
                filters, dropped = None, True
                run.trace.append({"step": "act", "round": number, "action": action})
                answer = _dropped(self._reason(run, question, None, top_k))
            else:
                rewritten = self.rewriter.rewrite(question)
                if rewritten is None:
                    run.trace.append({"step": "act", "round": number, "action": action, "skipped": "no different query"})
                    break
                question, source = rewritten
                run.trace.append({"step": "act", "round": number, "action": action, "query": run.show(question), "source": source})
                if not self._allowed(run, question, "rewrite"):
                    break
                answer = self._reason(run, question, filters, top_k)
                answer = _dropped(answer) if dropped else answer
            notify(self.observer, "corrective_round", action)
            verdict = self._grade(run, query, answer, number)
        if verdict.relevant:
            notify(self.observer, "corrective_round", "keep")
            return self._done(run, answer)
        notify(self.observer, "corrective_round", "refuse")
        notify(self.observer, "query_refused", "corrective")
        run.trace.append({"step": "refuse", "reason": "weak answer after the corrective rounds"})
        return ReasonedRetrieval(refused=run.refused, trace=run.trace, refusal=CORRECTIVE_REFUSAL,
                                 library_runs=tuple(run.library_runs))

    def _grade(self, run: _Run, query: str, answer: Answer, number: int) -> Grade:
        verdict = grade(query, answer.snippets)
        run.trace.append({"step": "grade", "round": number, **verdict.as_dict()})
        return verdict

    @staticmethod
    def _done(run: _Run, answer: Answer) -> ReasonedRetrieval:
        return ReasonedRetrieval(answer.snippets, answer.filters_dropped, answer.dense_incomplete, refused=run.refused, trace=run.trace,
                                 library_runs=tuple(run.library_runs))


def _dropped(answer: Answer) -> Answer:
    """``answer`` found without the filters: said once and on every snippet."""
    for snippet in answer.snippets:
        snippet["filters_dropped"] = True
    return replace(answer, filters_dropped=True)
