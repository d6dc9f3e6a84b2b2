"""The LLM conformance suite on the shipped providers (the throwaway one is in
``tests/unit/test_adding_a_backend.py``)."""

from __future__ import annotations

import importlib.util

import pytest

from ragspine.config import load_settings
from ragspine.llm.gguf import packaged_gguf
from tests.helpers import needs
from tests.unit.llm.conformance import LLMProviderConformance


class TestOpenAICompatibleConformance(LLMProviderConformance):
    @pytest.fixture
    def llm_settings(self):
        needs("openai")
        from ragspine.testing.openai_stub import OpenAIStub

        with OpenAIStub("yes") as stub:
            yield load_settings({"RAGSPINE_LLM": stub.url, "RAGSPINE_LLM_MODEL": "stub-model", "RAGSPINE_LLM_API_KEY": "sk-secret"})


@pytest.mark.slow
class TestLocalConformance(LLMProviderConformance):
    @pytest.fixture
    def llm_settings(self):
        if importlib.util.find_spec("xllamacpp") is None or packaged_gguf() is None:
            pytest.skip("the [llm-local] extra or its model is not installed")
        return load_settings({"RAGSPINE_LLM": "local", "RAGSPINE_LLM_MAX_TOKENS": "8"})
