"""The ``LLMProvider`` role: chat messages in, the model's text out.

``chat(messages, **options) -> str``: ``messages`` are ``{"role", "content"}`` dicts; raises
on failure (every caller degrades: the listwise judge keeps the fused order, the LLM router
searches every library, the LLM filter extractor adds no filter). What a model writes is a
probe or a judgement, never evidence: it is never a snippet, a citation or a number.

Providers are chosen by name (``RAGSPINE_LLM``): a line of the LLM registry
(:data:`ragspine.registries.LLM_PROVIDERS`) names a class with a typed keyword constructor and
two classmethods (:class:`LLMProviderClass`): ``from_settings(settings)`` builds it from the
settings it needs, ``describe(settings)`` is its ``ragspine config`` line. Nothing here knows a
provider's name: adding one is a module, a registry line and a conformance parameter. Shipped:
``none``, ``openai`` (any OpenAI-compatible chat API; ``RAGSPINE_LLM`` may be its base URL,
e.g. ``http://localhost:11434/v1``) and ``local`` (offline llama.cpp, a plumbing model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from ragspine.errors import BackendError, MissingDependencyError
from ragspine.llm.spec import is_llm_url, parse_llm_spec
from ragspine.registries import LLM_PROVIDERS

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = [
    "LLMBudgetExceeded",
    "LLMProvider",
    "LLMProviderClass",
    "LLMTimeoutError",
    "describe_limits",
    "describe_llm",
    "is_llm_url",
    "llm_options",
    "llm_provider_class",
    "make_llm_provider",
    "parse_llm_spec",
    "redact_url",
]


@runtime_checkable
class LLMProvider(Protocol):
    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        """The model's reply to ``messages`` (raises on failure)."""
        ...


class LLMProviderClass(Protocol):
    """What an LLM registry line names: a provider class (its classmethods, seen on the class)."""

    def from_settings(self, settings: Settings) -> LLMProvider:
        """The provider, its options read from ``settings.llm`` (whose ``provider`` selected it); no I/O."""
        ...

    def describe(self, settings: Settings) -> str:
        """The ``llm`` line of ``ragspine config``: which model, where, and its limits (no I/O, no model load)."""
        ...


class LLMTimeoutError(BackendError):
    """A language model did not answer within its timeout (``RAGSPINE_LLM_TIMEOUT``)."""


class LLMBudgetExceeded(BackendError):
    """One request asked for more LLM calls than ``RAGSPINE_LLM_MAX_CALLS`` allows."""


def llm_provider_class(spec: str) -> LLMProviderClass | None:
    """The class the ``RAGSPINE_LLM`` value ``spec`` names, imported now; ``None`` for ``none``."""
    name, _ = parse_llm_spec(spec)
    provider_class: LLMProviderClass | None = LLM_PROVIDERS.load(name)
    return provider_class


def make_llm_provider(spec: str | None = None, /, *, settings: Settings | None = None, **options: object) -> LLMProvider | None:
    """The provider ``spec`` names (default ``settings.llm.provider``); ``None`` for ``none``.

    With ``settings``: built by its class's ``from_settings`` (``spec``, when given, replaces
    ``settings.llm.provider``). Without: its constructor called with ``options`` (a base URL ``spec``
    adds ``base_url``); an option it does not take is a ``TypeError``, never swallowed. The
    environment is never read here: settings come in from the edge (:func:`ragspine.config.load_settings`).
    """
    if spec is None:
        if settings is None:
            raise TypeError("make_llm_provider needs a RAGSPINE_LLM value or settings (it never reads the environment)")
        spec = settings.llm.provider
    if settings is not None:
        if options:
            raise TypeError(f"make_llm_provider: pass settings or constructor options, not both (got {sorted(options)})")
        if spec != settings.llm.provider:
            settings = settings.replace(llm=spec)
        provider_class = llm_provider_class(spec)
        return None if provider_class is None else provider_class.from_settings(settings)
    name, base_url = parse_llm_spec(spec)
    if base_url is not None:
        options.setdefault("base_url", base_url)
    provider: LLMProvider | None = LLM_PROVIDERS.build(name, **options)
    return provider


def llm_options(settings: Settings) -> dict[str, Settings]:
    """What ``make_llm_provider(settings.llm.provider, **llm_options(settings))`` needs: the settings,
    from which the provider's class builds itself. Kept for that call's form; prefer
    ``make_llm_provider(settings=settings)``."""
    return {"settings": settings}


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def describe_limits(settings: Settings) -> str:
    """The limits every provider's line ends with (the guard applies them to any provider)."""
    return f"timeout {settings.llm.timeout:g} s, at most {settings.llm.max_calls} calls per request"


def describe_llm(settings: Settings) -> str:
    """The ``llm`` line of ``ragspine config``: the configured provider's own ``describe``."""
    name, _ = parse_llm_spec(settings.llm.provider)
    try:
        provider_class = LLM_PROVIDERS.load(name)
    except MissingDependencyError as exc:  # a plugin whose module imports its SDK at the top
        return f"{name}: not installed ({exc})"
    if provider_class is None:
        return "none"
    line: str = provider_class.describe(settings)
    return line

