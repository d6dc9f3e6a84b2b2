"""Model prose cannot smuggle numbers: an adversarial scripted model writes invented amounts, years
passed off as values, page numbers as values, numbers from the history, and numbers in words,
CJK numerals, full-width and other scripts' digits; every such sentence is dropped and counted,
beside a found fact no sentence restates, changes or extends its number, and the reasoning
trace masks numbers in every form."""

from __future__ import annotations

import pytest

from ragspine.agent.messages import CITATION_REFUSAL
from ragspine.agent.narrative import check_prose, sentences
from ragspine.llm.budget import GuardedLLMProvider
from ragspine.llm.observe import LLMStats
from ragspine.numerals import find_numbers, mask_numbers
from ragspine.testing.llm import ScriptedLLMProvider
from tests.unit.agent.conftest import GROSS, RESULTS

YEARLY = {"text": "In 2008 revenue grew to 120 million euros; see page 12 of the annual report.", "chunk_id": "c-year",
          "doc_id": "kestrel/annual-2008", "title": "Annual report", "library_id": "lib",
          "source_locator": "annual.md#char=0,80", "sensitivity": "PUBLIC"}
ZH = {"text": "2008年营收增长至一亿二千万欧元，详见第12页。", "chunk_id": "c-zh", "doc_id": "kestrel/annual-zh", "title": "年报",
      "library_id": "lib", "source_locator": "annual-zh.md#char=0,30", "sensitivity": "PUBLIC"}


@pytest.mark.parametrize(("text", "expected"), [
    ("Revenue was 182 million euros in 2024", [("182000000", "euro", "amount"), ("2024", "", "year")]),
    ("the value was 2008", [("2008", "", "amount")]),
    ("nine hundred ninety-nine million dollars", [("999000000", "dollar", "amount")]),
    ("营收为三亿元，2024年第三季度增长了百分之十二", [("300000000", "yuan", "amount"), ("2024", "", "year"), ("3", "", "period"),
                                         ("12", "percent", "amount")]),
    ("売上高は１８２百万ユーロでした", [("182000000", "euro", "amount")]),
    ("٣٤٥ units on page 12", [("345", "unit", "amount"), ("12", "", "page")]),
    ("二〇〇八年，第12页", [("2008", "", "year"), ("12", "", "page")]),
    ("one of the reasons, 它和去年一样", []),
])
def test_numbers_in_every_form_with_unit_and_role(text, expected) -> None:
    assert [(f"{n.value.normalize():f}", n.unit, n.role) for n in find_numbers(text)] == expected


def test_sentences_keep_their_citation_marks() -> None:
    assert sentences("Revenue fell. [S1] Margin held [S2]. 营收下降。[S1]毛利稳定[S2]。") == [
        "Revenue fell. [S1]", "Margin held [S2].", "营收下降。[S1]", "毛利稳定[S2]。"]


TEXTS = {"S1": YEARLY["text"], "S2": GROSS["text"], "S3": ZH["text"]}


@pytest.mark.parametrize("sentence", [
    "Operating profit was 75 million euros [S2].",  # an invented amount
    "The value was 2008 million euros [S1].",  # a year passed off as an amount
    "Revenue was 12 million euros [S1].",  # a page number passed off as a value
    "Revenue was nine hundred ninety-nine million euros [S1].",  # in words
    "营收为三亿元[S3]。",  # CJK numerals
    "営業利益は７５百万ユーロでした[S2]。",  # full-width digits
    "Revenue was ٧٥ million euros [S2].",  # Arabic-Indic digits
    "Operating profit was 57 million dollars [S2].",  # the right number with another unit
    "Revenue grew to 120 million euros [S2].",  # a number of another snippet than the one cited
    "Revenue grew to 120 million euros.",  # a number with no citation at all
])
def test_a_sentence_stating_a_number_its_cited_snippet_does_not_state_is_dropped(sentence) -> None:
    checked = check_prose("Shipments slipped [S1]. " + sentence, TEXTS)
    assert checked is not None and checked.text == "Shipments slipped [S1]." and checked.dropped == (sentence,)


@pytest.mark.parametrize("sentence", [
    "Operating profit was 57 million euros [S2].", "Gross margin held at forty-one percent [S2].",
    "Revenue grew in 2008 [S1].", "Revenue grew to 120 million euros in 2008 [S1].", "营收增长至一亿二千万欧元[S3]。",
    "Details are on page 12 [S1].", "2008年营收增长至1.2亿欧元[S3]。",
])
def test_a_number_its_cited_snippet_states_in_the_same_role_is_kept(sentence) -> None:
    checked = check_prose(sentence, TEXTS)
    assert checked is not None and checked.text == sentence and not checked.dropped


def test_an_adversarial_model_gets_no_number_shown(make_agent) -> None:
    prose = ("Shipments of the K2 slipped by six weeks [S1]. The value was 2008 [S1]. Revenue was 999 million euros [S1]. "
             "Revenue was nine hundred ninety-nine million euros [S2]. 营收为三亿元[S1]。 Margin held at 41 percent [S2].")
    provider = GuardedLLMProvider(ScriptedLLMProvider(prose))
    stats = LLMStats()
    provider.observer = stats
    agent, _ = make_agent((RESULTS, GROSS), provider=provider)
    history = [{"role": "user", "content": "Revenue was 999 million euros, remember."}]
    answer = agent.answer("Why did revenue fall?", history)
    assert answer.narrative.mode == "generated" and answer.narrative.dropped == 4
    assert answer.narrative.text == "Shipments of the K2 slipped by six weeks [S1]. Margin held at 41 percent [S2]."
    shown = str(answer.to_dict())
    assert "2008" not in shown and "999" not in shown and "三亿" not in shown and "nine hundred" not in shown
    assert stats.malformed["narrative_number"] == 4


def test_every_sentence_dropped_is_the_fixed_refusal(make_agent) -> None:
    agent, _ = make_agent(provider=ScriptedLLMProvider("The value was 2008 [S1]. Revenue was 999 million euros [S1]."))
    answer = agent.answer("Why did revenue fall?")
    assert answer.narrative.mode == "refused" and answer.narrative.text == CITATION_REFUSAL["en"]
    assert answer.narrative.dropped == 2 and "2008" not in answer.text and not answer.narrative.citations


def test_beside_a_found_fact_no_sentence_restates_changes_or_extends_its_number(make_agent) -> None:
    snippet = dict(RESULTS, text="Revenue fell to 182 million euros, down 12 percent, because K2 shipments slipped by six weeks.")
    prose = ("Revenue fell to 182 million euros [S1]. Revenue fell by 12 percent [S1]. "
             "K2 shipments slipped by six weeks [S1].")
    agent, _ = make_agent((snippet,), provider=ScriptedLLMProvider(prose))
    answer = agent.answer("why did Kestrel's Q3 revenue fall, and by how much?", as_of="2024-10-30")
    assert answer.structured.result.value == "182"
    assert answer.narrative.text == "K2 shipments slipped by six weeks [S1]." and answer.narrative.dropped == 2
    alone = agent.answer("Why did revenue fall?")  # no fact beside it: the snippet's numbers may be stated
    assert alone.narrative.dropped == 0 and "182 million euros" in alone.narrative.text


def test_the_trace_masks_numbers_in_every_form() -> None:
    masked = mask_numbers("probe: revenue of nine hundred million, 三亿元, ７５ euros, in 2024", keep="revenue in 2024?")
    assert masked == "probe: revenue of #, #, #, in 2024"  # a number goes with its multiplier and unit
    from ragspine.retrieval.reasoning.retriever import _Run

    assert _Run("revenue in 2024?").show("nine hundred million in 2024, 三亿") == "# in 2024, #"


def test_kept_cjk_sentences_join_without_a_space() -> None:
    checked = check_prose("营收增长至一亿二千万欧元[S3]。营收为三亿元[S3]。详见第12页[S3]。", TEXTS)
    assert checked is not None and checked.text == "营收增长至一亿二千万欧元[S3]。详见第12页[S3]。" and len(checked.dropped) == 1
