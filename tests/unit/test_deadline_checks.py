"""Every CPU-bound step a request runs checks the request's deadline, so the work stops when
the deadline passes instead of running on after the 504 (issue 25: 40 threads still parsing
fact rows after their answers). Each step here runs past an expired deadline and must raise
:class:`DeadlineExceeded` naming what it was doing; without a deadline (the CLI) it runs."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.agent.reading import read_question
from ragspine.agent.spotting import TermSpotter, find_periods, load_fact_glossary
from ragspine.deadline import DeadlineExceeded, deadline
from ragspine.retrieval.filtering import filters as filtering
from ragspine.retrieval.filtering.filters import FilterTooLarge, parse_filter
from ragspine.retrieval.raptor.cluster import threshold_clusters
from ragspine.structured.ingest import csv_rows, parse_rows
from ragspine.structured.periods import fold
from tests.helpers import needs

HEADER = "metric,entity,period,value,source_doc_id,source_locator,valid_as_of"
CSV = HEADER + "\n" + "\n".join(f"revenue,Kestrel,2024Q{i % 4 + 1},{i},doc{i},p{i},2024-10-30" for i in range(50))


def expired() -> deadline:
    return deadline(0)


@pytest.mark.parametrize(("name", "step", "doing"), [
    ("CSV rows", lambda g: csv_rows("csv", CSV), "reading the CSV rows"),
    ("fact rows", lambda g: parse_rows([(None, {"metric": "revenue"})] * 5, g), "checking the fact rows"),
    ("question's terms", lambda g: TermSpotter(g).hits(fold("Kestrel revenue " * 50)), "reading the question"),
    ("question's periods", lambda g: find_periods(fold("1 " * 2000), g), "reading the question's periods"),
    ("question", lambda g: read_question("What was Kestrel's revenue in Q3 2024?", TermSpotter(g)), "reading the question"),
    ("RAPTOR level", lambda g: threshold_clusters(np.eye(8, dtype=np.float32), 0.5, 4), "clustering the RAPTOR level"),
])
def test_each_cpu_bound_step_stops_past_the_deadline(name, step, doing) -> None:
    glossary = load_fact_glossary(None)
    step(glossary)  # no deadline: it runs
    with expired(), pytest.raises(DeadlineExceeded, match=f"^{doing} ran past its 0 s deadline"):
        step(glossary)


def test_building_a_postgresql_filter_stops_past_the_deadline() -> None:
    needs("sqlalchemy")
    import sqlalchemy as sa
    from sqlalchemy.dialects.postgresql import JSONB

    from ragspine.stores.postgres.filters import filter_clause

    where = parse_filter({"deadline_probe": {"in": [1, 2, 3]}})
    with expired(), pytest.raises(DeadlineExceeded, match="^building the filter"):
        filter_clause(sa.column("never_built_before", JSONB), where)


def test_an_oversized_operand_list_is_refused_before_any_operand_is_checked(monkeypatch) -> None:
    """Before: a filter of 2,000,000 in-values (a 10 MB body) had each value checked, 0.4 s,
    and only then counted; now it is counted first, as the conditions were."""
    checked: list[object] = []
    real = filtering._scalar_kind

    def counting(value, what):
        checked.append(value)
        return real(value, what)

    monkeypatch.setattr(filtering, "_scalar_kind", counting)
    for spec in ({"y": {"in": list(range(2_000_000))}}, [{"field": "y", "op": "nin", "value": list(range(5000))}],
                 [("y", "in", list(range(5000)))]):
        with pytest.raises(FilterTooLarge, match="operand values; the limit is 1024 .RAGSPINE_MAX_FILTER_VALUES."):
            parse_filter(spec)
    assert checked == []
    assert parse_filter({"y": {"in": list(range(1024))}}) is not None and len(checked) == 1024  # at the limit: parsed
