"""Character error rate: how far an OCR engine's text is from the text a page was rendered from
(the OCR tests and ``scripts/_bench_ocr.py``)."""

from __future__ import annotations


def character_error_rate(reference: str, hypothesis: str, *, cjk: bool = False) -> float:
    """Levenshtein distance / reference length, whitespace-normalised: runs of whitespace count as
    one space, or — ``cjk``, where words are not spaced — are removed."""
    ref, hyp = (("".join(s.split()) if cjk else " ".join(s.split())) for s in (reference, hypothesis))
    previous = list(range(len(hyp) + 1))
    for i, a in enumerate(ref, 1):
        current = [i]
        for j, b in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1] / max(len(ref), 1)


__all__ = ["character_error_rate"]
