"""The ``LLMProvider`` role: chat messages in, the model's text out.

``chat(messages, **options) -> str``: ``messages`` are ``{"role", "content"}`` dicts; raises
on failure (every caller degrades: the listwise judge keeps the fused order, the LLM router
searches every library, the LLM filter extractor adds no filter). What a model writes is a
probe or a judgement, never evidence: it is never a snippet, a citation or a number.
Providers are chosen by name (``RAGSPINE_LLM``, :func:`make_llm_provider`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class LLMProvider(Protocol):
    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        """The model's reply to ``messages`` (raises on failure)."""
        ...


def make_llm_provider(spec: str | None = None, **options: Any) -> LLMProvider | None:
    """The provider named ``spec`` (default ``RAGSPINE_LLM``); ``None`` for ``none``."""
    from ragspine.registries import LLM_PROVIDERS

    if spec is None:
        from ragspine.config import load_settings

        spec = load_settings().llm
    provider: LLMProvider | None = LLM_PROVIDERS.build(spec, **options)
    return provider
