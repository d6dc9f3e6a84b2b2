"""Schemathesis against the app's own OpenAPI schema: no input makes the API answer 5xx.

Every operation of ``/openapi.json`` is fuzzed in-process (ASGI) with schemathesis' positive
(schema-valid) and negative (schema-violating) data, with a valid credential — a tenant key,
or the admin token on ``/v1/admin`` — so requests get past authentication into the handlers.
Two cases in five are taken as generated; two are aimed at things that exist (the tenant's
seeded library, document and job; a tenant and key of the admin's; filter-shaped filters and
Dify conditions with arbitrary operands), so bodies are parsed, filters evaluated and jobs
queued on real data rather than all ending in a 404; one gets nasty path parameters (NUL,
dots, 3,000 characters). The checks are schemathesis' ``not_a_server_error`` — bad input is a
4xx, never a 5xx (which Dify, for one, retries) — and ``response_schema_conformance``: a
documented status has its documented body (ST108: a 422 whose ``detail`` was a string); and an
accepted upload's job succeeds.

``test_hostile_inputs_are_4xx_in_strict_json`` pins what schemathesis does not generate:
JSON only Python's parser accepts (NaN, lone surrogates) and NUL characters on PostgreSQL.
"""

from __future__ import annotations

import csv
import io
import json
import os

from tests.helpers import needs

needs("schemathesis")

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.service.conftest import ADMIN_TOKEN, Service, ok_job, wait_jobs_idle
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant

#: Per operation (26 operations). RAGSPINE_TEST_SCHEMATHESIS_EXAMPLES=500 for a deeper local run.
MAX_EXAMPLES = int(os.environ.get("RAGSPINE_TEST_SCHEMATHESIS_EXAMPLES", "25"))


class Authorized:
    """The started app as schemathesis sees it: without its lifespan (schemathesis starts the
    lifespan of the app it is given, which would open a second service context over the
    fixture's), and with a valid credential on requests whose negative mutation dropped the
    Authorization header (authentication failures are tested elsewhere; here every case
    should reach a handler)."""

    def __init__(self, app, tenant: dict, admin: dict) -> None:
        self.app = app
        self.tenant = tenant["Authorization"].encode()
        self.admin = admin["Authorization"].encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not any(name.lower() == b"authorization" for name, _ in scope["headers"]):
            token = self.admin if scope["path"].startswith("/v1/admin") else self.tenant
            scope = {**scope, "headers": [*scope["headers"], (b"authorization", token)]}
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await self.app(scope, receive, send)


def seed(service: Service) -> dict:
    """A tenant with data to aim at, and a second tenant whose keys the admin routes may churn."""
    client = service.client
    headers = new_tenant(client, "acme")
    new_library(client, headers, "kb", description="gearbox warranty and repairs")
    new_library(client, headers, "scratch", embedding_model="none")
    job = ok_job(service, ingest(
        client, headers, "kb",
        doc("d1", "The gearbox warranty lasts 36 months.", metadata={"year": 2024, "team": "ops", "price": 9.5}),
        doc("memo", "Board memo: the gearbox merger.", sensitivity="RESTRICTED", metadata={"year": 2024}),
        doc("cn", "第三季度营收下滑。", metadata={"year": 2023, "flag": True, "none": None}),
    ))
    facts = client.post("/v1/facts", json={"library": "kb", "facts": [FACT_ROW]}, headers=headers)
    assert facts.status_code == 200, facts.text
    victim = client.post("/v1/admin/tenants", json={"tenant_id": "victim"}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).json()
    new_library(client, {"Authorization": f"Bearer {victim['api_key']['key']}"}, "kb")  # what the admin's document ACL routes aim at
    return {
        "headers": headers,
        "targets": {"name": "kb", "doc_id": "d1", "job_id": job["job_id"], "tenant_id": "victim", "key_id": victim["api_key"]["key_id"]},
    }


#: Strings PostgreSQL cannot hold (NUL), UTF-8 cannot encode (lone surrogates), and other oddities.
NASTY = ["a\x00b", "\x00", "\ud800", "x\udfff", "..", " ", "%00", "é" * 70, "x" * 3000]
#: Arbitrary JSON, with the numbers databases choke on (64-bit overflow, huge floats) and NASTY.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([2**63, -(2**63) - 1, 10**40, 1e308, -0.0, *NASTY])
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FIELDS = st.sampled_from(["year", "team", "price", "flag", "none", "missing", "", "a.b", "x" * 300, "a\x00", "\ud800"])
OPS = st.sampled_from(["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between", "like", "EQ", ""])
#: Filters in both of the grammar's forms, mostly well-formed, with arbitrary operands.
FILTERS = st.one_of(
    st.dictionaries(FIELDS, JSON | st.dictionaries(OPS, JSON, max_size=2), max_size=3),
    st.lists(st.fixed_dictionaries({"field": FIELDS, "op": OPS, "value": JSON}), max_size=3),
)
DIFY_OPS = st.sampled_from([
    "is", "=", "is not", "≠", "!=", ">", "<", "≥", "≤", ">=", "<=", "before", "after", "in", "not in",
    "contains", "not contains", "start with", "end with", "empty", "not empty", "IS", " in ",
])
DIFY_CONDITIONS = st.fixed_dictionaries({
    "logical_operator": st.sampled_from(["and", "or", "AND", None, "xor"]),
    "conditions": st.none() | st.lists(st.fixed_dictionaries({
        "name": st.one_of(FIELDS.map(lambda f: [f]), FIELDS, st.lists(FIELDS, max_size=2)),
        "comparison_operator": DIFY_OPS,
        "value": JSON | st.sampled_from(["2024", "1717200000", "ops, sales", "1e400", "nan", "-inf", "0x1A"]),
    }), max_size=3),
})


#: A good fact row; the aimed /v1/facts cases send it, or it with one field replaced by arbitrary JSON.
FACT_ROW = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": "182", "unit": "EUR_M",
            "source_doc_id": "d1", "source_locator": "para 1", "valid_as_of": "2024-10-30"}
FACT_ROWS = st.one_of(
    st.just([FACT_ROW]),
    st.tuples(st.sampled_from([*FACT_ROW, "channel", "sensitivity", "colour"]), JSON | st.sampled_from(NASTY)).map(
        lambda kv: [{**FACT_ROW, kv[0]: kv[1]}]),
    st.lists(st.dictionaries(st.sampled_from([*FACT_ROW, "channel"]), JSON, max_size=10), min_size=1, max_size=3),
)
#: Questions that reach every route of the agent, in three languages, and arbitrary text.
QUESTIONS = st.sampled_from([
    "What was Kestrel's revenue in Q3 2024?", "Why did Kestrel's Q3 revenue fall, and by how much?", "gearbox warranty",
    "红隼机器人2024年第三季度的营收是多少？", "ケストレルの前年度の売上高はいくらですか", "How much EBITDA did Kestrel make last quarter?",
]) | st.text(min_size=1, max_size=40)


def as_csv(rows: list[dict]) -> str:
    """``rows`` as CSV text with a header line (a cell: the value as Python writes it)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(dict.fromkeys(str(k) for row in rows for k in row)))
    writer.writeheader()
    writer.writerows({str(k): v for k, v in row.items()} for row in rows)
    return out.getvalue()


def aimed(operation, targets: dict) -> st.SearchStrategy:
    """Cases of both generation modes, as schemathesis makes them, or aimed at things that
    exist (the known path parameters, the seeded library in bodies, filter-shaped filters and
    Dify conditions), or with nasty path parameters (NUL, long, dots)."""
    cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))
    nasty_path = st.sampled_from([n for n in NASTY if not any("\ud800" <= ch <= "\udfff" for ch in n)])

    def aim(drawn):
        (case, how, filters, condition, nasty), (rows, question) = drawn
        if how == "as generated":
            return case
        if how == "nasty":
            for name in list(case.path_parameters or {}):
                case.path_parameters[name] = nasty
            return case
        for name in list(case.path_parameters or {}):
            if name in targets:
                value = targets[name]
                if name == "name" and operation.method.upper() == "DELETE" and operation.path == "/v1/libraries/{name}":
                    value = "scratch"  # deleting the seeded library would leave the rest nothing to aim at
                case.path_parameters[name] = value
        if isinstance(case.body, dict):
            if operation.path == "/v1/retrieve":
                case.body = {**case.body, "libraries": ["kb"], "filters": filters}
            elif operation.path == "/retrieval":
                case.body = {**case.body, "knowledge_id": "kb", "metadata_condition": condition}
            elif operation.path == "/v1/facts" and "csv" in case.body:  # the same rows as CSV text
                case.body = {key: value for key, value in case.body.items() if key != "facts"} | {"library": "kb", "csv": as_csv(rows)}
            elif operation.path == "/v1/facts":
                case.body = {**case.body, "library": "kb", "facts": rows}
            elif operation.path == "/v1/metric":
                case.body = {**case.body, "libraries": ["kb"]}
            elif operation.path == "/v1/answer":
                case.body = {**case.body, "libraries": ["kb"], "question": question}
        elif operation.path == "/v1/metric" and isinstance(case.query, dict):
            case.query = {**case.query, "library": ["kb"]}
        return case

    how = st.sampled_from(["as generated", "as generated", "aimed", "aimed", "nasty"])
    return st.tuples(st.tuples(cases, how, FILTERS, DIFY_CONDITIONS, nasty_path), st.tuples(FACT_ROWS, QUESTIONS)).map(aim)


def fuzzer(operation, targets: dict, headers: dict, statuses: dict[int, int]):
    """One operation's hypothesis test: every case must not be answered 5xx."""

    @given(case=aimed(operation, targets))
    @settings(
        max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=False,
        suppress_health_check=list(HealthCheck), print_blob=True,
    )
    def fuzz(case) -> None:
        response = case.call_and_validate(headers=headers, checks=[not_a_server_error, response_schema_conformance])
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    return fuzz


def test_no_input_is_a_server_error(service: Service) -> None:
    data = seed(service)
    tenant_headers, admin_headers = data["headers"], {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", Authorized(service.client.app, tenant_headers, admin_headers))
    # Tenant operations first, their DELETEs after the rest, the admin's last: schemathesis
    # learns names from responses and may well delete the seeded library or rotate a key.
    operations = sorted(
        (result.ok() for result in schema.get_all_operations()),
        key=lambda op: (op.path.startswith("/v1/admin"), op.method.upper() == "DELETE"),
    )
    assert len(operations) >= 15
    exercised: dict[str, dict[int, int]] = {}

    for operation in operations:
        headers = admin_headers if operation.path.startswith("/v1/admin") else tenant_headers
        fuzzer(operation, data["targets"], headers, exercised.setdefault(operation.label, {}))()

    assert all(exercised.values())
    successes = {label for label, s in exercised.items() if any(200 <= status < 300 for status in s)}
    assert len(successes) >= len(operations) - 3, exercised  # the aimed cases got past the 404s into the handlers
    # an upload the API accepted (202) is stored by its job: only a later upload may supersede it
    wait_jobs_idle(service, tenant_headers)
    for job in service.client.get("/v1/jobs?limit=500", headers=tenant_headers).json():
        assert job["state"] == "succeeded" or job["error"].startswith("superseded"), job


# -- what schemathesis does not generate: JSON that only Python's parser accepts, NUL ---------
def strict_json(text: str):
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


#: (method, path, raw JSON body or None, admin?, expected status). Lone surrogates arrive as
#: ``\ud800`` escapes and NaN/Infinity as literals (Python's json.dumps writes both); NUL can
#: be neither stored in nor looked up by PostgreSQL. Found by this suite: each was a 500 (the
#: 422 echoing the input could not be encoded) or, on PostgreSQL, a 503 leaking the SQL.
HOSTILE = [
    ("POST", "/v1/retrieve", '{"query": "a \\ud800 b"}', False, 422),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "top_k": NaN}', False, 422),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "top_k": Infinity}', False, 422),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "colour": -Infinity}', False, 422),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "filters": {"year": {"gt": NaN}}}', False, 400),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "filters": {"team": "\\ud800", "\\u0000": 1}}', False, 200),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "libraries": ["kb\\u0000"]}', False, 404),
    ("POST", "/v1/retrieve", '{"query": "gearbox", "libraries": ["\\ud800"]}', False, 404),
    ("POST", "/retrieval", '{"knowledge_id": "\\ud800", "query": "gearbox"}', False, 400),
    ("GET", "/v1/libraries/%ED%A0%80", None, False, 404),
    ("GET", "/v1/jobs/%ED%A0%80", None, False, 404),
    ("DELETE", "/v1/libraries/kb/documents/%ED%A0%80", None, False, 404),
    ("POST", "/v1/libraries", '{"name": "x", "description": "\\ud800"}', False, 422),
    ("POST", "/v1/libraries", '{"name": "x", "description": "a\\u0000b"}', False, (201, 422)),  # SQLite stores it
    ("POST", "/v1/libraries/kb/documents", '{"doc_id": "d", "text": "x", "metadata": {"v": NaN}}', False, 422),
    ("POST", "/v1/libraries/kb/documents", '{"doc_id": "d", "text": "x", "metadata": {"v": "\\ud800"}}', False, 422),
    ("POST", "/v1/libraries/kb/documents", '{"doc_id": "d", "text": "x", "metadata": {"v\\u0000": 1}}', False, 422),
    ("POST", "/v1/libraries/kb/documents", '{"doc_id": "d", "text": "x", "title": "a\\u0000b"}', False, 422),
    ("POST", "/v1/libraries/kb/documents/batch", '{"documents": [{"doc_id": "d", "text": "x\\udc00"}]}', False, 422),
    ("DELETE", "/v1/libraries/kb/documents/d%00", None, False, 404),
    ("GET", "/v1/libraries/kb%00", None, False, 404),
    ("DELETE", "/v1/libraries/kb%00", None, False, 404),
    ("GET", "/v1/jobs/j%00", None, False, 404),
    ("GET", "/v1/jobs?library=kb%00", None, False, 404),
    ("POST", "/retrieval", '{"knowledge_id": "kb\\u0000", "query": "gearbox"}', False, 400),
    ("POST", "/retrieval", '{"knowledge_id": "kb", "query": "\\ud800"}', False, (200, 422)),
    ("POST", "/retrieval", '{"knowledge_id": "kb", "query": "x", "retrieval_setting": {"top_k": NaN}}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb", "facts": [{"metric": "revenue", "value": NaN}]}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb", "facts": [{"metric": "\\ud800", "\\udc00": 1}]}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb", "facts": [{"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": 1,'
     ' "source_doc_id": "a\\u0000b", "source_locator": "p", "valid_as_of": "2024-10-30"}]}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb\\u0000", "facts": [{}]}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb", "csv": "metric,\\ud800\\nrevenue,1"}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb", "csv": "metric,entity,period,value,source_doc_id,source_locator,valid_as_of\\n'
     'revenue,Kestrel,2024Q3,1,a\\u0000b,p,2024-10-30"}', False, 422),
    ("POST", "/v1/facts", '{"library": "kb", "csv": "\\u0000"}', False, 422),
    ("POST", "/v1/metric", '{"metric": "revenue\\u0000", "entity": "Kestrel", "period": "2024Q3"}', False, 200),
    ("POST", "/v1/metric", '{"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "libraries": ["kb\\u0000"]}', False, 404),
    ("GET", "/v1/metric?metric=revenue%00&entity=Kestrel&period=2024Q3", None, False, 200),
    ("GET", "/v1/metric?metric=revenue&entity=Kestrel&period=2024Q3&library=%ED%A0%80", None, False, (404, 422)),
    ("POST", "/v1/answer", '{"question": "revenue \\ud800 Q3 2024"}', False, (200, 422)),
    ("POST", "/v1/answer", '{"question": "Kestrel revenue\\u0000 Q3 2024"}', False, 400),
    ("POST", "/v1/answer", '{"question": "x", "top_k": NaN}', False, 422),
    ("POST", "/v1/answer", '{"question": "x", "history": [{"role": "user", "content": "\\ud800"}]}', False, (200, 422)),
    ("POST", "/v1/admin/tenants", '{"tenant_id": NaN}', True, 422),
    ("POST", "/v1/admin/tenants", '{"tenant_id": "t2", "name": "a\\u0000b"}', True, (201, 422)),
    ("POST", "/v1/admin/tenants/acme/keys", '{"label": "\\ud800"}', True, 422),
    ("GET", "/v1/admin/tenants/acme%00/keys", None, True, 404),
    ("POST", "/v1/admin/tenants/acme/keys/k%00/rotate", "{}", True, 404),
    ("DELETE", "/v1/admin/tenants/acme/keys/k%00", None, True, 404),
]


def test_hostile_inputs_are_4xx_in_strict_json(service: Service) -> None:
    data = seed(service)
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    failures = []
    for method, path, raw, is_admin, expected in HOSTILE:
        headers = {**(admin if is_admin else data["headers"]), "Content-Type": "application/json"}
        r = service.client.request(method, path, content=raw.encode() if raw is not None else None, headers=headers)
        allowed = expected if isinstance(expected, tuple) else (expected,)
        if r.status_code not in allowed:
            failures.append(f"{method} {path} {raw}: {r.status_code} (expected {expected}) {r.text[:200]}")
            continue
        body = strict_json(r.text)
        if r.status_code >= 400 and path == "/retrieval":
            assert set(body) == {"error_code", "error_msg"}, body
    assert not failures, "\n".join(failures)
