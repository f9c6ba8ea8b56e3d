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


def leads_queue(user: Any, queue: ReviewQueue) -> bool:
    """True when ``user`` leads the labelling project ``queue`` is: a safety lead leads every
    queue, an expert the queues they created."""
    return has_role(user, SAFETY_LEAD) or (
        queue.created_by_id is not None and queue.created_by_id == user.pk
    )


def still_reviewing(user: Any, queue: ReviewQueue) -> bool:
    """True while a review of ``user``'s in ``queue`` is not submitted: its votes stay hidden
    from them (blind review), whatever their role."""
    return (
        Assignment.objects.filter(queue=queue, reviewer=user)
        .exclude(status=AssignmentStatus.SUBMITTED)
        .exists()
    )


def still_reviewing_trajectories(user: Any) -> QuerySet[Assignment]:
    """The trajectories ``user`` has a review of open on, in any queue (as ``trajectory_id``
    values for a subquery): their votes stay hidden from them on every page and export,
    because reviews of one trajectory share its label rows (blind review, for every role)."""
    return (
        Assignment.objects.filter(reviewer_id=getattr(user, "pk", None))
        .exclude(status=AssignmentStatus.SUBMITTED)
        .values("trajectory_id")
    )


def access_led_queue(user: Any, slug: str) -> ReviewQueue:
    """A queue whose votes ``user`` may see, settle and export: any, for a safety lead; for an
    expert, one they created (they lead that labelling project). Either way only once no review
    of theirs in it is still open (blind review holds for every role that labels). Anyone
    else: PermissionDenied; a lead naming a queue that does not exist: 404."""
    queue = ReviewQueue.objects.filter(slug=slug).first() if slug else None
    if queue is None and has_role(user, SAFETY_LEAD):
        raise Http404("No such queue.")
    if queue is None or not leads_queue(user, queue):
        raise PermissionDenied(
            "Disagreements and exports are a safety lead's, and those of a queue you created "
            "(name it: ?queue=its-slug)."
        )
    if still_reviewing(user, queue):
        raise PermissionDenied(
            "You are still reviewing in this queue: its votes stay hidden until you submit."
        )
    return queue
