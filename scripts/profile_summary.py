#!/usr/bin/env python
"""Where the time goes, from py-spy's collapsed stacks (``load_test.py --profile out.txt``):
the share of samples in which each of a few named stages is on the stack.

    .venv/bin/python scripts/profile_summary.py out.txt
"""

from __future__ import annotations

import sys
from collections import Counter

STAGES = {
    "dense leg (pgvector query)": ("PgVectorStore.search", "PgVectorStore.query"),
    "query embedding": ("embed_query", "embed_texts"),
    "lexical leg": ("LexicalIndex.search", "PostgresLexicalIndex.search", "InMemoryLexicalIndex.search"),
    "chunk fetch": ("get_chunks",),
    "database wait (psycopg)": ("psycopg",),
    "HTTP + JSON (uvicorn, fastapi, pydantic)": ("uvicorn", "starlette", "fastapi", "pydantic"),
    "retrieve, total": ("retrieve",),
}


def main(path: str) -> None:
    total = 0
    hits: Counter[str] = Counter()
    top: Counter[str] = Counter()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            stack, _, count = line.rstrip().rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            total += n
            for stage, needles in STAGES.items():
                if any(needle in stack for needle in needles):
                    hits[stage] += n
            top[stack.split(";")[-1]] += n
    print(f"{total} samples")
    for stage in STAGES:
        print(f"  {100 * hits[stage] / max(total, 1):5.1f} %  {stage}")
    print("hottest frames:")
    for frame, n in top.most_common(12):
        print(f"  {100 * n / max(total, 1):5.1f} %  {frame[:150]}")


if __name__ == "__main__":
    main(sys.argv[1])
