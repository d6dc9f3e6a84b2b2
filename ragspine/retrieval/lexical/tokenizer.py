"""``tokenize``: lowercase words plus CJK unigrams and adjacent bigrams.

* ASCII letter/digit runs are words (``"Q3"`` → ``"q3"``). Runs of other non-CJK letters and
  digits are words too (``"Müller"`` → ``"müller"``), so European text is not shredded; this
  adds tokens only where the seed's ASCII rule would have split a word.
* A run of CJK characters (Han, Hiragana, Katakana, Hangul) emits every character as a
  unigram, then every adjacent pair as a bigram: ``"营收下滑"`` → ``营 收 下 滑 营收 收下 下滑``.
  This double granularity is what makes BM25 work for Chinese and Japanese without a
  segmenter.
* Everything else (punctuation, symbols, ``_``) separates tokens.
"""

from __future__ import annotations

import re

from ragspine.deadline import check as check_deadline

#: Characters, or runs of them, between two looks at the request's deadline.
_CHECK_EVERY = 4096

_CJK_CLASS = (
    "\u3005-\u3007"  # 々 〆 〇 (iteration mark, closing mark, ideographic zero)
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30fa\u30fc-\u30ff"  # Katakana (not U+30FB "・", a punctuation mark)
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0002ebef"  # CJK extensions B-F
)
_HAS_CJK = re.compile(f"[{_CJK_CLASS}]")
_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(f"([{_CJK_CLASS}]+)|([^\\W_{_CJK_CLASS}]+)")


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` in order of appearance (CJK runs: unigrams, then bigrams).

    Text without CJK (most of it) takes one C-level ``findall``; text with CJK splits into
    CJK runs and word runs in one pass. Both paths give exactly the tokens of the original
    single-regex definition (tests/unit/retrieval/lexical/test_tokenizer_speed.py proves it).
    """
    if len(text) > _CHECK_EVERY:  # a huge text (a query of megabytes): the request's deadline stops it
        check_deadline("tokenizing the text")
    low = text.lower()
    if _HAS_CJK.search(low) is None:
        return _WORD.findall(low)
    tokens: list[str] = []
    runs = _TOKEN.findall(low)
    for start in range(0, len(runs), _CHECK_EVERY):
        if start:
            check_deadline("tokenizing the text")
        for run, word in runs[start : start + _CHECK_EVERY]:
            if word:
                tokens.append(word)
                continue
            tokens.extend(run)
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens
