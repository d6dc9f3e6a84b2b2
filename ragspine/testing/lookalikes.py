"""Sensitivity labels that look like RESTRICTED without being spelled so — the corpus every
ingest path and every store is tested with (issue 25) — and a way to store one verbatim, as an
ingest before labels were folded did, to prove the exits fold at read time too.

:data:`RESTRICTED_LOOKALIKES` maps a name to a label that must be RESTRICTED wherever it is
given (front matter, ``--sensitivity``, an upload, a JSON document, a fact row); :data:`OPEN_LABELS`
are labels that stay what they are.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Iterator
from unittest import mock

__all__ = ["OPEN_LABELS", "RESTRICTED_LOOKALIKES", "written_verbatim"]

RESTRICTED_LOOKALIKES: dict[str, str] = {
    "zero-width-space": "RESTRICTED\u200b",
    "zero-width-joiner": "RESTR\u200dICTED",
    "byte-order-mark": "\ufeffRESTRICTED",
    "soft-hyphen": "RESTRIC\u00adTED",
    "full-width": "ＲＥＳＴＲＩＣＴＥＤ",
    "cyrillic-ie": "R\u0415STRICTED",
    "cyrillic-i": "RESTR\u0406CTED",
    "cyrillic-lower": "r\u0435stri\u0441t\u0435d",
    "greek-iota-tau": "RES\u03a4R\u0399C\u03a4ED",
    "math-bold": "\U0001d411\U0001d404\U0001d412\U0001d413\U0001d411\U0001d408\U0001d402\U0001d413\U0001d404\U0001d403",
    "mixed-case": "ReStRiCtEd",
    "surrounding-space": "\u00a0 restricted \u3000",
    "accent": "R\u00c9STRICTED",
    "spaced-letters": "R-E-S-T-R-I-C-T-E-D",
    "bracketed": "[RESTRICTED]",
    "quoted": '"RESTRICTED"',
    "exclaimed": "RESTRICTED!",
    "parenthesized": "(restricted)",
}

OPEN_LABELS: tuple[str, ...] = ("INTERNAL", "PUBLIC", "UNRESTRICTED", "CONFIDENTIAL", "社外秘")


def _unfolded(sensitivity: object) -> bool:  # what is_restricted read before issue 25
    return str(sensitivity).strip().upper() == "RESTRICTED"


@contextmanager
def written_verbatim() -> Iterator[None]:
    """Inside, the write paths read labels as they did before they were folded (stripped and
    upper-cased only), so a store keeps a lookalike label as given — a row "from before". The
    reads after the block must still treat it as RESTRICTED."""
    import importlib

    with ExitStack() as stack:
        for name in ("ragspine.retrieval.sensitivity", "ragspine.structured.base", "ragspine.stores.postgres.writes"):
            try:
                module = importlib.import_module(name)
            except ImportError:  # pragma: no cover - the PostgreSQL extra is not installed
                continue
            stack.enter_context(mock.patch.object(module, "is_restricted", _unfolded))
        yield
