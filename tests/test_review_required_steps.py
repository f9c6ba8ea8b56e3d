"""A queue decides which steps need a label before a review is submitted (#23.5)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from review import services as review_services
from review.selectors import sampled_step
from tests.test_review_services import make_queue, make_trajectory

pytestmark = pytest.mark.django_db


def test_sample_is_deterministic_and_about_one_in_n() -> None:
    picks = [i for i in range(2000) if sampled_step("digest-a", i, 10)]
    assert picks == [i for i in range(2000) if sampled_step("digest-a", i, 10)]
    assert 140 <= len(picks) <= 260  # one in ten of 2000, give or take
    assert picks != [i for i in range(2000) if sampled_step("digest-b", i, 10)]
    assert all(sampled_step("d", i, 1) for i in range(5))


@pytest.mark.parametrize(
    ("required", "needed"),
    [("all", None), ("flagged", set()), ("sampled", "sample")],
)
def test_submit_needs_the_steps_the_queue_requires(expert, required, needed) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(40, rollout=f"r-{required}")
    queue = make_queue(slug=f"q-{required}", required_steps=required, sample_every=5)
    assignment = review_services.assignment_next(queue=queue, reviewer=expert)
    assert assignment is not None
    if needed is None:
        needed = set(range(40))
    elif needed == "sample":
        needed = {i for i in range(40) if sampled_step(trajectory.digest, i, 5)}
        assert 0 < len(needed) < 40
    steps = {s.index: s for s in trajectory.steps.all()}
    if needed:
        with pytest.raises(ValidationError):
            review_services.assignment_submit(assignment=assignment, reviewer=expert)
    for i in sorted(needed):
        review_services.step_label_set(step=steps[i], reviewer=expert, value=0)
    review_services.assignment_submit(assignment=assignment, reviewer=expert)


def test_queue_setting_is_validated(expert) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as exc:
        make_queue(slug="bad", required_steps="some")
    assert "required_steps" in exc.value.message_dict
    with pytest.raises(ValidationError):
        make_queue(slug="bad2", required_steps="sampled", sample_every=0)
