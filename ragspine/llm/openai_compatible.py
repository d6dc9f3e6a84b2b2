"""``OpenAICompatibleLLMProvider``: any OpenAI-compatible chat completions API.

One adapter for OpenAI, vLLM, Ollama (``http://localhost:11434/v1``), llama.cpp's server,
LM Studio and the like: the ``openai`` SDK (``pip install 'ragspine[openai]'``) pointed at a
base URL. It sends ``model``, ``messages``, ``temperature`` (0 by default) and ``max_tokens``,
and returns the first choice's text.

Each attempt is bounded by ``timeout`` and by what is left of the time the request gives the
model (``deadline.remaining()``: its deadline less the reserve kept for the plain search,
:mod:`ragspine.llm.budget`); timeouts, connection errors, 408/409/429 and 5xx answers are
retried at most ``retries`` times with a short backoff (a ``Retry-After`` of a few seconds is
honoured) — but only while what is left holds a whole attempt (``timeout`` after the pause),
and only while the request's call budget has room: each retry is an HTTP attempt and counts
(:func:`~ragspine.llm.budget.take_attempt`). Every failure is a
:class:`~ragspine.errors.BackendError` (:class:`~ragspine.llm.base.LLMTimeoutError` for a
timeout) with one line naming the fix. The SDK's own retries are off: the bound is ours.
The constructor does no I/O.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ragspine import deadline
from ragspine.errors import BackendError, ConfigError, MissingDependencyError
from ragspine.llm.base import LLMTimeoutError, describe_limits, redact_url
from ragspine.llm.budget import take_attempt
from ragspine.llm.spec import parse_llm_spec

if TYPE_CHECKING:
    from typing_extensions import Self

    from ragspine.config import Settings
    from ragspine.llm.base import LLMProviderClass

__all__ = ["OpenAICompatibleLLMProvider"]

DEFAULT_TIMEOUT = 20.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_TOKENS = 256
MAX_RETRIES = 10
_BACKOFF = 0.25  # seconds before the first retry, doubled each time
_MAX_WAIT = 4.0  # the longest pause between two attempts (Retry-After included)
_NO_KEY = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) take any key

_FIXES = {
    401: "check RAGSPINE_LLM_API_KEY",
    403: "check RAGSPINE_LLM_API_KEY and its permissions",
    404: "check RAGSPINE_LLM_MODEL and that the base URL ends in /v1",
}


class OpenAICompatibleLLMProvider:
    """See the module docstring. ``client`` (an ``openai.OpenAI``, or anything with its
    ``chat.completions.create``) replaces the one it builds."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int | None = None,
        client: object | None = None,
    ) -> None:
        if not model:
            raise ConfigError(
                "the OpenAI-compatible LLM needs a model: set RAGSPINE_LLM_MODEL to the served model's name "
                "(e.g. gpt-4o-mini, or what `ollama list` shows)"
            )
        if timeout <= 0 or not 0 <= retries <= MAX_RETRIES or max_tokens < 1:
            raise ConfigError(
                f"LLM timeout must be > 0, retries within 0..{MAX_RETRIES} and max_tokens >= 1 "
                f"(got {timeout}, {retries}, {max_tokens}): check RAGSPINE_LLM_TIMEOUT / _RETRIES / _MAX_TOKENS"
            )
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.seed = seed
        self.client: Any = client if client is not None else _client(base_url, api_key)

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """``RAGSPINE_LLM`` (its base URL, if it is one), ``_MODEL``, ``_API_KEY``, ``_TIMEOUT``,
        ``_RETRIES`` and ``_MAX_TOKENS``."""
        llm = settings.llm
        _, base_url = parse_llm_spec(llm.provider)
        return cls(model=llm.model, base_url=base_url, api_key=llm.api_key, timeout=llm.timeout, retries=llm.retries, max_tokens=llm.max_tokens)

    @classmethod
    def describe(cls, settings: Settings) -> str:
        _, base_url = parse_llm_spec(settings.llm.provider)
        where = redact_url(base_url) if base_url else "the OpenAI API"
        model = settings.llm.model or "no model (set RAGSPINE_LLM_MODEL)"
        return f"openai-compatible: {model} at {where}, {describe_limits(settings)}, {settings.llm.retries} retries"

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        import openai

        request: dict[str, Any] = {
            "model": self.model, "messages": [dict(m) for m in messages],
            "temperature": kwargs.get("temperature", self.temperature), "max_tokens": kwargs.get("max_tokens", self.max_tokens),
        }
        if self.seed is not None:
            request["seed"] = self.seed
        failure: BackendError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                wait = _wait(attempt, failure)
                left = deadline.remaining()
                if left is not None and left - wait < self.timeout:
                    break  # what is left cannot hold another whole attempt: it stays with the rest of the request
                if not take_attempt():
                    break  # the request's call budget is spent: a retry is an attempt like any other
                time.sleep(wait)
            timeout = _attempt_timeout(self.timeout)
            try:
                response = self.client.chat.completions.create(**request, timeout=timeout)
            except openai.APITimeoutError as exc:
                why = "RAGSPINE_LLM_TIMEOUT" if timeout >= self.timeout else "what the request's deadline left it"
                failure = LLMTimeoutError(f"the LLM at {self._where()} did not answer within {timeout:.3g} s ({why})")
                failure.__cause__ = exc
            except openai.APIConnectionError as exc:
                failure = BackendError(f"cannot reach the LLM at {self._where()}: is the server running? ({_first_line(exc)})")
                failure.__cause__ = exc
            except openai.APIStatusError as exc:
                failure = BackendError(f"the LLM at {self._where()} answered HTTP {exc.status_code}: {_status_fix(exc)}")
                failure.__cause__ = exc
                if not _retryable(exc.status_code):
                    raise failure from exc
            except Exception as exc:  # anything else the SDK raises (e.g. a body that is not JSON)
                raise BackendError(f"the LLM at {self._where()} failed: {type(exc).__name__}: {_first_line(exc)}") from exc
            else:
                return self._text(response)
        assert failure is not None
        raise failure

    def _text(self, response: Any) -> str:
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise BackendError(f"the LLM at {self._where()} did not send a chat completion (no choices[0].message)") from exc
        return content if isinstance(content, str) else ""

    def _where(self) -> str:
        return redact_url(self.base_url) if self.base_url else "api.openai.com"

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLMProvider(model={self.model!r}, base_url={self._where()!r})"


if TYPE_CHECKING:  # what the LLM registry's line expects of the class
    _CHECK: LLMProviderClass = OpenAICompatibleLLMProvider


def _client(base_url: str | None, api_key: str | None) -> Any:
    try:
        import openai
    except ImportError:
        raise MissingDependencyError("openai", "openai", "the OpenAI-compatible LLM provider") from None
    key = api_key or (_NO_KEY if base_url else None)  # the OpenAI API itself: the SDK's OPENAI_API_KEY
    try:
        return openai.OpenAI(api_key=key, base_url=base_url, max_retries=0)
    except openai.OpenAIError as exc:
        raise ConfigError(f"cannot configure the OpenAI client: set RAGSPINE_LLM_API_KEY ({_first_line(exc)})") from exc


def _attempt_timeout(timeout: float) -> float:
    left = deadline.remaining()
    return timeout if left is None else max(0.001, min(timeout, left))


def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _wait(attempt: int, failure: BackendError | None) -> float:
    wait = _BACKOFF * 2 ** (attempt - 1)
    cause = getattr(failure, "__cause__", None)
    headers = getattr(getattr(cause, "response", None), "headers", None)
    if headers is not None:
        try:
            wait = max(wait, float(headers.get("retry-after", "")))
        except ValueError:
            pass
    return float(min(wait, _MAX_WAIT))


def _status_fix(exc: Any) -> str:
    status = int(exc.status_code)
    fix = _FIXES.get(status)
    if fix is None:
        fix = "the server is overloaded or failing: retry later, or raise RAGSPINE_LLM_RETRIES" if _retryable(status) else (
            "check the request the server refused")
    return f"{fix} ({_first_line(exc)[:160]})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
