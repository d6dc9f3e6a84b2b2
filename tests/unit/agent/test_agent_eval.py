"""The agent evaluation over three public tables (ragspine.testing.agent_eval), a sample of it in
every CI run: no false found, no numeral in a refusal, every answerable question answered with
the table's value — and the evaluation itself catches an agent that answers another fact."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing.agent_eval import KINDS, LANGUAGES, eval_agent, evaluate, fact_rows, generate


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    database = SQLiteDatabase(tmp_path_factory.mktemp("agent-eval") / "facts.db")
    database.init_schema()
    yield eval_agent(database)
    database.close()


def test_the_tables_become_facts() -> None:
    rows = fact_rows()
    assert len(rows) == 16 * 6 + 55 * 4 + 12 * 5
    assert {"metric": "gnp", "entity": "US", "period": "1950", "value": "284599"}.items() <= next(
        r for r in rows if (r["metric"], r["period"]) == ("gnp", "1950")).items()


def test_the_generator_covers_every_kind_and_language_reproducibly() -> None:
    questions = generate(3, seed=7)
    assert {(q.kind, q.language) for q in questions} == {(k, lang) for k in KINDS for lang in LANGUAGES}
    assert questions == generate(3, seed=7) and questions != generate(3, seed=8)


@pytest.mark.parametrize("seed", [11, 12])
def test_a_sample_has_no_false_found_and_no_numeral_in_a_refusal(agent, seed) -> None:
    report = evaluate(agent, generate(6, seed=seed))
    assert report.questions == 6 * len(KINDS) * len(LANGUAGES)
    assert not report.false_founds, report.text()
    assert not report.digits_in_refusals, report.text()
    assert report.right == report.answerable > 0, report.text()


class _FirstFactAgent:
    """An agent that answers every question with one stored fact: what the evaluation must catch."""

    def __init__(self, agent) -> None:
        self.agent = agent
        self.found = agent.answer("What was the US GNP in 1950?")

    def answer(self, question, history=None, *, as_of=None):
        real = self.agent.answer(question, history, as_of=as_of)
        return replace(real, structured=self.found.structured, text=self.found.text)


def test_the_evaluation_catches_an_agent_answering_another_fact(agent) -> None:
    report = evaluate(_FirstFactAgent(agent), generate(2, seed=3))
    assert len(report.false_founds) > report.questions // 2 and report.right < report.answerable
