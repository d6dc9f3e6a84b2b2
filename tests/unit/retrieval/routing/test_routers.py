"""Library routers: keyword (BM25 over descriptions), LLM (JSON list), the factory."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.registries import LIBRARY_ROUTERS
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.retrieval.routing.routers import (
    KeywordLibraryRouter,
    LLMLibraryRouter,
    make_library_router,
)
from ragspine.testing.llm import ScriptedLLMProvider

LIBS = [
    LibraryInfo("finance", "quarterly revenue results and margins"),
    LibraryInfo("hr_policies", "employee leave and holiday policy"),
    LibraryInfo("support", "warranty claims and repairs"),
]


Provider = ScriptedLLMProvider


# -- keyword ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query,expected",
    [
        ("Why did revenue fall?", ["finance"]),
        ("How many holiday days do I get?", ["hr_policies"]),
        ("warranty on gearboxes", ["support"]),
        ("HR policies for leave", ["hr_policies"]),  # library_id words count (underscore split)
    ],
)
def test_keyword_router_picks_the_matching_library(query, expected):
    assert KeywordLibraryRouter().route(query, LIBS) == expected


def test_keyword_router_no_overlap_returns_empty():
    assert KeywordLibraryRouter().route("quantum chromodynamics", LIBS) == []
    assert KeywordLibraryRouter().route("", LIBS) == []
    assert KeywordLibraryRouter().route("revenue", []) == []


def test_keyword_router_returns_several_close_libraries_best_first():
    libs = [LibraryInfo("a", "warranty claims"), LibraryInfo("b", "warranty terms")]
    assert KeywordLibraryRouter().route("warranty", libs) == ["a", "b"]  # ties by id
    # "claims" is rarer than "warranty": b scores under half of a and is left out
    assert KeywordLibraryRouter().route("warranty claims", libs) == ["a"]
    assert KeywordLibraryRouter(relative_threshold=0.1).route("warranty claims", libs) == ["a", "b"]
    assert KeywordLibraryRouter(relative_threshold=1.0).route("warranty", libs) == ["a", "b"]


def test_keyword_router_is_deterministic():
    router = KeywordLibraryRouter()
    assert all(router.route("revenue warranty", LIBS) == router.route("revenue warranty", LIBS) for _ in range(3))


@pytest.mark.parametrize("threshold", [0.0, -1, 1.5])
def test_keyword_router_threshold_bounds(threshold):
    with pytest.raises(ConfigError):
        KeywordLibraryRouter(relative_threshold=threshold)


# -- llm --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer,expected",
    [
        ('["finance"]', ["finance"]),
        ('Sure! ["support", "finance"]', ["support", "finance"]),
        ('```json\n["hr_policies"]\n```', ["hr_policies"]),
        ('["finance", "unknown-lib", 3, null]', ["finance"]),
        ('["nope"]', []),
        ("[]", []),
        ("no list here", []),
        ("[not json]", []),
        ("", []),
        (None, []),
    ],
)
def test_llm_router_parses_a_json_list_and_ignores_unknown_ids(answer, expected):
    assert LLMLibraryRouter(Provider(answer)).route("q", LIBS) == expected


def test_llm_router_prompt_lists_libraries_and_the_question():
    provider = Provider('["finance"]')
    LLMLibraryRouter(provider).route("Why did revenue fall?", LIBS)
    (prompt,) = provider.prompts
    assert "Question: Why did revenue fall?" in prompt
    for lib in LIBS:
        assert f"- {lib.library_id}: {lib.description}" in prompt


def test_llm_router_provider_errors_propagate_to_the_caller():
    # MultiIndexRetriever catches them and searches every library
    with pytest.raises(TimeoutError):
        LLMLibraryRouter(Provider("", error=TimeoutError())).route("q", LIBS)


def test_llm_router_needs_a_provider():
    with pytest.raises(ConfigError):
        LLMLibraryRouter(None)


# -- factory ----------------------------------------------------------------------------------
def test_make_library_router_names():
    assert LIBRARY_ROUTERS.names() == ["none", "keyword", "llm"]
    assert make_library_router("none") is None
    assert isinstance(make_library_router("keyword"), KeywordLibraryRouter)
    assert isinstance(make_library_router(" Keyword "), KeywordLibraryRouter)
    provider = Provider("[]")
    router = make_library_router("LLM", provider=provider)
    assert isinstance(router, LLMLibraryRouter) and router.provider is provider


def test_make_library_router_llm_without_provider_is_a_config_error():
    with pytest.raises(ConfigError, match="provider"):
        make_library_router("llm")


def test_make_library_router_unknown_lists_the_names():
    with pytest.raises(ConfigError) as info:
        make_library_router("semantic")
    message = str(info.value)
    assert "semantic" in message
    for name in LIBRARY_ROUTERS:
        assert name in message


def test_make_library_router_default_is_none_and_reads_no_environment(monkeypatch):
    """The seed's ``none``; the caller passes its settings' ``library_router`` (the Stack does)."""
    assert make_library_router() is None
    monkeypatch.setenv("RAGSPINE_LIBRARY_ROUTER", "keyword")
    assert make_library_router() is None
    assert isinstance(make_library_router("keyword"), KeywordLibraryRouter)
