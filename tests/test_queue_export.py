"""A labelling project's export (#23): the expert who created a queue, and a safety lead, export
its labels; only its submitted reviews count, never a reviewer's open work nor another
project's labels on the same trajectories, and blind review holds for the lead too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from core.roles import ADMIN, EXPERT, SAFETY_LEAD
from review import services as review_services
from review.models import ReviewQueue
from tests.test_review_services import label_all, make_queue, make_trajectory

pytestmark = pytest.mark.django_db


def review(queue: ReviewQueue, reviewer: Any, value: int, *, submit: bool = True) -> int:
    """``reviewer`` takes the queue's next item, labels every step ``value`` and submits."""
    assignment = review_services.assignment_next(queue=queue, reviewer=reviewer)
    assert assignment is not None
    label_all(assignment.trajectory, reviewer, value)
    if submit:
        review_services.assignment_submit(assignment=assignment, reviewer=reviewer)
    return assignment.trajectory_id


@pytest.fixture
def projects(make_user) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Two projects over the same trajectories: pat's (blind, three reviews each) and dan's."""
    people = {
        name: make_user(name, *roles)
        for name, roles in {
            "pat": (EXPERT,),
            "dan": (EXPERT,),
            "ann": (EXPERT,),
            "bob": (EXPERT,),
            "carl": (EXPERT,),
            "eve": (EXPERT,),
            "sam": (SAFETY_LEAD,),
            "ada": (ADMIN,),
            "nobody": (),
        }.items()
    }
    first, second = make_trajectory(3, rollout="first"), make_trajectory(3, rollout="second")
    project = make_queue(slug="project", name="Pat's project", overlap=3, user=people["pat"])
    other = make_queue(slug="other", name="Dan's project", overlap=2, user=people["dan"])
    assert review(project, people["ann"], 1) == first.pk
    assert review(project, people["bob"], 1) == first.pk
    assert review(project, people["carl"], -1, submit=False) == first.pk  # still labelling
    assert review(other, people["eve"], 0) == first.pk  # another project, same trajectory
    label_all(second, people["ann"], -1)  # outside any queue
    return {"people": people, "first": first, "second": second, "project": project, "other": other}


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def export(client: Client, slug: str, kind: str = "prm") -> tuple[int, list[dict[str, Any]]]:
    response = client.get(f"/review/queues/{slug}/export.jsonl?kind={kind}")
    if response.status_code != 200:
        return response.status_code, []
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    return 200, [json.loads(line) for line in body.splitlines()]


def test_the_lead_exports_only_the_projects_submitted_reviews(projects) -> None:  # type: ignore[no-untyped-def]
    pat = client_for(projects["people"]["pat"])
    status, rows = export(pat, "project")
    assert status == 200
    assert [r["trajectory_id"] for r in rows] == [projects["first"].pk]
    # Not carl (his review is open), not eve (dan's project), not ann's queue-less labels.
    assert rows[0]["annotators"] == ["ann", "bob"]
    assert rows[0]["labels"] == [1, 1, 1]
    assert rows[0]["label_sources"] == ["majority"] * 3
    status, rows = export(pat, "project", "annotators")
    assert status == 200
    assert [(r["annotator"], r["labels"]) for r in rows] == [("ann", [1, 1, 1]), ("bob", [1, 1, 1])]
    # Dan's export of his own project holds eve's labels only.
    status, rows = export(client_for(projects["people"]["dan"]), "other", "annotators")
    assert status == 200
    assert [(r["annotator"], r["labels"]) for r in rows] == [("eve", [0, 0, 0])]


def test_a_reviewers_work_open_elsewhere_stays_out_until_submitted(projects) -> None:  # type: ignore[no-untyped-def]
    """Bob, submitted in pat's project, takes the same trajectory in dan's: his labels are the
    same rows, so they leave pat's export while that review is open and return once it is
    submitted (with the value he submitted there)."""
    people, pat = projects["people"], client_for(projects["people"]["pat"])
    assignment = review_services.assignment_next(queue=projects["other"], reviewer=people["bob"])
    assert assignment is not None and assignment.trajectory_id == projects["first"].pk
    step = projects["first"].steps.order_by("index")[0]
    review_services.step_label_set(step=step, reviewer=people["bob"], value=-1)
    assert export(pat, "project")[1][0]["annotators"] == ["ann"]
    review_services.assignment_submit(assignment=assignment, reviewer=people["bob"])
    row = export(pat, "project")[1][0]
    assert row["annotators"] == ["ann", "bob"]
    assert row["labels"][0] is None and row["label_sources"][0] == "tie"


def test_final_labels_count_from_the_lead_or_a_safety_lead_only(projects) -> None:  # type: ignore[no-untyped-def]
    people, pat = projects["people"], client_for(projects["people"]["pat"])
    steps = list(projects["first"].steps.order_by("index"))
    review_services.final_label_resolve(step=steps[0], behaviour="", value=-1, user=people["dan"])
    review_services.final_label_resolve(step=steps[1], behaviour="", value=0, user=people["sam"])
    review_services.final_label_resolve(step=steps[2], behaviour="", value=-1, user=people["pat"])
    row = export(pat, "project")[1][0]
    assert row["labels"] == [1, 0, -1]
    assert row["label_sources"] == ["majority", "final", "final"]


# Who gets what on each project's export: the permission matrix of one URL.
MATRIX = {
    # principal: (status on pat's project, status on dan's)
    "pat": (200, 403),
    "dan": (403, 200),
    "ann": (403, 403),  # reviewed in it; reviewing is not leading
    "carl": (403, 403),
    "sam": (200, 200),
    "ada": (200, 200),
    "nobody": (403, 403),
}


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_each_role_gets_exactly_the_projects_it_leads(projects, name: str) -> None:  # type: ignore[no-untyped-def]
    client = client_for(projects["people"][name])
    on_project, on_other = MATRIX[name]
    assert export(client, "project")[0] == on_project
    assert export(client, "other", "annotators")[0] == on_other
    # A queue that does not exist: a safety lead is told so, anyone else learns nothing.
    missing = client.get("/review/queues/no-such/export.jsonl").status_code
    assert missing == (404 if name in ("sam", "ada") else 403)


def test_anonymous_is_sent_to_sign_in(projects) -> None:  # type: ignore[no-untyped-def]
    response = Client().get("/review/queues/project/export.jsonl")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_unknown_kind_is_a_400_naming_the_kinds(projects) -> None:  # type: ignore[no-untyped-def]
    response = client_for(projects["people"]["pat"]).get(
        "/review/queues/project/export.jsonl?kind=votes"
    )
    assert response.status_code == 400
    assert b"prm, annotators" in response.content


@pytest.mark.parametrize("name", ["pat", "sam"])
def test_blind_review_holds_for_a_lead_who_reviews_in_the_project(projects, name: str) -> None:  # type: ignore[no-untyped-def]
    lead = projects["people"][name]
    client = client_for(lead)
    assignment = review_services.assignment_next(queue=projects["project"], reviewer=lead)
    assert assignment is not None and assignment.trajectory_id == projects["second"].pk
    response = client.get("/review/queues/project/export.jsonl")
    assert response.status_code == 403
    assert b"still reviewing" in response.content
    page = client.get("/review/queues/").content.decode()
    assert "once your reviews in it are submitted" in page
    label_all(assignment.trajectory, lead, 0)
    review_services.assignment_submit(assignment=assignment, reviewer=lead)
    status, rows = export(client, "project")
    assert status == 200
    assert [r["trajectory_id"] for r in rows] == [projects["first"].pk, projects["second"].pk]
    assert rows[1]["annotators"] == [name] and rows[1]["labels"] == [0, 0, 0]


def test_the_queue_page_offers_the_export_on_led_projects_only(projects) -> None:  # type: ignore[no-untyped-def]
    def links(name: str) -> list[str]:
        page = client_for(projects["people"][name]).get("/review/queues/").content.decode()
        return [slug for slug in ("project", "other") if f"/review/queues/{slug}/export" in page]

    assert links("pat") == ["project"]
    assert links("dan") == ["other"]
    assert links("ann") == []
    assert links("sam") == ["project", "other"]
