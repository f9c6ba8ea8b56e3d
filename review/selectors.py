"""Reads for expert review: the filtered list, the viewer's data in a fixed number of queries,
queues with their progress, blind-review visibility, and the label sets agreement works on."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations.models import (
    FinalLabel,
    LabelEvent,
    LabelTally,
    Step,
    StepLabel,
    Trajectory,
    TrajectorySearch,
)
from annotations.search import search_hits
from annotations.selectors import FilterError, trajectory_list
from core.params import parse_finite_float, parse_int
from core.queries import count_upto, distinct_values
from core.roles import ADMIN, SAFETY_LEAD, has_role
from review.access import assignments_for, leads_queue, queues_for
from review.models import (
    Assignment,
    AssignmentStatus,
    QueueStrategy,
    RequiredSteps,
    ReviewQueue,
)
from review.render import (
    Piece,
    bash_tokens,
    markdown_blocks,
    pretty_arguments,
    split_pieces,
    split_result,
)
from rewards.models import (
    LearnedComponent,
    ScoringRecord,
    StepUncertainty,
    TrajectoryScore,
    TrustedBehaviour,
)
from safety.models import Flag, FlagStatus
from safety.selectors import UNREAD_RULE, highlight, unread_actions, unread_text

REVIEW_FILTERS = (
    "q",
    "task_type",
    "source_format",
    "resolved",
    "flagged",
    "labelled",
    "reward_min",
    "reward_max",
    "run",
)
PAGE_SIZE = 50


def _float(name: str, raw: str, errors: dict[str, list[str]]) -> float | None:
    value = parse_finite_float(raw)
    if value is None:
        errors[name] = ["expected a finite number"]
    return value


def _on_postgresql(qs: QuerySet[Any]) -> bool:
    return connections[qs.db].vendor == "postgresql"


# A search that matches at most this many trajectories is answered from their ids; one that
# matches more has matches dense enough that walking the list newest first meets a page of
# them at once.
SEARCH_PROBE_LIMIT = 1000


def _search_hits(q: str, alias: str) -> list[int] | None:
    """The trajectories matching ``q`` if there are at most ``SEARCH_PROBE_LIMIT`` (read from
    the search index, which PostgreSQL would otherwise skip for a rare word: see
    ``annotations.search.HITS_FUNCTION``); None if there are more."""
    hits = search_hits(connections[alias], q, SEARCH_PROBE_LIMIT + 1)
    return hits if len(hits) <= SEARCH_PROBE_LIMIT else None


def review_trajectories(*, filters: Mapping[str, str]) -> QuerySet[Trajectory]:
    """The trajectory list's filters plus review ones; each is an EXISTS, so rows never repeat.

    Each filter reads an index: the search its trajectory's full-text vector (PostgreSQL;
    SQLite compares the columns), labels their tallies, flags the flag table, reward and run
    the trajectory's scores (``TrajectoryScore``: its scoring records by digest and what its
    metadata names; SQLite reads the records and the metadata)."""
    qs = trajectory_list(filters=filters)
    postgresql = _on_postgresql(qs)
    errors: dict[str, list[str]] = {}
    if q := (filters.get("q") or "").strip():
        if postgresql:
            hits = _search_hits(q, qs.db)
            if hits is not None:
                qs = qs.filter(pk__in=hits)
            else:
                qs = qs.filter(
                    Exists(
                        TrajectorySearch.objects.filter(
                            trajectory=OuterRef("pk"), vector__matches=q
                        )
                    )
                )
        else:
            qs = qs.filter(
                Q(external_id__icontains=q)
                | Q(task_type__icontains=q)
                | Exists(
                    Step.objects.filter(trajectory=OuterRef("pk")).filter(
                        Q(text__icontains=q) | Q(reasoning__icontains=q)
                    )
                )
            )
    flagged = filters.get("flagged") or ""
    if flagged:
        flags = Flag.objects.filter(trajectory=OuterRef("pk"))
        if flagged == "open":
            qs = qs.filter(Exists(flags.filter(status=FlagStatus.OPEN)))
        elif flagged == "confirmed":
            qs = qs.filter(Exists(flags.filter(status=FlagStatus.CONFIRMED)))
        elif flagged in ("yes", "true"):
            qs = qs.filter(Exists(flags))
        elif flagged in ("no", "false"):
            qs = qs.exclude(Exists(flags))
        else:
            errors["flagged"] = ["expected yes, no, open or confirmed"]
    labelled = filters.get("labelled") or ""
    if labelled:
        # A step label with a value is a vote in its step's tally (review.services keeps them).
        voted = Q(trusted__gt=0) | Q(neutral__gt=0) | Q(untrusted__gt=0)
        labels = LabelTally.objects.filter(trajectory=OuterRef("pk")).filter(voted)
        if labelled in ("yes", "true"):
            qs = qs.filter(Exists(labels))
            if flagged in ("open", "confirmed", "yes", "true"):
                # Two sparse sets: walking the list newest first PostgreSQL expects to meet
                # their common trajectories soon, and when there are none it reads every
                # trajectory. Starting at the newest common one (no start when none: the
                # page is empty at once) costs a probe of the labels per flagged trajectory.
                status = {"open": [FlagStatus.OPEN], "confirmed": [FlagStatus.CONFIRMED]}
                common = Flag.objects.filter(
                    Exists(LabelTally.objects.filter(voted, trajectory=OuterRef("trajectory_id")))
                )
                if flagged in status:
                    common = common.filter(status__in=status[flagged])
                newest = common.order_by("-trajectory_id").values("trajectory_id")[:1]
                qs = qs.filter(id__lte=Subquery(newest))
        elif labelled in ("no", "false"):
            qs = qs.exclude(Exists(labels))
        else:
            errors["labelled"] = ["expected yes or no"]
    low = _float("reward_min", raw, errors) if (raw := filters.get("reward_min")) else None
    high = _float("reward_max", raw, errors) if (raw := filters.get("reward_max")) else None
    run = (filters.get("run") or "").strip()
    if postgresql:
        scores = TrajectoryScore.objects.filter(trajectory=OuterRef("pk"))
        if low is not None or high is not None:
            in_range = scores
            if low is not None:
                in_range = in_range.filter(reward__gte=low)
            if high is not None:
                in_range = in_range.filter(reward__lte=high)
            qs = qs.filter(Exists(in_range))
        if run:
            # Within the run's first and last trajectory (two probes of its index): walking
            # the list newest first, PostgreSQL otherwise starts at the hub's newest trajectory
            # and reads every later one before reaching an older run's.
            of_run = TrajectoryScore.objects.filter(run=run).order_by()
            first = of_run.order_by("trajectory_id").values("trajectory_id")[:1]
            last = of_run.order_by("-trajectory_id").values("trajectory_id")[:1]
            qs = qs.filter(
                Exists(scores.filter(run=run)), id__gte=Subquery(first), id__lte=Subquery(last)
            )
    else:
        scored = ScoringRecord.objects.filter(trajectory_digest=OuterRef("digest"))
        if low is not None or high is not None:
            in_range = scored
            meta = Q()
            if low is not None:
                in_range = in_range.filter(reward__gte=low)
                meta &= Q(metadata__scoring__reward__gte=low)
            if high is not None:
                in_range = in_range.filter(reward__lte=high)
                meta &= Q(metadata__scoring__reward__lte=high)
            qs = qs.filter(Exists(in_range) | meta)
        if run:
            qs = qs.filter(
                Exists(scored.filter(run=run))
                | Q(metadata__scoring__rollout__run=run)
                | Q(metadata__run=run)
            )
    if errors:
        raise FilterError(errors)
    return qs


# The list counts its matches up to this many (the database stops there): "500+" beyond.
COUNT_LIMIT = 500


@dataclass
class TrajectoryPage:
    rows: list[Trajectory]
    next_cursor: int | None
    total: int
    counts: dict[str, int]
    more: bool = False  # more than ``total`` match (counting stopped at COUNT_LIMIT)


def trajectory_page(*, filters: Mapping[str, str], cursor: str = "") -> TrajectoryPage:
    """One page of the list by keyset (id descending) and the match count up to COUNT_LIMIT
    (with how many of those are resolved), so its cost is a page's, not the table's."""
    qs = review_trajectories(filters=filters)
    counts = (
        qs.order_by()
        .values("pk", "resolved")[: COUNT_LIMIT + 1]
        .aggregate(total=Count("pk"), resolved=Count("pk", filter=Q(resolved=True)))
    )
    more = counts["total"] > COUNT_LIMIT
    if more:
        counts = {"total": COUNT_LIMIT, "resolved": 0}
    page_qs = qs.order_by("-id")
    if cursor:
        after = parse_int(cursor)
        if after is None:
            raise FilterError({"cursor": ["not a cursor of this list"]})
        page_qs = page_qs.filter(id__lt=after)
    open_flags = (
        Flag.objects.filter(trajectory=OuterRef("pk"), status=FlagStatus.OPEN)
        .order_by()
        .values("trajectory")
        .annotate(n=Count("id"))
        .values("n")
    )
    labellers = (
        StepLabel.objects.filter(step__trajectory=OuterRef("pk"), value__isnull=False)
        .order_by()
        .values("step__trajectory")
        .annotate(n=Count("reviewer", distinct=True))
        .values("n")
    )
    reward = ScoringRecord.objects.filter(trajectory_digest=OuterRef("digest")).order_by("-id")
    rows = list(
        page_qs.annotate(
            open_flags=Coalesce(Subquery(open_flags), 0),
            labellers=Coalesce(Subquery(labellers), 0),
            last_reward=Subquery(reward.values("reward")[:1]),
        )[: PAGE_SIZE + 1]
    )
    next_cursor = rows[PAGE_SIZE - 1].pk if len(rows) > PAGE_SIZE else None
    return TrajectoryPage(rows[:PAGE_SIZE], next_cursor, counts["total"], counts, more)


def list_facets() -> dict[str, list[str]]:
    """Values for the list's filter menus (loose index scans: a probe per value)."""
    return {
        "task_type": distinct_values(Trajectory, "task_type"),
        "source_format": distinct_values(Trajectory, "source_format", skip=()),
        "run": distinct_values(ScoringRecord, "run", limit=50),
    }


# --- Queues -------------------------------------------------------------------------------------


def unlabelled_uncertainties(*, component_id: int) -> QuerySet[StepUncertainty]:
    """A classifier's uncertainties on steps nobody has labelled overall yet (no reviewer's
    label with a value, no lead's final label): what active learning may still route."""
    labels = StepLabel.objects.filter(step=OuterRef("step_id"), behaviour="", value__isnull=False)
    finals = FinalLabel.objects.filter(step=OuterRef("step_id"), behaviour="")
    return (
        StepUncertainty.objects.filter(component_id=component_id)
        .exclude(Exists(labels))
        .exclude(Exists(finals))
    )


def queue_component_id(queue: ReviewQueue) -> int | None:
    """An uncertainty queue's classifier: the chosen one, or the newest of its task type."""
    if queue.learned_component_id is not None:
        return queue.learned_component_id
    task_type = (queue.filters or {}).get("task_type") if isinstance(queue.filters, dict) else ""
    if not task_type:
        return None
    return (
        LearnedComponent.objects.filter(task_type__slug=task_type)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )


def queue_trajectories(*, queue: ReviewQueue) -> QuerySet[Trajectory]:
    """The trajectories a queue covers. Uncertainty queues keep only those with an unlabelled
    step the classifier has scored, annotated with the top uncertainty (``top_uncertainty``)."""
    qs = review_trajectories(filters=queue.filters)
    if queue.strategy != QueueStrategy.UNCERTAINTY:
        return qs
    component_id = queue_component_id(queue)
    if component_id is None:
        return qs.none()
    top = (
        unlabelled_uncertainties(component_id=component_id)
        .filter(step__trajectory=OuterRef("pk"))
        .order_by("-uncertainty")
        .values("uncertainty")[:1]
    )
    return qs.annotate(top_uncertainty=Subquery(top)).filter(top_uncertainty__isnull=False)


def focus_steps(*, queue: ReviewQueue, trajectory: Trajectory) -> list[dict[str, Any]]:
    """The trajectory's most uncertain unlabelled steps (``queue.steps_per_item``), most
    uncertain first, with the classifier's P(trusted) for each."""
    component_id = queue_component_id(queue)
    if component_id is None:
        return []
    rows = (
        unlabelled_uncertainties(component_id=component_id)
        .filter(step__trajectory=trajectory)
        .order_by("-uncertainty", "step__index")
        .values_list("step__index", "probability")[: max(queue.steps_per_item, 1)]
    )
    return [{"step": index, "p": round(p, 4)} for index, p in rows]


# Queue sizes are counted up to this many (the database stops there): "10000+" beyond.
QUEUE_COUNT_LIMIT = 10_000


@dataclass
class QueueRow:
    queue: ReviewQueue
    total: int
    done: int
    in_progress: int
    mine_submitted: int
    mine_open: int
    more: bool = False  # more than ``total`` items (counting stopped at QUEUE_COUNT_LIMIT)
    led: bool = False  # the user leads this project: its disagreements and export are theirs
    reviewing: bool = False  # a review of the user's in it is not submitted (votes stay hidden)


def queue_rows(*, user: Any) -> list[QueueRow]:
    """Active queues with how many items are done (k submitted reviews) and the user's share."""
    now = timezone.now()
    rows = []
    queues = list(queues_for(user).filter(active=True).order_by("name"))
    stats = (
        Assignment.objects.filter(queue__in=queues)
        .values("queue")
        .annotate(
            submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
            live=Count("id", filter=Q(status=AssignmentStatus.IN_PROGRESS, locked_until__gt=now)),
            mine_submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED, reviewer=user)),
            mine_open=Count(
                "id",
                filter=Q(status=AssignmentStatus.IN_PROGRESS, locked_until__gt=now, reviewer=user),
            ),
            mine_unsubmitted=Count(
                "id", filter=Q(reviewer=user) & ~Q(status=AssignmentStatus.SUBMITTED)
            ),
        )
    )
    by_queue = {row["queue"]: row for row in stats}
    for queue in queues:
        try:
            # Uncertainty queues: the trajectories with steps still to route (work left).
            total = count_upto(queue_trajectories(queue=queue), QUEUE_COUNT_LIMIT)
        except FilterError:
            total = 0
        row = by_queue.get(queue.pk, {})
        done = (
            Assignment.objects.filter(queue=queue, status=AssignmentStatus.SUBMITTED)
            .values("trajectory")
            .annotate(n=Count("id"))
            .filter(n__gte=queue.overlap)
            .count()
        )
        rows.append(
            QueueRow(
                queue,
                min(total, QUEUE_COUNT_LIMIT),
                done,
                row.get("live", 0),
                row.get("mine_submitted", 0),
                row.get("mine_open", 0),
                more=total > QUEUE_COUNT_LIMIT,
                led=leads_queue(user, queue),
                reviewing=row.get("mine_unsubmitted", 0) > 0,
            )
        )
    return rows


# --- The viewer ---------------------------------------------------------------------------------


@dataclass
class ToolCallView:
    id: str
    name: str
    shell: bool
    segments: list[Any] = field(default_factory=list)
    arguments: str = ""
    flags: list[Flag] = field(default_factory=list)
    result_head: str = ""
    result_rest: str = ""
    has_result: bool = False


@dataclass
class LabelCell:
    behaviour: str
    name: str
    value: int | None
    comment: str = ""


@dataclass
class StepView:
    step: Step
    reasoning: str
    blocks: list[Any]
    tool_calls: list[ToolCallView]
    orphan_results: list[tuple[str, str, str]]
    overall: LabelCell
    behaviours: list[LabelCell]
    others: list[StepLabel]
    finals: list[FinalLabel]
    reward: dict[str, Any] | None
    flag_count: int
    # Routed by an uncertainty queue: {"rank": 0 = most uncertain, "p": P(trusted)}.
    focus: dict[str, Any] | None = None
    # Flags shown on no tool call: actions not understood in the step's text (no call to show).
    step_flags: list[Flag] = field(default_factory=list)
    # Needs a label before the review can be submitted (the queue's required_steps).
    required: bool = True

    @property
    def rows(self) -> list[LabelCell]:
        return [self.overall, *self.behaviours]

    @property
    def behaviours_open(self) -> bool:
        return any(cell.value is not None or cell.comment for cell in self.behaviours)


@dataclass
class ReviewPage:
    trajectory: Trajectory
    prompt: list[dict[str, str]]
    steps: list[StepView]
    behaviours: list[TrustedBehaviour]
    assignment: Assignment | None
    others_visible: bool
    scoring: dict[str, Any] | None
    labelled: int
    flags: list[Flag]
    locked_by: Assignment | None = None
    required: int = 0
    required_labelled: int = 0


def _prompt(canonical: Mapping[str, Any]) -> list[dict[str, str]]:
    out = []
    for message in canonical.get("messages", []):
        if message.get("role") == "assistant":
            break
        content = message.get("content")
        if not isinstance(content, str):
            content = pretty_arguments(content)
        out.append({"role": str(message.get("role", "")), "content": content})
    return out


def _scoring(trajectory: Trajectory) -> dict[str, Any] | None:
    """The reward breakdown: the scoring record named in metadata, else the newest by digest."""
    meta = trajectory.metadata.get("scoring") if isinstance(trajectory.metadata, dict) else None
    records = ScoringRecord.objects.select_related("version__reward_model")
    record = None
    if isinstance(meta, dict) and meta.get("scoring_id"):
        record = records.filter(scoring_id=str(meta["scoring_id"])).first()
    else:
        record = records.filter(trajectory_digest=trajectory.digest).order_by("-id").first()
    if record is None:
        if isinstance(meta, dict) and isinstance(meta.get("reward"), int | float):
            return {"reward": meta["reward"], "steps": {}, "record": None, "parts": {}}
        return None
    breakdown = record.breakdown or {}
    steps = {
        s["step"]: s
        for s in breakdown.get("steps", [])
        if isinstance(s, dict) and isinstance(s.get("step"), int)
    }
    return {
        "reward": record.reward,
        "outcome_reward": record.outcome_reward,
        "process_reward": record.process_reward,
        "gated": record.gated,
        "unsafe": record.unsafe,
        "parts": breakdown.get("parts", {}),
        "steps": steps,
        "record": record,
    }


@dataclass(frozen=True)
class CommandSegment:
    """A run of the command inside (or outside) findings, cut into coloured pieces."""

    marked: bool
    labels: tuple[str, ...]
    pieces: list[Piece]


def command_segments(command: str, spans: list[tuple[int, int, str]]) -> list[CommandSegment]:
    """Findings marked on their exact spans (``safety.selectors.highlight``), then light bash
    colouring inside each segment; every piece is plain text for the template to escape."""
    tokens = bash_tokens(command)
    out, offset = [], 0
    for segment in highlight(command, spans):
        out.append(
            CommandSegment(
                segment.marked, segment.labels, split_pieces(segment.text, offset, tokens)
            )
        )
        offset += len(segment.text)
    return out


def _tool_calls(
    step: Step, flags: list[Flag], unread: Mapping[int, list[Mapping[str, Any]]]
) -> tuple[list[ToolCallView], list]:
    """The step's calls, each with its flags: a command's findings, or the actions-not-understood
    flag of a call the importer could not read (the step's unread actions, as ``unread_actions``
    lists them, each taken by the first flag, in index order, that quotes it)."""
    waiting = list(unread.get(step.index, []))
    unread_call = {}
    for f in sorted((f for f in flags if f.rule_id == UNREAD_RULE), key=lambda f: f.command_index):
        item = next((i for i in waiting if unread_text(i) == f.command), None)
        if item is not None:
            waiting.remove(item)
            unread_call[f.pk] = str(item.get("tool_call_id") or "")
    commands = {
        c.get("tool_call_id"): (i, c.get("command", ""))
        for i, c in enumerate(step.commands or [])
        if isinstance(c, dict)
    }
    results: dict[str, list[str]] = defaultdict(list)
    orphans = []
    for result in step.tool_results or []:
        if not isinstance(result, dict):
            continue
        call_id = str(result.get("tool_call_id") or "")
        results[call_id].append(result.get("content", ""))
    views = []
    seen: set[str] = set()
    for call in step.tool_calls or []:
        if not isinstance(call, dict):
            continue
        call_id = str(call.get("id") or "")
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        view = ToolCallView(id=call_id, name=str(function.get("name", "tool")), shell=False)
        if call_id in commands:
            index, command = commands[call_id]
            view.shell = True
            view.flags = [f for f in flags if f.command_index == index]
            view.segments = command_segments(
                command, [(f.span_start, f.span_end, f.rule_id) for f in view.flags]
            )
        else:
            view.arguments = pretty_arguments(function.get("arguments", ""))
            view.flags = [f for f in flags if call_id and unread_call.get(f.pk) == call_id]
        if call_id in results:
            seen.add(call_id)
            content = "\n".join(map(str, results[call_id]))
            view.has_result = bool(content.strip())
            view.result_head, view.result_rest = split_result(content)
        views.append(view)
    for call_id, contents in results.items():
        if call_id not in seen:
            head, rest = split_result("\n".join(map(str, contents)))
            orphans.append((call_id, head, rest))
    return views, orphans


def user_assignments(*, user: Any, trajectory: Trajectory) -> list[Assignment]:
    """The user's assignments on the trajectory, in queues they belong to."""
    return list(assignments_for(user).filter(trajectory=trajectory).select_related("queue"))


def others_labels_visible(*, user: Any, assignments: list[Assignment]) -> bool:
    """Blind review: others' labels show after the user submitted, in open queues, or to a lead
    who is not reviewing the trajectory. Blind is blind for every role that labels.

    A review still open in a blind queue keeps them hidden, even when the same trajectory is
    also in an open queue of the user's: otherwise the open queue would unblind the blind one.
    """
    if any(a.queue.blind and a.status != AssignmentStatus.SUBMITTED for a in assignments):
        return False
    if not assignments and has_role(user, SAFETY_LEAD):
        return True
    return any(a.status == AssignmentStatus.SUBMITTED or not a.queue.blind for a in assignments)


def review_locked(*, assignments: list[Assignment]) -> Assignment | None:
    """The submitted review that makes the user's labels on this trajectory final (none while
    a review of theirs is still in progress: the queue routed it to them again, or a reopen)."""
    if any(a.status == AssignmentStatus.IN_PROGRESS for a in assignments):
        return None
    return next((a for a in assignments if a.status == AssignmentStatus.SUBMITTED), None)


def sampled_step(digest: str, index: int, every: int) -> bool:
    """A deterministic one-in-``every`` sample of a trajectory's steps: the same steps for every
    reviewer and every page load, different ones for different trajectories."""
    if every <= 1:
        return True
    key = hashlib.sha256(f"{digest}:{index}".encode()).digest()
    return int.from_bytes(key[:8], "big") % every == 0


def required_steps(
    *,
    assignment: Assignment | None,
    trajectory: Trajectory,
    indexes: list[int],
    flagged: set[int],
) -> set[int]:
    """The step indexes a review must label before it can be submitted.

    Routed steps of an uncertainty queue, when there are any; otherwise the queue's
    ``required_steps``: every step, the flagged ones (findings), or those plus a sample."""
    if assignment is None:
        return set(indexes)
    routed = {f.get("step") for f in assignment.focus_steps or [] if isinstance(f, dict)}
    if routed:
        return {i for i in indexes if i in routed}
    queue = assignment.queue
    if queue.required_steps == RequiredSteps.FLAGGED:
        return {i for i in indexes if i in flagged}
    if queue.required_steps == RequiredSteps.SAMPLED:
        return {
            i
            for i in indexes
            if i in flagged or sampled_step(trajectory.digest, i, queue.sample_every)
        }
    return set(indexes)


def counted_labels() -> QuerySet[StepLabel]:
    """The labels agreement, disagreements and exports count: a label given inside a review
    counts once that review is submitted (its submitted value: a submitted review is final);
    a label given outside any queue counts as it stands."""
    reviews = Assignment.objects.filter(
        trajectory_id=OuterRef("step__trajectory_id"), reviewer_id=OuterRef("reviewer_id")
    )
    return StepLabel.objects.exclude(
        Exists(reviews.exclude(status=AssignmentStatus.SUBMITTED))
        & ~Exists(reviews.filter(status=AssignmentStatus.SUBMITTED))
    )


@dataclass(frozen=True)
class QueueExport:
    """What a labelling project's export holds: its trajectories, the labels and the final
    labels that count for it."""

    trajectories: QuerySet[Trajectory]
    labels: QuerySet[StepLabel]
    finals: QuerySet[FinalLabel]


def queue_export(*, queue: ReviewQueue) -> QueueExport:
    """A queue's labels as its lead exports them: the labels of reviews submitted in this queue,
    less those a review of the same reviewer on the same trajectory (here or in another queue)
    is still changing, so unsubmitted work never mixes in. Final labels count when the queue's
    creator or a safety lead set them. Other projects' labels on the same trajectories stay out."""
    submitted = Assignment.objects.filter(queue=queue, status=AssignmentStatus.SUBMITTED)
    reviews = Assignment.objects.filter(
        trajectory_id=OuterRef("step__trajectory_id"), reviewer_id=OuterRef("reviewer_id")
    )
    in_queue = reviews.filter(queue=queue, status=AssignmentStatus.SUBMITTED)
    still_open = reviews.filter(status=AssignmentStatus.IN_PROGRESS)
    labels = StepLabel.objects.filter(Exists(in_queue)).exclude(Exists(still_open))
    leads = get_user_model().objects.filter(
        Q(is_superuser=True) | Q(groups__name__in=(SAFETY_LEAD, ADMIN))
    )
    if queue.created_by_id is not None:
        leads = leads | get_user_model().objects.filter(pk=queue.created_by_id)
    return QueueExport(
        trajectories=Trajectory.objects.filter(pk__in=submitted.values("trajectory_id")),
        labels=labels,
        finals=FinalLabel.objects.filter(resolved_by__in=leads.values("pk")),
    )


def review_page(*, trajectory_id: int, user: Any, queue_slug: str = "") -> ReviewPage:
    """Everything the viewer shows, in a constant number of queries whatever the step count."""
    trajectory = Trajectory.objects.get(pk=trajectory_id)
    steps = list(Step.objects.filter(trajectory=trajectory).order_by("index"))
    flags = list(Flag.objects.filter(trajectory=trajectory).order_by("command_index", "span_start"))
    behaviours = list(
        TrustedBehaviour.objects.filter(task_type__slug=trajectory.task_type, active=True).order_by(
            "polarity", "slug"
        )
    )
    assignments = user_assignments(user=user, trajectory=trajectory)
    visible = others_labels_visible(user=user, assignments=assignments)
    # Labels of a review still open in a blind queue stay inside that queue: only leads and
    # the queue's reviewers who already submitted see them, not someone reaching the same
    # trajectory through another (open) queue.
    submitted_in = [a.queue_id for a in assignments if a.status == AssignmentStatus.SUBMITTED]
    in_blind_review = (
        Assignment.objects.filter(
            trajectory=trajectory, reviewer=OuterRef("reviewer"), queue__blind=True
        )
        .exclude(status=AssignmentStatus.SUBMITTED)
        .exclude(queue_id__in=submitted_in)
    )
    labels = list(
        StepLabel.objects.filter(step__trajectory=trajectory)
        .annotate(in_blind_review=Exists(in_blind_review))
        .select_related("reviewer")
        .order_by("reviewer__username")
    )
    finals = list(FinalLabel.objects.filter(step__trajectory=trajectory)) if visible else []
    scoring = _scoring(trajectory)
    assignment = next(
        (a for a in assignments if a.queue.slug == queue_slug),
        next((a for a in assignments if a.status == AssignmentStatus.IN_PROGRESS), None),
    )

    flags_by_step: dict[int, list[Flag]] = defaultdict(list)
    for flag in flags:
        flags_by_step[flag.step_id].append(flag)
    mine: dict[tuple[int, str], StepLabel] = {}
    others: dict[int, list[StepLabel]] = defaultdict(list)
    for label in labels:
        if label.reviewer_id == user.pk:
            mine[(label.step_id, label.behaviour)] = label
        elif visible and not label.in_blind_review:  # type: ignore[attr-defined]
            others[label.step_id].append(label)
    finals_by_step: dict[int, list[FinalLabel]] = defaultdict(list)
    for final in finals:
        finals_by_step[final.step_id].append(final)

    def cell(step: Step, behaviour: str, name: str) -> LabelCell:
        label = mine.get((step.pk, behaviour))
        if label is None:
            return LabelCell(behaviour, name, None)
        return LabelCell(behaviour, name, label.value, label.comment)

    focus = {
        f["step"]: {"rank": rank, "p": f.get("p")}
        for rank, f in enumerate(assignment.focus_steps if assignment else [])
        if isinstance(f, dict) and isinstance(f.get("step"), int)
    }
    unread = unread_actions(trajectory.metadata, steps)
    required = required_steps(
        assignment=assignment,
        trajectory=trajectory,
        indexes=[s.index for s in steps],
        flagged={s.index for s in steps if flags_by_step[s.pk]},
    )
    views = []
    for step in steps:
        tool_calls, orphans = _tool_calls(step, flags_by_step[step.pk], unread)
        on_calls = {f.pk for call in tool_calls for f in call.flags}
        views.append(
            StepView(
                step=step,
                reasoning=step.reasoning,
                blocks=markdown_blocks(step.text),
                tool_calls=tool_calls,
                orphan_results=orphans,
                overall=cell(step, "", "Overall"),
                behaviours=[cell(step, b.slug, b.name) for b in behaviours],
                others=others[step.pk],
                finals=finals_by_step[step.pk],
                reward=(scoring or {}).get("steps", {}).get(step.index),
                flag_count=len(flags_by_step[step.pk]),
                focus=focus.get(step.index),
                step_flags=[f for f in flags_by_step[step.pk] if f.pk not in on_calls],
                required=step.index in required,
            )
        )
    return ReviewPage(
        trajectory=trajectory,
        prompt=_prompt(trajectory.canonical),
        steps=views,
        behaviours=behaviours,
        assignment=assignment,
        others_visible=visible,
        scoring=scoring,
        labelled=sum(1 for v in views if v.overall.value is not None),
        flags=flags,
        locked_by=review_locked(assignments=assignments),
        required=len(required),
        required_labelled=sum(1 for v in views if v.required and v.overall.value is not None),
    )


def step_label_cells(*, step: Step, user: Any) -> tuple[LabelCell, list[LabelCell]]:
    """One step's label panel after an autosave (the htmx partial)."""
    behaviours = list(
        TrustedBehaviour.objects.filter(
            task_type__slug=step.trajectory.task_type, active=True
        ).order_by("polarity", "slug")
    )
    mine = {label.behaviour: label for label in StepLabel.objects.filter(step=step, reviewer=user)}

    def cell(behaviour: str, name: str) -> LabelCell:
        label = mine.get(behaviour)
        if label is None:
            return LabelCell(behaviour, name, None)
        return LabelCell(behaviour, name, label.value, label.comment)

    return cell("", "Overall"), [cell(b.slug, b.name) for b in behaviours]


def my_label_value(*, step: Step, user: Any, behaviour: str) -> int | None:
    """The user's stored value for one label (None: no label), to detect a stale write."""
    return (
        StepLabel.objects.filter(step=step, reviewer=user, behaviour=behaviour)
        .values_list("value", flat=True)
        .first()
    )


def behaviour_slugs(*, task_type: str) -> frozenset[str]:
    return frozenset(
        TrustedBehaviour.objects.filter(task_type__slug=task_type, active=True).values_list(
            "slug", flat=True
        )
    )


def label_history(*, trajectory: Trajectory, limit: int = 1000) -> list[LabelEvent]:
    """The audit trail of a trajectory's labels, newest first."""
    return list(
        LabelEvent.objects.filter(step__trajectory=trajectory)
        .select_related("reviewer", "step")
        .order_by("-id")[:limit]
    )
