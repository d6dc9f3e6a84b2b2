"""What a ``RAGSPINE_LLM`` value names: an LLM provider's registry name, or a base URL.

Pure and light: it reads the LLM registry's lines and imports no provider and nothing of
:mod:`ragspine.config`; :func:`check_llm` is ``RAGSPINE_LLM``'s checker (named by the setting,
imported when the settings are loaded).
A base URL selects the entry whose ``accepts`` covers ``http:``/``https:`` (the
OpenAI-compatible adapter), which is then built with ``base_url=``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ragspine.errors import ConfigError
from ragspine.registries import LLM_PROVIDERS

__all__ = ["check_llm", "is_llm_url", "parse_llm_spec"]


def is_llm_url(spec: str) -> bool:
    return spec.strip().lower().startswith(("http://", "https://"))


def parse_llm_spec(spec: str) -> tuple[str, str | None]:
    """``(registry name, base URL or None)`` of a ``RAGSPINE_LLM`` value; a base URL selects
    the entry that accepts URLs. ``ConfigError`` (naming the choices) for anything else."""
    value = str(spec).strip()
    if is_llm_url(value):
        if not urlsplit(value).hostname:
            raise ConfigError(f"RAGSPINE_LLM={value!r} is not a usable URL: write it as http(s)://host:port/v1")
        name = LLM_PROVIDERS.match(value)
        if name is None:
            raise ConfigError(f"RAGSPINE_LLM={value!r}: no LLM provider takes a base URL; choose one of {LLM_PROVIDERS.choices()}")
        return name, value.rstrip("/")
    if value.lower() not in LLM_PROVIDERS:
        raise ConfigError(f"{LLM_PROVIDERS.unknown(spec)}, or a base URL (http(s)://host:port/v1)")
    return LLM_PROVIDERS.canonical(value), None


def check_llm(value: str) -> str:
    """A ``RAGSPINE_LLM`` value in canonical form: a provider's name, or a base URL as given."""
    name, base_url = parse_llm_spec(value)
    return base_url if base_url is not None else name
