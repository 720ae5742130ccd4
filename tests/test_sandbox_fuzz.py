"""Schemathesis fuzzing of the sandbox's seven operations over real HTTP: valid and invalid
requests must never get a 5xx, and every answer must match the OpenAPI document (status code and
body schema). Reads hit the shared sandbox; writes a fresh one of their own."""

from __future__ import annotations

import itertools

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

#: Examples per operation and generation mode: the whole module stays well under a minute.
MAX_EXAMPLES = 60
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]

READS = [("GET", "/v2/subscribers"), ("GET", "/v2/subscribers/{subscriberId}/subscriptions"),
         ("GET", "/v1/notifications")]  # fmt: skip
WRITES = [
    ("PATCH", "/v2/subscribers/{subscriberId}"),
    ("PATCH", "/v1/subscribers/{subscriberId}/credentials"),
    ("POST", "/v1/integrations"),
    ("DELETE", "/v1/integrations/{integrationId}"),
]
#: A seeded subscriber: half of the generated requests of a subscriber operation name it.
KNOWN = {"subscriberId": "user-000001"}
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]


def fuzz(sb, method: str, path: str, mode: GenerationMode) -> None:
    """Run ``MAX_EXAMPLES`` generated requests of one operation against ``sb``."""
    schema = schemathesis.openapi.from_url(f"{sb.url}/openapi.json")
    operation = schema[path][method]
    headers = {"Authorization": f"ApiKey {sb.api_key}"}
    keys = itertools.count()
    checks = CHECKS + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=_cases(operation, mode, headers))
    def run(case):
        if "idempotency-key" in (case.headers or {}):  # a fresh key: no replays of other bodies
            case.headers["idempotency-key"] = f"fuzz-{next(keys)}"
        case.call_and_validate(base_url=sb.url, headers=headers, checks=checks, timeout=10)

    run()


def _cases(operation, mode: GenerationMode, headers: dict[str, str]) -> st.SearchStrategy:
    generated = operation.as_strategy(generation_mode=mode, headers=headers)
    if "{subscriberId}" not in operation.path:
        return generated
    known = operation.as_strategy(generation_mode=mode, headers=headers, path_parameters=KNOWN)
    return st.one_of(generated, known)


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize(("method", "path"), READS)
def test_reads(sandbox, method, path, mode):
    fuzz(sandbox, method, path, mode)


#: DELETE has only a string path parameter and no body: there is no invalid request to generate.
WRITE_CASES = [
    pytest.param(method, path, mode, id=f"{method} {path}-{mode}")
    for (method, path), mode in itertools.product(WRITES, MODES)
    if not (method == "DELETE" and mode is GenerationMode.NEGATIVE)
]


@pytest.mark.parametrize(("method", "path", "mode"), WRITE_CASES)
def test_writes(fresh_sandbox, method, path, mode):
    fuzz(fresh_sandbox, method, path, mode)
