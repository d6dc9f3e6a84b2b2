"""Tokens per second of the offline local LLM (``RAGSPINE_LLM=local``), as RAGSpine runs it.

    .venv/bin/python scripts/llm_local_speed.py [--runs 3] [--max-tokens 128] [--threads 1]

Prints the model's own timings (prompt and generation tokens/s, from llama.cpp) for a
listwise-judge-sized prompt, each run, and whether every run wrote the same text. It is a
plumbing model (SmolLM2-135M): the speed tells what a call costs, not what an LLM can do.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ragspine.llm.llamacpp import LlamaCppLLMProvider
from ragspine.retrieval.rerank.listwise_rerank import build_listwise_prompt

PASSAGES = [
    "Gearboxes are covered for 36 months from installation; claims are answered within five working days.",
    "Revenue fell in the third quarter because gearbox deliveries slipped.",
    "Warranty claims rose after the new supplier's bearings failed early in humid sites.",
    "The board approved a new plant in Ohio to be opened next spring.",
    "Claims about gearbox noise were answered by replacing the seals under warranty.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    provider = LlamaCppLLMProvider(max_tokens=args.max_tokens, threads=args.threads, timeout=600)
    started = time.perf_counter()
    server = provider._load()
    print(f"model: {provider.model_path}\nloaded in {time.perf_counter() - started:.2f} s, {args.threads} thread(s)")
    prompts = {
        "listwise judge": build_listwise_prompt("Why did warranty claims rise?", PASSAGES),
        "free text": "Explain in a few paragraphs how a gearbox warranty claim is handled.",
    }
    for label, prompt in prompts.items():
        request = {"messages": [{"role": "user", "content": prompt}], "max_tokens": args.max_tokens, "temperature": 0.0,
                   "seed": provider.seed, "cache_prompt": False}
        texts, gen_rates = [], []
        for run in range(1, args.runs + 1):
            started = time.perf_counter()
            result = server.handle_chat_completions(request)
            wall = time.perf_counter() - started
            timings = result.get("timings", {})
            texts.append(result["choices"][0]["message"]["content"])
            gen_rates.append(float(timings.get("predicted_per_second", 0.0)))
            print(f"{label}, run {run}: prompt {timings.get('prompt_n')} tokens at {timings.get('prompt_per_second', 0):.1f} tok/s, "
                  f"generated {timings.get('predicted_n')} tokens at {gen_rates[-1]:.1f} tok/s, {wall:.2f} s")
        print(f"{label}: generation median {statistics.median(gen_rates):.1f} tokens/s; "
              f"identical text every run: {len(set(texts)) == 1}; answer: {texts[0][:80]!r}")
    provider.close()


if __name__ == "__main__":
    main()
