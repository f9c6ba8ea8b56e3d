"""Reads that aggregate: agreement reports, disagreements, dashboards and their SVG plot geometry.

Plots are computed here as numbers (points, bar sizes) and drawn by templates, so no chart
library and no markup built in Python.

Nothing here aggregates a whole table on a request. Disagreements come from the label tallies
the label service keeps (``LabelTally``); aggregates over every label, flag or scoring record
(agreement reports, the lead's plots) are computed by the Celery task ``review.refresh_stats``
into a ``StatsSnapshot`` that pages read and date. A page that finds the inputs changed asks
for a refresh and shows the snapshot it has meanwhile; without a broker (tasks run in-process),
or when there is no snapshot yet, the refresh runs inside the request.
"""

from __future__ import annotations

import time as clock
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.core.validators import slug_re
from django.db import connection
from django.db.models import Avg, BooleanField, Count, Max, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotations.agreement import AgreementSummary, PairAgreement, summarize
from annotations.models import (
    FinalLabel,
    LabelEvent,
    LabelTally,
    LabelValue,
    Step,
    StepLabel,
    Trajectory,
)
from core.broker import publish
from core.params import parse_int
from core.queries import distinct_values
from core.roles import SAFETY_LEAD, has_role
from review.access import assignments_for, still_reviewing_trajectories
from review.models import Assignment, AssignmentStatus, ReviewQueue, StatsSnapshot
from review.selectors import counted_labels, queue_rows
from rewards.models import ScoringRecord
from safety.models import Flag
from safety.selectors import open_flag_counts

# --- Snapshots ----------------------------------------------------------------------------------

# With a broker, a snapshot whose inputs changed is recomputed at most this often (seconds), and
# one whose inputs did not change after this long anyway (updates that add no row, such as a
# reward rewritten by the learned part).
SNAPSHOT_MIN_INTERVAL = 30
SNAPSHOT_MAX_AGE = 600
# A refresh that has not finished after this long is presumed lost and asked for again.
SNAPSHOT_REFRESH_TIMEOUT = 900


def _newest_ids(*models: Any) -> str:
    """The newest id of each table, in one query: rows added since show as a changed stamp."""
    parts = ", ".join(
        f"(SELECT max(id) FROM {connection.ops.quote_name(m._meta.db_table)})"  # noqa: S608
        for m in models
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {parts}")
        return ":".join(str(v or 0) for v in cursor.fetchone())


def labels_stamp() -> str:
    """What agreement reports depend on: label changes (each one is a ``LabelEvent``) and
    submitted reviews."""
    submitted = Assignment.objects.aggregate(at=Max("submitted_at"))["at"]
    return f"{_newest_ids(LabelEvent)}:{submitted.isoformat() if submitted else ''}"


def dashboard_stamp() -> str:
    return _newest_ids(ScoringRecord, Flag, Trajectory, LabelEvent)


def stats_refresh(*, key: str) -> StatsSnapshot:
    """Compute the snapshot ``key`` now and store it (what the Celery task runs)."""
    stamp_of, compute = _kind(key)
    stamp = stamp_of()  # before computing: a change made meanwhile asks for another refresh
    started = clock.perf_counter()
    data = compute()
    snapshot, _ = StatsSnapshot.objects.update_or_create(
        key=key,
        defaults={
            "data": data,
            "stamp": stamp,
            "computed_at": timezone.now(),
            "seconds": round(clock.perf_counter() - started, 3),
            "refreshing_since": None,
        },
    )
    return snapshot


def _kind(key: str) -> tuple[Callable[[], str], Callable[[], dict[str, Any]]]:
    """(what its inputs look like now, how to compute it) of the snapshot ``key``."""
    kind, _, rest = key.partition(":")
    if kind == "dashboard":
        return dashboard_stamp, _dashboard_data
    if kind == "agreement":
        queue_slug, _, task_type = rest.partition(":")
        return labels_stamp, lambda: _agreement_data(queue_slug, task_type)
    raise ValueError(f"unknown snapshot {key!r}")


def snapshot(key: str) -> StatsSnapshot:
    """The stored snapshot ``key``, refreshed first if it is missing (or, without a broker,
    out of date); out of date with a broker: a refresh is queued and this one returned."""
    stamp_of, _ = _kind(key)
    row = StatsSnapshot.objects.filter(key=key).first()
    now = timezone.now()
    if row is None or settings.CELERY_TASK_ALWAYS_EAGER:
        if row is None or row.stamp != stamp_of() or _age(row, now) >= SNAPSHOT_MAX_AGE:
            return stats_refresh(key=key)
        return row
    age = _age(row, now)
    if age < SNAPSHOT_MIN_INTERVAL or (age < SNAPSHOT_MAX_AGE and row.stamp == stamp_of()):
        return row
    stale_claim = now - timedelta(seconds=SNAPSHOT_REFRESH_TIMEOUT)
    claimed = (
        StatsSnapshot.objects.filter(pk=row.pk)
        .filter(Q(refreshing_since__isnull=True) | Q(refreshing_since__lt=stale_claim))
        .update(refreshing_since=now)
    )
    if claimed:
        from review.tasks import refresh_stats

        if not publish(refresh_stats, key):
            StatsSnapshot.objects.filter(pk=row.pk).update(refreshing_since=None)
        else:
            row.refreshing_since = now
    return row


def _age(row: StatsSnapshot, now: datetime) -> float:
    return (now - row.computed_at).total_seconds()


def snapshot_info(row: StatsSnapshot) -> dict[str, Any]:
    """When and how fast a snapshot was computed, for the page to say so."""
    return {
        "computed_at": row.computed_at,
        "seconds": row.seconds,
        "refreshing": row.refreshing_since is not None,
    }


# --- Agreement ----------------------------------------------------------------------------------


def _labels(
    queue: ReviewQueue | None, task_type: str
) -> tuple[QuerySet[StepLabel], set[tuple[int, int]] | None]:
    qs = counted_labels().filter(value__isnull=False)
    if queue is not None:
        # Only reviews submitted in this queue count: a half-done review is not a rating yet.
        submitted = Assignment.objects.filter(queue=queue, status=AssignmentStatus.SUBMITTED)
        pairs = submitted.values_list("trajectory_id", "reviewer_id")
        qs = qs.filter(
            step__trajectory_id__in=[t for t, _ in pairs],
            reviewer_id__in=[r for _, r in pairs],
        )
        return qs, set(pairs)
    if task_type:
        qs = qs.filter(step__trajectory__task_type=task_type)
    return qs, None


def label_ratings(
    *, queue: ReviewQueue | None = None, task_type: str = ""
) -> dict[str, dict[tuple[int, str], dict[str, int]]]:
    """behaviour -> (step id, behaviour) -> reviewer username -> value."""
    qs, pair_set = _labels(queue, task_type)
    rows = qs.values_list(
        "step_id", "step__trajectory_id", "behaviour", "reviewer_id", "reviewer__username", "value"
    )
    out: dict[str, dict[tuple[int, str], dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for step_id, trajectory_id, behaviour, reviewer_id, username, value in rows.iterator():
        if pair_set is not None and (trajectory_id, reviewer_id) not in pair_set:
            continue
        out[behaviour][(step_id, behaviour)][username] = value
    return out


def _agreement_data(queue_slug: str, task_type: str) -> dict[str, Any]:
    """Kappas per behaviour (overall first) as JSON: what an agreement snapshot holds."""
    queue = ReviewQueue.objects.filter(slug=queue_slug).first() if queue_slug else None
    ratings = label_ratings(queue=queue, task_type=task_type)
    sections = [
        {"behaviour": behaviour or "overall", "summary": asdict(summarize(ratings[behaviour]))}
        for behaviour in sorted(ratings, key=lambda b: (b != "", b))
    ]
    return {"sections": sections, "overall": asdict(summarize(ratings.get("", {})))}


def _summary(data: dict[str, Any]) -> AgreementSummary:
    return AgreementSummary(**{**data, "pairs": [PairAgreement(**p) for p in data["pairs"]]})


def agreement_report(*, queue_slug: str = "", task_type: str = "") -> dict[str, Any]:
    """Kappas per behaviour (overall first) and the reviewer-vs-reviewer matrix for overall,
    from the snapshot of this queue and task type."""
    queue = ReviewQueue.objects.filter(slug=queue_slug).first() if queue_slug else None
    task_types = distinct_values(Trajectory, "task_type")
    snap = None
    if not task_type or task_type in task_types:  # one snapshot per known queue and task type
        snap = snapshot(f"agreement:{queue.slug if queue else ''}:{task_type}")
        data = snap.data
    else:  # a task type no trajectory has: nothing to aggregate
        data = _agreement_data("", task_type)
    sections = [
        {"behaviour": s["behaviour"], "summary": _summary(s["summary"])} for s in data["sections"]
    ]
    overall = _summary(data["overall"])
    by_pair = {(p.rater_a, p.rater_b): p for p in overall.pairs}
    matrix = []
    for a in overall.raters:
        cells = []
        for b in overall.raters:
            pair = by_pair.get((a, b)) or by_pair.get((b, a))
            cells.append({"rater": b, "self": a == b, "pair": pair})
        matrix.append({"rater": a, "cells": cells})
    return {
        "sections": sections,
        "raters": overall.raters,
        "matrix": matrix,
        "queues": ReviewQueue.objects.order_by("name"),
        "task_types": task_types,
        "queue_slug": queue_slug,
        "task_type": task_type,
        "snapshot": snapshot_info(snap) if snap else None,
    }


# --- Disagreements ------------------------------------------------------------------------------

# One screen of disagreements a request, paged by keyset like the other lists.
DISAGREEMENTS_PAGE = 50


@dataclass
class DisagreementRow:
    step: Any
    behaviour: str
    votes: list[tuple[str, int]]
    final: FinalLabel | None
    key: tuple[bool, int, int, str]  # (resolved, trajectory, step index, behaviour): its place


@dataclass
class DisagreementPage:
    rows: list[DisagreementRow]
    next_cursor: str | None


def disagreement_cursor(key: tuple[bool, int, int, str]) -> str:
    """A row's place in the list as a URL value: ``resolved-trajectory-step-behaviour``."""
    resolved, trajectory_id, step_index, behaviour = key
    return f"{int(resolved)}-{trajectory_id}-{step_index}-{behaviour}"


def parse_disagreement_cursor(raw: str) -> tuple[bool, int, int, str] | None:
    """The place a cursor names, or None if it is not one of this list's cursors."""
    parts = raw.split("-", 3)
    if len(parts) != 4 or parts[0] not in ("0", "1"):
        return None
    trajectory_id, step_index = parse_int(parts[1]), parse_int(parts[2], hi=2**31 - 1)
    behaviour = parts[3]
    if trajectory_id is None or step_index is None:
        return None
    if len(behaviour) > 100 or (behaviour and not slug_re.fullmatch(behaviour)):
        return None
    return parts[0] == "1", trajectory_id, step_index, behaviour


# A row comparison on the disagreement index's own columns: PostgreSQL starts the index scan
# at that place (the constant SQL takes the values as parameters).
_AFTER_PLACE = (
    '("annotations_labeltally"."resolved", "annotations_labeltally"."trajectory_id", '
    '"annotations_labeltally"."step_index", "annotations_labeltally"."behaviour") '
    "> (%s, %s, %s, %s)"
)


def disagreement_page(
    *,
    queue_slug: str = "",
    task_type: str = "",
    after: tuple[bool, int, int, str] | None = None,
    limit: int | None = None,
    viewer: Any = None,
) -> DisagreementPage:
    """Steps (and behaviours) whose reviewers gave different labels, with any final label:
    unresolved first, then in trajectory and step order, ``limit`` past the place ``after``.

    Read from the split tallies in that order (an index), starting at ``after`` by a row
    comparison on the index's own columns, so any page costs one page. Within a queue only
    the reviews submitted there count; those votes are a subset of all the votes, so a split
    within the queue is a split tally too, checked again with the queue's votes. A ``viewer``
    sees nothing of the trajectories they are still reviewing."""
    limit = limit or DISAGREEMENTS_PAGE
    queue = ReviewQueue.objects.filter(slug=queue_slug).first() if queue_slug else None
    tallies = LabelTally.objects.filter(split=True).order_by(
        "resolved", "trajectory_id", "step_index", "behaviour"
    )
    pairs: set[tuple[int, int]] | None = None
    if queue is not None:
        submitted = Assignment.objects.filter(queue=queue, status=AssignmentStatus.SUBMITTED)
        pairs = set(submitted.values_list("trajectory_id", "reviewer_id"))
        tallies = tallies.filter(trajectory_id__in=submitted.values("trajectory_id"))
    elif task_type:
        tallies = tallies.filter(trajectory__task_type=task_type)
    if viewer is not None:
        # blind review: nothing of a trajectory the viewer is still reviewing
        tallies = tallies.exclude(trajectory_id__in=still_reviewing_trajectories(viewer))
    rows: list[DisagreementRow] = []
    while len(rows) <= limit:
        window = tallies
        if after is not None:
            place = RawSQL(_AFTER_PLACE, list(after), output_field=BooleanField())  # noqa: S611
            window = window.filter(place)
        batch = list(
            window.values_list(
                "id", "step_id", "behaviour", "resolved", "trajectory_id", "step_index"
            )[: limit + 1]
        )
        if not batch:
            break
        rows.extend(_disagreement_batch(batch, pairs))
        if len(batch) <= limit:
            break  # the tallies ran out
        last = batch[-1]
        after = (last[3], last[4], last[5], last[2])
    if len(rows) > limit:
        return DisagreementPage(rows[:limit], disagreement_cursor(rows[limit - 1].key))
    return DisagreementPage(rows, None)


def _disagreement_batch(
    batch: list[tuple[int, int, str, bool, int, int]], pairs: set[tuple[int, int]] | None
) -> list[DisagreementRow]:
    step_ids = {row[1] for row in batch}
    steps = (
        Step.objects.select_related("trajectory")
        .only("id", "index", "trajectory_id", "trajectory__id", "trajectory__external_id")
        .in_bulk(step_ids)
    )
    votes: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    # The steps' trajectories too: counting a label joins its step (for its review), and
    # without a condition on the step table PostgreSQL hashes all of it (a scan of the hub).
    trajectory_ids = {step.trajectory_id for step in steps.values()}
    labels = (
        counted_labels()
        .filter(step_id__in=step_ids, step__trajectory_id__in=trajectory_ids, value__isnull=False)
        .values_list("step_id", "behaviour", "reviewer_id", "reviewer__username", "value")
    )
    for step_id, behaviour, reviewer_id, username, value in labels:
        if pairs is not None and (steps[step_id].trajectory_id, reviewer_id) not in pairs:
            continue
        votes[(step_id, behaviour)][username] = value
    finals = {
        (f.step_id, f.behaviour): f
        for f in FinalLabel.objects.filter(step_id__in=step_ids).select_related("resolved_by")
    }
    return [
        DisagreementRow(
            steps[step_id],
            behaviour,
            sorted(got.items()),
            finals.get(key),
            (resolved, trajectory_id, step_index, behaviour),
        )
        for _, step_id, behaviour, resolved, trajectory_id, step_index in batch
        if step_id in steps and len(set((got := votes[(key := (step_id, behaviour))]).values())) > 1
    ]


def unresolved_disagreements() -> int:
    """How many split tallies have no final label yet (a count over a partial index)."""
    return LabelTally.objects.filter(split=True, resolved=False).count()


# --- Dashboard ----------------------------------------------------------------------------------

W, H, PAD = 560, 180, 30


def _bars(points: list[tuple[str, float]], *, fmt: str = "{:.0f}") -> dict[str, Any]:
    """Vertical bars scaled into the plot box."""
    top = max((v for _, v in points), default=0) or 1
    width = (W - 2 * PAD) / max(len(points), 1)
    bars = []
    for i, (label, value) in enumerate(points):
        height = (H - 2 * PAD) * value / top
        bars.append(
            {
                "x": round(PAD + i * width + 2, 1),
                "y": round(H - PAD - height, 1),
                "w": round(max(width - 4, 1), 1),
                "h": round(height, 1),
                "label": label,
                "value": fmt.format(value),
                "tx": round(PAD + i * width + width / 2, 1),
            }
        )
    return {"w": W, "h": H, "bars": bars, "max": fmt.format(top), "base": H - PAD, "pad": PAD}


def _hbars(points: list[tuple[str, float]]) -> dict[str, Any]:
    """Horizontal bars for rates in [0, 1] with a label column."""
    row, label_w = 22, 220
    bars = [
        {
            "y": PAD // 2 + i * row,
            "w": round((W - label_w - 60) * min(max(v, 0), 1), 1),
            "label": label,
            "value": f"{v:.0%}",
            "ty": PAD // 2 + i * row + 14,
        }
        for i, (label, v) in enumerate(points)
    ]
    return {"w": W, "h": PAD + row * max(len(points), 1), "bars": bars, "x0": label_w}


# A line plot is 500 px wide: more points than this per line only make the page slower (a long
# RL run has thousands of training steps), and dots are drawn only on lines this sparse.
PLOT_POINTS = 250
DOTS_UP_TO = 60


def _thin(points: list[tuple[float, float, int]]) -> list[tuple[float, float]]:
    """(x, y, weight) points as at most ``PLOT_POINTS`` (x, y): runs of consecutive points
    merged, each at their mean x and their weighted mean y."""
    if len(points) <= PLOT_POINTS:
        return [(x, y) for x, y, _ in points]
    size = -(-len(points) // PLOT_POINTS)
    out = []
    for start in range(0, len(points), size):
        group = points[start : start + size]
        weight = sum(w for _, _, w in group) or 1
        out.append(
            (sum(x for x, _, _ in group) / len(group), sum(y * w for _, y, w in group) / weight)
        )
    return out


def _lines(series: dict[str, list[tuple[float, float]]], lo: float, hi: float) -> dict[str, Any]:
    """Polylines over a shared x range; y clamped into [lo, hi]; dots on sparse lines only."""
    xs = [x for pts in series.values() for x, _ in pts]
    x0, x1 = (min(xs), max(xs)) if xs else (0, 1)
    span = (x1 - x0) or 1
    out = []
    for i, (name, pts) in enumerate(sorted(series.items())):
        coords = [
            (
                round(PAD + (W - 2 * PAD) * (x - x0) / span, 1),
                round(H - PAD - (H - 2 * PAD) * (min(max(y, lo), hi) - lo) / ((hi - lo) or 1), 1),
            )
            for x, y in pts
        ]
        out.append(
            {
                "name": name,
                "points": " ".join(f"{x},{y}" for x, y in coords),
                "dots": coords if len(coords) <= DOTS_UP_TO else [],
                "color": i % 6,
            }
        )
    return {"w": W, "h": H, "series": out, "lo": lo, "hi": hi, "x0": x0, "x1": x1, "pad": PAD}


def _day_start(day: Any) -> datetime:
    """Midnight starting ``day`` in the current time zone (what ``__date`` lookups compare in),
    so a day's rows are a range on the indexed timestamp."""
    return timezone.make_aware(datetime.combine(day, time.min))


def labels_per_day(*, days: int = 14, user: Any = None) -> dict[str, Any]:
    since = timezone.now() - timedelta(days=days - 1)
    qs = StepLabel.objects.filter(updated_at__gte=_day_start(since.date()), value__isnull=False)
    if user is not None:
        qs = qs.filter(reviewer=user)
    counts = dict(
        qs.annotate(day=TruncDate("updated_at")).values_list("day").annotate(n=Count("id"))
    )
    points = []
    for offset in range(days):
        day = (since + timedelta(days=offset)).date()
        points.append((day.strftime("%d %b"), float(counts.get(day, 0))))
    return _bars(points)


def flag_rate_by_rule(*, limit: int = 10) -> dict[str, Any]:
    """Share of stored trajectories with at least one flag of each rule."""
    total = Trajectory.objects.count() or 1
    rows = (
        Flag.objects.values("rule_id")
        .annotate(n=Count("trajectory", distinct=True))
        .order_by("-n", "rule_id")[:limit]
    )
    return _hbars([(row["rule_id"], row["n"] / total) for row in rows])


def training_runs(*, limit: int = 6) -> dict[str, Any]:
    """Mean reward and unsafe rate per training step, one line per run."""
    rows = list(
        ScoringRecord.objects.exclude(run="")
        .filter(step__isnull=False)
        .values("run", "step")
        .annotate(
            reward=Avg("reward"),
            n=Count("id"),
            unsafe=Count("id", filter=Q(unsafe=True)),
        )
        .order_by("run", "step")
    )
    runs = sorted({r["run"] for r in rows})[-limit:]
    weighted_reward: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    weighted_unsafe: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for r in rows:
        if r["run"] in runs:
            weighted_reward[r["run"]].append((r["step"], r["reward"], r["n"]))
            weighted_unsafe[r["run"]].append((r["step"], r["unsafe"] / r["n"], r["n"]))
    reward = {run: _thin(points) for run, points in weighted_reward.items()}
    unsafe = {run: _thin(points) for run, points in weighted_unsafe.items()}
    values = [y for pts in reward.values() for _, y in pts]
    lo, hi = (min(values, default=-1.0), max(values, default=1.0))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return {
        "reward": _lines(reward, round(lo, 2), round(hi, 2)),
        "unsafe": _lines(unsafe, 0.0, 1.0),
        "runs": runs,
    }


def _dashboard_data() -> dict[str, Any]:
    """The lead's plots over the whole hub: what the dashboard snapshot holds."""
    return {
        "flag_plot": flag_rate_by_rule(),
        "runs_plot": training_runs(),
        "labels_plot": labels_per_day(),
    }


def dashboard(*, user: Any) -> dict[str, Any]:
    """What needs attention for this user's role, and the plots (a lead's from the snapshot)."""
    now = timezone.now()
    is_lead = has_role(user, SAFETY_LEAD)
    mine = assignments_for(user)
    today = _day_start(now.date())
    context: dict[str, Any] = {
        "queues": queue_rows(user=user),
        "open_assignments": list(
            mine.filter(status=AssignmentStatus.IN_PROGRESS, locked_until__gt=now)
            .select_related("queue", "trajectory")
            .defer("trajectory__canonical", "trajectory__metadata", "trajectory__outcome")
            .order_by("locked_until")[:10]
        ),
        "my_submitted": mine.filter(status=AssignmentStatus.SUBMITTED).count(),
        "my_labels_today": StepLabel.objects.filter(
            reviewer=user,
            updated_at__gte=today,
            updated_at__lt=today + timedelta(days=1),
            value__isnull=False,
        ).count(),
        "label_values": LabelValue,
    }
    if is_lead:
        snap = snapshot("dashboard")
        counts = open_flag_counts()
        context.update(
            {
                **snap.data,
                "snapshot": snapshot_info(snap),
                "flag_counts": counts,
                "open_flags": sum(counts.values()),
                "unresolved": unresolved_disagreements(),
            }
        )
    else:
        context["labels_plot"] = labels_per_day(user=user)
    return context
