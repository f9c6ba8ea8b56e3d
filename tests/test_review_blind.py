"""Blind review is blind (#23.3): a submitted review is final until reopened (attributed,
audited); agreement, disagreements and exports count submitted values only. PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from annotations import exports
from audit.models import AuditEvent
from review import selectors as review_selectors
from review import services as review_services
from review import stats as review_stats
from review.models import AssignmentStatus
from tests.test_review_services import make_queue, make_trajectory

pytestmark = pytest.mark.django_db


def _label(trajectory: Any, user: Any, values: list[int]) -> None:
    for step, value in zip(trajectory.steps.order_by("index"), values, strict=True):
        review_services.step_label_set(step=step, reviewer=user, value=value)


def test_submitted_review_is_final_until_reopened(make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    ann = make_user("ann", "expert")
    trajectory = make_trajectory(2)
    queue = make_queue(overlap=2, blind=True)
    assignment = review_services.assignment_next(queue=queue, reviewer=ann)
    assert assignment is not None
    _label(trajectory, ann, [1, 1])
    review_services.assignment_submit(assignment=assignment, reviewer=ann)
    step = trajectory.steps.get(index=0)
    with pytest.raises(ValidationError) as exc:
        review_services.step_label_set(step=step, reviewer=ann, value=-1)
    assert "reopen" in str(exc.value)
    with pytest.raises(ValidationError):
        review_services.step_label_set(step=step, reviewer=ann, comment="changed my mind")

    review_services.assignment_reopen(assignment=assignment, user=safety_lead, reason="typo")
    event = AuditEvent.objects.get(action="review.reopen")
    assert event.actor_user_id == safety_lead.pk  # attributed to who reopened it
    assert event.context["reason"] == "typo" and event.before["status"] == "submitted"
    review_services.step_label_set(step=step, reviewer=ann, value=-1)
    assert review_selectors.counted_labels().filter(reviewer=ann).count() == 0  # reopened
    review_services.assignment_submit(assignment=assignment, reviewer=ann)
    assert sorted(
        review_selectors.counted_labels().filter(reviewer=ann).values_list("value", flat=True)
    ) == [-1, 1]
    with pytest.raises(ValidationError):
        review_services.assignment_reopen(
            assignment=make_in_progress(queue, make_user("cy", "expert")), user=safety_lead
        )


def make_in_progress(queue: Any, user: Any) -> Any:
    assignment = review_services.assignment_next(queue=queue, reviewer=user)
    assert assignment is not None and assignment.status == AssignmentStatus.IN_PROGRESS
    return assignment


def test_agreement_and_exports_count_submitted_values_only(
    client: Client, make_user, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(3, rollout="blind")
    queue = make_queue(overlap=2, blind=True)
    done = review_services.assignment_next(queue=queue, reviewer=ann)
    make_in_progress(queue, bob)
    _label(trajectory, ann, [1, 1, -1])
    _label(trajectory, bob, [-1, -1, 1])  # bob has not submitted: not a rating yet
    review_services.assignment_submit(assignment=done, reviewer=ann)  # type: ignore[arg-type]

    ratings = review_stats.label_ratings(task_type="swe-bugfix")
    assert {u for votes in ratings[""].values() for u in votes} == {"ann"}
    assert review_stats.disagreement_page(queue_slug="", task_type="").rows == []

    client.force_login(safety_lead)
    body = b"".join(client.get("/review/export/annotators.jsonl").streaming_content)
    rows = [json.loads(line) for line in body.splitlines()]
    assert [(r["annotator"], r["labels"]) for r in rows] == [("ann", [1, 1, -1])]
    prm = [
        json.loads(line)
        for line in b"".join(client.get("/review/export/prm.jsonl").streaming_content).splitlines()
    ]
    assert [r["labels"] for r in prm] == [[1, 1, -1]]
    # Without the review scope every label counts (the plain export API of annotations).
    assert len(list(exports.annotator_rows(trajectory.__class__.objects.all()))) == 2


def test_reopen_view_is_the_reviewers_or_a_leads(client: Client, make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(1)
    queue = make_queue(overlap=2, blind=True)
    assignment = review_services.assignment_next(queue=queue, reviewer=ann)
    _label(trajectory, ann, [1])
    review_services.assignment_submit(assignment=assignment, reviewer=ann)  # type: ignore[arg-type]
    url = f"/review/assignments/{assignment.pk}/reopen/"  # type: ignore[union-attr]
    client.force_login(bob)
    assert client.post(url).status_code == 404  # not bob's review
    client.force_login(ann)
    response = client.post(url, {"reason": "mislabelled step 0"})
    assert response.status_code == 302
    assignment.refresh_from_db()  # type: ignore[union-attr]
    assert assignment.status == AssignmentStatus.IN_PROGRESS  # type: ignore[union-attr]
    assert AuditEvent.objects.get(action="review.reopen").actor_user_id == ann.pk


def test_hub_wide_pages_and_exports_hide_what_a_lead_is_still_reviewing(
    client: Client, make_user, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    """A safety lead with a review still open sees none of that trajectory's votes on the
    hub-wide disagreements page or in the hub-wide exports, and cannot settle it; once the
    review is submitted, it is all there (reviews of one trajectory share its label rows)."""
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(2, rollout="blind-hub")
    queue = make_queue(overlap=3, blind=True)
    for reviewer, values in ((ann, [1, 1]), (bob, [-1, -1])):
        assignment = review_services.assignment_next(queue=queue, reviewer=reviewer)
        assert assignment is not None
        _label(trajectory, reviewer, values)
        review_services.assignment_submit(assignment=assignment, reviewer=reviewer)
    mine = make_in_progress(queue, safety_lead)
    client.force_login(safety_lead)

    page = client.get("/review/disagreements/").content.decode()
    assert "blind-note" in page and "rv-vote" not in page
    for name in ("export_prm", "export_annotators"):
        body = b"".join(client.get(f"/review/export/{name.split('_')[1]}.jsonl").streaming_content)
        assert b"ann" not in body, name
    step = trajectory.steps.get(index=0)
    refused = client.post("/review/disagreements/", {"step": step.pk, "behaviour": "", "value": 1})
    assert refused.status_code == 403

    _label(trajectory, safety_lead, [1, -1])
    review_services.assignment_submit(assignment=mine, reviewer=safety_lead)
    page = client.get("/review/disagreements/").content.decode()
    assert "blind-note" not in page and "ann" in page
    body = b"".join(client.get("/review/export/annotators.jsonl").streaming_content)
    assert b'"ann"' in body
