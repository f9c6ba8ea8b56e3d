"""Labels (audited), queue assignment with locks and overlap, submission, blind review."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotations.models import LabelEvent, StepLabel, Trajectory
from annotations.services import trajectory_import
from review import selectors as review_selectors
from review import services as review_services
from review.models import Assignment, AssignmentStatus, ReviewQueue

pytestmark = pytest.mark.django_db


def canonical(
    n_steps: int = 3,
    *,
    rollout: str = "rollout",
    task_type: str = "swe-bugfix",
    command: str = "pytest -q",
    reasoning: str = "Look at the failing test.",
    output: str = "1 failed, 3 passed",
    text: str = "",
    resolved: bool = True,
) -> dict[str, Any]:
    """A C1 trajectory with ``n_steps`` bash steps, each answered by a tool message."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix the bug ({rollout})."},
    ]
    for i in range(n_steps):
        call = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "reasoning_content": f"{reasoning} ({i})",
                "content": text,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"{command} # {i}"}),
                        },
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call, "content": f"{output} ({i})"})
    return {
        "id": rollout,
        "task_type": task_type,
        "messages": messages,
        "outcome": {"resolved": resolved},
        "metadata": {"workspace": "/testbed"},
    }


def make_trajectory(n_steps: int = 3, **kwargs: Any) -> Trajectory:
    result = trajectory_import(record=canonical(n_steps, **kwargs), fmt="openai")
    assert result.trajectory is not None, result.errors
    return result.trajectory


def make_queue(**kwargs: Any) -> ReviewQueue:
    defaults: dict[str, Any] = {
        "slug": "q",
        "name": "Queue",
        "filters": {"task_type": "swe-bugfix"},
    }
    return review_services.queue_create(**{**defaults, **kwargs})


def label_all(trajectory: Trajectory, user: Any, value: int = 1) -> None:
    for step in trajectory.steps.all():
        review_services.step_label_set(step=step, reviewer=user, value=value)


def test_label_changes_are_attributed_and_audited(expert) -> None:  # type: ignore[no-untyped-def]
    step = make_trajectory(1).steps.get()
    review_services.step_label_set(step=step, reviewer=expert, value=1)
    review_services.step_label_set(step=step, reviewer=expert, comment="ran the tests first")
    review_services.step_label_set(step=step, reviewer=expert, value=1)  # no change: no event
    review_services.step_label_set(step=step, reviewer=expert, value=-1)
    label = StepLabel.objects.get(step=step, reviewer=expert, behaviour="")
    assert (label.value, label.comment) == (-1, "ran the tests first")
    events = list(LabelEvent.objects.filter(step=step).order_by("id"))
    assert [(e.old_value, e.new_value) for e in events] == [(None, 1), (1, 1), (1, -1)]
    assert events[1].new_comment == "ran the tests first"
    assert all(e.reviewer_id == expert.pk and e.created_at for e in events)
    review_services.step_label_set(step=step, reviewer=expert, value=None, comment="")
    assert not StepLabel.objects.filter(step=step).exists()
    assert LabelEvent.objects.filter(step=step).count() == 4


def test_label_validation(expert) -> None:  # type: ignore[no-untyped-def]
    step = make_trajectory(1).steps.get()
    with pytest.raises(ValidationError):
        review_services.step_label_set(step=step, reviewer=expert, value=2)
    with pytest.raises(ValidationError):
        review_services.step_label_set(
            step=step, reviewer=expert, behaviour="nope", value=1, allowed_behaviours=frozenset()
        )
    review_services.step_label_set(
        step=step,
        reviewer=expert,
        behaviour="ran-tests",
        value=1,
        allowed_behaviours=frozenset({"ran-tests"}),
    )
    assert StepLabel.objects.get(behaviour="ran-tests").value == 1


def test_queue_locks_items_to_one_reviewer(make_user) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    first, second = make_trajectory(rollout="r1"), make_trajectory(rollout="r2")
    make_trajectory(rollout="other", task_type="refactor")  # outside the queue's filter
    queue = make_queue(overlap=1)
    a = review_services.assignment_next(queue=queue, reviewer=ann)
    b = review_services.assignment_next(queue=queue, reviewer=bob)
    assert a is not None and b is not None
    assert {a.trajectory_id, b.trajectory_id} == {first.pk, second.pk}
    # Pulling again returns the same open item, not a new one.
    assert review_services.assignment_next(queue=queue, reviewer=ann).pk == a.pk  # type: ignore[union-attr]
    carl = make_user("carl", "expert")
    assert review_services.assignment_next(queue=queue, reviewer=carl) is None


def test_expired_lock_frees_the_item(make_user) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    make_trajectory(rollout="r1")
    queue = make_queue(overlap=1)
    a = review_services.assignment_next(queue=queue, reviewer=ann)
    assert review_services.assignment_next(queue=queue, reviewer=bob) is None
    Assignment.objects.filter(pk=a.pk).update(locked_until=timezone.now() - timedelta(seconds=1))  # type: ignore[union-attr]
    b = review_services.assignment_next(queue=queue, reviewer=bob)
    assert b is not None and b.trajectory_id == a.trajectory_id  # type: ignore[union-attr]


def test_overlap_hands_each_item_to_k_distinct_reviewers(make_user) -> None:  # type: ignore[no-untyped-def]
    users = [make_user(name, "expert") for name in ("ann", "bob", "cy")]
    trajectory = make_trajectory(2, rollout="r1")
    queue = make_queue(overlap=2)
    got = []
    for user in users:
        assignment = review_services.assignment_next(queue=queue, reviewer=user)
        got.append(assignment)
        if assignment is not None:
            label_all(trajectory, user)
            review_services.assignment_submit(assignment=assignment, reviewer=user)
    assert [g.trajectory_id if g else None for g in got] == [trajectory.pk, trajectory.pk, None]
    # A reviewer who submitted never receives the same trajectory again.
    assert review_services.assignment_next(queue=queue, reviewer=users[0]) is None
    row = next(r for r in review_selectors.queue_rows(user=users[0]) if r.queue == queue)
    assert (row.total, row.done, row.mine_submitted) == (1, 1, 1)


def test_submit_requires_every_step_labelled(expert) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(3)
    queue = make_queue()
    assignment = review_services.assignment_next(queue=queue, reviewer=expert)
    assert assignment is not None
    first = trajectory.steps.order_by("index").first()
    review_services.step_label_set(step=first, reviewer=expert, value=0)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="missing: 1, 2"):
        review_services.assignment_submit(assignment=assignment, reviewer=expert)
    label_all(trajectory, expert)
    review_services.assignment_submit(assignment=assignment, reviewer=expert)
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED and assignment.submitted_at


def test_blind_review_hides_others_until_submit(make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(1)
    queue = make_queue(overlap=2, blind=True)
    for user in (ann, bob):
        review_services.assignment_next(queue=queue, reviewer=user)
    label_all(trajectory, ann, 1)
    label_all(trajectory, bob, -1)

    def others(user: Any) -> list[str]:
        page = review_selectors.review_page(trajectory_id=trajectory.pk, user=user)
        return [o.reviewer.username for sv in page.steps for o in sv.others]

    assert others(bob) == []
    # Blind holds for leads too: votes of reviews still open are nobody else's business.
    assert others(safety_lead) == []
    assignment = Assignment.objects.get(reviewer=bob)
    review_services.assignment_submit(assignment=assignment, reviewer=bob)
    assert others(bob) == ["ann"]
    assert others(ann) == []
    assert others(safety_lead) == ["bob"]  # submitted votes only


def test_open_queue_shows_labels(make_user) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(1)
    queue = make_queue(overlap=2, blind=False)
    review_services.assignment_next(queue=queue, reviewer=bob)
    label_all(trajectory, ann, 1)
    page = review_selectors.review_page(trajectory_id=trajectory.pk, user=bob)
    assert [o.reviewer.username for o in page.steps[0].others] == ["ann"]


def test_queue_filters_are_validated(expert) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError):
        make_queue(filters={"resolved": "maybe"})
    with pytest.raises(ValidationError):
        make_queue(overlap=0)


@pytest.mark.django_db(transaction=True)
def test_concurrent_pulls_never_share_an_item(make_user) -> None:  # type: ignore[no-untyped-def]
    """Reviewers pulling at the same moment (separate connections) get distinct items."""
    import threading

    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    users = [make_user(f"r{i}", "expert") for i in range(4)]
    for i in range(3):
        make_trajectory(1, rollout=f"c{i}")
    queue = make_queue(overlap=1)
    barrier = threading.Barrier(len(users))
    got: dict[str, int | None] = {}

    def pull(user: Any) -> None:
        from django.db import connections

        try:
            barrier.wait()
            assignment = review_services.assignment_next(queue=queue, reviewer=user)
            got[user.username] = assignment.trajectory_id if assignment else None
        finally:
            connections.close_all()

    threads = [threading.Thread(target=pull, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handed_out = [t for t in got.values() if t is not None]
    assert len(handed_out) == 3 and len(set(handed_out)) == 3
    assert list(got.values()).count(None) == 1
