"""What a question asks, read deterministically: its glossary slots and its shape (pure).

:func:`read_question` folds the question once and finds

* the **slots** — the metric, entity and channel of the controlled glossary it names
  (:class:`~ragspine.agent.spotting.TermSpotter`) and its period mention
  (:func:`~ragspine.agent.spotting.find_periods`, with the as-of date for relative periods and
  bare quarters). A slot is read only when the question names exactly one thing for it: two
  different metrics, entities, channels or periods are an ``ambiguous`` slot (never the first one
  silently), and a metric form inside a longer term the glossary does not know
  (:func:`~ragspine.agent.spotting.longer_term`: ``cost of sales``, 劳动人口) is an ``unread``
  slot naming that term (never the shorter metric);
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

from ragspine.agent.spotting import Hit, PeriodMention, TermSpotter, find_periods, longer_term
from ragspine.deadline import check as check_deadline
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
    #: (slot, the longer term the question names there): a glossary form inside an unknown term
    unread: tuple[tuple[str, str], ...] = ()
    #: (slot, what the question names there): more than one metric, entity, channel or period
    ambiguous: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def clear(self) -> bool:
        """Whether every slot the question fills reads as exactly one thing."""
        return not self.unread and not self.ambiguous

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
    hits = spotter.hits(folded, fold(question, casefold=False))
    by_section = {s: [h for h in hits if h.section == s] for s in ("metrics", "entities", "channels")}
    entities = by_section["entities"]
    spans = tuple((h.start, h.end) for h in hits)
    periods = find_periods(folded, spotter.glossary, entities[0].key if entities else "", as_of=as_of, skip=spans)
    period_spans = tuple((p.start, p.end) for p in periods)
    unread: list[tuple[str, str]] = []
    metrics: list[Hit] = []
    for hit in by_section["metrics"]:
        check_deadline("reading the question")
        others = tuple(span for span in (*spans, *period_spans) if span != (hit.start, hit.end))
        term = longer_term(folded, hit, others)
        if term is None:
            metrics.append(hit)
        else:
            unread.append(("metric", term))
    ambiguous: list[tuple[str, tuple[str, ...]]] = []
    for slot, found in (("metric", metrics), ("entity", entities), ("channel", by_section["channels"])):
        keys = list(dict.fromkeys(h.key for h in found))
        if len(keys) > 1:
            section = slot + "s" if slot != "entity" else "entities"
            ambiguous.append((slot, tuple(spotter.glossary.label(section, k, question_language(question)) for k in keys)))
    period_keys = list(dict.fromkeys(p.key or p.text for p in periods))
    if len(period_keys) > 1:
        ambiguous.append(("period", tuple(period_keys)))
    taken = [*spans, *period_spans]
    residue = " ".join(
        w for m in _LATIN_WORD.finditer(folded) if not any(s <= m.start() < e for s, e in taken)
        and (w := m.group(0).strip("'-")) and w not in STOPWORDS
    )
    return Reading(
        question, folded, question_language(question), metrics[0] if metrics and not unread else None,
        entities[0] if entities else None, by_section["channels"][0] if by_section["channels"] else None,
        periods[0] if periods else None,
        explains=EXPLAINS.search(folded) is not None, asks_number=ASKS_NUMBER.search(folded) is not None, residue=residue,
        unread=tuple(unread), ambiguous=tuple(ambiguous),
    )
