"""Reads for the safety domain: the flag queue's filters, spans for highlighting, policies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Count, Q, QuerySet
from django.db.models.expressions import RawSQL

from annotations.importers import UNREAD_KEY
from annotations.models import Step, Trajectory
from annotations.search import SPLIT, query_sql
from core.params import parse_int
from core.queries import count_upto, distinct_values
from safety.models import Flag, FlagStatus, PendingScan, Policy, PolicyVersion, Severity

FLAG_FILTERS = (
    "status",
    "severity",
    "rule",
    "category",
    "task_type",
    "policy_version",
    "trajectory",
    "q",
)

# The queue's text search: command, rule and message as ``simple`` words, split where the
# trajectory search splits, held by the GIN index ``flag_search_words`` (the expression here and
# in migration 0006 must stay identical, or PostgreSQL stops using the index).
FLAG_WORDS_SQL = (
    "to_tsvector('simple'::regconfig, translate("
    "left(safety_flag.command, 20000) || ' ' || safety_flag.rule_id || ' ' || safety_flag.message,"
    f" '{SPLIT}', '{' ' * len(SPLIT)}'))"
)


def flag_search(qs: QuerySet[Flag], words: str) -> QuerySet[Flag]:
    """Flags whose command, rule or message hold ``words`` (a phrase, the last word a prefix,
    as in the trajectory search); a plain substring test off PostgreSQL."""
    if connection.vendor != "postgresql":
        return qs.filter(
            Q(command__icontains=words) | Q(rule_id__icontains=words) | Q(message__icontains=words)
        )
    sql = f"{FLAG_WORDS_SQL} @@ {query_sql('%s')}"
    match = RawSQL(sql, [words], output_field=BooleanField())  # noqa: S611 (words a parameter)
    return qs.filter(match)


def flag_queue(*, filters: Mapping[str, str]) -> QuerySet[Flag]:
    """Flags for the review queue; ``status`` defaults to open; unknown values match nothing.

    The trajectory, step and policy version come without their JSON (what the queue shows is
    their names): a policy's spec is about 90 KB, read again for every row of a page."""
    qs = Flag.objects.select_related(
        "trajectory", "step", "policy_version__policy", "reviewer"
    ).defer(
        "trajectory__canonical",
        "trajectory__outcome",
        "trajectory__metadata",
        "step__reasoning",
        "step__text",
        "step__tool_calls",
        "step__commands",
        "step__tool_results",
        "policy_version__spec",
    )
    status = filters.get("status", FlagStatus.OPEN)
    if status and status != "all":
        qs = qs.filter(status=status)
    if severity := filters.get("severity"):
        qs = qs.filter(severity=severity)
    if rule := filters.get("rule"):
        qs = qs.filter(rule_id=rule)
    if category := filters.get("category"):
        qs = qs.filter(category=category)
    if task_type := filters.get("task_type"):
        qs = qs.filter(trajectory__task_type=task_type)
    if version := filters.get("policy_version"):
        version_id = parse_int(version)
        qs = qs.filter(policy_version_id=version_id) if version_id is not None else qs.none()
    if words := filters.get("q", "").strip():
        qs = flag_search(qs, words[:200])
    if trajectory := filters.get("trajectory"):
        trajectory_id = parse_int(trajectory)
        qs = qs.filter(trajectory_id=trajectory_id) if trajectory_id is not None else qs.none()
    return qs.order_by("-id")


# A queue page, and how far its matches are counted ("1000+" beyond).
FLAG_PAGE_SIZE = 50
FLAG_COUNT_LIMIT = 1000


@dataclass
class FlagPage:
    rows: list[Flag]
    next_cursor: int | None
    total: int
    more: bool  # more than ``total`` match (counting stopped at FLAG_COUNT_LIMIT)


def flag_page(*, filters: Mapping[str, str], cursor: str = "") -> FlagPage:
    """One page of the queue by keyset (newest first, ids below ``cursor``) and the number of
    matches up to FLAG_COUNT_LIMIT: the cost of a page at any depth, never a full count."""
    qs = flag_queue(filters=filters)
    after = parse_int(cursor)  # ASCII digits within a bigint; anything else: the first page
    rows = list((qs.filter(id__lt=after) if after is not None else qs)[: FLAG_PAGE_SIZE + 1])
    # A first page that holds every match is its own count; otherwise count, up to the bound.
    if after is None and len(rows) <= FLAG_PAGE_SIZE:
        total = len(rows)
    else:
        total = count_upto(qs, FLAG_COUNT_LIMIT)
    next_cursor = rows[FLAG_PAGE_SIZE - 1].pk if len(rows) > FLAG_PAGE_SIZE else None
    return FlagPage(
        rows[:FLAG_PAGE_SIZE], next_cursor, min(total, FLAG_COUNT_LIMIT), total > FLAG_COUNT_LIMIT
    )


def flag_facets() -> dict[str, list[tuple[str, str]]]:
    """(value, label) pairs for the queue's filter menus (loose index scans: a probe per value);
    task types are those of the stored trajectories, policy versions the newest 50."""

    def same(values: list[str]) -> list[tuple[str, str]]:
        return [(v, v) for v in values]

    versions = PolicyVersion.objects.select_related("policy").defer("spec").order_by("-id")[:50]
    return {
        "severity": same(list(Severity.values)),
        "status": same([*FlagStatus.values, "all"]),
        "rule": same(distinct_values(Flag, "rule_id", limit=500)),
        "category": same(distinct_values(Flag, "category", limit=500)),
        "task_type": same(distinct_values(Trajectory, "task_type", limit=500)),
        "policy_version": [(str(v.pk), f"{v.policy.name} v{v.number}") for v in versions],
    }


def open_flag_counts() -> dict[str, int]:
    rows = Flag.objects.filter(status=FlagStatus.OPEN).values("severity").annotate(n=Count("id"))
    counts = {s: 0 for s in Severity.values}
    counts.update({row["severity"]: row["n"] for row in rows})
    return counts


@dataclass(frozen=True)
class PendingScans:
    count: int
    first: list[PendingScan]


# Beyond this many, the flag queue says "more than" (counting further would read them all).
PENDING_COUNT_LIMIT = 10_000


def pending_scans(*, limit: int) -> PendingScans:
    """Import scans that failed or could not be queued, oldest first (the flag queue shows
    them: such a trajectory has no flags yet, or only some)."""
    qs = PendingScan.objects.select_related("trajectory").order_by("created_at", "id")
    first = list(qs[:limit])
    # Counted only when there are more than a screen's worth, and then only up to a bound.
    count = len(first) if len(first) < limit else count_upto(qs, PENDING_COUNT_LIMIT)
    return PendingScans(count=count, first=first)


def policies_with_versions() -> QuerySet[Policy]:
    return Policy.objects.prefetch_related("versions").annotate(rule_count=Count("rules"))


def version_by_ref(ref: str) -> PolicyVersion | None:
    """``slug`` (newest version) or ``slug@N``."""
    slug, _, number = ref.partition("@")
    qs = PolicyVersion.objects.select_related("policy").filter(policy__slug=slug)
    if number:
        parsed = parse_int(number)
        return qs.filter(number=parsed).first() if parsed is not None else None
    return qs.order_by("-number").first()


@dataclass(frozen=True)
class Segment:
    text: str
    marked: bool
    labels: tuple[str, ...] = ()


def highlight(command: str, spans: Iterable[tuple[int, int, str]]) -> list[Segment]:
    """Split ``command`` at every span edge; segments covered by a span are marked.

    Rendering segments (auto-escaped) instead of building HTML keeps untrusted text inert.
    """
    clean = [(max(0, s), min(len(command), e), label) for s, e, label in spans if e > s]
    edges = sorted({0, len(command), *(s for s, _, _ in clean), *(e for _, e, _ in clean)})
    segments: list[Segment] = []
    for start, end in pairwise(edges):
        labels = tuple(sorted({label for s, e, label in clean if s <= start and end <= e}))
        segments.append(Segment(command[start:end], bool(labels), labels))
    return segments


# The rule of the flag an action the importer could not read gets (one per such action).
UNREAD_RULE = "import.actions-not-understood"


def unread_text(item: Mapping[str, Any]) -> str:
    """What an unread action's flag quotes (its ``command``): the importer's excerpt."""
    return str(item.get("excerpt") or item.get("tool") or "")[:2000] or "(no text)"


def unread_actions(metadata: object, steps: Iterable[Step]) -> dict[int, list[dict[str, Any]]]:
    """Each step's actions the importer could not read (``metadata.actions_not_understood``),
    in the importer's order; each item names its tool call (``tool_call_id``; None for
    action-shaped text). A step's flags for them come after its commands and other flags, in
    this order, so the scan and the viewer pair the k-th such flag with the k-th item."""
    items = metadata.get(UNREAD_KEY) if isinstance(metadata, dict) else None
    if not isinstance(items, list):
        return {}
    known = {step.index for step in steps}
    placed: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("step"), int) and item["step"] in known:
            placed.setdefault(item["step"], []).append(item)
    return placed
