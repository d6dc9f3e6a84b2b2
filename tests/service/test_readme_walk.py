"""The docs' HTTP walk (``docs/http-api.md``), tried as a new user would: its own commands, run by bash, against a
real ``ragspine serve`` process.

From its "Serve it over HTTP" section on: the first bash block's ``export RAGSPINE_ADMIN_TOKEN``
line makes the admin token, its ``ragspine serve`` line starts the server (the venv's console
script, on a free port instead of 8000, every other setting at its default: SQLite under a
temporary data dir, RAGSPINE_EMBEDDING=auto), then the walk block (tenant, library, document,
job, file upload, query) and the Dify example block run unchanged but for the port, under
``set -euo pipefail``. Each command's JSON output is checked, and the query must return the
uploaded document's snippet. The page extracts values with ``python3 -c``, not ``jq``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.backends import free_port
from tests.helpers import needs

needs("uvicorn")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"
PORT_IN_DOCS = "8000"


def serve_section() -> str:
    """From "Serve it over HTTP" to the end of the page: the setup, the walk and the Dify example."""
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index("## Serve it over HTTP"):]


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def json_values(text: str) -> list[dict]:
    """The JSON documents curl printed back to back (no newline between them)."""
    decoder, out, pos = json.JSONDecoder(), [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out.append(value)


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        message = f"the docs' HTTP walk needs {tool!r} on PATH"
        pytest.fail(message) if os.environ.get("RAGSPINE_CI") else pytest.skip(message)


def test_docs_blocks_are_machine_runnable() -> None:
    setup, walk, dify = bash_blocks(serve_section())
    assert "jq" not in walk + dify, "a new user may not have jq: extract values with python3 -c"
    assert f"127.0.0.1:{PORT_IN_DOCS}" in walk and f"--port {PORT_IN_DOCS}" in setup
    assert any(line.startswith("export RAGSPINE_ADMIN_TOKEN=") for line in setup.splitlines())
    assert "$S/retrieval" in dify and '"knowledge_id": "handbook"' in dify


def test_docs_walk_end_to_end(tmp_path) -> None:
    for tool in ("bash", "curl", "python3", "openssl"):
        need(tool)
    setup, walk, dify = bash_blocks(serve_section())
    lines = [line.split("  #")[0].strip() for line in setup.splitlines()]
    exports = [line for line in lines if line.startswith("export ")]
    serve = shlex.split(next(line for line in lines if line.startswith("ragspine serve")))
    port = str(free_port())
    serve = [port if arg == PORT_IN_DOCS else arg for arg in serve]
    assert port in serve

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_") or k == "RAGSPINE_CACHE_DIR"}
    bin_dir = str(Path(sys.executable).parent)  # as after `. .venv/bin/activate`
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", RAGSPINE_DATA_DIR=str(tmp_path / "data"))
    token = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(exports) + '\nprintf %s "$RAGSPINE_ADMIN_TOKEN"'],
        env=env, capture_output=True, text=True, check=True, timeout=30,
    ).stdout
    assert re.fullmatch(r"[0-9a-f]{64}", token), token
    env["RAGSPINE_ADMIN_TOKEN"] = token

    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen([str(Path(bin_dir) / serve[0]), *serve[1:]], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.1)

        script = "\n".join([
            walk.replace(f"127.0.0.1:{PORT_IN_DOCS}", f"127.0.0.1:{port}"),
            dify,
            'printf \'{"key": "%s"}\' "$KEY"',  # not the page's: lets the test look further
        ])
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False)
        assert run.returncode == 0, f"{run.stderr}\n{run.stdout}\n{(tmp_path / 'serve.log').read_text()[-3000:]}"
        library, job, upload, answer, records, key = json_values(run.stdout)

        assert (library["name"], library["description"]) == ("handbook", "HR policies and benefits"), library
        assert (job["state"], job["progress"], job["doc_ids"]) == ("succeeded", "1/1", ["vacation"]), job
        assert upload["doc_ids"] == ["travel.md"] and upload["state"] in ("queued", "running", "succeeded"), upload
        top = answer["snippets"][0]
        assert (top["doc_id"], top["library_id"], top["text"]) == ("vacation", "handbook", "Employees get 25 vacation days a year."), answer
        assert top["metadata"] == {"year": 2024} and top["source_locator"] == "vacation#char=0,38"
        if importlib.util.find_spec("fastembed") is not None:  # the page installs [embed-onnx]: hybrid by default
            assert library["embedding_model"] == "auto" and top["scores"]["vector"] > 0, top
        assert records["records"][0]["metadata"]["document_id"] == "vacation", records
        assert all(0.5 <= r["score"] <= 1.0 for r in records["records"]), records

        # the uploaded file became searchable too, with a locator into travel.md
        headers = {"Authorization": f"Bearer {key['key']}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            deadline = time.monotonic() + 60
            while http.get(f"/v1/jobs/{upload['job_id']}").json()["state"] in ("queued", "running"):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert http.get(f"/v1/jobs/{upload['job_id']}").json()["state"] == "succeeded"
            travel = http.post("/v1/retrieve", json={"query": "trains or flights", "top_k": 1}).json()["snippets"][0]
            assert travel["doc_id"] == "travel.md" and travel["source_locator"].startswith("travel.md#char=")
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
