"""``Profile``: a library's recipe as one frozen value, and the named profiles a user can pick.

A :class:`Profile` holds every per-library choice of the narrative channel: the retrieval
mode, the embedding backend, the chunker with its budget and packing, the contextual header,
the :class:`~ragspine.retrieval.ranking.Ranking` (reranker, depth, postprocessor, fusion) and
the query-time :class:`~ragspine.retrieval.reasoning.options.ReasoningOptions`, and whether
the RAPTOR leg runs. It has one checked merge — :meth:`Profile.override` takes a choice per
field (flat names: ``reranker=``, ``transform=``, ...), leaves out what is :data:`UNSET`, checks
and canonicalizes each value, and refuses an unknown name — and one JSON form
(:meth:`Profile.to_json` / :meth:`Profile.from_json`).

Some fields shape what a library *stores* (:data:`INDEX_FIELDS`: the embedding model, the
chunker, its budget and packing, the contextual header): a query may not change them — the
chunks, their index text and their vectors were made with them — so a query that asks for
another value is refused (:meth:`Profile.index_mismatch`). The others may differ per query.

Named profiles (:data:`PROFILES`; ``RAGSPINE_PROFILE``, ``--profile``, a service library's
``profile``) are :class:`Profile` literals: ``seed`` is every setting's default — the seed's
pipeline, byte for byte — and stays the default; the others are documented recipes measured
on the dev sets (``scripts/bench.py --profiles``; docs/profiles.md). A ``RAGSPINE_*`` variable
still overrides its field of the chosen profile (``load_settings`` takes the profile's
:meth:`Profile.settings_values` as the defaults of the settings no variable sets).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ragspine.errors import ConfigError
from ragspine.retrieval.ranking import Ranking
from ragspine.retrieval.reasoning.options import ReasoningOptions

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = ["INDEX_FIELDS", "OPTIONS", "PROFILES", "UNSET", "NamedProfile", "Profile", "ProfileOption", "library_recipe",
           "canonical_choice", "canonical_options", "named_profile", "parse_options", "read_recipe", "recipe_json", "register_option",
           "unregister_option"]


class _Unset:
    """The "not given" of :meth:`Profile.override` (``None`` is a value: the seed's RRF)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

#: choice name -> (where it lives: "" the profile, "ranking", "reasoning"; its field there; its setting)
CHOICES: dict[str, tuple[str, str, str]] = {
    "mode": ("", "mode", "retrieval_mode"),
    "embedding": ("", "embedding", "embedding"),
    "chunker": ("", "chunker", "chunker"),
    "chunk_chars": ("", "chunk_chars", "chunk_chars"),
    "chunk_packing": ("", "chunk_packing", "chunk_packing"),
    "contextual": ("", "contextual", "contextual"),
    "reranker": ("ranking", "reranker", "reranker"),
    "rerank_depth": ("ranking", "rerank_depth", "rerank_depth"),
    "postprocessor": ("ranking", "postprocessor", "postprocessor"),
    "fusion_weights": ("ranking", "fusion_weights", "fusion_weights"),
    "transform": ("reasoning", "transform", "query_transform"),
    "decompose": ("reasoning", "decompose", "query_decompose"),
    "adaptive": ("reasoning", "adaptive", "adaptive"),
    "corrective": ("reasoning", "corrective", "corrective"),
    "fanout": ("reasoning", "fanout", "query_fanout"),
    "raptor": ("", "raptor", "raptor"),
}

def _names(where: str) -> tuple[str, ...]:
    """The choices that live in ``where`` ("" the profile itself, "ranking", "reasoning"), in order."""
    return tuple(name for name, (place, _, _) in CHOICES.items() if place == where)


_TOP, _RANKING, _REASONING = _names(""), _names("ranking"), _names("reasoning")

#: The choices that shape what a library stores: a query may not change them.
INDEX_FIELDS = ("embedding", "chunker", "chunk_chars", "chunk_packing", "contextual")


def _as_is(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class ProfileOption:
    """A per-library choice registered from outside the profile's own fields (a plugin's stage
    reads it with :meth:`Profile.option`): its name (a flat choice of :meth:`Profile.override`,
    the ``options`` object of the JSON form and of the HTTP ``recipe``), its default, ``parse``
    (checks a value and returns its canonical, hashable form; ``ConfigError`` when bad) and
    whether it shapes what a library stores (``index``: a query may not change it)."""

    name: str
    default: Any
    parse: Callable[[Any], Any] = _as_is
    help: str = ""
    index: bool = False


#: The registered options (:func:`register_option`), by name.
OPTIONS: dict[str, ProfileOption] = {}


def register_option(option: ProfileOption) -> None:
    """Add a per-library option: one line, and it is a choice of every :class:`Profile`, kept
    with a library (CLI and service), set per request, and checked by ``option.parse``."""
    if option.name in CHOICES or option.name in ("ranking", "reasoning", "options"):
        raise ValueError(f"profile option {option.name!r} would shadow a field of Profile")
    OPTIONS[option.name] = option


def unregister_option(name: str) -> None:
    OPTIONS.pop(name, None)


def _option(name: str) -> ProfileOption:
    if name not in OPTIONS:
        known = ", ".join(OPTIONS) or "none registered"
        raise ConfigError(f"unknown profile option {name!r}; registered: {known}")
    return OPTIONS[name]


@dataclass(frozen=True)
class Profile:
    """A library's recipe (see the module docstring). The defaults are the seed's."""

    mode: str = "auto"
    embedding: str = "auto"
    chunker: str = "default"
    chunk_chars: int = 480
    chunk_packing: str = "pack"
    contextual: str = "none"
    ranking: Ranking = field(default_factory=Ranking)
    reasoning: ReasoningOptions = field(default_factory=ReasoningOptions)
    raptor: bool = False
    #: the registered options (:class:`ProfileOption`) that differ from their defaults, sorted by name
    options: tuple[tuple[str, Any], ...] = ()

    # -- reading --------------------------------------------------------------------------
    def choice(self, name: str) -> Any:
        """The value of one flat choice (``"reranker"``, ``"transform"``, ``"chunker"``, a registered option, ...)."""
        if name not in CHOICES and name in OPTIONS:
            return self.option(name)
        where, attr, _ = _choice(name)
        return getattr(getattr(self, where) if where else self, attr)

    def option(self, name: str) -> Any:
        """The value of the registered option ``name`` (its default where this profile sets none)."""
        default = _option(name).default
        return dict(self.options).get(name, default)

    def choices(self) -> dict[str, Any]:
        """Every choice, flat, in :data:`CHOICES` order, then the registered options."""
        return {name: self.choice(name) for name in (*CHOICES, *OPTIONS)}

    def differences(self, other: Profile) -> dict[str, tuple[Any, Any]]:
        """``{choice: (self's, other's)}`` where the two differ."""
        mine, theirs = self.choices(), other.choices()
        return {name: (mine[name], theirs[name]) for name in mine if mine[name] != theirs[name]}

    def index_mismatch(self, other: Profile) -> str | None:
        """Why a library built with ``self`` cannot be searched with ``other`` (an
        :data:`INDEX_FIELDS` choice or an ``index`` option differs: its chunks, index text or
        vectors were made with ``self``'s), as one line naming both values and the fix; ``None`` when it can."""
        for name in (*INDEX_FIELDS, *(o.name for o in OPTIONS.values() if o.index)):
            built, asked = self.choice(name), other.choice(name)
            if built != asked:
                where = f"RAGSPINE_{CHOICES[name][2].upper()}, a flag or the profile" if name in CHOICES else "a profile option"
                return (f"it was built with {name}={built!r}, and this query asks for {asked!r} ({where}):"
                        f" drop that override to use the library's own, or re-ingest the library with {name}={asked!r}")
        return None

    # -- the one merge ----------------------------------------------------------------------
    def override(self, **choices: Any) -> Profile:
        """This profile with ``choices`` (flat names of :data:`CHOICES`; :data:`UNSET` leaves a
        field as it is; ``None`` is a value only for ``fusion_weights``), each checked and
        canonical. An unknown name raises ``ConfigError`` naming the known ones."""
        given = {k: v for k, v in choices.items() if v is not UNSET}
        options = dict(self.options)
        for name in [n for n in given if n not in CHOICES and n in OPTIONS]:
            option = OPTIONS[name]
            value = option.parse(given.pop(name))
            if value == option.default:
                options.pop(name, None)
            else:
                options[name] = value
        for name in given:
            _choice(name)
        top = {name: _check_top(name, given[name]) for name in _TOP if name in given}
        ranking = self.ranking
        if any(name in given for name in _RANKING):
            merged = {**{n: getattr(ranking, n) for n in _RANKING}, **{n: given[n] for n in _RANKING if n in given}}
            ranking = Ranking.of(merged["reranker"], merged["postprocessor"], merged["fusion_weights"], _int("rerank_depth", merged["rerank_depth"]))
        reasoning = self.reasoning
        reasoning_given = {n: given[n] for n in _REASONING if n in given}
        if reasoning_given:
            if "corrective" in reasoning_given:
                reasoning_given["corrective"] = _bool("corrective", reasoning_given["corrective"])
            if "fanout" in reasoning_given:
                fanout = _int("fanout", reasoning_given.pop("fanout"))
                if not 1 <= fanout <= 8:
                    raise ConfigError(f"fanout must be within 1..8, got {fanout}")
                reasoning = replace(reasoning, fanout=fanout)
            reasoning = reasoning.override(**reasoning_given)
        return replace(self, **top, ranking=ranking, reasoning=reasoning, options=tuple(sorted(options.items())))

    # -- settings and JSON --------------------------------------------------------------------
    @classmethod
    def from_settings(cls, settings: Settings) -> Profile:
        """The recipe the settings resolve to (a named profile under the variables that override
        it, and the registered options of ``RAGSPINE_PROFILE_OPTIONS``)."""
        values = {name: settings.value(setting) for name, (_, _, setting) in CHOICES.items()}
        return cls().override(**values, **parse_options(settings.profile_options))

    def settings_values(self) -> dict[str, Any]:
        """``{setting field: value}`` of every choice (the defaults ``load_settings`` takes from a named profile)."""
        return {setting: self.choice(name) for name, (_, _, setting) in CHOICES.items()}

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the top-level choices, ``ranking`` and ``reasoning`` as objects."""
        out: dict[str, Any] = {name: self.choice(name) for name in _TOP}
        out["ranking"] = {name: self.choice(name) for name in _RANKING}
        out["reasoning"] = {name: self.choice(name) for name in _REASONING}
        if self.options:  # only where a registered option is set: the JSON of every other profile is as it was
            out["options"] = dict(self.options)
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str, *, base: Profile | None = None) -> Profile:
        """A profile from its JSON form (or a sparse one: what it leaves out is ``base``'s,
        default the seed's); every value checked, an unknown key refused."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as exc:
                raise ConfigError(f"a profile must be a JSON object: {exc}") from None
        if not isinstance(data, Mapping):
            raise ConfigError("a profile must be a JSON object")
        flat: dict[str, Any] = {}
        for key, value in data.items():
            if key == "options":
                if not isinstance(value, Mapping):
                    raise ConfigError("profile 'options' must be an object")
                for name, v in value.items():
                    _option(str(name))
                    flat[str(name)] = v
            elif key in ("ranking", "reasoning"):
                if not isinstance(value, Mapping):
                    raise ConfigError(f"profile {key!r} must be an object")
                for inner, v in value.items():
                    if inner not in CHOICES or CHOICES[inner][0] != key:
                        raise ConfigError(f"unknown profile field {key}.{inner!r}")
                    flat[inner] = v
            elif key in _TOP:
                flat[key] = value
            else:
                raise ConfigError(f"unknown profile field {key!r}; known: {', '.join(_TOP)}, ranking, reasoning, options")
        return (base or cls()).override(**flat)


@dataclass(frozen=True)
class NamedProfile:
    """A documented recipe: its name, what it is for, its :class:`Profile`."""

    name: str
    use: str
    profile: Profile

    @property
    def needs(self) -> tuple[str, ...]:
        """The pip extras its recipe needs (its models' and reranker's registry lines say which)."""
        from ragspine.registries import EMBEDDING_BACKENDS, RERANKERS

        extras = (EMBEDDING_BACKENDS[self.profile.embedding].extra, RERANKERS[self.profile.ranking.reranker].extra)
        return tuple(dict.fromkeys(e for e in extras if e))


#: The named profiles, in the order the docs and ``ragspine config`` list them. Each recipe
#: and its figures: docs/profiles.md (``scripts/bench.py --profiles``).
PROFILES: dict[str, NamedProfile] = {
    p.name: p
    for p in (
        NamedProfile("seed", "the seed's pipeline, every setting at its default (hybrid when the ONNX model is installed)", Profile()),
        NamedProfile("economy", "no model at all: BM25 on whole paragraphs with the contextual header (any language; the best measured here on"
                     " Chinese)", Profile(mode="economy", embedding="none", chunk_chars=1500, contextual="header")),
        NamedProfile("quality", "English, hybrid: BM25 + the packaged MiniLM, contextual header, z-score fusion",
                     Profile(mode="hybrid", embedding="onnx", contextual="header", ranking=Ranking(fusion_weights="zscore"))),
        NamedProfile("multilingual", "mixed-language libraries: BM25 + e5's static token vectors (multilingual, ~190x e5's speed), z-score fusion",
                     Profile(mode="hybrid", embedding="static_e5", chunk_chars=1500, contextual="header", ranking=Ranking(fusion_weights="zscore"))),
    )
}


def named_profile(name: str) -> NamedProfile:
    """The named profile ``name`` (case-insensitive), or a ``ConfigError`` listing them."""
    key = str(name).strip().lower().replace("_", "-")
    if key not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)} (RAGSPINE_PROFILE, --profile)")
    return PROFILES[key]


def recipe_json(profile: Profile, name: str) -> str:
    """What a library records: its recipe's JSON form and the named profile it came from."""
    return json.dumps({"name": name, **profile.to_json()}, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=1024)
def read_recipe(raw: str | None) -> tuple[str, Profile] | None:
    """``(profile name, recipe)`` of what :func:`recipe_json` wrote; ``None`` for nothing recorded
    (parsed and checked once per distinct text: a CLI query reads its libraries' recipes each time)."""
    if not raw:
        return None
    data = json.loads(raw)
    name = str(data.pop("name", "seed"))
    return name, Profile.from_json(data)


def library_recipe(library_id: str, recorded: tuple[str, Profile], configured: Profile, chosen_name: str | None, *,
                   mode: str | None = None) -> Profile:
    """The recipe a search (or an ingest) of a library uses: the one it was built with
    (``recorded``: its profile's name and recipe), overridden by each choice the configuration
    makes on purpose — a variable or a flag that differs from its profile's value (``configured``
    against the named profile ``chosen_name``), a ``mode`` flag, and, when another named profile
    is chosen than the library's, every choice of it — but a choice that shapes what the library
    stores (:data:`INDEX_FIELDS`) may not differ: ``ConfigError`` naming both values and the fix.
    ``embedding="none"`` asks for no vectors: BM25 over the same index text (economy mode)."""
    name, built = recorded
    base = built if chosen_name is not None and chosen_name != name else named_profile(chosen_name or "seed").profile
    chosen = {choice: asked for choice, (asked, _) in configured.differences(base).items()}
    if mode is not None:
        chosen["mode"] = mode
    if chosen.get("embedding") == "none":
        chosen.pop("embedding")
        chosen["mode"] = "economy"
    wanted = built.override(**chosen)
    problem = built.index_mismatch(wanted)
    if problem is not None:
        raise ConfigError(f"library {library_id!r}: {problem}")
    return wanted


def canonical_choice(name: str, value: Any) -> Any:
    """``value`` of the choice ``name`` checked and in canonical form (as :meth:`Profile.override` keeps it)."""
    return Profile().override(**{name: value}).choice(name)


def parse_options(text: str | None) -> dict[str, Any]:
    """``{option: value}`` of ``name=value,name=value`` (``RAGSPINE_PROFILE_OPTIONS``, ``--option``),
    each a registered option's value checked by its ``parse``; ``ConfigError`` naming a bad part."""
    out: dict[str, Any] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"profile option {part.strip()!r}: write name=value (RAGSPINE_PROFILE_OPTIONS, --option)")
        option = _option(name.strip())
        out[option.name] = option.parse(value.strip())
    return out


def canonical_options(text: str | None) -> str | None:
    """``RAGSPINE_PROFILE_OPTIONS`` checked and in canonical form (sorted ``name=value``); ``None`` when empty."""
    options = parse_options(text)
    return ",".join(f"{name}={value}" for name, value in sorted(options.items())) or None


def _choice(name: str) -> tuple[str, str, str]:
    if name not in CHOICES:
        raise ConfigError(f"unknown profile choice {name!r}; known: {', '.join((*CHOICES, *OPTIONS))}")
    return CHOICES[name]


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
    return value


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {value!r}")


def _check_top(name: str, value: Any) -> Any:
    from ragspine.registries import CHUNKERS
    from ragspine.retrieval.contextual import parse_contextual
    from ragspine.retrieval.mode import make_retrieval_mode

    if name == "mode":
        make_retrieval_mode(str(value))  # checked; kept as spelled (bm25 stays bm25, as RAGSPINE_RETRIEVAL_MODE)
        return str(value).strip().lower()
    if name == "embedding":
        return str(value).strip().lower()  # checked where it is built (make_embedding_backend), as RAGSPINE_EMBEDDING
    if name == "chunker":
        return CHUNKERS.canonical(str(value))
    if name == "chunk_chars":
        chars = _int(name, value)
        if chars <= 0:
            raise ConfigError(f"chunk_chars must be positive, got {chars}")
        return chars
    if name == "chunk_packing":
        packing = str(value).strip().lower()
        if packing not in ("pack", "unit"):
            raise ConfigError(f"chunk_packing={value!r}: choose pack or unit")
        return packing
    if name == "contextual":
        return parse_contextual(value)
    return _bool(name, value)  # raptor
