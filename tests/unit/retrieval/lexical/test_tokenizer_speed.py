"""The fast tokenizer changes no token: it equals the original single-regex definition."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.retrieval.lexical.tokenizer import _CJK_CLASS, tokenize
from tests.corpora import stdlib_docstrings_corpus

_REFERENCE = re.compile(f"(?P<cjk>[{_CJK_CLASS}]+)|(?P<word>(?:(?![{_CJK_CLASS}])[^\\W_])+)")
CJK_DATA = Path(__file__).resolve().parents[3] / "data" / "cjk"


def reference_tokenize(text: str) -> list[str]:
    """The original definition (one regex, one match at a time)."""
    tokens: list[str] = []
    for match in _REFERENCE.finditer(text.lower()):
        run = match.group("cjk")
        if run is None:
            tokens.append(match.group("word"))
            continue
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def _cjk_texts() -> list[str]:
    texts = []
    for path in sorted(CJK_DATA.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for value in data.values() if isinstance(data, dict) else data:
            texts.extend(_strings(value))
    return texts


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_same_tokens_on_real_english_text():
    corpus = stdlib_docstrings_corpus(limit=3000)
    assert all(tokenize(text) == reference_tokenize(text) for _, text in corpus)


def test_same_tokens_on_real_chinese_and_japanese_text():
    texts = _cjk_texts()
    assert len(texts) > 50 and any(reference_tokenize(t) != t.lower().split() for t in texts)
    assert all(tokenize(t) == reference_tokenize(t) for t in texts)
    mixed = [f"{a} {b}" for a, b in zip(texts, reversed(texts), strict=True)]
    assert all(tokenize(t) == reference_tokenize(t) for t in mixed)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_same_tokens_on_any_text(text):
    assert tokenize(text) == reference_tokenize(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ9_é々〆〇ー゛・ーあア漢字한글 \n.,ß" + "\U00020000", max_size=40))
def test_same_tokens_at_the_edges_of_the_cjk_class(text):
    assert tokenize(text) == reference_tokenize(text)
