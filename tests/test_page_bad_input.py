"""The pages' 500s that probing found (issue #22, item 13), each now a 400 naming the field or a
404, on PostgreSQL: malformed ids in page paths, NaN and infinities in the reward range of the
trajectory list, NUL in a form post or a query string. The campaign of test_form_campaign.py
sends such values everywhere and checks for no 5xx; this pins what each answer says."""

from __future__ import annotations

import pytest
from django.test import Client

from core.roles import ADMIN, EXPERT, SAFETY_LEAD

pytestmark = pytest.mark.django_db

MALFORMED_IDS = ["²", "9" * 5000, "99999999999999999999", "abc", "١٢٣"]


@pytest.fixture
def lead(make_user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(make_user("lee", EXPERT, SAFETY_LEAD, ADMIN, staff=True))
    return client


@pytest.mark.parametrize("bad", MALFORMED_IDS)
@pytest.mark.parametrize(
    "path",
    [
        "/review/trajectories/{}/",
        "/review/exports/{}/",
        "/safety/flags/{}/",
        "/safety/scans/{}/",
        "/rewards/evaluation-runs/{}/",
        "/rewards/learned/{}/",
    ],
)
def test_a_malformed_id_in_a_page_path_is_404(lead: Client, path: str, bad: str) -> None:
    assert lead.get(path.format(bad)).status_code == 404


@pytest.mark.parametrize("bad", MALFORMED_IDS)
def test_a_malformed_id_in_a_form_post_path_is_404(lead: Client, bad: str) -> None:
    response = lead.post(f"/safety/scans/{bad}/resume/")
    assert response.status_code == 404
    response = lead.post(f"/review/flags/{bad}/review/", {"status": "confirmed"})
    assert response.status_code == 404


@pytest.mark.parametrize("field", ["reward_min", "reward_max"])
@pytest.mark.parametrize("bad", ["NaN", "nan", "1e400", "-1e400", "Infinity", "-inf", "x"])
def test_a_reward_bound_that_is_not_a_finite_number_is_400_naming_it(
    lead: Client, field: str, bad: str
) -> None:
    response = lead.get("/review/trajectories/", {field: bad})
    assert response.status_code == 400
    assert response.context["errors"] == {field: ["expected a finite number"]}
    assert field in response.content.decode()
    # A finite bound is an ordinary filter.
    assert lead.get("/review/trajectories/", {field: "0.5"}).status_code == 200


def test_nul_in_a_query_string_is_400_naming_the_parameter(lead: Client) -> None:
    response = lead.get("/review/trajectories/", {"q": "rm\x00-rf", "run": "ok"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "q: Null characters are not allowed." in body and "run" not in body


def test_nul_in_a_form_post_is_400_naming_the_field_and_stores_nothing(lead: Client) -> None:
    from review.models import ReviewQueue

    response = lead.post("/review/queues/new/", {"name": "Team\x00A", "overlap": "1"})
    assert response.status_code == 400
    assert response.content.decode() == "name: Null characters are not allowed."
    assert not ReviewQueue.objects.exists()


def test_nul_in_an_api_query_string_is_400_in_the_apis_shape(admin_client: Client) -> None:
    response = admin_client.get("/api/v1/trajectories/", {"task_type": "a\x00b"})
    assert response.status_code == 400
    assert response.json() == {"errors": {"task_type": ["Null characters are not allowed."]}}
