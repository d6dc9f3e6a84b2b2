"""The HTTP form of a :class:`~ragspine.profile.Profile`, generated from it.

:data:`RecipeIn` is a sparse recipe — the choices a library is created with, or a request's own —
and :data:`RecipeOut` a whole one — what a library's searches run. Both are built here from the
profile's choice table (:data:`ragspine.profile.CHOICES`): each field's name, its place (the top,
``ranking`` or ``reasoning``, as :meth:`Profile.to_json` nests them), its type (the annotation of the
field it fills) and its description (the help of the ``RAGSPINE_*`` setting it stands for), so the
HTTP schema cannot drift from the recipe that runs. Registered options
(:class:`~ragspine.profile.ProfileOption`) travel in ``options``, checked by their own ``parse``.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from ragspine.config import SETTINGS
from ragspine.errors import ConfigError
from ragspine.profile import CHOICES, OPTIONS, Profile
from ragspine.retrieval.ranking import Ranking
from ragspine.retrieval.reasoning.options import ReasoningOptions

__all__ = ["RecipeIn", "RecipeOut", "recipe_out"]

_HOLDERS: dict[str, type] = {"": Profile, "ranking": Ranking, "reasoning": ReasoningOptions}
#: what a request may send for a field beyond its stored type (``fusion_weights`` as an object)
_WIDER_IN: dict[str, Any] = {"fusion_weights": str | dict[str, float] | None}


def _field_type(where: str, attr: str) -> Any:
    return typing.get_type_hints(_HOLDERS[where])[attr]


def _model(name: str, where: str, *, sparse: bool) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for choice, (place, attr, setting) in CHOICES.items():
        if place != where:
            continue
        kind = _field_type(place, attr)
        help_text = SETTINGS[setting].help if setting in SETTINGS else ""
        if sparse:
            fields[choice] = (_WIDER_IN.get(choice, kind) | None, Field(None, description=help_text))
        else:
            fields[choice] = (kind, Field(description=help_text))
    config = ConfigDict(extra="forbid")
    return create_model(name, __config__=config, **fields)


class _RecipeInBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def choices(self) -> dict[str, Any]:
        """The choices it makes, flat (:meth:`Profile.override`'s names): only the fields sent
        (a ``fusion_weights`` of ``null`` sent is a choice: the seed's RRF)."""
        data = self.model_dump(exclude_unset=True)
        flat: dict[str, Any] = {}
        for key, value in data.items():
            if key in ("ranking", "reasoning"):
                flat.update(value or {})
            elif key == "options":
                flat.update(value or {})
            else:
                flat[key] = value
        return {k: v for k, v in flat.items() if v is not None or k == "fusion_weights"}

    @model_validator(mode="after")
    def _checked(self) -> _RecipeInBase:
        unknown = [name for name in (getattr(self, "options", None) or {}) if name not in OPTIONS]
        if unknown:
            raise ValueError(f"unknown profile option {unknown[0]!r}; registered: {', '.join(OPTIONS) or 'none'}")
        choices = self.choices()
        try:
            Profile().override(**{k: v for k, v in choices.items() if k != "fanout"})
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        fanout = choices.get("fanout")
        if fanout is not None and not 1 <= fanout <= 8:
            raise ValueError(f"fanout must be within 1..8, got {fanout}")
        return self


def _recipe_in() -> type[BaseModel]:
    ranking, reasoning = _model("RankingIn", "ranking", sparse=True), _model("ReasoningIn", "reasoning", sparse=True)
    top = {choice: spec for choice, spec in _model("_TopIn", "", sparse=True).model_fields.items()}
    fields: dict[str, Any] = {name: (f.annotation, f) for name, f in top.items()}
    fields["ranking"] = (ranking | None, Field(None, description="reranker, rerank_depth, postprocessor, fusion_weights"))
    fields["reasoning"] = (reasoning | None, Field(None, description="query-time reasoning: transform, decompose, adaptive, corrective, fanout"))
    fields["options"] = (dict[str, Any] | None, Field(None, description="registered profile options (plugins): name -> value"))
    return create_model("RecipeIn", __base__=_RecipeInBase, **fields)


def _recipe_out() -> type[BaseModel]:
    top = _model("_TopOut", "", sparse=False).model_fields
    fields: dict[str, Any] = {name: (f.annotation, f) for name, f in top.items()}
    fields["ranking"] = (_model("RankingOut", "ranking", sparse=False), Field(description="how candidates are ranked"))
    fields["reasoning"] = (_model("ReasoningOut", "reasoning", sparse=False), Field(description="query-time reasoning"))
    fields["options"] = (dict[str, Any], Field(default_factory=dict, description="registered profile options set (plugins)"))
    return create_model("RecipeOut", __config__=ConfigDict(extra="forbid"), **fields)


if TYPE_CHECKING:  # what the checker sees: the generated models' bases

    class RecipeIn(_RecipeInBase):
        """A sparse recipe (the choices a library is created with, or a request's own)."""

    class RecipeOut(BaseModel):
        """A whole recipe: :meth:`Profile.to_json`'s form."""

else:
    RecipeIn = _recipe_in()
    RecipeOut = _recipe_out()


def recipe_out(profile: Profile) -> RecipeOut:
    """``profile`` as a :data:`RecipeOut`."""
    return RecipeOut.model_validate(profile.to_json())
