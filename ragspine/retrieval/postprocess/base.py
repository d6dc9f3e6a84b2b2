"""The ``Postprocessor`` role: the last stage before the link exit (after rerank).

``process(query, results, top_k=...) -> results`` gets the fused (and reranked) candidates —
``RAGSPINE_RERANK_DEPTH`` of them when a postprocessor is configured, so a diversity stage has
more than ``top_k`` to choose from — and returns at most ``top_k``, best first. It may reorder,
drop or annotate results; it never adds a result the pipeline did not retrieve and never
changes a chunk's ``text`` or any reference field (a compression writes ``prompt_text``
only). Postprocessors see and return only non-RESTRICTED results (:func:`open_results`): the
exit would drop the others anyway, and dropping them first keeps an order or a budget built
here from being cut afterwards. They are chosen by name and chained
(``RAGSPINE_POSTPROCESSOR="a,b"``, :func:`make_postprocessor`).

A registry line (:data:`ragspine.registries.POSTPROCESSORS`) names a class with a typed keyword
constructor (its own options only, each defaulting to its setting's default) and a
``from_settings(settings)`` classmethod reading those options from the settings. A line that
declares ``needs=("profile",)`` is built as ``from_settings(settings, profile=...)``, handed the
library's :class:`~ragspine.profile.Profile` (its recipe), so a stage can follow what the
library chose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from ragspine.errors import ConfigError
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.types import RetrievalResult

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.profile import Profile

#: What a postprocessor's registry line may declare it ``needs`` (handed to its ``from_settings`` by keyword).
NEEDS = ("profile",)


@runtime_checkable
class Postprocessor(Protocol):
    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        """At most ``top_k`` of ``results`` (non-RESTRICTED), best first."""
        ...


def open_results(results: Sequence[RetrievalResult]) -> list[RetrievalResult]:
    """The non-RESTRICTED results, in order."""
    return [r for r in results if not is_restricted(str(r.chunk.sensitivity))]


class PostprocessorChain:
    """Several postprocessors, applied left to right (each given the same ``top_k``)."""

    def __init__(self, stages: Sequence[Postprocessor]) -> None:
        self.stages = list(stages)

    def __repr__(self) -> str:
        return f"PostprocessorChain({self.stages!r})"

    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        for stage in self.stages:
            results = stage.process(query, results, top_k=top_k)
        return results


def make_postprocessor(spec: str = "none", *, settings: Settings | None = None, profile: Profile | None = None) -> Postprocessor | None:
    """The chain named by ``spec`` — comma-separated registry names (the caller's
    ``RAGSPINE_POSTPROCESSOR``; default ``none``, the seed's); ``None`` when every name is ``none``.

    Each stage is built by its class's ``from_settings(settings)``; a stage whose registry line
    needs ``"profile"`` is also handed ``profile=`` (default: the recipe ``settings`` resolve to).
    Without ``settings``, each stage is its class's defaults (the settings' defaults)."""
    from ragspine.registries import POSTPROCESSORS

    names = [POSTPROCESSORS.canonical(part) for part in str(spec).split(",") if part.strip()]
    stages = [stage for name in names if (stage := _stage(name, settings, profile)) is not None]
    if not stages:
        return None
    return stages[0] if len(stages) == 1 else PostprocessorChain(stages)


def _stage(name: str, settings: Settings | None, profile: Profile | None) -> Postprocessor | None:
    """The stage ``name`` (a registry name), built as :func:`make_postprocessor` says; ``None`` for ``none``."""
    from ragspine.registries import POSTPROCESSORS

    stage_class: Any = POSTPROCESSORS.load(name)
    if stage_class is None:
        return None
    needs = POSTPROCESSORS.needs(name)
    unknown = [need for need in needs if need not in NEEDS]
    if unknown:
        raise ConfigError(f"the postprocessor {name!r} needs {', '.join(map(repr, unknown))}: a postprocessor may need only {', '.join(NEEDS)}")
    if settings is None:
        if needs:
            raise ConfigError(f"the postprocessor {name!r} needs the library's {', '.join(needs)}: build it with settings=")
        stage: Postprocessor = stage_class()
        return stage
    handed: dict[str, Any] = {}
    if "profile" in needs:
        if profile is None:
            from ragspine.profile import Profile

            profile = Profile.from_settings(settings)
        handed["profile"] = profile
    stage = stage_class.from_settings(settings, **handed)
    return stage
