"""``LLMRelationExtractor``: a language model proposes relations between the entities a chunk names.

What it may do is fenced in by code, not by the prompt:

* a chunk is sent only when it is not RESTRICTED and names at least two glossary entities
  (:class:`~ragspine.graph.mentions.EntityMatcher`); RESTRICTED text never reaches the model;
* a proposed edge is kept only when both endpoints are among the keys that chunk names, the
  relation is one of :data:`~ragspine.graph.base.MODEL_RELATIONS` (never ``subsidiary_of`` or
  ``derived_from``: a model cannot change a roll-up), and both endpoints pass the security gate
  — every form of each endpoint's term is checked (``endpoint_gate``, default: none);
* every kept edge is stamped ``derivation="model"``, ``verified=False``: it keeps the chunk's
  lineage for display and is never citable, so it is never evidence for a number.

A provider error or an unreadable answer costs that chunk's edges, nothing more (counted in
:attr:`LLMRelationExtractor.stats` and reported as malformed to the LLM observer).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Iterable

from ragspine.graph.base import MODEL_RELATIONS, Edge, node_id
from ragspine.graph.extractors.base import ChunkLike, EndpointGate, open_chunks
from ragspine.graph.mentions import EntityMatcher
from ragspine.llm.observe import report_malformed
from ragspine.structured.glossary import Glossary

__all__ = ["LLMRelationExtractor", "build_relation_prompt"]

log = logging.getLogger(__name__)


def build_relation_prompt(text: str, entities: dict[str, str], relations: tuple[str, ...]) -> str:
    """The prompt for one chunk: its entities (key: label), the allowed relations, the text."""
    names = "\n".join(f"- {key}: {label}" for key, label in entities.items())
    return (
        "Which of these relations does the passage state between the listed entities?\n"
        f"Entities (use the keys):\n{names}\n"
        f"Relations: {', '.join(relations)}\n"
        'Answer with a JSON list only, e.g. [{"source": "KEY", "relation": "supplies", "target": "KEY"}]; [] if none.\n\n'
        f"Passage:\n{text}"
    )


class LLMRelationExtractor:
    """See the module docstring."""

    def __init__(
        self, provider: Any, glossary: Glossary, *, endpoint_gate: EndpointGate | None = None,
        relations: tuple[str, ...] = MODEL_RELATIONS,
    ) -> None:
        unknown = [r for r in relations if r not in MODEL_RELATIONS]
        if unknown:
            raise ValueError(f"a model may propose only {', '.join(MODEL_RELATIONS)}, not {unknown[0]!r}")
        self.provider = provider
        self.glossary = glossary
        self.endpoint_gate = endpoint_gate
        self.relations = tuple(relations)
        self.matcher = EntityMatcher(glossary)
        self.stats: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"LLMRelationExtractor(gate={'on' if self.endpoint_gate else 'none'})"

    def extract(self, chunks: Iterable[ChunkLike]) -> list[Edge]:
        every = list(chunks)
        kept = open_chunks(every)
        self.stats = {"chunks": len(every), "restricted_skipped": len(every) - len(kept), "sent": 0, "failed": 0,
                      "malformed": 0, "edges": 0, "refused_by_gate": 0, "outside_chunk": 0}
        edges: list[Edge] = []
        for chunk in kept:
            keys = self.matcher.keys_in(chunk.text)
            if len(keys) < 2:
                continue
            labels = {key: self.glossary.label("entities", key, "en") for key in keys}
            prompt = build_relation_prompt(chunk.text, labels, self.relations)
            self.stats["sent"] += 1
            try:
                answer = self.provider.chat([{"role": "user", "content": prompt}])
            except Exception as exc:  # degrade: this chunk proposes nothing
                log.warning("the LLM relation extractor's call failed, skipping chunk %s: %s", chunk.chunk_id, exc)
                self.stats["failed"] += 1
                continue
            proposals = _parse(answer)
            if proposals is None:
                self.stats["malformed"] += 1
                report_malformed(self.provider, "relation_extractor", answer)
                continue
            edges.extend(self._kept(proposals, keys, chunk))
        self.stats["edges"] = len(edges)
        return edges

    def _kept(self, proposals: list[dict[str, Any]], keys: list[str], chunk: ChunkLike) -> list[Edge]:
        out = []
        for item in proposals:
            source, relation, target = item.get("source"), item.get("relation"), item.get("target")
            if relation not in self.relations or source not in keys or target not in keys or source == target:
                self.stats["outside_chunk"] += 1
                continue
            if not (self._allowed(str(source)) and self._allowed(str(target))):
                self.stats["refused_by_gate"] += 1
                continue
            out.append(Edge(
                node_id("entity", str(source)), str(relation), node_id("entity", str(target)), chunk.doc_id,
                chunk.source_locator or chunk.chunk_id, derivation="model", chunk_id=chunk.chunk_id, verified=False,
            ))
        return out

    def _allowed(self, key: str) -> bool:
        if self.endpoint_gate is None:
            return True
        term = self.glossary.term("entities", key)
        forms = term.forms if term is not None else (key,)
        return all(self.endpoint_gate(form) for form in forms)


def _parse(answer: object) -> list[dict[str, Any]] | None:
    """The proposals of an answer (a JSON list of objects, possibly wrapped in prose); ``None``
    when there is none to read."""
    match = re.search(r"\[.*\]", answer if isinstance(answer, str) else "", re.S)
    try:
        data = json.loads(match.group()) if match else None
    except ValueError:
        return None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        return None
    return data
