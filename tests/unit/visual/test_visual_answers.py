"""Visual hints beside an answer: absent (byte for byte) when the seam is off, never a source or
a citation when on; the ``colpali`` adapter's missing extra is named."""

from __future__ import annotations

import json

import pytest

from ragspine.agent.base import AgentAnswer, Citation, NarrativePart
from ragspine.config import load_settings
from ragspine.retrieval.visual.base import VisualHint, make_visual_embedder
from ragspine.retrieval.visual.search import VisualSearch, with_visual_hints

HINT = VisualHint("chart.pdf", "Report", "reports", 2, 0.97, "docs/chart.pdf#page=2")


def _answer(**kw) -> AgentAnswer:
    cite = Citation("S1", "c1", "chart.pdf", "Report", "reports", "docs/chart.pdf#char=0,40", "Revenue rose 12% in 2023.")
    return AgentAnswer("How did revenue move?", "narrative", "Revenue rose 12% in 2023. [S1]",
                       narrative=NarrativePart("extractive", "Revenue rose 12% in 2023. [S1]", (cite,)), **kw)


def test_off_by_default_and_answers_unchanged_byte_for_byte() -> None:
    settings = load_settings({})
    assert settings.visual_embedder == "none" and make_visual_embedder(settings.visual_embedder, settings=settings) is None
    assert VisualSearch.from_settings(settings, catalog=None) is None  # type: ignore[arg-type]
    answer = _answer()
    assert with_visual_hints(answer, None) is answer
    before = json.dumps(answer.to_dict(), ensure_ascii=False)
    assert "visual_hints" not in before
    assert list(answer.to_dict()) == ["question", "route", "text", "language", "structured", "narrative", "sources", "refusal",
                                      "refused", "routing"]
    assert json.dumps(with_visual_hints(answer, None).to_dict(), ensure_ascii=False) == before


def test_hints_sit_beside_the_sources_never_among_them() -> None:
    answer = _answer()
    hinted = with_visual_hints(answer, [HINT])
    out = hinted.to_dict()
    assert out["visual_hints"] == [{"kind": "visual_hint", "is_visual": True, "doc_id": "chart.pdf", "title": "Report",
                                    "library_id": "reports", "page": 2, "source_locator": "docs/chart.pdf#page=2", "score": 0.97}]
    assert out["sources"] == answer.to_dict()["sources"] and all(s["kind"] != "visual_hint" for s in out["sources"])
    assert out["narrative"] == answer.to_dict()["narrative"] and out["text"] == answer.text
    assert with_visual_hints(answer, []).to_dict()["visual_hints"] == []  # on, nothing found: the key says so
    refused = _answer(refusal="I can't help with that.")
    assert with_visual_hints(refused, [HINT]) is refused  # a refused question gets no hint


def test_colpali_names_its_extra_when_missing() -> None:
    import importlib.util

    from ragspine.errors import MissingDependencyError

    if importlib.util.find_spec("colpali_engine") and importlib.util.find_spec("torch"):
        pytest.skip("colpali-engine is installed here")
    with pytest.raises(MissingDependencyError, match=r"ragspine\[colpali\]"):
        make_visual_embedder("colpali", settings=load_settings({"RAGSPINE_VISUAL_MODEL": "/nowhere"}))


def test_unknown_name_lists_the_registry() -> None:
    from ragspine.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        load_settings({"RAGSPINE_VISUAL_EMBEDDER": "clip"})
    assert "colpali" in str(err.value) and "onnx" in str(err.value)


def test_import_ragspine_stays_light() -> None:
    import subprocess
    import sys

    code = ("import sys, ragspine, ragspine.retrieval.visual, ragspine.cli.app; "
            "print([m for m in ('PIL', 'pypdfium2', 'onnxruntime', 'torch', 'colpali_engine') if m in sys.modules])")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
