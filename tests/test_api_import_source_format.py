"""POST /api/v1/trajectories/ takes the source format as ``source_format``; the old ``format``
still works (DRF read it as its renderer switch and answered 404) (#23.7)."""

from __future__ import annotations

import json

import pytest

from tests.factories import CanonicalTrajectoryFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/trajectories/"


def _post(client, query: str, record):  # type: ignore[no-untyped-def]
    return client.post(URL + query, json.dumps(record), content_type="application/json")


@pytest.mark.parametrize("param", ["source_format", "format"])
def test_forced_format_imports_under_both_spellings(expert, client_for, param) -> None:  # type: ignore[no-untyped-def]
    record = CanonicalTrajectoryFactory()
    response = _post(client_for(expert), f"?{param}=openai&task_type=swe-bugfix", record)
    assert response.status_code == 201, response.content
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["source_format"] == "openai"


@pytest.mark.parametrize("param", ["source_format", "format"])
def test_unknown_format_is_a_400_naming_the_parameter(expert, client_for, param) -> None:  # type: ignore[no-untyped-def]
    response = _post(client_for(expert), f"?{param}=nonsense", CanonicalTrajectoryFactory())
    assert response.status_code == 400
    assert param in json.dumps(response.json())


def test_both_spellings_must_agree(expert, client_for) -> None:  # type: ignore[no-untyped-def]
    response = _post(
        client_for(expert), "?source_format=openai&format=anthropic", CanonicalTrajectoryFactory()
    )
    assert response.status_code == 400
    assert "source_format" in json.dumps(response.json())


def test_reads_keep_drf_format_switch(expert, client_for) -> None:  # type: ignore[no-untyped-def]
    assert client_for(expert).get(URL + "?format=json").status_code == 200
