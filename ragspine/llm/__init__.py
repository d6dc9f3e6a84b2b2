"""Language-model providers: the ``LLMProvider`` role and :func:`make_llm_provider`."""

from ragspine.llm.base import LLMProvider, make_llm_provider

__all__ = ["LLMProvider", "make_llm_provider"]
