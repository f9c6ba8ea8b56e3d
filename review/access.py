"""Who may use which review queue: the one place that scopes queues and assignments.

A queue with no members and no teams is open to every reviewer; otherwise only its members and
the members of its teams see it, claim its items and submit or release its assignments. Safety
leads and admins manage every queue. Outside the scope a queue or an assignment is a 404.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404

from core.roles import SAFETY_LEAD, has_role
from review.models import Assignment, AssignmentStatus, ReviewQueue


def queues_for(user: Any) -> QuerySet[ReviewQueue]:
    """The queues ``user`` belongs to (one query, no duplicates)."""
    queues = ReviewQueue.objects.all()
    if has_role(user, SAFETY_LEAD):
        return queues
    members = ReviewQueue.members.through.objects.filter(reviewqueue_id=OuterRef("pk"))
    teams = ReviewQueue.teams.through.objects.filter(reviewqueue_id=OuterRef("pk"))
    open_to_all = ~Exists(members) & ~Exists(teams)
    return queues.filter(
        open_to_all
        | Exists(members.filter(user_id=user.pk))
        | Exists(teams.filter(group__user=user.pk))
    )


def assignments_for(user: Any) -> QuerySet[Assignment]:
    """The user's own assignments in queues they (still) belong to."""
    return Assignment.objects.filter(reviewer=user, queue__in=queues_for(user))


def access_queue(user: Any, slug: str, *, active: bool = True) -> ReviewQueue:
    queue = queues_for(user).filter(slug=slug, **({"active": True} if active else {})).first()
    if queue is None:
        raise Http404("No such queue.")
    return queue


def access_assignment(user: Any, assignment_id: int) -> Assignment:
    """The user's own assignment in one of their queues; anyone else's is a 404."""
    assignment = (
        assignments_for(user).select_related("queue", "trajectory").filter(pk=assignment_id).first()
    )
    if assignment is None:
        raise Http404("No such assignment.")
    return assignment


def access_led_queue(user: Any, slug: str) -> ReviewQueue:
    """A queue whose disagreements ``user`` may see and settle: any, for a safety lead; for an
    expert, one they created (they lead that labelling project), once no review of theirs in
    it is still open (blind review holds for them too). Anyone else: PermissionDenied."""
    if has_role(user, SAFETY_LEAD):
        queue = ReviewQueue.objects.filter(slug=slug).first()
        if queue is None:
            raise Http404("No such queue.")
        return queue
    queue = ReviewQueue.objects.filter(slug=slug, created_by=user).first() if slug else None
    if queue is None:
        raise PermissionDenied(
            "Disagreements are a safety lead's, and those of a queue you created (name it: "
            "?queue=its-slug)."
        )
    if (
        Assignment.objects.filter(queue=queue, reviewer=user)
        .exclude(status=AssignmentStatus.SUBMITTED)
        .exists()
    ):
        raise PermissionDenied(
            "You are still reviewing in this queue: its votes stay hidden until you submit."
        )
    return queue
