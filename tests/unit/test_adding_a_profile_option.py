"""Adding a per-library option is one ``ProfileOption`` and the stage that reads it.

A throwaway option (``pinned_doc``: a document whose chunks go first) and the postprocessor that
reads it are written as a module of their own (here in a temporary directory, as a plugin would
be), registered with one line each, and then reached from the profile's merge and JSON form, a
service library's recipe (kept, shown, refused per request), the CLI (``--option``, recorded
with the library's recipe and used by a later query) and ``RAGSPINE_PROFILE_OPTIONS`` — without
editing any RAGSpine file.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from ragspine.config import load_settings
from ragspine.errors import ConfigError
from ragspine.profile import OPTIONS, Profile, ProfileOption, register_option, unregister_option
from ragspine.registries import POSTPROCESSORS
from ragspine.registry import Entry
from tests.helpers import needs

PIN = '''
"""A throwaway per-library option and the stage that reads it."""
from __future__ import annotations

from ragspine.errors import ConfigError
from ragspine.retrieval.postprocess.base import open_results

BUILT = []


def parse_doc(value):
    text = str(value).strip()
    if any(ch.isspace() for ch in text):
        raise ConfigError(f"pinned_doc must be a document id without spaces, got {value!r}")
    return text


class PinnedDoc:
    """The chunks of the library's pinned document first, the rest in their order."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id

    @classmethod
    def from_settings(cls, settings, *, profile) -> PinnedDoc:
        BUILT.append(profile.option("pinned_doc"))
        return cls(profile.option("pinned_doc"))

    def process(self, query, results, *, top_k):
        results = open_results(results)
        pinned = [r for r in results if r.chunk.doc_id == self.doc_id]
        return (pinned + [r for r in results if r.chunk.doc_id != self.doc_id])[:top_k]
'''

DOCS = {
    "a": "The gearbox warranty is 36 months for every gearbox and gearbox part.",
    "b": "Gearbox repairs take five days; the gearbox is shipped back insured.",
    "c": "Invoices are paid within thirty days of the gearbox delivery.",
}


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "toy_pin.py").write_text(textwrap.dedent(PIN), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_pin

    # the two lines: the option, and the stage that reads it (built with the library's profile)
    register_option(ProfileOption("pinned_doc", default="", parse=toy_pin.parse_doc, help="a document whose chunks go first"))
    POSTPROCESSORS.register("pin", Entry("toy_pin:PinnedDoc", "the library's pinned document first", needs=("profile",)))
    yield toy_pin
    unregister_option("pinned_doc")
    POSTPROCESSORS.unregister("pin")
    sys.modules.pop("toy_pin", None)


def test_the_profile_merges_checks_and_serializes_the_new_option(plugin) -> None:
    assert "pinned_doc" in OPTIONS and Profile().option("pinned_doc") == ""
    pinned = Profile().override(pinned_doc=" c ", postprocessor="pin")
    assert pinned.option("pinned_doc") == "c" and pinned.choice("pinned_doc") == "c"
    assert pinned.to_json()["options"] == {"pinned_doc": "c"}
    assert Profile.from_json(pinned.to_json()) == pinned and Profile.from_json(pinned.dumps()) == pinned
    assert Profile().override(pinned_doc="") == Profile()  # the default is no value: the seed's JSON is unchanged
    assert "options" not in Profile().to_json()
    with pytest.raises(ConfigError, match="without spaces"):
        Profile().override(pinned_doc="two words")
    with pytest.raises(ConfigError, match="unknown profile option 'pinnd_doc'"):
        Profile.from_json({"options": {"pinnd_doc": "c"}})
    with pytest.raises(ValueError, match="shadow"):
        register_option(ProfileOption("reranker", default="none"))


def test_a_service_library_keeps_the_option_and_its_stage_reads_it(plugin, tmp_path) -> None:
    needs("fastapi")
    from fastapi.testclient import TestClient

    from ragspine.service.app import create_app
    from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant

    with TestClient(create_app(make_settings(tmp_path))) as client:
        headers = new_tenant(client)
        recipe = {"ranking": {"postprocessor": "pin"}, "options": {"pinned_doc": "c"}}
        lib = new_library(client, headers, "pinned", recipe=recipe)
        assert lib["recipe"]["options"] == {"pinned_doc": "c"} and lib["postprocessor"] == "pin"
        new_library(client, headers, "plain")
        for name in ("pinned", "plain"):
            ingest(client, headers, name, *(doc(doc_id, text) for doc_id, text in DOCS.items()))
        query = {"query": "gearbox warranty", "top_k": 3}
        pinned = client.post("/v1/retrieve", json={**query, "libraries": ["pinned"]}, headers=headers).json()["snippets"]
        plain = client.post("/v1/retrieve", json={**query, "libraries": ["plain"]}, headers=headers).json()["snippets"]
        assert pinned[0]["doc_id"] == "c" and plain[0]["doc_id"] == "a"
        assert "c" in plugin.BUILT
        r = client.post("/v1/retrieve", json={**query, "recipe": {"options": {"pinned_doc": "b"}}}, headers=headers)
        assert r.status_code == 400 and "a request cannot change what a library keeps" in r.text
        r = client.post("/v1/libraries", json={"name": "bad", "recipe": {"options": {"pinned_doc": "two words"}}}, headers=headers)
        assert r.status_code == 422 and "without spaces" in r.text


def test_the_cli_and_the_environment_reach_the_option(plugin, tmp_path, capsys, monkeypatch) -> None:
    from ragspine.cli import main

    assert load_settings({"RAGSPINE_PROFILE_OPTIONS": "pinned_doc=c"}).profile_options == "pinned_doc=c"
    assert Profile.from_settings(load_settings({"RAGSPINE_PROFILE_OPTIONS": "pinned_doc=c"})).option("pinned_doc") == "c"
    with pytest.raises(ConfigError, match="unknown profile option 'pinned'"):
        load_settings({"RAGSPINE_PROFILE_OPTIONS": "pinned=c"})
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", str(tmp_path / "cli.db"))
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    for doc_id, text in DOCS.items():
        (tmp_path / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    files = [str(tmp_path / f"{doc_id}.txt") for doc_id in DOCS]
    monkeypatch.setenv("RAGSPINE_POSTPROCESSOR", "pin")
    assert main(["ingest", *files, "--library", "kb", "--option", "pinned_doc=c.txt"]) == 0
    monkeypatch.delenv("RAGSPINE_POSTPROCESSOR")
    capsys.readouterr()
    assert main(["query", "gearbox warranty", "--library", "kb", "--json"]) == 0  # no flag: the library's recorded recipe
    import json

    snippets = json.loads(capsys.readouterr().out)
    assert [s["doc_id"] for s in snippets][:2] == ["c.txt", "a.txt"]  # the pinned document first, then BM25's order
    assert main(["config", "--option", "pinned_doc=c.txt"]) == 0
    assert "overridden: embedding='none', pinned_doc='c.txt'" in capsys.readouterr().out  # `ragspine config` names it
    assert main(["query", "gearbox warranty", "--library", "kb", "--json", "--option", "pinned_doc=b.txt"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["doc_id"] == "b.txt"  # a query-time choice overrides the library's
    assert main(["query", "gearbox", "--library", "kb", "--option", "pinned_doc=two words"]) != 0
    assert "pinned_doc must be a document id without spaces" in capsys.readouterr().err
