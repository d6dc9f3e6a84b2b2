"""Deliberately leaky structured channels and fact stores: each must fail one check of the
structured channel's pack (the inverse cases of ``test_structured_channel.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragspine.structured import MetricResult, StructuredChannel
from ragspine.structured.base import SourceFacts


@dataclass(frozen=True)
class UncheckedResult:
    """A result type without MetricResult's guard (what a careless implementation returns)."""

    status: str
    text: str
    language: str = "en"
    metric: str = ""
    entity: str = ""
    period: str = ""
    channel: str = ""
    value: str = ""
    unit: str = ""
    source_doc_id: str = ""
    source_locator: str = ""
    valid_as_of: str = ""

    def to_dict(self) -> dict[str, str]:
        return dict(vars(self))


def unchecked(result: MetricResult, **changes: str) -> UncheckedResult:
    values = {k: v for k, v in result.to_dict().items() if k in UncheckedResult.__dataclass_fields__}
    return UncheckedResult(**{**values, **changes})


class EchoingChannel(StructuredChannel):
    def query_metric(self, metric: str, entity: str, period: str, channel: str | None = None, **kw: Any) -> Any:
        result = super().query_metric(metric, entity, period, channel, **kw)
        return result if result.found else unchecked(result, text=f"{result.text} ({period})")


class GuessingChannel(StructuredChannel):
    def query_metric(self, *args: Any, **kw: Any) -> Any:
        result = super().query_metric(*args, **kw)
        return result if result.found else unchecked(result, text="No exact value; it was probably about １８０.")


class EmbellishingChannel(StructuredChannel):
    def query_metric(self, *args: Any, **kw: Any) -> Any:
        result = super().query_metric(*args, **kw)
        return unchecked(result, text=result.text + " That is up 12 percent.") if result.found else result


class MisattributingChannel(StructuredChannel):
    def query_metric(self, *args: Any, **kw: Any) -> Any:
        result = super().query_metric(*args, **kw)
        return unchecked(result, source_doc_id="kestrel/press-release") if result.found else result


class RestrictedLeakingStore:
    """Forgets the RESTRICTED filter (and the channel above it forgets it too)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def lookup(self, metric: str, entity: str, period: str, channel: str = "total") -> list[Any]:
        return [f for f in self.store.iter_facts(include_restricted=True) if (f.metric, f.entity, f.period, f.channel) ==
                (metric, entity, period, channel)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class NonAtomicStore:
    """Replaces each source in its own transaction."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def replace_facts(self, sources: list[SourceFacts]) -> int:
        return sum(self.store.replace_facts([s]) for s in sources)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class LibraryBlindStore:
    """Falls back to another library's facts when its own has none."""

    def __init__(self, store: Any, other: Any) -> None:
        self.store, self.other = store, other

    def lookup(self, *key: str) -> list[Any]:
        return self.store.lookup(*key) or self.other.lookup(*key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


