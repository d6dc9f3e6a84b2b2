"""``RAGSPINE_LLM`` and its settings: names or a base URL, the provider built from settings
alone, the ``ragspine config`` line, and errors that name the fix."""

from __future__ import annotations

import importlib.util

import pytest

from ragspine.config import LlmSettings, load_settings
from ragspine.errors import ConfigError
from ragspine.llm.base import describe_llm, llm_options, llm_provider_class, make_llm_provider, parse_llm_spec
from ragspine.llm.llamacpp import LlamaCppLLMProvider
from ragspine.llm.openai_compatible import OpenAICompatibleLLMProvider
from ragspine.registries import LLM_PROVIDERS
from tests.helpers import needs


def test_the_registry_names_every_provider():
    assert LLM_PROVIDERS.names() == ["none", "openai", "local"]
    assert LLM_PROVIDERS["openai"].extra == "openai" and LLM_PROVIDERS["local"].extra == "llm-local"


@pytest.mark.parametrize(
    "value,expected",
    [
        ("none", ("none", None)),
        (" OpenAI ", ("openai", None)),
        ("local", ("local", None)),
        ("http://localhost:11434/v1", ("openai", "http://localhost:11434/v1")),
        ("https://api.example.com/v1/", ("openai", "https://api.example.com/v1")),
        ("HTTP://127.0.0.1:8000/v1", ("openai", "HTTP://127.0.0.1:8000/v1")),
    ],
)
def test_parse_llm_spec(value, expected):
    assert parse_llm_spec(value) == expected


@pytest.mark.parametrize("value", ["gpt-4o", "ollama", "http://", "ftp://host/v1"])
def test_a_bad_llm_value_names_the_choices_and_the_url_form(value):
    with pytest.raises(ConfigError) as info:
        load_settings({"RAGSPINE_LLM": value})
    message = str(info.value)
    assert "RAGSPINE_LLM" in message and "http" in message
    if "://" not in value:
        assert all(name in message for name in LLM_PROVIDERS.names())


def test_settings_of_the_llm():
    s = load_settings({})
    assert s.llm == LlmSettings(provider="none", model=None, api_key=None, timeout=20.0, retries=2, max_calls=10, max_tokens=256, reserve=None)
    s = load_settings({"RAGSPINE_LLM": "http://h:1/v1/", "RAGSPINE_LLM_MODEL": "qwen", "RAGSPINE_LLM_API_KEY": "k",
                       "RAGSPINE_LLM_TIMEOUT": "5", "RAGSPINE_LLM_RETRIES": "0", "RAGSPINE_LLM_MAX_CALLS": "3",
                       "RAGSPINE_LLM_MAX_TOKENS": "32"})
    assert s.llm.provider == "http://h:1/v1"
    assert llm_options(s) == {"settings": s}  # the old call's form: make_llm_provider(s.llm.provider, **llm_options(s))
    needs("openai")
    for built in (make_llm_provider(settings=s), make_llm_provider(s.llm.provider, **llm_options(s)), OpenAICompatibleLLMProvider.from_settings(s)):
        assert isinstance(built, OpenAICompatibleLLMProvider)
        assert (built.base_url, built.model, built.timeout, built.retries, built.max_tokens) == ("http://h:1/v1", "qwen", 5.0, 0, 32)
    assert make_llm_provider(settings=load_settings({})) is None


def test_the_local_provider_takes_its_options_from_settings(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "xllamacpp" else real(name, *a))
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF")
    s = load_settings({"RAGSPINE_LLM": "local", "RAGSPINE_LLM_MODEL": str(model), "RAGSPINE_LLM_TIMEOUT": "7",
                       "RAGSPINE_LLM_MAX_TOKENS": "16"})
    built = make_llm_provider(settings=s)  # builds no model: it loads on the first call
    assert isinstance(built, LlamaCppLLMProvider)
    assert (built.model_path, built.timeout, built.max_tokens, built.threads) == (str(model), 7.0, 16, 1)


def test_the_registry_line_names_the_class_that_builds_and_describes_it():
    assert llm_provider_class("none") is None
    assert llm_provider_class("openai") is OpenAICompatibleLLMProvider
    assert llm_provider_class("http://h/v1") is OpenAICompatibleLLMProvider
    assert llm_provider_class(" Local ") is LlamaCppLLMProvider
    for name in LLM_PROVIDERS.names():
        provider_class = llm_provider_class(name)
        assert provider_class is None or (callable(provider_class.from_settings) and callable(provider_class.describe))


@pytest.mark.parametrize("env,value", [("RAGSPINE_LLM_TIMEOUT", "0"), ("RAGSPINE_LLM_RETRIES", "11"),
                                       ("RAGSPINE_LLM_RETRIES", "-1"), ("RAGSPINE_LLM_MAX_CALLS", "0"),
                                       ("RAGSPINE_LLM_MAX_TOKENS", "0"), ("RAGSPINE_LLM_TIMEOUT", "soon")])
def test_out_of_range_llm_settings_fail_naming_the_variable(env, value):
    with pytest.raises(ConfigError, match=env):
        load_settings({env: value})


def test_make_llm_provider_never_reads_the_environment(monkeypatch):
    assert make_llm_provider("none") is None
    monkeypatch.setenv("RAGSPINE_LLM", "http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match="never reads the environment"):
        make_llm_provider()
    assert make_llm_provider(settings=load_settings({})) is None
    needs("openai")
    settings = load_settings({"RAGSPINE_LLM": "http://127.0.0.1:9/v1", "RAGSPINE_LLM_MODEL": "m", "RAGSPINE_LLM_RETRIES": "0"})
    provider = make_llm_provider(settings=settings)
    assert isinstance(provider, OpenAICompatibleLLMProvider)
    assert (provider.base_url, provider.model, provider.retries) == ("http://127.0.0.1:9/v1", "m", 0)
    other = make_llm_provider("http://other:1/v1", settings=settings)  # a spec replaces settings.llm.provider, the rest stays
    assert isinstance(other, OpenAICompatibleLLMProvider) and (other.base_url, other.model) == ("http://other:1/v1", "m")


def test_a_misspelled_option_is_an_error_not_swallowed():
    needs("openai")
    with pytest.raises(TypeError, match="retires"):
        make_llm_provider("http://127.0.0.1:9/v1", model="m", retires=0)
    with pytest.raises(TypeError, match="not both"):
        make_llm_provider("openai", settings=load_settings({}), model="m")


def test_describe_llm_says_which_model_where_and_the_limits():
    assert describe_llm(load_settings({})) == "none"
    line = describe_llm(load_settings({"RAGSPINE_LLM": "http://user:secret@h:11434/v1", "RAGSPINE_LLM_MODEL": "llama3.2"}))
    assert "llama3.2" in line and "h:11434/v1" in line and "secret" not in line and "10 calls per request" in line
    assert "RAGSPINE_LLM_MODEL" in describe_llm(load_settings({"RAGSPINE_LLM": "openai"}))
    local = describe_llm(load_settings({"RAGSPINE_LLM": "local"}))
    assert local.startswith("local: SmolLM2-135M") and ("plumbing" in local or "not installed" in local)
