"""What a question asks, read deterministically: its glossary slots and its shape (pure).

:func:`read_question` folds the question once and finds

* the **slots** — the first metric, entity and channel of the controlled glossary it names
  (:class:`~ragspine.agent.spotting.TermSpotter`) and its first period mention
  (:func:`~ragspine.agent.spotting.find_period`, with the as-of date for relative periods and
  bare quarters);
* the **shape** — ``explains`` (why / how / explain / reason; 为什么 / 为何 / 原因 / 怎么;
  なぜ / どうして / 理由 / 要因) and ``asks_number`` (how much / how many / by how much; 多少 /
  多大 / 幅度; いくら / どれくらい / どのくらい / どれだけ);
* its **language** (kana or 四半期: ja; other Han: zh; else en), the language of every fixed
  message of the answer.

Nothing here calls a model or reads the conversation history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ragspine.agent.spotting import Hit, PeriodMention, TermSpotter, find_period
from ragspine.structured.periods import fold

_W = r"[^\W_]"
#: Words asking for an explanation (``how`` unless it asks a quantity: how much/many/long ...).
EXPLAINS = re.compile(
    rf"(?<!{_W})(?:why|explain|explains|explanation|reason|reasons|cause|causes|caused|"
    rf"how(?! (?:much|many|long|large|big|high|low|far|often|old)(?!{_W})))(?!{_W})"
    r"|为什么|為什麼|为何|為何|原因|怎么会|怎麼會|为啥|怎么|怎麼|なぜ|何故|どうして|理由|要因"
)
#: Words asking for a quantity.
ASKS_NUMBER = re.compile(
    rf"(?<!{_W})(?:how much|how many|by how much|how large|how big|what amount)(?!{_W})"
    r"|多少|多大|幅度|いくら|幾ら|どれくらい|どのくらい|どれだけ|どれほど"
)
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[a-z][a-z'-]*")
#: Words left out of a question's residue (what may name an unknown metric, for suggestions).
STOPWORDS = frozenset("""
a an and are as at be by company did do does for from give had has have how in is it its it's made make many
me much number of on or our please quarter report reported show tell that the their this to value was we were what
when which who whose with year s
""".split())


@dataclass(frozen=True)
class Reading:
    """A question's slots, shape and language (see the module docstring)."""

    question: str
    folded: str
    language: str
    metric: Hit | None = None
    entity: Hit | None = None
    channel: Hit | None = None
    period: PeriodMention | None = None
    explains: bool = False
    asks_number: bool = False
    residue: str = ""  # latin words outside every slot: what an unknown metric may be called

    @property
    def slots(self) -> dict[str, str | None]:
        """The canonical keys found (``None``: not found); the period's key or, when it needs
        an as-of date, its text."""
        period = None if self.period is None else (self.period.key or self.period.text)
        return {"metric": _key(self.metric), "entity": _key(self.entity), "period": period, "channel": _key(self.channel)}


_CLAUSE = re.compile(r"[,，、;；]|\s+and\s+(?=(?:by\s+)?how\s+(?:much|many)\b)", re.IGNORECASE)


def narrative_query(question: str) -> str:
    """The narrative sub-query: ``question`` without its clauses that ask for a quantity
    (``..., and by how much?``, ``…，下降了多少？``) — the fact table answers those — unless
    nothing else is left."""
    clauses = [c.strip() for c in _CLAUSE.split(question) if c.strip()]
    kept = [c for c in clauses if ASKS_NUMBER.search(fold(c)) is None]
    if not kept or len(kept) == len(clauses):
        return question.strip()
    return ", ".join(kept)


def _key(hit: Hit | None) -> str | None:
    return None if hit is None else hit.key


def question_language(text: str) -> str:
    """``ja`` (kana, or 四半期), ``zh`` (other Han) or ``en``."""
    if _KANA.search(text) or "四半期" in text:
        return "ja"
    return "zh" if _HAN.search(text) else "en"


def read_question(question: str, spotter: TermSpotter, *, as_of: date | None = None) -> Reading:
    """The :class:`Reading` of ``question`` (see the module docstring)."""
    folded = fold(question)
    hits = spotter.hits(folded)
    first = {section: next((h for h in hits if h.section == section), None) for section in ("metrics", "entities", "channels")}
    entity = first["entities"]
    spans = tuple((h.start, h.end) for h in hits)
    period = find_period(folded, spotter.glossary, entity.key if entity else "", as_of=as_of, skip=spans)
    taken = [*spans, *([(period.start, period.end)] if period else [])]
    residue = " ".join(
        w for m in _LATIN_WORD.finditer(folded) if not any(s <= m.start() < e for s, e in taken)
        and (w := m.group(0).strip("'-")) and w not in STOPWORDS
    )
    return Reading(
        question, folded, question_language(question), first["metrics"], entity, first["channels"], period,
        explains=EXPLAINS.search(folded) is not None, asks_number=ASKS_NUMBER.search(folded) is not None, residue=residue,
    )
