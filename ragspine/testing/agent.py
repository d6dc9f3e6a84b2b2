"""The agent's invariants as plain functions raising ``AssertionError``.

Run them on every answer an agent gives (:class:`~ragspine.agent.AgentAnswer`, or anything with
its ``route``, ``text``, ``structured``, ``narrative``, ``sources`` and ``to_dict()``):

* :func:`assert_no_invented_numbers` — a refused, ``not_found`` or ``unrecognized_param``
  answer carries no numeral where it speaks for the fact table, and every number the answer's
  text states is the found fact's (in its rebuilt prose) or inside a snippet it cites;
* :func:`assert_provenance` — a found answer is the one stored fact of its library, and every
  cited snippet is an active, non-RESTRICTED stored chunk with that text and locator;
* :func:`assert_history_not_evidence` — an answer with a conversation history states, finds
  and cites exactly what the same answer without it does, and no number only the history holds;
* :func:`assert_restricted_absent` — no RESTRICTED text (given as marker strings) in an
  answer or in any prompt a model was sent;
* :func:`assert_routing_deterministic` — the same question routes the same way every time,
  and the way the table says;
* :func:`assert_gated` — every text searched or looked up was first allowed by the gate, and
  a refused question reaches neither path.

RAGSpine's pack (``tests/conformance/test_agent.py``) proves each can fail by running it on a
deliberately leaky agent.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from ragspine.numerals import find_numbers
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.structured.glossary import Glossary
from ragspine.structured.result import FOUND, has_numeral
from ragspine.testing.structured_channel import ASCII_OR_FULL_WIDTH_DIGIT, assert_no_numeral
from ragspine.testing.structured_channel import assert_provenance as assert_fact_provenance

_MARK = re.compile(r"\[S\d+(?:\s*[,;]\s*S\d+)*\]")


def _digit_free(text: str, what: str) -> None:
    for pattern in ASCII_OR_FULL_WIDTH_DIGIT:
        assert not pattern.search(text), f"{what} carries a digit: {text!r}"
    assert not has_numeral(text), f"{what} carries a numeral: {text!r}"


def _numbers(text: str) -> set[str]:
    """The values of every number in ``text``: digits of any script, CJK numerals, number words."""
    return {f"{n.value.normalize():f}" for n in find_numbers(text)}


def assert_no_invented_numbers(answer: Any) -> None:
    """See the module docstring (first point)."""
    if answer.route == "refused":
        _digit_free(answer.text, "a refused answer")
        assert not answer.sources, "a refused answer lists sources"
        return
    text = answer.text
    part = answer.structured
    if part is not None:
        result = part.result
        if result.status == FOUND:
            assert result.text in text, "the found prose is not the answer's text"
            text = text.replace(result.text, " ")
        else:
            assert_no_numeral(result)
            if answer.narrative is None:
                _digit_free(answer.text, f"a {result.status} answer")
    cited = " ".join(c.text for c in answer.narrative.citations) if answer.narrative is not None else ""
    unheld = _numbers(_MARK.sub(" ", text)) - _numbers(cited)
    assert not unheld, f"the answer states {sorted(unheld)}, which no found fact or cited snippet holds: {answer.text!r}"


def assert_provenance(
    answer: Any, fact_stores: Mapping[str, Any], chunks: Callable[[str, Sequence[str]], Sequence[Any]], glossary: Glossary,
) -> None:
    """See the module docstring (second point). ``fact_stores``: library id → its FactStore;
    ``chunks(library_id, chunk_ids)``: the active stored chunks (a ChunkStore's ``get_chunks``)."""
    part = answer.structured
    if part is not None and part.result.status == FOUND:
        assert part.library_id in fact_stores, f"a found answer names library {part.library_id!r}, which holds no fact store"
        assert_fact_provenance(part.result, fact_stores[part.library_id], glossary)
        source = answer.sources[0]
        assert source["kind"] == "fact" and (source["source_doc_id"], source["source_locator"]) == (
            part.result.source_doc_id, part.result.source_locator), "the fact source is not the found fact"
    cited = answer.narrative.citations if answer.narrative is not None else ()
    listed = [s for s in answer.sources if s["kind"] == "chunk"]
    assert [s["chunk_id"] for s in listed] == [c.chunk_id for c in cited], "the chunk sources are not the citations"
    assert all(s["kind"] in ("fact", "chunk") for s in answer.sources), "a source that is neither a fact nor a chunk"
    for citation in cited:
        stored = list(chunks(citation.library_id, [citation.chunk_id]))
        assert len(stored) == 1, f"citation {citation.id} ({citation.chunk_id}) is no active chunk of {citation.library_id!r}"
        chunk = stored[0]
        assert not is_restricted(chunk.sensitivity), f"citation {citation.id} is a RESTRICTED chunk"
        assert (chunk.text, chunk.doc_id, chunk.source_locator) == (citation.text, citation.doc_id, citation.source_locator), (
            f"citation {citation.id} does not repeat its stored chunk")


def assert_history_not_evidence(with_history: Any, without_history: Any, history_only: Iterable[str]) -> None:
    """``with_history`` / ``without_history``: one question's answers with and without a
    history; ``history_only``: strings (numbers, words) only the history holds."""
    strip = ("question",)
    a = {k: v for k, v in with_history.to_dict().items() if k not in strip}
    b = {k: v for k, v in without_history.to_dict().items() if k not in strip}
    modes = {p.narrative.mode for p in (with_history, without_history) if p.narrative is not None}
    if not modes & {"generated", "refused"}:
        assert a == b, "the history changed an answer that generated no prose"
    else:  # a model's prose may read differently (or be refused); the structured answer may not
        assert a["structured"] == b["structured"], "the history changed the structured answer"
    assert all(s["kind"] in ("fact", "chunk") for s in a["sources"]), "a source that is neither a fact nor a stored chunk"
    dumped = json.dumps(a, ensure_ascii=False)
    for marker in history_only:
        assert marker not in dumped, f"{marker!r}, held only by the history, is in the answer"


def assert_restricted_absent(answer: Any, markers: Iterable[str], prompts: Sequence[str] = ()) -> None:
    """No marker of RESTRICTED text in ``answer`` (any field) or in ``prompts``."""
    dumped = json.dumps(answer.to_dict(), ensure_ascii=False)
    for marker in markers:
        assert marker not in dumped, f"RESTRICTED text {marker!r} is in the answer"
        for prompt in prompts:
            assert marker not in prompt, f"RESTRICTED text {marker!r} reached a prompt"


def assert_routing_deterministic(answer: Callable[[str], Any], expected: Mapping[str, str], repeats: int = 3) -> None:
    """``answer(question)`` routes each question of ``expected`` to its route, every time."""
    for question, route in expected.items():
        routes = {answer(question).route for _ in range(repeats)}
        assert routes == {route}, f"{question!r} routed {sorted(routes)}, expected {route}"


def assert_gated(checked: Sequence[tuple[str, bool]], searched: Sequence[str], looked_up: bool, question_allowed: bool) -> None:
    """``checked``: the gate's ``(text, allowed)`` decisions in order; ``searched``: the texts
    the narrative retriever was asked; ``looked_up``: whether a fact store was read."""
    allowed = {text for text, ok in checked if ok}
    for text in searched:
        assert text in allowed, f"{text!r} was searched without the gate allowing it"
    if not question_allowed:
        assert not searched and not looked_up, "a refused question reached a retriever or a fact store"
