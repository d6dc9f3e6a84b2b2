"""The security gate on every command that reaches the structured channel, the graph or an index:
``ragspine metric``, ``ask``, ``query`` and ``graph rollup|peers|trace|edges``, on SQLite and
PostgreSQL 18, with ``KESTREL_JP`` deny-listed inline (one English form, or another key naming
only its Chinese form): every form of it — key, code, each language's, a homoglyph, spaced
letters — is refused with the agent's fixed refusal (exit 1, no number), a roll-up or peer
comparison that would read it is refused, and ``graph edges`` withholds it."""

from __future__ import annotations

import json

import pytest

from ragspine.agent.messages import GATE_REFUSAL
from tests.helpers import run_cli as run

SECRET = "40.25"
FACTS = (
    "metric,entity,period,value,unit,source_doc_id,source_locator,valid_as_of\n"
    f"revenue,Kestrel Japan,2024Q3,{SECRET},EUR_M,kestrel/japan-q3-2024,p. 2,2024-10-30\n"
    "revenue,Kestrel China,2024Q3,60,EUR_M,kestrel/china-q3-2024,table 1,2024-10-30\n"
)
REPORT = f"---\ndoc_id: kestrel/japan-report\n---\nKestrel Japan revenue was {SECRET} million euros in the third quarter.\n"
DENY_LISTS = {"inline": "entities:\n  KESTREL_JP:\n    en: [Kestrel Japan]\n", "inline-form": "entities:\n  RIVAL:\n    zh: [红隼日本]\n"}

FORMS = {
    "key": "KESTREL_JP", "code": "KSTR_JP", "en": "Kestrel Japan", "zh": "红隼日本", "ja": "ケストレル・ジャパン",
    "homoglyph": "\u041a\u0435str\u0435l \u0408\u0430\u0440\u0430n", "spaced": "K-e-s-t-r-e-l J-a-p-a-n",
}


@pytest.fixture(params=["sqlite", "postgresql18"])
def db(request, tmp_path, capsys, monkeypatch) -> str:
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGSPINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("RAGSPINE_SECURITY_DENYLIST", raising=False)
    path = str(tmp_path / "kb.db")
    if request.param == "postgresql18":
        path, schema = request.getfixturevalue("pg_schema")
        monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
    (tmp_path / "facts.csv").write_text(FACTS, encoding="utf-8")
    (tmp_path / "report.md").write_text(REPORT, encoding="utf-8")
    assert run(capsys, "--db", path, "facts", "ingest", str(tmp_path / "facts.csv"), "--library", "kb")[0] == 0
    assert run(capsys, "--db", path, "--mode", "economy", "ingest", str(tmp_path / "report.md"), "--library", "kb")[0] == 0
    return path


def _refused(code: int, out: str, where: str) -> None:
    assert code == 1 and SECRET not in out and "japan-q3" not in out, (where, out)
    assert any(text in out for text in GATE_REFUSAL.values()), (where, out)


@pytest.mark.parametrize("deny", list(DENY_LISTS))
def test_every_command_refuses_every_form_of_a_denied_entity(db, capsys, tmp_path, monkeypatch, deny) -> None:
    # before the deny list: the numbers are there to leak
    code, out, _ = run(capsys, "--db", db, "metric", "revenue", "--entity", "KSTR_JP", "--period", "2024Q3", "--library", "kb")
    assert code == 0 and SECRET in out
    (tmp_path / "deny.yaml").write_text(DENY_LISTS[deny], encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_SECURITY_DENYLIST", str(tmp_path / "deny.yaml"))
    lookup = ("--period", "2024Q3", "--library", "kb", "--db", db)
    for how, form in FORMS.items():
        _refused(*run(capsys, "metric", "revenue", "--entity", form, *lookup)[:2], f"metric, {how}")
        code, out, _ = run(capsys, "metric", "revenue", "--entity", form, *lookup, "--json")
        refused = json.loads(out)
        assert code == 1 and refused["status"] == "refused" and refused["refused"][0]["kind"] == "metric", how
        _refused(*run(capsys, "--db", db, "--mode", "economy", "ask", f"What was {form} revenue in Q3 2024?", "--library", "kb")[:2],
                 f"ask, {how}")
        code, out, _ = run(capsys, "--db", db, "--mode", "economy", "query", f"{form} revenue", "--library", "kb")
        assert SECRET not in out and "no matching snippets" in out, (how, out)
        for action in ("rollup", "peers", "trace"):
            _refused(*run(capsys, "graph", action, "revenue", "--entity", form, *lookup)[:2], f"graph {action}, {how}")
    _refused(*run(capsys, "graph", "rollup", "revenue", "--entity", "Kestrel", *lookup)[:2], "rollup over a denied subsidiary")
    _refused(*run(capsys, "graph", "peers", "revenue", "--entity", "Kestrel China", *lookup)[:2], "peers with a denied sibling")
    code, out, err = run(capsys, "graph", "edges", "--library", "kb", "--db", db, "--json")
    graph = json.loads(out)
    assert code == 0 and "KESTREL_JP" not in out and "japan-q3" not in out and "withheld" in err
    assert "entity:KESTREL_CN" in {n["id"] for n in graph["nodes"]}
    # the control: an entity not denied is answered
    code, out, _ = run(capsys, "metric", "revenue", "--entity", "Kestrel China", *lookup)
    assert code == 0 and "60 million euros" in out
    code, out, _ = run(capsys, "graph", "trace", "revenue", "--entity", "Kestrel China", *lookup)
    assert code == 0 and "not derived" in out
