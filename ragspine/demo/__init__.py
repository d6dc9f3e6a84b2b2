"""``ragspine demo``: ingest the bundled corpus and answer a few questions with citations.

The corpus (``demo/corpus/``, written for this project) describes a fictional robot maker in
English and Chinese. One document, a board memo, is RESTRICTED and is deliberately the best
lexical match for the first question: the demo shows it is the top BM25 hit inside the
index, and that it never appears among the snippets. Then the agent answers four questions
from a fact table for the corpus and the cited snippets (:mod:`ragspine.demo.answers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ragspine.errors import MissingDependencyError
from ragspine.retrieval.lexical.bm25 import bm25_scores
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.vector.embedding import EmbeddingBackend, model_id_of

if TYPE_CHECKING:
    from ragspine.agent.factory import AgentStack
    from ragspine.retrieval.chunking.chunk_store import LibraryInfo
    from ragspine.retrieval.mode import RetrievalMode
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.snippet import Snippet

    class DemoStack(AgentStack, Protocol):
        """What the demo runs on (:class:`ragspine.stack.Stack` is one; the demo never imports it)."""

        @property
        def mode(self) -> RetrievalMode: ...

        @property
        def embedding_backend(self) -> EmbeddingBackend | None: ...

        def ensure_library(self, library_id: str, description: str | None = None) -> LibraryInfo: ...

        def pipeline(self, library_id: str) -> LibraryPipeline: ...


CORPUS_DIR = Path(__file__).parent / "corpus"

LIBRARIES = {
    "kestrel-reports": (
        "Kestrel Robotics results, operations, products and policies (English)",
        ("q3-2024-results.md", "supply-chain-update.md", "product-roadmap.md", "warranty-policy.md", "board-memo-q3.md",
         "kr7-service-manual.pdf", "spare-parts-prices.xlsx"),  # their fields in a sidecar (NAME.meta.yaml)
    ),
    "kestrel-china": (
        "红隼机器人 中国区 经营 营收 供应链 (Chinese)",
        ("china-q3-2024.md", "china-supply.md"),
    ),
}


@dataclass(frozen=True)
class DemoQuestion:
    query: str
    libraries: tuple[str, ...] | None = None
    filters: dict[str, Any] | None = None
    note: str = ""


QUESTIONS = (
    DemoQuestion(
        "Why did Kestrel revenue fall in the third quarter?",
        ("kestrel-reports",),
        note="the RESTRICTED board memo is the best lexical match",
    ),
    DemoQuestion("中国区营收为什么下滑？", None, note="routed over both libraries"),
    DemoQuestion(
        "How long is the warranty on gearboxes?",
        ("kestrel-reports",),
        filters={"topic": "policy"},
        note="metadata filter topic = policy",
    ),
    DemoQuestion("How often does the KR-7 gearbox need an oil change?", ("kestrel-reports",), note="a PDF: the citation names its page"),
    DemoQuestion("What is the lead time for a KR-7 output shaft?", ("kestrel-reports",), note="a spreadsheet: its sheets are its pages"),
)
#: the questions answered from a PDF or a spreadsheet (the ``documents`` extra reads them)
FILE_QUESTIONS = QUESTIONS[3:]


@dataclass
class DemoReport:
    mode: str
    answers: list[tuple[DemoQuestion, list[Snippet]]] = field(default_factory=list)
    restricted_doc: str = ""
    restricted_top_lexical: bool = False
    restricted_leaked: bool = False
    agent_answers: list[tuple[Any, Any]] = field(default_factory=list)  # (AgentQuestion, AgentAnswer), see answers.py


def run_demo(stack: DemoStack, *, echo: Callable[[str], None] = print) -> DemoReport:
    """Ingest the corpus into ``stack`` and answer :data:`QUESTIONS`."""
    from dataclasses import replace

    from ragspine.documents import chunk_source, read_document

    skipped: list[str] = []
    for library_id, (description, files) in LIBRARIES.items():
        stack.ensure_library(library_id, description)
        index = stack.pipeline(library_id)
        for name in files:
            try:
                doc = read_document(CORPUS_DIR / name, CORPUS_DIR)
            except MissingDependencyError as exc:  # a PDF or a spreadsheet without the documents extra
                skipped.append(f"{name} ({exc})")
                continue
            doc = replace(doc, source=str(CORPUS_DIR / name))  # a path the user can open (the packaged file)
            index.replace_doc_chunks(doc.doc_id, chunk_source(doc, index.chunker), doc.valid_as_of)
    backend = stack.embedding_backend
    mode = stack.mode.name if backend is not None else "economy (BM25 only)"
    report = DemoReport(mode=f"{mode}" + (f" with {model_id_of(backend)}" if backend else ""))
    echo(f"RAGSpine demo — retrieval mode: {report.mode}")
    echo(f"libraries: {', '.join(LIBRARIES)} ({sum(len(f) for _, f in LIBRARIES.values()) - len(skipped)} documents)")
    for line in skipped:
        echo(f"skipped {line}")
    echo("")

    for question in QUESTIONS:
        retriever = stack.retriever(question.libraries)
        snippets = retriever.retrieve(question.query, filters=question.filters, top_k=3)
        report.answers.append((question, snippets))
        echo(f"Q: {question.query}" + (f"   [{question.note}]" if question.note else ""))
        for rank, s in enumerate(snippets, 1):
            echo(f"  {rank}. [{s['library_id']}] {s['title']}")
            page = "" if "page" not in s else f", page {s['page']}" if s.get("page_end", s["page"]) == s["page"] else (
                f", pages {s['page']}-{s['page_end']}")
            echo(f"     cite: {s['source_locator']}{page}  (fused {s['scores']['fused']:.4f}, bm25 {s['scores']['bm25']:.2f})")
            echo(f"     \"{_short(s['text'])}\"")
        if any(is_restricted(s["sensitivity"]) for s in snippets):
            report.restricted_leaked = True
        echo("")

    # The check, outside the pipeline: BM25 (the reference scorer) over every stored chunk of
    # the first library, RESTRICTED ones included — which the lexical index never holds.
    first = QUESTIONS[0]
    chunks = stack.pipeline(first.libraries[0]).store.iter_chunks()  # type: ignore[index]
    scores = bm25_scores(tokenize(first.query), [tokenize(c.text) for c in chunks])
    if chunks and max(scores) > 0:
        best = max(range(len(chunks)), key=lambda i: (scores[i], -i))
        chunk = chunks[best]
        report.restricted_doc = chunk.doc_id
        report.restricted_top_lexical = is_restricted(chunk.sensitivity)
        returned = {s["doc_id"] for _, snippets in report.answers for s in snippets}
        verdict = "withheld (not indexed, and dropped at both exits)" if chunk.doc_id not in returned else "LEAKED"
        echo(
            f"RESTRICTED check: the best BM25 match in the store for the first question is {chunk.doc_id} "
            f"(sensitivity {chunk.sensitivity}, bm25 {scores[best]:.2f}); it was {verdict}."
        )
    from ragspine.demo.answers import run_agent_demo

    report.agent_answers = run_agent_demo(stack, echo=echo)
    return report


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
