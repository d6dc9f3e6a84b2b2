"""The postprocessors: MMR against a hand-computed fixture, lost-in-the-middle with a character
budget (CJK included), extractive compression that writes prompt_text only; each stage built
from its own setting, and a stage whose registry line needs the profile handed the library's."""

from __future__ import annotations

import dataclasses

import pytest

from ragspine.assembly.pipelines import postprocessor_of
from ragspine.config import Settings, load_settings
from ragspine.errors import ConfigError
from ragspine.profile import Profile
from ragspine.registries import POSTPROCESSORS
from ragspine.registry import Entry
from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.postprocess.base import PostprocessorChain, make_postprocessor
from ragspine.retrieval.postprocess.compression import ExtractiveCompressor, compress
from ragspine.retrieval.postprocess.lost_in_middle import LostInTheMiddle, head_and_tail
from ragspine.retrieval.postprocess.mmr import MMRPostprocessor, mmr_order, relevance
from ragspine.retrieval.types import RetrievalResult
from ragspine.stack import Stack


def result(name: str, text: str, fused: float, sensitivity: str = "INTERNAL", **fields) -> RetrievalResult:
    chunk = StoredChunk(chunk_id=f"{name}#0", doc_id=name, text=text, sensitivity=sensitivity, **fields)
    return RetrievalResult(chunk, {"bm25": 1.0, "vector": 0.0, "fused": fused})


def ids(results):
    return [r.chunk.doc_id for r in results]


def test_mmr_greedy_rule_by_hand() -> None:
    # rel = [1.0, 0.9, 0.5, 0.4]; sim(0,1) = 0.95 (near duplicates), sim(2,3) = 0.9, the rest 0.1
    sims = {(0, 1): 0.95, (2, 3): 0.9}
    sim = lambda i, j: sims.get((min(i, j), max(i, j)), 0.1)  # noqa: E731
    # λ = 0.5: step 1 -> 0 (0.5 > 0.45 > 0.25 > 0.2)
    # step 2: 1: 0.45 - 0.475 = -0.025; 2: 0.25 - 0.05 = 0.2; 3: 0.2 - 0.05 = 0.15 -> 2
    # step 3: 1: -0.025; 3: 0.2 - 0.45 = -0.25 -> 1; step 4 -> 3
    assert mmr_order([1.0, 0.9, 0.5, 0.4], sim, 4, 0.5) == [0, 2, 1, 3]
    assert mmr_order([1.0, 0.9, 0.5, 0.4], sim, 2, 0.5) == [0, 2]
    assert mmr_order([1.0, 0.9, 0.5, 0.4], sim, 4, 1.0) == [0, 1, 2, 3]  # λ = 1: relevance order
    # a tie goes to the earlier candidate, never to the last one
    assert mmr_order([0.5, 0.5, 0.5], lambda i, j: 0.0, 3, 0.5) == [0, 1, 2]


def test_relevance_is_min_max_of_rerank_else_fused() -> None:
    rs = [result("a", "x", 0.03), result("b", "y", 0.02), result("c", "z", 0.01)]
    assert relevance(rs) == pytest.approx([1.0, 0.5, 0.0])
    reranked = [r.with_scores(rerank=s) for r, s in zip(rs, (-1.0, 3.0, 1.0), strict=True)]
    assert relevance(reranked) == pytest.approx([0.0, 1.0, 0.5])
    assert relevance(rs[:1]) == [1.0]


def test_mmr_postprocessor_skips_a_near_duplicate() -> None:
    rs = [
        result("a", "The insurance covers engine parts and labour.", 0.05),
        result("b", "The insurance covers engine parts and labour costs.", 0.049),
        result("c", "Claims are filed online within thirty days.", 0.03),
        result("d", "Parking is free.", 0.01),
    ]  # rel = 1, 0.975, 0.5, 0; cos(a, b) ≈ 0.94: b scores ≈ 0.02 after a, c 0.25
    assert ids(MMRPostprocessor().process("insurance", rs, top_k=2)) == ["a", "c"]
    assert ids(MMRPostprocessor(mmr_lambda=1.0).process("insurance", rs, top_k=2)) == ["a", "b"]
    with pytest.raises(ValueError, match="mmr_lambda"):
        MMRPostprocessor(mmr_lambda=1.5)


def test_lost_in_the_middle_best_at_head_and_tail() -> None:
    assert head_and_tail([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]
    assert head_and_tail([1, 2]) == [1, 2] and head_and_tail([]) == []
    rs = [result(str(i), "text " * 10, 1.0 / (i + 1)) for i in range(6)]
    assert ids(LostInTheMiddle().process("q", rs, top_k=5)) == ["0", "2", "4", "3", "1"]


def test_lost_in_the_middle_budget_is_in_characters_so_cjk_counts() -> None:
    zh = [result(f"z{i}", "数据安全管理制度" * 5, 1.0 / (i + 1)) for i in range(5)]  # 40 characters each, no spaces
    out = LostInTheMiddle(context_chars=130).process("q", zh, top_k=5)
    assert ids(out) == ["z0", "z2", "z1"]  # three fit 130 characters
    assert ids(LostInTheMiddle(context_chars=10).process("q", zh, top_k=5)) == ["z0"]  # the first always


def test_compression_keeps_the_best_sentences_verbatim_in_order() -> None:
    source = "Leave accrues monthly. The office closes at six. Unused leave carries over, up to ten days. Parking is free."
    assert compress(source, {"unused", "leave", "carries"}, 60) == "Unused leave carries over, up to ten days."
    assert compress(source, {"leave"}, 80) == "Leave accrues monthly.\nUnused leave carries over, up to ten days."
    assert compress(source, {"nothing"}, 60) is None  # no sentence matches: no compression
    assert compress(source, {"leave"}, 500) is None  # it already fits


def test_compression_writes_prompt_text_only() -> None:
    window = "第一条 总则。第二条 数据处理者应当建立数据安全管理制度。第三条 附则。" * 3
    r = result("law", "第二条 数据处理者应当建立数据安全管理制度。", 0.1, window_text=window, parent_locator="law#char=0,99")
    (out,) = ExtractiveCompressor(compression_chars=40).process("数据安全管理制度", [r], top_k=5)
    assert out.prompt_text == "第二条 数据处理者应当建立数据安全管理制度。"
    assert dataclasses.replace(out, prompt_text=None) == r  # the chunk, text, locators and scores untouched


def test_postprocessors_return_open_results_only_and_at_most_top_k() -> None:
    rs = [result("r", "secret insurance", 0.09, sensitivity="RESTRICTED")] + [result(str(i), f"open {i}", 0.05 - i / 100) for i in range(4)]
    for name in ("mmr", "lost_in_middle", "compression"):
        out = make_postprocessor(name).process("insurance", rs, top_k=3)
        assert "r" not in ids(out) and len(out) == 3, name


def test_a_chain_runs_left_to_right_and_none_is_off() -> None:
    chain = make_postprocessor("mmr,lost_in_middle")
    assert isinstance(chain, PostprocessorChain) and [type(s).__name__ for s in chain.stages] == ["MMRPostprocessor", "LostInTheMiddle"]
    assert make_postprocessor("none") is None
    assert {"mmr", "lost_in_middle", "compression"} <= set(POSTPROCESSORS.names())


# -- each stage from the settings, with its own option only ---------------------------------------
def test_each_stage_is_built_from_its_own_setting_and_takes_no_other_option() -> None:
    settings = load_settings({"RAGSPINE_MMR_LAMBDA": "0.8", "RAGSPINE_CONTEXT_CHARS": "900", "RAGSPINE_COMPRESSION_CHARS": "120"})
    assert MMRPostprocessor.from_settings(settings).mmr_lambda == 0.8
    assert LostInTheMiddle.from_settings(settings).context_chars == 900
    assert ExtractiveCompressor.from_settings(settings).compression_chars == 120
    chain = make_postprocessor("mmr,lost_in_middle,compression", settings=settings)
    assert isinstance(chain, PostprocessorChain)
    assert [repr(stage) for stage in chain.stages] == [
        "MMRPostprocessor(mmr_lambda=0.8)", "LostInTheMiddle(context_chars=900)", "ExtractiveCompressor(compression_chars=120)"]
    assert repr(make_postprocessor("mmr")) == "MMRPostprocessor(mmr_lambda=0.5)"  # no settings: the stage's defaults (the settings')
    for stage_class, other in ((MMRPostprocessor, "context_chars"), (LostInTheMiddle, "mmr_lambda"), (ExtractiveCompressor, "mmr_lambda")):
        with pytest.raises(TypeError, match=other):  # a misspelled or foreign option is an error, never swallowed
            stage_class(**{other: 1})


class _RecipeEcho:
    """A throwaway postprocessor whose registry line needs the library's profile: it keeps the
    results and notes the recipe it was handed."""

    def __init__(self, *, chunker: str) -> None:
        self.chunker = chunker

    @classmethod
    def from_settings(cls, settings: Settings, *, profile: Profile) -> _RecipeEcho:
        return cls(chunker=profile.chunker)

    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        return results[:top_k]


@pytest.fixture
def recipe_echo():
    POSTPROCESSORS.register("recipe_echo", Entry(f"{__name__}:_RecipeEcho", "notes the library's recipe", needs=("profile",)))
    try:
        yield "recipe_echo"
    finally:
        POSTPROCESSORS.unregister("recipe_echo")


def test_a_stage_that_needs_the_profile_is_handed_the_librarys(recipe_echo) -> None:
    settings = load_settings({"RAGSPINE_CHUNKER": "sentence_window"})
    library = Profile.from_settings(settings).override(chunker="parent_child")
    stage = postprocessor_of(settings, recipe_echo, profile=library)
    assert isinstance(stage, _RecipeEcho) and stage.chunker == "parent_child"  # the library's recipe, not the server's
    configured = postprocessor_of(settings, recipe_echo)  # no library: the recipe the settings resolve to
    assert isinstance(configured, _RecipeEcho) and configured.chunker == "sentence_window"
    chain = make_postprocessor(f"mmr,{recipe_echo}", settings=settings, profile=library)
    assert isinstance(chain, PostprocessorChain) and isinstance(chain.stages[1], _RecipeEcho) and chain.stages[1].chunker == "parent_child"
    with pytest.raises(ConfigError, match="needs the library's profile"):
        make_postprocessor(recipe_echo)  # without settings there is nothing to hand it


def test_a_pipeline_hands_its_recipe_to_a_stage_that_needs_it(recipe_echo, tmp_path) -> None:
    settings = load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "c.db"), "RAGSPINE_RETRIEVAL_MODE": "economy",
                              "RAGSPINE_POSTPROCESSOR": recipe_echo, "RAGSPINE_CHUNKER": "parent_child"})
    with Stack(settings) as stack:
        stage = stack.pipeline("lib").postprocessor
    assert isinstance(stage, _RecipeEcho) and stage.chunker == "parent_child"


def test_a_postprocessor_may_need_only_the_profile() -> None:
    POSTPROCESSORS.register("needs_llm", Entry(f"{__name__}:_RecipeEcho", "needs what a postprocessor is never handed", needs=("llm",)))
    try:
        with pytest.raises(ConfigError, match="may need only profile"):
            make_postprocessor("needs_llm", settings=load_settings({}))
    finally:
        POSTPROCESSORS.unregister("needs_llm")
