"""The ``LLMProvider`` role: chat messages in, the model's text out.

``chat(messages, **options) -> str``: ``messages`` are ``{"role", "content"}`` dicts; raises
on failure (every caller degrades: the listwise judge keeps the fused order, the LLM router
searches every library, the LLM filter extractor adds no filter). What a model writes is a
probe or a judgement, never evidence: it is never a snippet, a citation or a number.
Providers are chosen by name (``RAGSPINE_LLM``, :func:`make_llm_provider`): ``none``,
``openai`` (any OpenAI-compatible chat API; ``RAGSPINE_LLM`` may be its base URL, e.g.
``http://localhost:11434/v1``) or ``local`` (offline llama.cpp, a plumbing model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from ragspine.errors import BackendError, ConfigError

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = [
    "LLMBudgetExceeded",
    "LLMProvider",
    "LLMTimeoutError",
    "describe_llm",
    "is_llm_url",
    "llm_options",
    "make_llm_provider",
    "parse_llm_spec",
    "redact_url",
]

#: What ``RAGSPINE_LLM`` names when it is a base URL: the OpenAI-compatible adapter.
URL_PROVIDER = "openai"


@runtime_checkable
class LLMProvider(Protocol):
    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        """The model's reply to ``messages`` (raises on failure)."""
        ...


class LLMTimeoutError(BackendError):
    """A language model did not answer within its timeout (``RAGSPINE_LLM_TIMEOUT``)."""


class LLMBudgetExceeded(BackendError):
    """One request asked for more LLM calls than ``RAGSPINE_LLM_MAX_CALLS`` allows."""


def is_llm_url(spec: str) -> bool:
    return spec.strip().lower().startswith(("http://", "https://"))


def parse_llm_spec(spec: str) -> tuple[str, str | None]:
    """``(registry name, base URL or None)`` of a ``RAGSPINE_LLM`` value; a base URL selects
    the OpenAI-compatible adapter. ``ConfigError`` (naming the choices) for anything else."""
    from ragspine.registries import LLM_PROVIDERS

    value = str(spec).strip()
    if is_llm_url(value):
        parts = urlsplit(value)
        if not parts.hostname:
            raise ConfigError(f"RAGSPINE_LLM={value!r} is not a usable URL: write it as http(s)://host:port/v1")
        return URL_PROVIDER, value.rstrip("/")
    if value.lower() not in LLM_PROVIDERS:
        raise ConfigError(f"{LLM_PROVIDERS.unknown(spec)}, or a base URL (http(s)://host:port/v1)")
    return LLM_PROVIDERS.canonical(value), None


def make_llm_provider(spec: str | None = None, **options: Any) -> LLMProvider | None:
    """The provider named ``spec`` (default ``RAGSPINE_LLM``, with its settings); ``None``
    for ``none``. A base URL ``spec`` is the OpenAI-compatible adapter at that URL."""
    from ragspine.registries import LLM_PROVIDERS

    if spec is None:
        from ragspine.config import load_settings

        settings = load_settings()
        spec, options = settings.llm, {**llm_options(settings), **options}
    name, base_url = parse_llm_spec(spec)
    if base_url is not None:
        options.setdefault("base_url", base_url)
    provider: LLMProvider | None = LLM_PROVIDERS.build(name, **options)
    return provider


def llm_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments the configured provider's constructor takes from ``settings``."""
    name, base_url = parse_llm_spec(settings.llm)
    if name == "openai":
        return {
            "base_url": base_url, "model": settings.llm_model, "api_key": settings.llm_api_key,
            "timeout": settings.llm_timeout, "retries": settings.llm_retries, "max_tokens": settings.llm_max_tokens,
        }
    if name == "local":
        return {"model": settings.llm_model, "timeout": settings.llm_timeout, "max_tokens": settings.llm_max_tokens}
    return {}


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def describe_llm(settings: Settings) -> str:
    """The ``llm`` line of ``ragspine config``: which model, where, and its limits."""
    name, base_url = parse_llm_spec(settings.llm)
    if name == "none":
        return "none"
    limits = f"timeout {settings.llm_timeout:g} s, at most {settings.llm_max_calls} calls per request"
    if name == "local":
        from ragspine.llm.gguf import describe_model

        return f"local: {describe_model(settings.llm_model)} on llama.cpp (xllamacpp), 1 thread, {limits}"
    where = redact_url(base_url) if base_url else "the OpenAI API"
    model = settings.llm_model or "no model (set RAGSPINE_LLM_MODEL)"
    return f"openai-compatible: {model} at {where}, {limits}, {settings.llm_retries} retries"
