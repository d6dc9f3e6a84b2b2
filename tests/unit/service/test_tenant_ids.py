"""A tenant never reads a catalog id (``<tenant>/<library>``, e.g. ``'ta/rl20'``) in an error:
before, a ``raptor: true`` library without a tree answered Dify's ``/retrieval`` and
``/v1/answer`` with ``library 'ta/rl20' has no RAPTOR tree: run `ragspine raptor build
--library ta/rl20``` (the CLI's words, the internal id). Now every route answers as
``/v1/retrieve`` does (the tenant's name, the HTTP fix), and whatever a lower layer writes
(a store's error, a failed job) reaches the tenant without the prefix."""

from __future__ import annotations

import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.service.routes.common import job_out
from ragspine.service.store import Job
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant

TENANT = "ta"
PREFIX = f"{TENANT}/"


def error_bodies(client, headers) -> dict[str, tuple[int, str]]:
    """Each route that searches the library ``rl20``: its status and body."""
    calls = {
        "dify": ("/retrieval", {"knowledge_id": "rl20", "query": "gearbox warranty"}),
        "answer": ("/v1/answer", {"question": "How long is the gearbox warranty?", "libraries": ["rl20"]}),
        "answer (all libraries)": ("/v1/answer", {"question": "How long is the gearbox warranty?"}),
        "retrieve": ("/v1/retrieve", {"query": "gearbox warranty", "libraries": ["rl20"]}),
        "retrieve (all libraries)": ("/v1/retrieve", {"query": "gearbox warranty"}),
    }
    out = {}
    for name, (path, body) in calls.items():
        r = client.post(path, json=body, headers=headers)
        out[name] = (r.status_code, r.text)
    return out


@pytest.fixture
def tenant(client):
    headers = new_tenant(client, TENANT)
    new_library(client, headers, "rl20", raptor=True)
    assert ingest(client, headers, "rl20", doc("d1", "The gearbox warranty lasts 36 months."))["state"] == "succeeded"
    return headers


def test_a_raptor_library_without_a_tree_is_named_by_its_name_on_every_route(client, tenant) -> None:
    bodies = error_bodies(client, tenant)
    for name, (status, text) in bodies.items():
        assert status == 400, (name, status, text)
        assert PREFIX not in text, (name, text)
        assert "library 'rl20' has no RAPTOR tree" in text and "POST /v1/libraries/rl20/raptor" in text, (name, text)
        assert "ragspine raptor build" not in text, (name, text)  # the CLI is not the tenant's fix


def test_a_lower_layers_error_reaches_the_tenant_without_the_prefix(client, tenant, monkeypatch) -> None:
    new_library(client, tenant, "plain")
    ingest(client, tenant, "plain", doc("d2", "Repairs take five days."))

    def failing(self, *args, **kwargs):
        raise BackendError(f"library {self.library_id!r} at store x: cannot read {self.library_id}'s rows")

    monkeypatch.setattr(LibraryPipeline, "search_once", failing)
    for name, path, body in (
        ("dify", "/retrieval", {"knowledge_id": "plain", "query": "repairs"}),
        ("retrieve", "/v1/retrieve", {"query": "repairs", "libraries": ["plain"]}),
        ("answer", "/v1/answer", {"question": "How long do repairs take?", "libraries": ["plain"]}),
    ):
        r = client.post(path, json=body, headers=tenant)
        assert r.status_code == 503, (name, r.status_code, r.text)
        assert PREFIX not in r.text and "'plain'" in r.text, (name, r.text)


def test_job_errors_and_warnings_name_the_library_by_its_name() -> None:
    job = Job("j1", TENANT, f"{TENANT}/rl20", "failed", 0, 1, ["d1"], 0, f"library '{TENANT}/rl20' cannot embed: {TENANT}/rl20 is gone",
              f"{TENANT}/rl20: slow", 0.0, None, None)
    out = job_out(job, "rl20")
    assert out.error == "library 'rl20' cannot embed: rl20 is gone" and out.warning == "rl20: slow"


@pytest.mark.parametrize(("text", "expected"), [
    ("library 'ta/rl20' has no tree", "library 'rl20' has no tree"),
    ("run --library ta/rl20 now", "run --library rl20 now"),
    ("(ta/a.b-c_d)", "(a.b-c_d)"),
    ("data/rl20 and beta/x and ta/", "data/rl20 and beta/x and ta/"),  # another word ending in "ta", a bare prefix
    ("", ""),
])
def test_tenant_text(text, expected) -> None:
    from ragspine.service.context import tenant_text

    assert tenant_text(text, TENANT) == expected


def test_a_tenant_id_with_regex_characters_is_taken_literally() -> None:
    from ragspine.service.context import tenant_text

    assert tenant_text("library 't.a/x' and 'tza/y'", "t.a") == "library 'x' and 'tza/y'"


def test_other_config_errors_of_answer_pass_unchanged(client, tenant, monkeypatch) -> None:
    monkeypatch.setattr(LibraryPipeline, "search_once", lambda self, *a, **k: (_ for _ in ()).throw(ConfigError("something else")))
    new_library(client, tenant, "plain")
    r = client.post("/v1/answer", json={"question": "How long do repairs take?", "libraries": ["plain"]}, headers=tenant)
    assert r.status_code == 400 and r.json()["detail"] == "something else", r.text
