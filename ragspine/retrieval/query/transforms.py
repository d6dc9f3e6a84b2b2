"""LLM query transforms (``RAGSPINE_QUERY_TRANSFORM``): HyDE, RAG-Fusion and step-back.

Each makes one ``chat`` call per question with a prompt that holds the question only
(:mod:`~ragspine.retrieval.query.prompts`) and returns :class:`Probes`:

* ``hyde`` (Gao et al. 2022): a hypothetical passage answering the question — a probe for
  the dense leg (the lexical leg where there is no dense leg). The passage is never returned,
  stored, cited or shown in a trace: it may be wrong, and it is only a query.
* ``rag_fusion``: up to ``fanout`` reworded queries; each runs every leg and the pipeline's RRF
  fuses their rankings with the question's (the question first, duplicates dropped).
* ``step_back`` (Zheng et al. 2023): one broader question about the background, searched
  next to the question.

A model error, a spent call budget or an unreadable answer gives no probes (``degraded``):
the question is searched as it is. Errors are counted by the provider's guard, unreadable
answers by :func:`~ragspine.llm.observe.report_malformed`.
"""

from __future__ import annotations

import logging
from typing import Any

from ragspine.errors import ConfigError
from ragspine.llm.base import LLMProvider
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.query import prompts
from ragspine.retrieval.query.base import Probes

__all__ = ["DEFAULT_FANOUT", "MAX_FANOUT", "HyDETransform", "RAGFusionTransform", "StepBackTransform", "ask_model"]

log = logging.getLogger(__name__)

#: Queries RAG-Fusion adds (and sub-questions a decomposition runs), unless configured
#: (``RAGSPINE_QUERY_FANOUT``); never more than :data:`MAX_FANOUT`.
DEFAULT_FANOUT = 3
MAX_FANOUT = 8
_FAILED = Probes(degraded=True)


def ask_model(provider: LLMProvider, seam: str, prompt: str, max_tokens: int | None) -> str | None:
    """The model's answer to ``prompt``; ``None`` (logged) when the call failed."""
    options: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
    try:
        answer = provider.chat([{"role": "user", "content": prompt}], **options)
    except Exception as exc:  # any failure degrades to the plain question
        log.warning("the %s call failed, searching the plain question: %s", seam.replace("_", " "), exc)
        return None
    return answer if isinstance(answer, str) else str(answer)


def _cap(own: int, configured: int | None) -> int:
    return own if configured is None else max(1, min(own, configured))


class _Transform:
    name = ""
    #: the answer's length this transform asks for, in tokens (at most RAGSPINE_LLM_MAX_TOKENS)
    tokens = 64

    def __init__(self, provider: LLMProvider | None = None, *, max_tokens: int | None = None, fanout: int = DEFAULT_FANOUT) -> None:
        if provider is None:
            raise ConfigError(f"RAGSPINE_QUERY_TRANSFORM={self.name} needs an LLM provider (set RAGSPINE_LLM)")
        if not 1 <= fanout <= MAX_FANOUT:
            raise ConfigError(f"RAGSPINE_QUERY_FANOUT must be within 1..{MAX_FANOUT}, got {fanout}")
        self.provider = provider
        self.max_tokens = _cap(self.tokens, max_tokens)
        self.fanout = fanout

    def _ask(self, prompt: str) -> str | None:
        return ask_model(self.provider, self.name, prompt, self.max_tokens)

    def _malformed(self, answer: str) -> Probes:
        report_malformed(self.provider, self.name, answer)
        return _FAILED

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.provider!r})"


class HyDETransform(_Transform):
    name = "hyde"
    tokens = 160

    def probes(self, question: str) -> Probes:
        answer = self._ask(prompts.hyde_prompt(question))
        if answer is None:
            return _FAILED
        passage = prompts.read_passage(answer)
        return Probes(dense=(passage,)) if passage is not None else self._malformed(answer)


class RAGFusionTransform(_Transform):
    name = "rag_fusion"
    tokens = 128

    def probes(self, question: str) -> Probes:
        answer = self._ask(prompts.variants_prompt(question, self.fanout))
        if answer is None:
            return _FAILED
        variants = prompts.read_lines(answer, question, self.fanout)
        return Probes(queries=tuple(variants)) if variants else self._malformed(answer)


class StepBackTransform(_Transform):
    name = "step_back"
    tokens = 64

    def probes(self, question: str) -> Probes:
        answer = self._ask(prompts.step_back_prompt(question))
        if answer is None:
            return _FAILED
        broader = prompts.read_question(answer, question)
        return Probes(queries=(broader,)) if broader is not None else self._malformed(answer)
