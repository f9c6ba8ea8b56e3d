"""Issue #25, second round: the lists that still cost their depth or the hub page by keyset or
stop at a bounded depth (disagreements, the admin's deep pages), the two-filter list reads its
rarer side, a rescan fans out over workers, and the faster export writes the bytes it wrote."""

from __future__ import annotations

import math
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client

from review import services as review_services
from review import stats as review_stats
from tests.test_review_pages import logged_in
from tests.test_review_services import make_queue, make_trajectory
from tests.test_scale_queries import _reference_disagreements

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row comparisons and plans are PostgreSQL's"
)


def _disagreeing_hub(make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    """Three trajectories reviewed in a queue (the third review not submitted, so some splits
    are not splits within the queue), one outside it, one disagreement resolved."""
    users = [make_user(name, "expert") for name in ("ann", "bob", "cy")]
    queue = make_queue(slug="k3", overlap=3)
    other = make_trajectory(3, rollout="other", task_type="swe-feature")
    for _ in range(3):
        make_trajectory(4, rollout=f"d{_}")
    for _ in range(3):
        for r, user in enumerate(users):
            assignment = review_services.assignment_next(queue=queue, reviewer=user)
            assert assignment is not None
            for step in assignment.trajectory.steps.order_by("index"):
                value = (step.index + r * (step.trajectory_id % 2)) % 3 - 1
                review_services.step_label_set(step=step, reviewer=user, value=value)
            if r < 2:
                review_services.assignment_submit(assignment=assignment, reviewer=user)
    for step in other.steps.all():
        review_services.step_label_set(step=step, reviewer=users[0], value=1)
        review_services.step_label_set(step=step, reviewer=users[1], value=-1)
    first = review_stats.LabelTally.objects.filter(split=True).order_by("id").first()
    assert first is not None
    review_services.final_label_resolve(step=first.step, behaviour="", value=1, user=safety_lead)


def _walk(client: Client, params: dict[str, str]) -> tuple[list[tuple], int]:
    """Every row the disagreements page shows, following its next-page links from the first;
    and how many pages it took."""
    url = "/review/disagreements/?" + urlencode(params)
    seen: list[tuple] = []
    pages = 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content[:300]
        pages += 1
        rows = response.context["rows"]
        assert len(rows) <= review_stats.DISAGREEMENTS_PAGE
        seen += [
            (r.final is not None, r.step.trajectory_id, r.step.index, r.behaviour, r.votes)
            for r in rows
        ]
        cursor = response.context["next_cursor"]
        if cursor is None:
            assert b'id="next-page"' not in response.content
            break
        assert len(rows) == review_stats.DISAGREEMENTS_PAGE  # a page is full before the next
        link = f"cursor={cursor}".encode()
        assert link in response.content
        url = "/review/disagreements/?" + urlencode({**params, "cursor": cursor})
    return seen, pages


@postgresql_only
def test_disagreements_page_by_cursor_through_every_row(
    client: Client, make_user, safety_lead, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    _disagreeing_hub(make_user, safety_lead)
    monkeypatch.setattr(review_stats, "DISAGREEMENTS_PAGE", 2)
    logged_in(client, safety_lead)
    for params, reference in (
        ({}, _reference_disagreements()),
        ({"queue": "k3"}, _reference_disagreements("k3")),
        ({"task_type": "swe-feature"}, _reference_disagreements("", "swe-feature")),
    ):
        seen, pages = _walk(client, params)
        assert seen == reference and reference, params
        assert pages == max(math.ceil(len(reference) / 2), 1), params


@postgresql_only
def test_a_disagreements_page_costs_the_same_queries_at_any_depth(
    client: Client, make_user, safety_lead, monkeypatch, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    _disagreeing_hub(make_user, safety_lead)
    monkeypatch.setattr(review_stats, "DISAGREEMENTS_PAGE", 2)
    logged_in(client, safety_lead)
    first = client.get("/review/disagreements/")
    cursor = first.context["next_cursor"]
    deep = client.get("/review/disagreements/", {"cursor": cursor})
    deeper = client.get("/review/disagreements/", {"cursor": deep.context["next_cursor"]})
    assert deeper.status_code == 200 and deeper.context["rows"]
    with django_assert_max_num_queries(12):
        client.get("/review/disagreements/", {"cursor": deep.context["next_cursor"]})


def test_a_bad_disagreements_cursor_is_a_400_naming_it(client: Client, safety_lead) -> None:  # type: ignore[no-untyped-def]
    logged_in(client, safety_lead)
    for bad in ("x", "2-1-1-", "0-1-1-not a slug", "0--1-1-", "0-1", "1-99999999999999999999-0-",
                "0-1-1-" + "a" * 101, "0-1-2147483648-"):  # fmt: skip
        response = client.get("/review/disagreements/", {"cursor": bad})
        assert response.status_code == 400, bad
        assert b"cursor" in response.content
    assert client.get("/review/disagreements/", {"cursor": "0-1-0-"}).status_code == 200
