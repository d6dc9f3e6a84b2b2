"""The workflow preview: a redacted, Dify-DSL-shaped picture of the configured pipeline."""

from __future__ import annotations

import json

import pytest
import yaml

from ragspine import cli
from ragspine.config import load_settings
from ragspine.profile import PROFILES, Profile
from ragspine.retrieval.ranking import Ranking
from ragspine.workflow import DIFY_DSL_VERSION, check_dify_graph, dify_preview, pipeline_view, render
from ragspine.workflow.dify import DIFY_NODE_TYPES, NOTE_NODE
from ragspine.workflow.view import PipelineView
from tests.helpers import needs

#: Dify's workflow node types (api/core/workflow/nodes/enums.py, NodeType): what its importer's
#: validate_graph_structure accepts as data.type (an empty type is a canvas note and is skipped).
DIFY_NODE_TYPE_VALUES = {
    "start", "end", "answer", "llm", "knowledge-retrieval", "if-else", "code", "template-transform", "question-classifier",
    "http-request", "tool", "variable-aggregator", "variable-assigner", "loop", "loop-start", "loop-end", "iteration",
    "iteration-start", "parameter-extractor", "assigner", "document-extractor", "list-operator", "agent",
}
SECRETS = {
    "RAGSPINE_LLM": "https://llmuser:llm-pass-9f2@llm.internal.example:8443/v1",
    "RAGSPINE_LLM_MODEL": "private-model-name",
    "RAGSPINE_LLM_API_KEY": "sk-live-4b1d9c0ffee",
    "RAGSPINE_ADMIN_TOKEN": "admin-token-7e57",
    "RAGSPINE_CHUNK_STORE": "postgresql://ragspine:pg-Pa55word@db.internal.example:5432/kb",
    "RAGSPINE_VECTOR_STORE": "https://qdrant.internal.example:6333",
    "RAGSPINE_QDRANT_API_KEY": "qdrant-key-31337",
    "RAGSPINE_EMBEDDING_CACHE": "redis://:redis-pw-42@cache.internal.example:6379/0",
    "RAGSPINE_SECURITY_DENYLIST": "/etc/ragspine/competitors-denylist.yaml",
    "RAGSPINE_FILTER_VOCABULARY": "/etc/ragspine/vocabulary-private.yaml",
    "RAGSPINE_GLOSSARY": "/etc/ragspine/glossary-private.yaml",
    "RAGSPINE_FACT_GLOSSARY": "/etc/ragspine/facts-glossary-private.yaml",
    "RAGSPINE_DATA_DIR": "/srv/private-data-dir",
}
NEEDLES = ["llmuser", "llm-pass-9f2", "llm.internal", "private-model-name", "sk-live-4b1d9c0ffee", "admin-token-7e57", "pg-Pa55word",
           "db.internal", "qdrant.internal", "qdrant-key-31337", "redis-pw-42", "cache.internal", "competitors-denylist", "/etc/ragspine",
           "vocabulary-private", "private-data-dir", "6333", "5432"]


def nodes_by_id(document: dict) -> dict[str, dict]:
    return {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}


def test_the_default_pipeline_is_a_dify_workflow_graph() -> None:
    document = dify_preview(pipeline_view(load_settings({"RAGSPINE_EMBEDDING": "none"})))
    check_dify_graph(document)
    assert (document["version"], document["kind"], document["app"]["mode"]) == (DIFY_DSL_VERSION, "app", "workflow")
    graph = document["workflow"]["graph"]
    assert [n["id"] for n in graph["nodes"] if n["type"] == "custom"] == [
        "question", "prefilter", "bm25_leg", "fusion", "rerank", "postprocess", "link_exit", "snippets"]
    assert "dense_leg" not in nodes_by_id(document)  # economy: no dense leg, no vector store
    assert [(e["source"], e["target"]) for e in graph["edges"]][:2] == [("question", "prefilter"), ("prefilter", "bm25_leg")]
    assert {n["data"]["type"] for n in graph["nodes"] if n["type"] == "custom"} <= DIFY_NODE_TYPES <= DIFY_NODE_TYPE_VALUES
    assert all(n["data"]["type"] == "" for n in graph["nodes"] if n["type"] == NOTE_NODE)
    assert document["workflow"]["environment_variables"] == [] and document["workflow"]["conversation_variables"] == []
    assert "not evidence and not executable" in document["app"]["description"]


def test_every_stage_of_a_full_pipeline_is_drawn_with_its_labels() -> None:
    settings = load_settings({
        "RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_RETRIEVAL_MODE": "hybrid", "RAGSPINE_VECTOR_STORE": "memory",
        "RAGSPINE_CHUNKER": "parent_child", "RAGSPINE_RERANKER": "listwise", "RAGSPINE_RERANK_DEPTH": "30",
        "RAGSPINE_POSTPROCESSOR": "mmr,lost_in_middle", "RAGSPINE_FUSION_WEIGHTS": "bm25=1,vector=0.5", "RAGSPINE_LIBRARY_ROUTER": "keyword",
        "RAGSPINE_SECURITY_DENYLIST": "/x/deny.yaml", "RAGSPINE_QUERY_TRANSFORM": "hyde", "RAGSPINE_CORRECTIVE": "on",
    })
    document = dify_preview(pipeline_view(settings))
    check_dify_graph(document)
    by_id = nodes_by_id(document)
    assert by_id["dense_leg"]["data"]["desc"] == "embedding: deterministic; vector store: memory"
    assert by_id["fusion"]["data"]["desc"] == "k=60; weights: bm25=1,vector=0.5"
    assert by_id["rerank"]["data"]["desc"].startswith("listwise, depth 30 (an LLM judge); RESTRICTED exit")
    assert by_id["postprocess"]["data"]["desc"] == "mmr, lost_in_middle"
    assert by_id["security_gate"]["data"]["type"] == "list-operator" and "refused before any retrieval" in by_id["security_gate"]["data"]["desc"]
    assert by_id["query_reasoning"]["data"]["desc"].startswith("transform hyde, corrective")
    assert "RESTRICTED exit" in by_id["link_exit"]["data"]["desc"]
    assert "chunker: parent_child (480 characters, overlap 80)" in by_id["note_index"]["data"]["text"]
    edges = {(e["source"], e["target"]) for e in document["workflow"]["graph"]["edges"]}
    assert {("prefilter", "bm25_leg"), ("prefilter", "dense_leg"), ("bm25_leg", "fusion"), ("dense_leg", "fusion")} <= edges


def test_nothing_secret_leaks_in_json_or_yaml() -> None:
    settings = load_settings({**SECRETS, "RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_RERANKER": "listwise"})
    view = pipeline_view(settings)
    assert view.chunk_store == "postgresql" and view.vector_store == "qdrant" and view.security_gate
    for fmt in ("json", "yaml"):
        text = render(dify_preview(view), fmt)
        leaked = [n for n in NEEDLES if n in text]
        assert leaked == [], f"{fmt}: {leaked}"
    assert set(vars(view)) == set(PipelineView.__dataclass_fields__)  # names, kinds and numbers only


def test_a_value_that_is_no_registry_name_is_drawn_as_custom() -> None:
    # a Profile built field by field (no checks): whatever it holds, the view draws names only
    recipe = Profile(mode="hybrid", embedding="https://user:pw@embed.example/v1", chunker="../../etc/passwd", contextual="x",
                     ranking=Ranking("none", "mmr,https://evil", "bm25=1", 5))
    view = PipelineView().with_profile(recipe)
    text = render(dify_preview(view))
    assert view.embedding == "custom" and view.chunker == "custom" and view.postprocessors == ("mmr", "custom")
    assert not any(s in text for s in ("user:pw", "embed.example", "passwd", "evil"))


def test_yaml_is_what_dify_exports_and_reads_back() -> None:
    document = dify_preview(pipeline_view(load_settings({"RAGSPINE_EMBEDDING": "deterministic"})))
    text = render(document, "yaml")
    assert text.startswith("version: 0.6.0\nkind: app\n")
    back = yaml.safe_load(text)
    assert back == document and isinstance(back["version"], str)  # Dify refuses a non-string version
    assert json.loads(render(document)) == document


@pytest.mark.parametrize("break_it", ["dangling edge", "unknown type", "two starts", "island"])
def test_the_structure_check_fails_a_broken_graph(break_it: str) -> None:
    document = dify_preview(pipeline_view(load_settings({"RAGSPINE_EMBEDDING": "none"})))
    graph = document["workflow"]["graph"]
    if break_it == "dangling edge":
        graph["edges"][0]["target"] = "nowhere"
    elif break_it == "unknown type":
        graph["nodes"][1]["data"]["type"] = "ragspine-fusion"
    elif break_it == "two starts":
        graph["nodes"][1]["data"]["type"] = "start"
    else:
        graph["edges"] = [e for e in graph["edges"] if e["target"] != "rerank"]
    with pytest.raises(AssertionError):
        check_dify_graph(document)


def test_the_cli_prints_or_writes_the_preview(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_LLM_API_KEY", "sk-live-4b1d9c0ffee")
    assert cli.main(["workflow", "preview"]) == 0
    out = capsys.readouterr().out
    check_dify_graph(json.loads(out))
    assert "sk-live" not in out
    target = tmp_path / "pipeline.yml"
    assert cli.main(["workflow", "preview", "--format", "yaml", "--output", str(target), "--mode", "economy"]) == 0
    assert "not executable" in capsys.readouterr().err
    check_dify_graph(yaml.safe_load(target.read_text(encoding="utf-8")))


def test_a_librarys_own_reasoning_is_drawn_over_the_servers() -> None:
    needs("sqlalchemy")  # the service's store
    from ragspine.service.store import Library

    settings = load_settings({"RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_QUERY_TRANSFORM": "hyde", "RAGSPINE_CORRECTIVE": "1"})
    server_recipe = Profile.from_settings(settings)
    server = pipeline_view(settings)
    assert server.query_reasoning == ("transform hyde", "corrective")

    def library(reasoning: dict) -> Library:
        return Library.create("t/lib", "t", "lib", "", 0.0, retrieval_mode="hybrid", embedding="deterministic", chunker="default",
                              contextual="none", ranking=Ranking(), reasoning=reasoning, raptor=None)

    own = pipeline_view(settings, recipe=library({"query_transform": "step_back", "decompose": "llm", "corrective": False}).recipe(server_recipe))
    assert own.query_reasoning == ("transform step_back", "decompose llm")
    unset = pipeline_view(settings, recipe=library({}).recipe(server_recipe))
    assert unset.query_reasoning == server.query_reasoning
    assert pipeline_view(settings, recipe=server_recipe) == server  # the server's view is its recipe's


def test_the_view_is_the_recipe_that_runs() -> None:
    """Every recipe field of the view comes from the Profile: a named profile's view shows its choices."""
    settings = load_settings({"RAGSPINE_EMBEDDING": "deterministic"})
    for named in PROFILES.values():
        recipe = named.profile.override(embedding="deterministic") if named.profile.embedding not in ("none",) else named.profile
        view = pipeline_view(settings, recipe=recipe)
        assert (view.chunker, view.chunk_chars, view.contextual, view.rerank_depth) == (
            recipe.chunker, recipe.chunk_chars, recipe.contextual, recipe.ranking.rerank_depth)
        assert view.fusion_weights == (recipe.ranking.fusion_weights or "none")
        assert view.mode == ("economy" if recipe.mode == "economy" or recipe.embedding == "none" else "hybrid")


def test_zscore_fusion_is_drawn_as_what_it_is() -> None:
    document = dify_preview(pipeline_view(load_settings({"RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_FUSION_WEIGHTS": "zscore"})))
    (fusion,) = [n for n in document["workflow"]["graph"]["nodes"] if n["id"] == "fusion"]
    assert fusion["data"]["title"] == "Z-score fusion" and "RRF" not in fusion["data"]["desc"]
    plain = dify_preview(pipeline_view(load_settings({"RAGSPINE_EMBEDDING": "deterministic"})))
    assert [n for n in plain["workflow"]["graph"]["nodes"] if n["id"] == "fusion"][0]["data"]["title"] == "RRF fusion"
