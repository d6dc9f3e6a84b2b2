#!/usr/bin/env python
"""One question through each query-time step, on the demo corpus, showing what happened.

    .venv/bin/python scripts/reasoning_examples.py                 # the scripted stand-in model
    .venv/bin/python scripts/reasoning_examples.py --llm local     # SmolLM2-135M (a plumbing model)
    .venv/bin/python scripts/reasoning_examples.py --llm http://localhost:11434/v1 --model llama3.2

For each of HyDE, RAG-Fusion, step-back, decomposition, Adaptive-RAG, the corrective loop and
the security gate: every prompt sent and the model's answer, the trace of the steps, what was
refused, and the fused top 3 (document, fused score, citation). The demo corpus (economy mode)
holds a RESTRICTED board memo; the deny list names a fictional competitor, Osprey Automation.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from ragspine.config import load_settings
from ragspine.demo import CORPUS_DIR, LIBRARIES
from ragspine.documents import read_document
from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.stack import Stack

DENYLIST = """entities:
  OSPREY:
    en: [Osprey Automation, Osprey]
    zh: [鱼鹰自动化]
    ja: [オスプレイ・オートメーション]
"""
EXAMPLES: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
    ("hyde", "Why did Kestrel revenue fall in the third quarter?", {"transform": "hyde"}, None),
    ("rag_fusion", "Why did Kestrel revenue fall in the third quarter?", {"transform": "rag_fusion"}, None),
    ("step_back", "Why did Kestrel revenue fall in the third quarter?", {"transform": "step_back"}, None),
    ("decompose", "How long is the gearbox warranty and why were gearbox deliveries late?", {"decompose": "llm"}, None),
    ("adaptive", "Compare the gearbox warranty with the servo warranty", {"adaptive": "heuristic"}, None),
    ("corrective (filters dropped)", "How long is the warranty on gearboxes?", {"corrective": True}, {"topic": "finance"}),
    ("corrective (refused)", "What is the boiling point of mercury?", {"corrective": True}, None),
    ("gate (question)", "How does Osprey Automation price its gearboxes?", {}, None),
    ("gate (sub-question)", "How does Kestrel's gearbox pricing compare with its competitors?", {"decompose": "llm"}, None),
]


class Recorder:
    """Wraps a provider: records every prompt and answer (failures too)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.log: list[tuple[str, str]] = []

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        prompt = "\n".join(m.get("content", "") for m in messages)
        try:
            answer = str(self.inner.chat(messages, **kwargs))
        except Exception as exc:
            self.log.append((prompt, f"<failed: {exc}>"))
            raise
        self.log.append((prompt, answer))
        return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default="scripted", help="scripted (default), local, or an OpenAI-compatible base URL")
    parser.add_argument("--model", default=None, help="RAGSPINE_LLM_MODEL for a base URL")
    args = parser.parse_args()
    if args.llm == "scripted":
        from ragspine.testing.llm import ScriptedLLMProvider
        from ragspine.testing.reasoning import scripted_answer

        osprey = lambda p: "What is Kestrel's gearbox pricing?\nWhat is Osprey Automation's gearbox pricing?"  # noqa: E731
        inner: Any = ScriptedLLMProvider(lambda p: osprey(p) if "competitors" in p and p.startswith("Split") else scripted_answer(p))
    else:
        from ragspine.llm.base import make_llm_provider

        inner = make_llm_provider(args.llm, **({"model": args.model} if args.model else {}))
    recorder = Recorder(inner)
    with tempfile.TemporaryDirectory(prefix="ragspine-examples-") as tmp:
        (Path(tmp) / "deny.yaml").write_text(DENYLIST, encoding="utf-8")
        env = {"RAGSPINE_CHUNK_STORE": f"{tmp}/demo.db", "RAGSPINE_CACHE_DIR": f"{tmp}/cache", "RAGSPINE_RETRIEVAL_MODE": "economy",
               "RAGSPINE_SECURITY_DENYLIST": f"{tmp}/deny.yaml"}
        with Stack(load_settings(env), provider=recorder) as stack:
            library = "kestrel-reports"
            stack.ensure_library(library, LIBRARIES[library][0])
            for name in LIBRARIES[library][1]:
                doc = read_document(CORPUS_DIR / name, CORPUS_DIR)
                stack.pipeline(library).ingest_text(doc.doc_id, doc.text, title=doc.title, metadata=doc.metadata,
                                                    sensitivity=doc.sensitivity, source=name, source_offset=doc.body_offset)
            for title, question, options, filters in EXAMPLES:
                recorder.log.clear()
                retriever = stack.retriever_for({library: stack.pipeline(library)}, reasoning=stack.reasoning_options(**options))
                answer = retriever.search(question, filters=parse_filter(filters), top_k=3)
                print(f"=== {title}: {question!r}" + (f" filters={filters}" if filters else ""))
                for prompt, reply in recorder.log:
                    print("--- prompt:\n" + prompt + "\n--- answer:\n" + reply)
                print("--- trace: " + json.dumps(getattr(answer, "trace", []), ensure_ascii=False))
                print("--- refused: " + json.dumps(getattr(answer, "refused", []), ensure_ascii=False))
                if getattr(answer, "refusal", None):
                    print(f"--- refusal: {answer.refusal}")  # type: ignore[attr-defined]
                for rank, s in enumerate(answer.snippets, 1):
                    dropped = " (filters dropped)" if s.get("filters_dropped") else ""
                    print(f"  {rank}. {s['doc_id']}  fused {s['scores']['fused']:.5f}  cite {s['source_locator']}{dropped}")
                print()
    close = getattr(inner, "close", None)
    if callable(close):
        close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
