"""``LLMProviderConformance``: what every LLM registry line's class honours.

A provider proves it with one fixture, ``llm_settings``: settings whose ``RAGSPINE_LLM``
selects it (and reach it: a stub server, a local model)::

    class TestMyProvider(LLMProviderConformance):
        @pytest.fixture
        def llm_settings(self):
            return load_settings({"RAGSPINE_LLM": "mine", "RAGSPINE_LLM_MODEL": "m"})

The contract: the registry line names a class that builds itself from settings alone
(``from_settings``) into an ``LLMProvider``; its ``describe`` is ``ragspine config``'s llm
line, one line starting with the provider's registry name, with the limits the guard applies
and no API key; ``chat`` answers text, and takes a per-call ``max_tokens``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragspine.config import Settings
from ragspine.llm.base import LLMProvider, describe_limits, describe_llm, llm_provider_class, make_llm_provider, parse_llm_spec

HELLO = [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Say yes."}]


class LLMProviderConformance:
    @pytest.fixture
    def llm_provider(self, llm_settings: Settings) -> Iterator[LLMProvider]:
        provider = make_llm_provider(settings=llm_settings)
        assert provider is not None, f"RAGSPINE_LLM={llm_settings.llm.provider!r} builds no provider"
        yield provider
        close = getattr(provider, "close", None)
        if callable(close):
            close()

    def test_the_registry_line_names_a_class_built_from_settings(self, llm_settings: Settings, llm_provider: LLMProvider) -> None:
        provider_class = llm_provider_class(llm_settings.llm.provider)
        assert provider_class is not None
        assert isinstance(llm_provider, provider_class)
        assert isinstance(llm_provider, LLMProvider)
        assert type(provider_class.from_settings(llm_settings)) is type(llm_provider)

    def test_describe_is_the_config_line_naming_the_provider(self, llm_settings: Settings) -> None:
        name, _ = parse_llm_spec(llm_settings.llm.provider)
        provider_class = llm_provider_class(llm_settings.llm.provider)
        assert provider_class is not None
        line = describe_llm(llm_settings)
        assert line == provider_class.describe(llm_settings)
        assert line.startswith(name) and "\n" not in line
        assert describe_limits(llm_settings) in line
        if llm_settings.llm.api_key:
            assert llm_settings.llm.api_key not in line

    def test_chat_answers_text(self, llm_provider: LLMProvider) -> None:
        assert isinstance(llm_provider.chat(HELLO), str)

    def test_chat_takes_a_per_call_max_tokens(self, llm_provider: LLMProvider) -> None:
        assert isinstance(llm_provider.chat(HELLO, max_tokens=8), str)
