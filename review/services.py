"""Writes for expert review: labels (audited), queue assignment with locks, submission, resolution.

Kept apart from ``annotations.services`` (the importer's writes) so the two evolve independently.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.text import slugify

from annotations.models import (
    FinalLabel,
    LabelEvent,
    LabelTally,
    LabelValue,
    Step,
    StepLabel,
    Trajectory,
)
from annotations.selectors import FilterError
from audit.services import audit_record
from core.models import User
from review.models import Assignment, AssignmentStatus, QueueStrategy, ReviewQueue
from review.selectors import (
    behaviour_slugs,
    focus_steps,
    queue_trajectories,
    review_trajectories,
)
from review.selectors import required_steps as steps_to_label
from safety.models import Flag

MAX_COMMENT = 4000
_UNSET = object()


def _check_value(value: int | None) -> None:
    if value is not None and value not in LabelValue.values:
        raise ValidationError({"value": [f"expected +1, 0 or -1, not {value!r}"]})


def _check_not_submitted(*, step: Step, reviewer: User) -> None:
    """A submitted review is final: its labels change only after it is reopened."""
    reviews = Assignment.objects.filter(trajectory_id=step.trajectory_id, reviewer=reviewer)
    if (
        reviews.filter(status=AssignmentStatus.SUBMITTED).exists()
        and not reviews.filter(status=AssignmentStatus.IN_PROGRESS).exists()
    ):
        raise ValidationError(
            {"value": ["this review is submitted and final: reopen it to change a label"]}
        )


@transaction.atomic
def step_label_set(
    *,
    step: Step,
    reviewer: User,
    behaviour: str = "",
    value: int | object | None = _UNSET,
    comment: str | object = _UNSET,
    allowed_behaviours: frozenset[str] | None = None,
) -> StepLabel | None:
    """Set (or clear with ``value=None``) one label and/or its comment; audit every change.

    Arguments left unset keep their stored value, so autosaving a comment never clears a label.
    Returns the stored label, or None once both value and comment are empty (the row is deleted).
    """
    if behaviour and allowed_behaviours is not None and behaviour not in allowed_behaviours:
        raise ValidationError({"behaviour": [f"unknown behaviour {behaviour!r} for this task"]})
    if value is not _UNSET:
        _check_value(value)  # type: ignore[arg-type]
    _check_not_submitted(step=step, reviewer=reviewer)
    if comment is not _UNSET:
        comment = str(comment)[:MAX_COMMENT]
    label = (
        StepLabel.objects.select_for_update()
        .filter(step=step, reviewer=reviewer, behaviour=behaviour)
        .first()
    )
    old_value = label.value if label else None
    old_comment = label.comment if label else ""
    new_value = old_value if value is _UNSET else value
    new_comment = old_comment if comment is _UNSET else comment
    if (new_value, new_comment) == (old_value, old_comment):
        return label
    event = LabelEvent.objects.create(
        step=step,
        reviewer=reviewer,
        behaviour=behaviour,
        old_value=old_value,
        new_value=new_value,  # type: ignore[misc]
        old_comment=old_comment,
        new_comment=new_comment,  # type: ignore[misc]
    )
    # The LabelEvent row holds the detail (comments too); the audit log points at it, so one
    # query answers "what did this person change" across labels, policies, models and keys.
    audit_record(
        action="label.set",
        object_type="annotations.steplabel",
        object_id=f"{step.pk}:{behaviour}",
        object_repr=f"step {step.index} of trajectory {step.trajectory_id}"
        + (f" ({behaviour})" if behaviour else ""),
        before={"value": old_value},
        after={"value": new_value},
        context={
            "label_event": event.pk,
            "step": step.pk,
            "trajectory": step.trajectory_id,
            "comment_changed": new_comment != old_comment,
        },
        user=reviewer,
    )
    if new_value is None and not new_comment:
        if label is not None:
            label.delete()
        label = None
    else:
        if label is None:
            label = StepLabel(step=step, reviewer=reviewer, behaviour=behaviour)
        label.value = new_value  # type: ignore[assignment]
        label.comment = new_comment  # type: ignore[assignment]
        label.full_clean(validate_unique=False)
        label.save()
    if new_value != old_value:
        label_tally_recount(step=step, behaviour=behaviour)
    return label


def label_tally_recount(*, step: Step, behaviour: str) -> LabelTally:
    """Recount the votes on ``step`` and ``behaviour`` into their tally (created if missing).

    The tally row is locked before the count, so two reviewers labelling the same step at once
    are counted one after the other: the second count (a new snapshot) sees the first's label."""
    tally, _ = LabelTally.objects.select_for_update().get_or_create(
        step=step,
        behaviour=behaviour,
        defaults={"trajectory_id": step.trajectory_id, "step_index": step.index},
    )
    votes = dict(
        StepLabel.objects.filter(step=step, behaviour=behaviour, value__isnull=False)
        .order_by()
        .values_list("value")
        .annotate(n=Count("id"))
    )
    tally.trusted = votes.get(LabelValue.TRUSTED, 0)
    tally.neutral = votes.get(LabelValue.NEUTRAL, 0)
    tally.untrusted = votes.get(LabelValue.UNTRUSTED, 0)
    tally.split = sum(1 for n in votes.values() if n) > 1
    tally.resolved = FinalLabel.objects.filter(step=step, behaviour=behaviour).exists()
    tally.save()
    return tally


def _queue_candidates(queue: ReviewQueue, reviewer: User, now: datetime) -> QuerySet[Trajectory]:
    """Trajectories of the queue that still need a review and that ``reviewer`` has not done.

    Uncertainty queues route steps rather than whole reviews: a trajectory is free while nobody
    holds a live claim on it and it still has an unlabelled step the classifier scored; the
    most uncertain come first. Labelled steps drop out, so they are never routed again."""
    if queue.strategy == QueueStrategy.UNCERTAINTY:
        live = Assignment.objects.filter(
            queue=queue,
            trajectory=OuterRef("pk"),
            status=AssignmentStatus.IN_PROGRESS,
            locked_until__gt=now,
        )
        return (
            queue_trajectories(queue=queue)
            .exclude(Exists(live))
            .order_by(F("top_uncertainty").desc(), "id")
        )
    taken = (
        Assignment.objects.filter(queue=queue, trajectory=OuterRef("pk"))
        .filter(
            Q(status=AssignmentStatus.SUBMITTED)
            | Q(status=AssignmentStatus.IN_PROGRESS, locked_until__gt=now)
        )
        .order_by()
        .values("trajectory")
        .annotate(n=Count("id"))
        .values("n")
    )
    mine = Assignment.objects.filter(
        queue=queue, trajectory=OuterRef("pk"), reviewer=reviewer
    ).exclude(status=AssignmentStatus.IN_PROGRESS, locked_until__lte=now)
    return (
        review_trajectories(filters=queue.filters)
        .annotate(taken=Coalesce(Subquery(taken), 0))
        .filter(taken__lt=queue.overlap)
        .exclude(Exists(mine))
        .order_by("id")
    )


@transaction.atomic
def assignment_next(*, queue: ReviewQueue, reviewer: User) -> Assignment | None:
    """The reviewer's open assignment in ``queue``, or a newly locked one; None when done.

    The queue row is locked for the pull, so two reviewers pulling at once never receive the
    same slot; a trajectory is handed out until it has ``overlap`` submitted or live claims.
    """
    if not queue.active:
        return None
    ReviewQueue.objects.select_for_update().filter(pk=queue.pk).first()
    now = timezone.now()
    lock = timedelta(minutes=queue.lock_minutes)
    current = (
        Assignment.objects.filter(
            queue=queue,
            reviewer=reviewer,
            status=AssignmentStatus.IN_PROGRESS,
            locked_until__gt=now,
        )
        .order_by("created_at")
        .first()
    )
    if current is not None:
        return current
    trajectory = _queue_candidates(queue, reviewer, now).first()
    if trajectory is None:
        return None
    focus = (
        focus_steps(queue=queue, trajectory=trajectory)
        if queue.strategy == QueueStrategy.UNCERTAINTY
        else []
    )
    assignment, created = Assignment.objects.get_or_create(
        queue=queue,
        trajectory=trajectory,
        reviewer=reviewer,
        defaults={"locked_until": now + lock, "focus_steps": focus},
    )
    if not created:  # the reviewer's own expired, released (or, uncertainty: done) claim
        assignment.status = AssignmentStatus.IN_PROGRESS
        assignment.locked_until = now + lock
        assignment.focus_steps = focus
        assignment.save(update_fields=["status", "locked_until", "focus_steps"])
    return assignment


def assignment_extend(*, assignment: Assignment) -> Assignment:
    """Keep the lock while the reviewer is working (every autosave extends it)."""
    if assignment.status == AssignmentStatus.IN_PROGRESS:
        assignment.locked_until = timezone.now() + timedelta(minutes=assignment.queue.lock_minutes)
        assignment.save(update_fields=["locked_until"])
    return assignment


def unlabelled_steps(*, trajectory: Trajectory, reviewer: User) -> list[int]:
    """Indexes of steps the reviewer has not given an overall label yet."""
    labelled = StepLabel.objects.filter(
        step=OuterRef("pk"), reviewer=reviewer, behaviour="", value__isnull=False
    )
    return list(
        trajectory.steps.exclude(Exists(labelled)).order_by("index").values_list("index", flat=True)
    )


@transaction.atomic
def assignment_submit(*, assignment: Assignment, reviewer: User) -> Assignment:
    """Mark the review done once every step the queue requires has an overall label
    (``review.selectors.required_steps``: all, flagged, sampled, or the routed ones)."""
    if assignment.reviewer_id != reviewer.pk:
        raise PermissionDenied
    trajectory = assignment.trajectory
    indexes = list(trajectory.steps.order_by("index").values_list("index", flat=True))
    flagged = set(Flag.objects.filter(trajectory=trajectory).values_list("step__index", flat=True))
    required = steps_to_label(
        assignment=assignment, trajectory=trajectory, indexes=indexes, flagged=flagged
    )
    missing = [
        i for i in unlabelled_steps(trajectory=trajectory, reviewer=reviewer) if i in required
    ]
    if missing:
        shown = ", ".join(str(i) for i in missing[:10]) + (" …" if len(missing) > 10 else "")
        what = "every step" if len(required) == len(indexes) else "every required step"
        raise ValidationError({"labels": [f"Label {what} first (missing: {shown})."]})
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.submitted_at = timezone.now()
    assignment.save(update_fields=["status", "submitted_at"])
    return assignment


@transaction.atomic
def assignment_reopen(*, assignment: Assignment, user: User, reason: str = "") -> Assignment:
    """Reopen a submitted review so its labels can change again: by its reviewer or a lead,
    attributed and audited. It counts again (agreement, exports) once submitted anew."""
    if assignment.status != AssignmentStatus.SUBMITTED:
        raise ValidationError({"status": ["only a submitted review can be reopened"]})
    before = {"status": assignment.status, "submitted_at": assignment.submitted_at}
    assignment.status = AssignmentStatus.IN_PROGRESS
    assignment.locked_until = timezone.now() + timedelta(minutes=assignment.queue.lock_minutes)
    assignment.save(update_fields=["status", "locked_until"])
    audit_record(
        action="review.reopen",
        obj=assignment,
        before={"status": before["status"], "submitted_at": str(before["submitted_at"])},
        after={"status": assignment.status},
        context={
            "trajectory": assignment.trajectory_id,
            "reviewer": assignment.reviewer_id,
            "reason": reason[:MAX_COMMENT],
        },
        user=user,
    )
    return assignment


def assignment_release(*, assignment: Assignment) -> Assignment:
    """Give an unfinished item back to the queue."""
    if assignment.status == AssignmentStatus.IN_PROGRESS:
        assignment.status = AssignmentStatus.RELEASED
        assignment.save(update_fields=["status"])
    return assignment


@transaction.atomic
def final_label_resolve(
    *, step: Step, behaviour: str, value: int, user: User, note: str = ""
) -> FinalLabel:
    """A lead's final word on a step's label; exports prefer it over the reviewers' majority.
    ``behaviour`` is "" (the overall label) or an active behaviour of the step's task type."""
    _check_value(value)
    task_type = step.trajectory.task_type
    if behaviour and behaviour not in behaviour_slugs(task_type=task_type):
        raise ValidationError(
            {"behaviour": [f"unknown behaviour {behaviour!r} for task type {task_type!r}"]}
        )
    final, _ = FinalLabel.objects.update_or_create(
        step=step,
        behaviour=behaviour,
        defaults={"value": value, "resolved_by": user, "note": note[:MAX_COMMENT]},
    )
    LabelTally.objects.filter(step=step, behaviour=behaviour).update(resolved=True)
    return final


def queue_create(
    *,
    slug: str,
    name: str,
    filters: dict[str, str],
    overlap: int = 1,
    blind: bool = True,
    lock_minutes: int = 30,
    user: User | None = None,
    description: str = "",
    strategy: str = QueueStrategy.OLDEST,
    steps_per_item: int = 3,
    required_steps: str = "all",
    sample_every: int = 10,
) -> ReviewQueue:
    """Create a queue after checking that its filters are ones the trajectory list understands.

    An uncertainty queue routes each step to one reviewer, so its overlap is always 1."""
    try:
        review_trajectories(filters=filters)
    except FilterError as exc:
        messages = [f"{k}: {'; '.join(v)}" for k, v in exc.errors.items()]
        raise ValidationError({"filters": messages}) from exc
    queue = ReviewQueue(
        slug=slug,
        name=name,
        description=description,
        filters=filters,
        overlap=1 if strategy == QueueStrategy.UNCERTAINTY else overlap,
        blind=blind,
        lock_minutes=lock_minutes,
        created_by=user,
        strategy=strategy,
        steps_per_item=steps_per_item,
        required_steps=required_steps,
        sample_every=sample_every,
    )
    queue.full_clean()
    queue.save()
    return queue


def unique_queue_slug(name: str) -> str:
    """A slug for ``name`` that no queue uses yet (``name``, ``name-2``, ...)."""
    base = slugify(name)[:90] or "queue"
    taken = set(ReviewQueue.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    return slug


# Every tally from the stored labels, in one statement (what migration annotations 0007 ran;
# for bulk loads that wrote labels without this service).
TALLY_REBUILD = """
INSERT INTO annotations_labeltally
    (step_id, trajectory_id, step_index, behaviour, trusted, neutral, untrusted, split, resolved)
SELECT l.step_id, s.trajectory_id, s."index", l.behaviour,
       SUM(CASE WHEN l.value = 1 THEN 1 ELSE 0 END),
       SUM(CASE WHEN l.value = 0 THEN 1 ELSE 0 END),
       SUM(CASE WHEN l.value = -1 THEN 1 ELSE 0 END),
       COUNT(DISTINCT l.value) > 1,
       EXISTS (SELECT 1 FROM annotations_finallabel f
               WHERE f.step_id = l.step_id AND f.behaviour = l.behaviour)
FROM annotations_steplabel l JOIN annotations_step s ON s.id = l.step_id
WHERE l.value IS NOT NULL
GROUP BY l.step_id, s.trajectory_id, s."index", l.behaviour
"""


@transaction.atomic
def label_tallies_rebuild() -> int:
    """Recount every tally from the labels; returns how many tallies there are."""
    LabelTally.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(TALLY_REBUILD)
    return LabelTally.objects.count()
