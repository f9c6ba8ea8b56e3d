"""schemathesis against our own OpenAPI schema, in process: every operation, every role
(anonymous, each person's role, an API key of each scope), valid and invalid input. No response
may be a 5xx, and every status code, content type, header and body must be the documented one.

A few examples per operation keep this in the default suite; `make schemathesis` runs the large
campaign over HTTP (scripts/schemathesis_campaign.py).
"""

from __future__ import annotations

import os
import secrets
import traceback
from typing import Any

import pytest
import schemathesis
from django.test import override_settings
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.api_fuzz import (
    CHECKS,
    ROLES,
    Credentials,
    credentials_for,
    in_process_requests,
    known_path_parameters,
    operation_order,
    seed_api_data,
)

EXAMPLES = int(os.environ.get("RH_SCHEMATHESIS_EXAMPLES", "4"))


@pytest.fixture(scope="module")
def api_schema() -> Any:
    """The schema as served at /api/schema/ (so the served document is what is checked), by
    the served WSGI application, which needs a key of its own outside DEBUG."""
    with override_settings(SECRET_KEY=secrets.token_urlsafe(50)):
        from rewardhub.wsgi import application
    with in_process_requests():
        return schemathesis.openapi.from_wsgi("/api/schema/", application)


def _operations(api_schema: Any) -> list[Any]:
    results = list(api_schema.get_all_operations())
    operations = [r.ok() for r in results]
    return sorted(operations, key=lambda op: (operation_order(op.method), op.path, op.method))


def _fuzz(operation: Any, creds: Credentials, known: dict[str, str]) -> None:
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    strategies = [operation.as_strategy(generation_mode=mode) for mode in modes]
    if (params := known_path_parameters(operation.path, known)) is not None:
        # Half the cases name seeded objects, so handlers run instead of answering 404.
        strategies += [
            operation.as_strategy(generation_mode=mode, path_parameters=params) for mode in modes
        ]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=st.one_of(strategies))
    def run(case: Any) -> None:
        if creds.cookies:
            # A browser session sends no bearer header (an invalid one would win: 401).
            case.headers.pop("Authorization", None)
        response = case.call(headers=creds.headers, cookies=creds.cookies)
        case.validate_response(response, checks=CHECKS, headers=creds.headers)

    run()


def test_schema_lists_every_api_operation(api_schema: Any) -> None:
    labels = {op.label for op in _operations(api_schema)}
    assert len(labels) >= 35
    for label in (
        "POST /api/v1/score/",
        "POST /api/v1/score/batch/",
        "POST /api/v1/openrlhf/{reward_model}/",
        "POST /api/v1/analyze/",
        "POST /api/v1/trajectories/",
        "GET /api/v1/reward-models/{slug}/versions/",
    ):
        assert label in labels


@pytest.mark.parametrize("role", ROLES)
def test_every_operation_conforms_to_the_schema(
    role: str, api_schema: Any, db: None, recorder: Any
) -> None:
    known = seed_api_data()
    creds = credentials_for(role)
    failures: dict[str, str] = {}
    with in_process_requests():
        for operation in _operations(api_schema):
            try:
                _fuzz(operation, creds, known)
            except (Exception, BaseExceptionGroup) as exc:  # try all; report every failure
                failures[operation.label] = "".join(traceback.format_exception_only(exc))[-3000:]
    assert not failures, f"{role}: {len(failures)} operations failed\n\n" + "\n\n".join(
        f"== {label}\n{text}" for label, text in failures.items()
    )
