"""The corrective grade: coverage of the question's content terms by the top 3 snippets, with
the calibrated threshold of the mode (economy when no snippet has a dense score)."""

from __future__ import annotations

from ragspine.retrieval.reasoning.grade import COVERAGE_THRESHOLD, grade, query_terms


def snippet(text: str, vector: float = 0.0, title: str = "") -> dict:
    return {"text": text, "title": title, "scores": {"bm25": 1.0, "vector": vector, "fused": 0.01}}


def test_stopwords_of_three_languages_are_not_content_terms():
    assert query_terms("What is the revenue of the gearbox line?") == ["revenue", "gearbox", "line"]
    assert "的" not in query_terms("红隼的营收") and "营收" in query_terms("红隼的营收")
    assert "は" not in query_terms("売上はなぜ") and "売上" in query_terms("売上はなぜ")


def test_coverage_reads_the_top_three_titles_and_texts():
    g = grade("gearbox revenue decline", [snippet("gearbox output"), snippet("other"), snippet("x", title="revenue"), snippet("decline")])
    assert round(g.coverage, 3) == 0.667 and g.verdict == "relevant" and g.mode == "economy" and g.similarity is None


def test_each_mode_has_its_threshold_and_similarity_is_reported_only():
    assert COVERAGE_THRESHOLD == {"economy": 0.5, "hybrid": 0.4}
    half = [snippet("gearbox"), snippet("unrelated")]
    assert grade("gearbox revenue", half).verdict == "relevant"  # 0.5 in economy
    assert grade("gearbox revenue margin", half).verdict == "weak"  # 0.33
    hybrid = grade("gearbox revenue margin", [snippet("gearbox", vector=0.9)])
    assert hybrid.mode == "hybrid" and hybrid.similarity == 0.9 and hybrid.verdict == "weak"
    assert grade("gearbox revenue margin output x", [snippet("gearbox revenue", vector=0.1)]).verdict == "relevant"  # 0.4


def test_no_snippet_is_empty_and_a_question_of_stopwords_only_is_covered():
    assert grade("anything", []).verdict == "empty"
    assert grade("what is it?", [snippet("text")]).coverage == 1.0
