"""Writes for trajectories: import one record atomically, or many with a result per record."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from django.conf import settings
from django.db import IntegrityError, transaction

from annotations.importers import UNREAD_KEY, ImportFormatError, convert_record
from annotations.models import Step, Trajectory
from core.actions import ActionReading
from core.canonical import Limits, TrajectoryError, content_digest, extract_steps
from core.jsonlimits import first_unstorable
from core.models import User

logger = logging.getLogger(__name__)

ImportStatus = Literal["imported", "duplicate", "rejected"]

# Called with a trajectory id after the import's transaction commits (the safety scan registers
# here), so the importer does not need to know who consumes new trajectories.
_after_import_hooks: list[Callable[[int], None]] = []


def register_after_import(hook: Callable[[int], None]) -> None:
    if hook not in _after_import_hooks:
        _after_import_hooks.append(hook)


# How to read the actions of a task type's trajectories (shell tools, command keys, text format,
# workspace roots). Task types live in rewards, above this layer, so rewards registers a
# provider here (task type slug -> ActionReading, or None for an unknown slug); without one, or
# without a task type, the defaults apply.
_action_reading_providers: list[Callable[[str], ActionReading | None]] = []


def register_action_reading(provider: Callable[[str], ActionReading | None]) -> None:
    if provider not in _action_reading_providers:
        _action_reading_providers.append(provider)


def action_reading_for(task_type: str | None) -> ActionReading:
    """The task type's way of reading actions, from the first provider that knows it."""
    if task_type:
        for provider in _action_reading_providers:
            reading = provider(task_type)
            if reading is not None:
                return reading
    return ActionReading()


def current_limits() -> Limits:
    cfg = settings.REWARDHUB_LIMITS
    return Limits(
        max_messages=cfg["MAX_MESSAGES"],
        max_bytes=cfg["MAX_TRAJECTORY_BYTES"],
        max_command_chars=cfg["MAX_COMMAND_CHARS"],
        max_message_chars=cfg["MAX_MESSAGE_CHARS"],
    )


@dataclass
class ImportResult:
    status: ImportStatus
    trajectory: Trajectory | None = None
    source_format: str | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)
    line: int | None = None
    # What could not be read ("actions not understood"): one line per call or text.
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"status": self.status}
        if self.line is not None:
            out["line"] = self.line
        if self.trajectory is not None:
            out["id"] = self.trajectory.pk
            out["external_id"] = self.trajectory.external_id
            out["digest"] = self.trajectory.digest
        if self.source_format:
            out["source_format"] = self.source_format
        if self.errors:
            out["errors"] = self.errors
        if self.warnings:
            out["warnings"] = self.warnings
        return out


def _warnings_of(canonical: dict) -> list[str]:
    """One line per action that could not be read, for the import result."""
    unread = (canonical.get("metadata") or {}).get(UNREAD_KEY) or []
    return [
        f"step {item.get('step')}: actions not understood: {item.get('reason')}"
        for item in unread
        if isinstance(item, dict)
    ]


def trajectory_import(
    *,
    record: object,
    fmt: str = "auto",
    task_type: str | None = None,
    imported_by: User | None = None,
    line: int | None = None,
    source: str | None = None,
) -> ImportResult:
    """Convert, validate and store one record; never raises for bad input.

    The trajectory and all its steps are written in one transaction, so a failure leaves nothing
    behind; the content digest makes a second import of the same rollout a ``duplicate``.
    """
    limits = current_limits()
    reading = action_reading_for(task_type)
    try:
        source_format, canonical = convert_record(
            record, fmt, limits=limits, reading=reading, source=source
        )
    except ImportFormatError as exc:
        key = getattr(exc, "field", None) or "format"
        return ImportResult("rejected", errors={key: [str(exc)]}, line=line)
    except TrajectoryError as exc:
        return ImportResult("rejected", errors=exc.errors, line=line)

    if task_type:
        canonical["task_type"] = task_type
    if (unstorable := first_unstorable(canonical)) is not None:
        where, message = unstorable
        return ImportResult("rejected", errors={where or "trajectory": [message]}, line=line)
    digest = content_digest(canonical)
    warnings = _warnings_of(canonical)
    existing = Trajectory.objects.filter(digest=digest).first()
    if existing is not None:
        return ImportResult("duplicate", existing, source_format, line=line, warnings=warnings)

    steps = extract_steps(
        canonical, shell_tools=reading.shell_tools, command_keys=reading.command_keys
    )
    outcome = canonical.get("outcome") or {}
    resolved = outcome.get("resolved")
    try:
        with transaction.atomic():
            trajectory = Trajectory.objects.create(
                external_id=str(canonical.get("id") or "")[:255],
                task_type=str(canonical.get("task_type") or "")[:100],
                source_format=source_format,
                digest=digest,
                canonical=canonical,
                outcome=outcome,
                metadata=canonical.get("metadata") or {},
                resolved=resolved if isinstance(resolved, bool) else None,
                message_count=len(canonical["messages"]),
                step_count=len(steps),
                command_count=sum(len(s.commands) for s in steps),
                imported_by=imported_by,
            )
            Step.objects.bulk_create(
                [
                    Step(
                        trajectory=trajectory,
                        index=s.index,
                        message_index=s.message_index,
                        reasoning=s.reasoning,
                        text=s.text,
                        tool_calls=s.tool_calls,
                        commands=[
                            {
                                "tool_call_id": c.tool_call_id,
                                "tool_name": c.tool_name,
                                "command": c.command,
                            }
                            for c in s.commands
                        ],
                        tool_results=s.tool_results,
                    )
                    for s in steps
                ]
            )
            for hook in _after_import_hooks:
                # robust: a broker outage is logged, and never fails an import already committed.
                transaction.on_commit(lambda h=hook, pk=trajectory.pk: h(pk), robust=True)
    except IntegrityError:
        # A concurrent import of the same content won the unique digest race.
        existing = Trajectory.objects.filter(digest=digest).first()
        if existing is not None:
            return ImportResult("duplicate", existing, source_format, line=line, warnings=warnings)
        raise
    return ImportResult("imported", trajectory, source_format, line=line, warnings=warnings)


def trajectories_import(
    *,
    records: Iterable[tuple[int | None, object]],
    fmt: str = "auto",
    task_type: str | None = None,
    imported_by: User | None = None,
    source: str | None = None,
) -> list[ImportResult]:
    """Import many records; each stands alone, so one bad record never aborts the others."""
    return [
        trajectory_import(
            record=record,
            fmt=fmt,
            task_type=task_type,
            imported_by=imported_by,
            line=line,
            source=source,
        )
        for line, record in records
    ]
