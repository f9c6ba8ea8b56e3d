"""Streaming JSONL exports of step labels: PRM-style rows and one row per annotator.

The labelled trajectories are listed once, by id, from the labels' side; then a window of
``CHUNK`` of them at a time is narrowed to those asked for (by primary key, the ids sent as one
array) and read with four queries that fetch only what the rows hold (the messages before the
first answer, the steps' text, tool calls and commands, the labels with their reviewers' names,
the final labels) as plain values, no model instances; the per-annotator rows, which hold no
prompt or completion, need three (the labels, the steps' positions, each annotator's last
change). Memory stays that of one chunk however many trajectories match, and a chunk's lines
go out as one piece.
"""

from __future__ import annotations

import gc
import json
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Max, OuterRef, QuerySet, Subquery, TextField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast

from annotations.models import FinalLabel, LabelTally, Step, StepLabel, Trajectory
from core.queries import AnyOf

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a requirement
    orjson = None


def _loads(text: str) -> Any:
    """JSON text as Python values, as ``json.loads`` reads it (orjson, faster, when it can:
    it refuses integers past 64 bits, which json reads)."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


CHUNK = 500

_paused = 0
_paused_lock = threading.Lock()


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector off while a chunk is built (and on again after, when no other
    thread is building one). A chunk is tens of thousands of fresh lists, dicts and tuples that
    hold no cycles (reference counting frees them), yet they made the collector walk the
    whole heap again and again: with it on, half the export's time at 50k trajectories."""
    global _paused
    with _paused_lock:
        _paused += 1
        if _paused == 1:
            gc.disable()
    try:
        yield
    finally:
        with _paused_lock:
            _paused -= 1
            if _paused == 0:
                gc.enable()


# A chunk holds tens of thousands of these at once. Each step keeps its completion text, not
# the parsed JSON it was made from, and a label is a tuple of plain values (which Python's
# cycle collector stops tracking): a chunk of parsed documents kept the collector walking the
# heap over and over, half the export's time at 50k trajectories.
class _Label(NamedTuple):
    behaviour: str
    value: int | None
    comment: str
    username: str


@dataclass(slots=True)
class _Step:
    """What the rows need of a step."""

    index: int
    completion: str
    labels: list[_Label] = field(default_factory=list)
    finals: dict[str, int] = field(default_factory=dict)
    votes: dict[str, list[int]] | None = None  # the labels' values by behaviour, read once


@dataclass(slots=True)
class _Trajectory:
    pk: int
    external_id: str
    task_type: str
    outcome: Any
    prompt: str
    steps: list[_Step] = field(default_factory=list)
    last_change: dict[str, datetime] = field(default_factory=dict)  # each annotator's last label


def _labelled_ids(after: int) -> list[int]:
    """Every trajectory past ``after`` with a label of any kind, in id order (a superset of
    those with a counted label: each window is narrowed after). Read from the label tallies,
    indexed by trajectory (the label service keeps one for every step and label it writes
    to), and, for labels without a value (which a rebuild of the tallies leaves out), from
    those labels' steps by key: a listing from the labels' side looked every label's step up
    (2.5 s at 200k trajectories, whatever the export's filters), and a join of labels and
    steps is one PostgreSQL answers by hashing the whole step table."""
    tallied = (
        LabelTally.objects.filter(trajectory_id__gt=after)
        .order_by("trajectory_id")
        .values_list("trajectory_id", flat=True)
        .distinct()
    )
    trajectory = Step.objects.filter(pk=OuterRef("step_id")).order_by().values("trajectory_id")
    unvalued = (
        StepLabel.objects.filter(value__isnull=True)
        .annotate(trajectory=Subquery(trajectory))
        .order_by()
        .values_list("trajectory", flat=True)
        .distinct()
    )
    return sorted({*tallied, *(pk for pk in unvalued if pk is not None and pk > after)})


def _text(name: str) -> Cast:
    return Cast(name, TextField())


# The messages before the first assistant message (what ``prompt_text`` reads), cut out in
# the database so only the prompt of each trajectory crosses the wire.
_MESSAGES = """CASE jsonb_typeof("annotations_trajectory"."canonical" -> 'messages')
    WHEN 'array' THEN "annotations_trajectory"."canonical" -> 'messages' ELSE '[]'::jsonb END"""
_PROMPT = RawSQL(  # noqa: S611 (constant SQL, no input)
    f"""(SELECT coalesce(jsonb_agg(e.m ORDER BY e.i), '[]'::jsonb)::text
        FROM jsonb_array_elements({_MESSAGES}) WITH ORDINALITY AS e(m, i)
        WHERE e.i < coalesce((SELECT min(a.i) FROM jsonb_array_elements({_MESSAGES})
                              WITH ORDINALITY AS a(m, i) WHERE a.m ->> 'role' = 'assistant'),
                             9223372036854775807))""",  # noqa: S608 (no input in it)
    [],
)


def _prompt_messages() -> Any:
    from django.db import connection

    if connection.vendor == "postgresql":
        return _PROMPT
    return Cast(KeyTransform("messages", "canonical"), TextField())


def _chunk(
    ids: list[int],
    *,
    annotators: bool,
    labels: QuerySet[StepLabel] | None = None,
    finals: QuerySet[FinalLabel] | None = None,
) -> list[_Trajectory]:
    """Those of the trajectories ``ids`` that hold a label of ``labels`` (any label when None),
    with their steps, labels and final labels: four queries for PRM rows, three for the
    per-annotator rows, which hold no prompt, completion, outcome or final label (so neither
    the trajectories' documents nor the steps' text are read for them).

    The labels are read first, unordered (every row built from them is ordered by what it
    holds: sorted names, behaviours and step positions), and only their trajectories' prompts
    and steps are read after them."""
    by_step: dict[int, list[_Label]] = defaultdict(list)
    chosen = (
        (StepLabel.objects.all() if labels is None else labels)
        .filter(AnyOf("step__trajectory_id", ids))
        .order_by()
    )
    holding: set[int] = set()
    if annotators:  # comments are in the per-annotator rows only
        fields = ("step__trajectory_id", "step_id", "behaviour", "value", "comment")
        for trajectory_id, step_id, behaviour, value, comment, username in chosen.values_list(
            *fields, "reviewer__username"
        ):
            holding.add(trajectory_id)
            by_step[step_id].append(_Label(behaviour, value, comment, username))
    else:
        for trajectory_id, step_id, behaviour, value, username in chosen.values_list(
            "step__trajectory_id", "step_id", "behaviour", "value", "reviewer__username"
        ):
            holding.add(trajectory_id)
            by_step[step_id].append(_Label(behaviour, value, "", username))
    ids = [pk for pk in ids if pk in holding]
    if not ids:
        return []
    if annotators:
        trajectories = {
            pk: _Trajectory(pk, external_id, task_type, None, "")
            for pk, external_id, task_type in Trajectory.objects.filter(
                AnyOf("pk", ids)
            ).values_list("pk", "external_id", "task_type")
        }
        for pk, trajectory_id, index in (
            Step.objects.filter(AnyOf("trajectory_id", ids))
            .order_by("trajectory_id", "index")
            .values_list("pk", "trajectory_id", "index")
        ):
            trajectories[trajectory_id].steps.append(_Step(index, "", by_step.get(pk, [])))
        # Each annotator's last change, one per trajectory and annotator, by the database:
        # read with every label, their times were most of the export's work (each parsed in
        # Python), to keep one per row.
        last_change = (
            chosen.values_list("step__trajectory_id", "reviewer__username")
            .annotate(last=Max("updated_at"))
            .order_by()
        )
        for trajectory_id, username, last in last_change:
            if trajectory_id in trajectories:
                trajectories[trajectory_id].last_change[username] = last
        return [trajectories[pk] for pk in ids if pk in trajectories]
    trajectories = {
        pk: _Trajectory(
            pk, external_id, task_type, _loads(outcome), _prompt(_loads(messages or "[]"))
        )
        for pk, external_id, task_type, outcome, messages in Trajectory.objects.filter(
            AnyOf("pk", ids)
        ).values_list("pk", "external_id", "task_type", _text("outcome"), _prompt_messages())
    }
    steps: dict[int, _Step] = {}
    for pk, trajectory_id, index, text, tool_calls, commands in (
        Step.objects.filter(AnyOf("trajectory_id", ids))
        .order_by("trajectory_id", "index")
        .values_list("pk", "trajectory_id", "index", "text", _text("tool_calls"), _text("commands"))
    ):
        completion = _completion(text, _loads(tool_calls), _loads(commands))
        step = _Step(index, completion, by_step.get(pk, []))
        steps[pk] = step
        trajectories[trajectory_id].steps.append(step)
    final_rows = (
        (FinalLabel.objects.all() if finals is None else finals)
        .filter(AnyOf("step__trajectory_id", ids))
        .order_by()  # one final label per step and behaviour (a unique constraint)
        .values_list("step_id", "behaviour", "value")
    )
    for step_id, behaviour, value in final_rows:
        steps[step_id].finals.setdefault(behaviour, value)
    return [trajectories[pk] for pk in ids if pk in trajectories]


def _with_labels(
    qs: QuerySet[Trajectory],
    *,
    annotators: bool = False,
    after: int = 0,
    labels: QuerySet[StepLabel] | None = None,
) -> Iterator[list[_Trajectory]]:
    """The labelled trajectories of ``qs`` with ids above ``after``, in id order, a chunk at a
    time. ``labels`` narrows which labels count (review passes the submitted ones only)."""
    for _last, chunk in _labelled_chunks(qs, annotators=annotators, after=after, labels=labels):
        yield chunk


def _labelled_chunks(
    qs: QuerySet[Trajectory],
    *,
    annotators: bool,
    after: int,
    labels: QuerySet[StepLabel] | None = None,
    finals: QuerySet[FinalLabel] | None = None,
) -> Iterator[tuple[int, list[_Trajectory]]]:
    """Each chunk with the last id it covered (the cursor to resume after, even when one of its
    trajectories was deleted meanwhile, or none of its labelled ones matched ``qs``): the
    labelled ids in windows of ``CHUNK``, each narrowed to ``qs`` by primary key."""
    candidates = _labelled_ids(after)
    for start in range(0, len(candidates), CHUNK):
        window = candidates[start : start + CHUNK]
        ids = list(qs.filter(AnyOf("pk", window)).order_by("id").values_list("id", flat=True))
        chunk = _chunk(ids, annotators=annotators, labels=labels, finals=finals) if ids else []
        yield window[-1], chunk


def labelled_count(qs: QuerySet[Trajectory], *, labels: QuerySet[StepLabel] | None = None) -> int:
    """How many trajectories of ``qs`` hold a label of ``labels`` (any label when None): the
    rows an export of ``qs`` holds, counted window by window as the export reads them. One
    count of the whole (the trajectories whose steps have a label) walked every step of the
    hub, 0.9 s at 1M steps, however few were labelled."""
    candidates = _labelled_ids(0)
    chosen = StepLabel.objects.all() if labels is None else labels
    total = 0
    for start in range(0, len(candidates), CHUNK):
        window = candidates[start : start + CHUNK]
        wanted = qs.filter(AnyOf("pk", window)).order_by().values("pk")
        holding = chosen.filter(AnyOf("step__trajectory_id", window)).filter(
            step__trajectory_id__in=wanted
        )
        total += holding.order_by().values("step__trajectory_id").distinct().count()
    return total


def prompt_text(canonical: dict[str, Any]) -> str:
    """The messages before the first assistant step, as ``role: content`` paragraphs."""
    parts = []
    for message in canonical.get("messages", []):
        if message.get("role") == "assistant":
            break
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        parts.append(f"{message.get('role')}: {text}")
    return "\n\n".join(parts)


def _prompt(messages: Any) -> str:
    return prompt_text({"messages": messages})


def completion_text(step: Step) -> str:
    """A step as the policy produced it: text, then each tool call (shell calls as ``$ cmd``)."""
    return _completion(step.text, step.tool_calls, step.commands)


def _completion(text: str, tool_calls: Any, commands: Any) -> str:
    shell = {c.get("tool_call_id"): c.get("command", "") for c in commands or []}
    parts = [text] if text else []
    for call in tool_calls or []:
        call_id = call.get("id") if isinstance(call, dict) else None
        if call_id in shell:
            parts.append(f"$ {shell[call_id]}")
        elif isinstance(call, dict):
            function = call.get("function") or {}
            parts.append(
                json.dumps(
                    {"tool": function.get("name"), "arguments": function.get("arguments")},
                    ensure_ascii=False,
                )
            )
    return "\n".join(parts)


def consensus(values: list[int]) -> int | None:
    """The strict majority (more than any other value); None on a tie or no votes."""
    if values and values.count(values[0]) == len(values):
        return values[0]  # unanimous, as most steps are
    ranked = Counter(values).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _step_label(step: _Step, behaviour: str) -> tuple[int | None, str | None]:
    if behaviour in step.finals:
        return step.finals[behaviour], "final"
    if step.votes is None:
        step.votes = {}
        for label in step.labels:
            if label.value is not None:
                step.votes.setdefault(label.behaviour, []).append(label.value)
    votes = step.votes.get(behaviour)
    if not votes:
        return None, None
    value = consensus(votes)
    return value, ("majority" if value is not None else "tie")


def _prm_row(trajectory: _Trajectory) -> dict[str, Any] | None:
    steps = trajectory.steps
    behaviours = sorted({lb.behaviour for s in steps for lb in s.labels} - {""})
    annotators = {lb.username for s in steps for lb in s.labels}
    if not annotators:
        return None
    overall = [_step_label(s, "") for s in steps]
    return {
        "trajectory_id": trajectory.pk,
        "id": trajectory.external_id,
        "task_type": trajectory.task_type,
        "prompt": trajectory.prompt,
        "completions": [s.completion for s in steps],
        "labels": [value for value, _ in overall],
        "label_sources": [source for _, source in overall],
        "behaviour_labels": {b: [_step_label(s, b)[0] for s in steps] for b in behaviours},
        "annotators": sorted(annotators),
        "outcome": trajectory.outcome,
    }


def _annotator_rows(trajectory: _Trajectory) -> Iterator[dict[str, Any]]:
    steps = trajectory.steps
    by_reviewer: dict[str, dict[tuple[int, str], _Label]] = defaultdict(dict)
    for position, step in enumerate(steps):
        for label in step.labels:
            by_reviewer[label.username][(position, label.behaviour)] = label
    for username in sorted(by_reviewer):
        mine = by_reviewer[username]
        behaviours = sorted({b for _, b in mine} - {""})

        def value(position: int, behaviour: str, mine: dict = mine) -> int | None:
            label = mine.get((position, behaviour))
            return label.value if label else None

        yield {
            "trajectory_id": trajectory.pk,
            "id": trajectory.external_id,
            "task_type": trajectory.task_type,
            "annotator": username,
            "labels": [value(i, "") for i in range(len(steps))],
            "behaviour_labels": {b: [value(i, b) for i in range(len(steps))] for b in behaviours},
            "comments": {
                str(steps[i].index): label.comment
                for (i, _b), label in sorted(mine.items(), key=lambda item: item[0])
                if label.comment and _b == ""
            },
            "updated_at": trajectory.last_change[username].isoformat(),
        }


def prm_rows(
    qs: QuerySet[Trajectory], *, labels: QuerySet[StepLabel] | None = None
) -> Iterator[dict[str, Any]]:
    """One row per labelled trajectory: prompt, completions per step, labels (+1/0/-1/null);
    ``labels`` narrows which labels count."""
    for chunk in _with_labels(qs, labels=labels):
        for trajectory in chunk:
            if (row := _prm_row(trajectory)) is not None:
                yield row


def annotator_rows(qs: QuerySet[Trajectory]) -> Iterator[dict[str, Any]]:
    """One row per (trajectory, annotator) with that annotator's labels and comments per step."""
    for chunk in _with_labels(qs, annotators=True):
        for trajectory in chunk:
            yield from _annotator_rows(trajectory)


def _dump(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


EXPORT_KINDS = ("prm", "annotators")


@dataclass(frozen=True)
class ExportChunk:
    """One chunk of an export as a resumable writer needs it: the text to append, what it
    holds, and the cursor to continue after."""

    last_id: int
    trajectories: int
    rows: int
    text: str


def export_chunks(
    qs: QuerySet[Trajectory],
    *,
    kind: str,
    after: int = 0,
    labels: QuerySet[StepLabel] | None = None,
    finals: QuerySet[FinalLabel] | None = None,
) -> Iterator[ExportChunk]:
    """The ``kind`` export (``prm`` or ``annotators``) of the labelled trajectories of ``qs``
    with ids above ``after``, a chunk at a time: what ``prm_lines`` / ``annotator_lines``
    stream and a background export (``review.export_jobs``) writes. ``labels`` and ``finals``
    narrow which labels and final labels count (all when None)."""
    if kind not in EXPORT_KINDS:
        raise ValueError(f"unknown export kind {kind!r}; one of {', '.join(EXPORT_KINDS)}")
    annotators = kind == "annotators"
    chunks = _labelled_chunks(qs, annotators=annotators, after=after, labels=labels, finals=finals)
    while True:
        with cycle_collection_paused():
            if (item := next(chunks, None)) is None:
                return
            last, chunk = item
            if annotators:
                rows = [row for t in chunk for row in _annotator_rows(t)]
            else:
                rows = [row for t in chunk if (row := _prm_row(t)) is not None]
            done = ExportChunk(last, len(chunk), len(rows), "".join(_dump(row) for row in rows))
            del chunk, rows
        yield done


def prm_lines(
    qs: QuerySet[Trajectory],
    *,
    labels: QuerySet[StepLabel] | None = None,
    finals: QuerySet[FinalLabel] | None = None,
) -> Iterator[str]:
    """The PRM rows as JSONL, one piece per chunk of trajectories."""
    chunks = export_chunks(qs, kind="prm", labels=labels, finals=finals)
    return (c.text for c in chunks if c.text)


def annotator_lines(
    qs: QuerySet[Trajectory],
    *,
    labels: QuerySet[StepLabel] | None = None,
    finals: QuerySet[FinalLabel] | None = None,
) -> Iterator[str]:
    """The per-annotator rows as JSONL, one piece per chunk of trajectories."""
    chunks = export_chunks(qs, kind="annotators", labels=labels, finals=finals)
    return (c.text for c in chunks if c.text)
