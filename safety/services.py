"""Writes for the safety domain: publish policies, save rules, scan trajectories, review flags."""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, DataError, transaction
from django.db.models import F, Max, Q, QuerySet
from django.utils import timezone

from annotations.models import Step, Trajectory
from audit.services import audit_record, audit_record_many
from core.broker import TRANSIENT_DB_ERRORS
from core.canonical import ShellCommand, StepData, json_digest
from core.jsonlimits import storable, storable_text
from core.models import User
from safety.analyzer import (
    Analyzer,
    AnalyzerConfig,
    Finding,
    PolicyError,
    check_examples,
    compiled_analyzer,
    load_default_policy,
)
from safety.analyzer import Policy as AnalyzerPolicy
from safety.effects import (
    finding_command,
    judge_trajectory,
    repo_packages_of,
    waiver_matches,
    workspace_of,
)
from safety.models import (
    Flag,
    FlagStatus,
    PendingScan,
    Policy,
    PolicyRule,
    PolicyVersion,
    ScanFailure,
    ScanJob,
    Waiver,
)
from safety.selectors import UNREAD_RULE, unread_actions, unread_text

logger = logging.getLogger(__name__)
DEFAULT_POLICY_SLUG = "default"


# --- analyzers: one per policy version and config, from the analyzer's registry -----------------


def analyzer_config(
    workspace_roots: Sequence[str] | None = None, repo_packages: Sequence[str] = ()
) -> AnalyzerConfig:
    roots = tuple(workspace_roots or settings.SAFETY["WORKSPACE_ROOTS"])
    return AnalyzerConfig(
        workspace_roots=roots,
        repo_packages=tuple(repo_packages),
        use_bashlex=settings.SAFETY["USE_BASHLEX"],
        max_command_chars=settings.SAFETY["MAX_COMMAND_CHARS"],
    )


def analyzer_for(
    version: PolicyVersion,
    workspace_roots: Sequence[str] | None = None,
    repo_packages: Sequence[str] = (),
) -> Analyzer:
    """The process's analyzer for a published version (built once: versions never change)."""
    # its examples held when it was published, so compiling it does not run them again
    config = analyzer_config(workspace_roots, repo_packages)
    return compiled_analyzer(version.spec, config, digest=version.digest)


def draft_analyzer(policy: Policy, workspace_roots: Sequence[str] | None = None) -> Analyzer:
    """An analyzer for the policy's unpublished draft, to try commands before publishing (it
    parses them, never runs them). ValidationError, by rule path, when the draft is invalid."""
    try:
        compiled = AnalyzerPolicy.from_dict(policy_document(policy))
    except PolicyError as exc:
        raise ValidationError(_errors_of(exc)) from exc
    return compiled_analyzer(compiled, analyzer_config(workspace_roots))


def workspace_roots_of(trajectory: Trajectory) -> tuple[str, ...] | None:
    """The roots the trajectory names (``metadata.workspace``), as the score reads them."""
    return workspace_of(trajectory.metadata)


# --- policies -----------------------------------------------------------------------------------


def _errors_of(exc: PolicyError) -> dict[str, list[str]]:
    errors = getattr(exc, "errors", None)
    return errors if isinstance(errors, dict) and errors else {"policy": [str(exc)]}


def _validate_for_publishing(document: dict[str, Any]) -> None:
    """What a policy document must pass to go live: it is a valid policy, and every rule's
    examples hold when run through the analyzer. Raises ValidationError, errors by path."""
    try:
        analyzer_policy = AnalyzerPolicy.from_dict(document)
    except PolicyError as exc:
        raise ValidationError(_errors_of(exc)) from exc
    failing = check_examples(analyzer_policy)
    if failing:
        raise ValidationError(failing)


def policy_document(policy: Policy, *, rules: Iterable[PolicyRule] | None = None) -> dict[str, Any]:
    """The draft as one analyzer policy document (base settings + enabled rules in order)."""
    chosen = rules if rules is not None else policy.rules.filter(enabled=True).order_by("position")
    draft_number = (policy.versions.aggregate(m=Max("number"))["m"] or 0) + 1
    return {
        **policy.base,
        "slug": policy.slug,
        "version": draft_number,
        "name": policy.name,
        "rules": [r.definition for r in chosen],
    }


@transaction.atomic
def policy_import_builtin(*, slug: str = DEFAULT_POLICY_SLUG, user: User | None = None) -> Policy:
    """Create (once) a policy row holding the built-in default policy, and publish version 1."""
    existing = Policy.objects.filter(slug=slug).first()
    if existing is not None:
        return existing
    document = load_default_policy().to_dict()
    rules = document.pop("rules")
    policy = Policy.objects.create(
        slug=slug,
        name=document.pop("name", "Default policy"),
        description=document.pop("description", ""),
        base={k: v for k, v in document.items() if k not in ("slug", "version")},
    )
    PolicyRule.objects.bulk_create(
        [
            PolicyRule(policy=policy, rule_id=rule["id"], position=i, definition=rule)
            for i, rule in enumerate(rules)
        ]
    )
    policy_publish(policy=policy, user=user, note="built-in default policy")
    return policy


def latest_version(policy: Policy) -> PolicyVersion | None:
    return policy.versions.order_by("-number").first()


def default_policy_version() -> PolicyVersion:
    """The version scans use unless told otherwise: the newest of the configured policy."""
    slug = settings.SAFETY["DEFAULT_POLICY"]
    policy = Policy.objects.filter(slug=slug).first() or policy_import_builtin(slug=slug)
    version = latest_version(policy)
    if version is None:
        version = policy_publish(policy=policy, user=None, note="first publication")
    return version


def policy_rule_validate(*, policy: Policy, definition: Any) -> None:
    """Check one rule in the context of its policy, examples included; raise ValidationError."""
    if not isinstance(definition, dict):
        raise ValidationError({"definition": ["A rule must be a JSON object."]})
    document = {**policy_document(policy, rules=[]), "rules": [definition]}
    _validate_for_publishing(document)


@transaction.atomic
def policy_rule_save(
    *,
    policy: Policy,
    definition: Any,
    user: User | None,
    rule: PolicyRule | None = None,
    enabled: bool = True,
) -> PolicyRule:
    """Validate and store a draft rule; the rule id comes from the definition."""
    policy_rule_validate(policy=policy, definition=definition)
    rule_id = str(definition.get("id", ""))
    clash = policy.rules.filter(rule_id=rule_id)
    if rule is not None:
        clash = clash.exclude(pk=rule.pk)
    if clash.exists():
        raise ValidationError({"id": [f"rule id {rule_id!r} is already used in this policy"]})
    if rule is None:
        position = (policy.rules.aggregate(m=Max("position"))["m"] or 0) + 1
        rule = PolicyRule(policy=policy, position=position)
    rule.rule_id = rule_id
    rule.definition = definition
    rule.enabled = enabled
    rule.updated_by = user
    rule.full_clean()
    rule.save()
    Policy.objects.filter(pk=policy.pk).update(updated_at=timezone.now())
    return rule


@transaction.atomic
def policy_publish(
    *, policy: Policy, user: User | None, note: str = "", require_change: bool = False
) -> PolicyVersion:
    """Freeze the draft into the next immutable version (validated as a whole, examples too).

    ``require_change`` (the editor's publish): a draft equal to the latest version makes none."""
    policy = Policy.objects.select_for_update().get(pk=policy.pk)
    latest = policy.versions.order_by("-number").first()
    number = (latest.number if latest else 0) + 1
    document = {**policy_document(policy), "version": number}
    unchanged = latest is not None and (
        json_digest({**document, "version": latest.number}) == latest.digest
    )
    if require_change and latest is not None and unchanged:
        message = f"Nothing changed since v{latest.number}: no new version was made."
        raise ValidationError({"policy": ValidationError(message, code="unchanged")})
    _validate_for_publishing(document)
    version = PolicyVersion(
        policy=policy,
        number=number,
        spec=document,
        digest=json_digest(document),
        note=note[:300],
        published_by=user,
    )
    version.save()
    audit_record(
        action="policy.publish",
        obj=policy,
        user=user,
        after={"version": number, "digest": version.digest, "note": version.note},
        context={"rules": len(document["rules"])},
    )
    return version


# --- scanning -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanResult:
    commands: int
    findings: int
    flags_created: int
    flags_refused: int = 0  # findings the database would not store, even one by one


def _waiver_matches(waiver: Waiver, command: str, span: tuple[int, int] | None = None) -> bool:
    """As the scorer matches waived patterns (``safety.effects.waiver_matches``): whole
    commands, never a prefix of a longer line."""
    try:
        regex = re.compile(waiver.pattern) if waiver.match == Waiver.Match.REGEX else None
    except re.error:
        return False
    where = span if span is not None else (0, len(command))
    return waiver_matches(str(waiver.match), waiver.pattern, command, where, regex)


def waiver_pattern_for(command: str, match: str) -> str:
    """The pattern of a waiver made from a flagged command: a regular expression matches that
    command literally and whole (to be widened by hand), not whatever its characters mean."""
    text = command.strip()
    return rf"\A{re.escape(text)}\Z" if match == Waiver.Match.REGEX else text


def _flag_for(
    trajectory: Trajectory,
    step: Step,
    command_index: int,
    command: str,
    version: PolicyVersion,
    finding: Any,
    waiver: Waiver | None,
) -> Flag:
    """The flag row of one finding. The analyzer's text is made storable here, at the storage
    boundary: a NUL or an unpaired surrogate (an internal placeholder that leaked, odd input)
    becomes U+FFFD instead of failing the whole trajectory's insert (jsonb and text columns
    refuse both)."""
    return Flag(
        trajectory=trajectory,
        step=step,
        command_index=command_index,
        command=storable_text(command),
        policy_version=version,
        rule_id=storable_text(str(finding.rule))[:120],
        category=storable_text(str(finding.category))[:60],
        severity=finding.severity,
        action=finding.action,
        span_start=finding.span[0],
        span_end=finding.span[1],
        argv=storable([str(arg) for arg in finding.argv]),
        message=storable_text(str(finding.message)),
        status=FlagStatus.DISMISSED if waiver else FlagStatus.OPEN,
        waiver=waiver,
        note=f"waived: {waiver.reason}" if waiver else "",
    )


def _store_flags(flags: list[Flag]) -> int:
    """Insert the flags (existing ones are kept as they are); returns how many the database
    refused. One refused row costs only itself: on a data error they go in one at a time."""
    try:
        with transaction.atomic():
            Flag.all_versions.bulk_create(flags, ignore_conflicts=True)
        return 0
    except DataError:
        logger.exception("flags refused by the database; storing them one by one")
    refused = 0
    for flag in flags:
        try:
            with transaction.atomic():
                Flag.all_versions.bulk_create([flag], ignore_conflicts=True)
        except DataError:
            refused += 1
    return refused


_FINDING_KEY = ("step_id", "command_index", "rule_id", "span_start", "span_end")
_DECIDED = (FlagStatus.CONFIRMED, FlagStatus.DISMISSED)


def _supersede_and_carry(trajectory: Trajectory, version: PolicyVersion, keys: set[tuple]) -> int:
    """Make this scan's flags the trajectory's current ones.

    Every other flag of the trajectory (earlier versions, or findings this scan no longer
    makes) is superseded. A current flag nobody reviewed takes the latest decision (confirmed
    or dismissed, with its reviewer, time, note and waiver) of an earlier flag on the same
    finding: same step, command, rule and span. Returns how many decisions were carried."""
    now = timezone.now()
    every = Flag.all_versions.filter(trajectory=trajectory)
    current = {
        tuple(getattr(f, k) for k in _FINDING_KEY): f
        for f in every.filter(policy_version=version)
        if tuple(getattr(f, k) for k in _FINDING_KEY) in keys
    }
    current_ids = [f.pk for f in current.values()]
    every.exclude(pk__in=current_ids).filter(superseded_at__isnull=True).update(superseded_at=now)
    every.filter(pk__in=current_ids, superseded_at__isnull=False).update(superseded_at=None)
    decisions: dict[tuple, Flag] = {}
    for earlier in (
        every.exclude(pk__in=current_ids)
        .filter(status__in=_DECIDED, reviewed_at__isnull=False)
        .order_by("reviewed_at", "id")
    ):
        decisions[tuple(getattr(earlier, k) for k in _FINDING_KEY)] = earlier  # latest wins
    carried: list[tuple[Flag, dict[str, Any]]] = []
    for key, flag in current.items():
        earlier = decisions.get(key)
        if earlier is None or flag.reviewed_at is not None or flag.status != FlagStatus.OPEN:
            continue
        before = {"status": flag.status, "waiver": flag.waiver_id}
        flag.status, flag.reviewer_id = earlier.status, earlier.reviewer_id
        flag.reviewed_at, flag.note = earlier.reviewed_at, earlier.note
        flag.waiver_id = earlier.waiver_id
        carried.append((flag, before))
    if carried:
        Flag.all_versions.bulk_update(
            [f for f, _ in carried], ["status", "reviewer", "reviewed_at", "note", "waiver"]
        )
        audit_record_many(
            action="flag.carry",
            items=[(f, b, {"status": f.status, "waiver": f.waiver_id}) for f, b in carried],
            context={"policy_version": version.pk},
            user=None,
        )
    return len(carried)


def _step_data(step: Step) -> StepData:
    """A stored step as the effect model reads it (its commands as the import extracted them)."""
    commands = [
        ShellCommand(c.get("tool_call_id"), str(c.get("tool_name") or ""), str(c.get("command")))
        if isinstance(c, dict)
        else ShellCommand(None, "", str(c))
        for c in step.commands or []
    ]
    return StepData(
        step.index,
        step.message_index,
        step.reasoning,
        step.text,
        list(step.tool_calls or []),
        commands,
        list(step.tool_results or []),
    )


def _judged_findings(
    trajectory: Trajectory, steps: list[Step], analyzer: Analyzer
) -> tuple[int, list[tuple[Step, int, str, Finding]], dict[int, int], set[tuple[int, str]]]:
    """The trajectory's shell commands counted, and every finding to flag: one reading of the
    whole trajectory through the effect model (``safety.effects.judge_trajectory``), the same
    judgement the scorer makes. A shell command's findings keep its index in the step's
    commands and quote it; a file tool call's or the final patch's (with the last step) are
    numbered after the step's commands and quote what it did (tool, operation, path), as the
    score does. Also each step's next free command index, and the file tool calls flagged
    (step index, tool call id)."""
    by_index = {step.index: step for step in steps}
    canonical = trajectory.canonical if isinstance(trajectory.canonical, dict) else {}
    _, verdicts = judge_trajectory(canonical, analyzer, steps=[_step_data(s) for s in steps])
    shell_seen: dict[int, int] = {}
    next_index = {step.index: len(step.commands or []) for step in steps}
    flagged_calls: set[tuple[int, str]] = set()
    commands = 0
    out: list[tuple[Step, int, str, Finding]] = []
    for verdict in verdicts:
        action = verdict.action
        step = by_index.get(action.step) or (steps[-1] if steps else None)  # patch: last step
        if step is None:
            continue
        if action.kind == "shell":
            commands += 1
            index = shell_seen.get(step.index, 0)
            shell_seen[step.index] = index + 1
            out.extend(
                (step, index, finding_command(action, f.argv), f)
                for f in verdict.findings
                if f.action != "allow"
            )
            continue
        found = [f for f in verdict.findings if f.action != "allow"]
        if not found:
            continue
        index = next_index[step.index]
        next_index[step.index] = index + 1
        out.extend((step, index, finding_command(action, f.argv), f) for f in found)
        if action.tool_call_id:
            flagged_calls.add((step.index, action.tool_call_id))
    return commands, out, next_index, flagged_calls


def trajectory_scan(
    *, trajectory_id: int, policy_version: PolicyVersion | None = None
) -> ScanResult:
    """Judge every action of a trajectory (``_judged_findings``: the effect model's reading,
    the one the score reads too) and store one flag per finding.

    Idempotent: the flag's unique key (step, command, rule, span, policy version) means a rescan
    or a retried task never duplicates a flag, and reviewed flags keep their decision. The
    scan's flags become the trajectory's current ones: earlier flags are superseded and their
    decisions carried to the same findings (``_supersede_and_carry``).
    """
    version = policy_version or default_policy_version()
    trajectory = Trajectory.objects.filter(pk=trajectory_id).first()
    if trajectory is None:
        return ScanResult(0, 0, 0)
    analyzer = analyzer_for(
        version,
        workspace_roots_of(trajectory),
        repo_packages_of(trajectory.metadata, trajectory.canonical.get("id")),
    )
    waivers = [
        w
        for w in Waiver.objects.filter(active=True)
        if not w.task_type or w.task_type == trajectory.task_type
    ]
    pending: list[Flag] = []
    findings = 0
    steps = list(Step.objects.filter(trajectory=trajectory).order_by("index"))
    commands, judged, next_index, flagged_calls = _judged_findings(trajectory, steps, analyzer)
    for step, command_index, command, finding in judged:
        findings += 1
        waiver = next(
            (
                w
                for w in waivers
                if w.rule_id == finding.rule
                and _waiver_matches(w, command, (int(finding.span[0]), int(finding.span[1])))
            ),
            None,
        )
        pending.append(
            _flag_for(trajectory, step, command_index, command, version, finding, waiver)
        )
    unread = _unread_action_flags(trajectory, steps, version, waivers, next_index, flagged_calls)
    findings += len(unread)
    pending.extend(unread)
    with transaction.atomic():
        # One scan of a trajectory at a time: which flags are current is decided here.
        Trajectory.objects.select_for_update().filter(pk=trajectory.pk).first()
        mine = Flag.all_versions.filter(trajectory=trajectory, policy_version=version)
        before = mine.count()
        refused = _store_flags(pending)
        after = mine.count()
        keys = {tuple(getattr(f, k) for k in _FINDING_KEY) for f in pending}
        _supersede_and_carry(trajectory, version, keys)
    return ScanResult(commands, findings, after - before, refused)


def scan_failure_summary(exc: BaseException) -> str:
    """What a safety lead is shown of a failed scan: the kind of failure, never raw SQL (the
    whole error, with its traceback, goes to the log)."""
    if isinstance(exc, DatabaseError):
        return f"The scan's results could not be stored ({type(exc).__name__})."
    return f"The analyzer failed on this trajectory ({type(exc).__name__})."


def trajectory_scan_or_pending(
    *, trajectory_id: int, policy_version: PolicyVersion | None = None
) -> ScanResult | None:
    """The import scan: scan, and on success forget any pending scan of the trajectory.

    A scan that fails (or stores only part of its flags) is never silent: the trajectory's
    ``PendingScan`` records why, is shown on the flag queue and is queued again later. A lost
    database connection propagates, for the task to retry."""
    try:
        with transaction.atomic():
            result = trajectory_scan(trajectory_id=trajectory_id, policy_version=policy_version)
    except TRANSIENT_DB_ERRORS:
        raise
    except Exception as exc:
        logger.exception("scan of trajectory %s failed", trajectory_id)
        scan_mark_pending(trajectory_id=trajectory_id, reason=scan_failure_summary(exc))
        return None
    if result.flags_refused:
        scan_mark_pending(
            trajectory_id=trajectory_id,
            reason=f"{result.flags_refused} findings could not be stored.",
        )
    else:
        scan_done(trajectory_id=trajectory_id)
    return result


def _unread_action_flags(
    trajectory: Trajectory,
    steps: list[Step],
    version: PolicyVersion,
    waivers: list[Waiver],
    first_index: dict[int, int],
    flagged_calls: set[tuple[int, str]],
) -> list[Flag]:
    """One flag per action the importer could not read (``metadata.actions_not_understood``):
    a format gap is a review item, never a silent pass. Its ``command_index`` follows the
    step's commands and flagged file tool calls (``first_index``), in the importer's order
    (``unread_actions``), and its ``command`` is what was not understood (``unread_text``).
    A call the effect model flagged already (a file tool whose file it cannot tell: the score
    reads that finding too) keeps that one flag instead of two."""
    by_index = {step.index: step for step in steps}
    flags = []
    for step_index, items in unread_actions(trajectory.metadata, steps).items():
        base = first_index.get(step_index, len(by_index[step_index].commands or []))
        items = [i for i in items if (step_index, i.get("tool_call_id")) not in flagged_calls]
        for offset, item in enumerate(items):
            flags.append(_unread_flag(trajectory, by_index[step_index], base + offset, item,
                                      version, waivers))  # fmt: skip
    return flags


def _unread_flag(
    trajectory: Trajectory,
    step: Step,
    command_index: int,
    item: dict[str, Any],
    version: PolicyVersion,
    waivers: list[Waiver],
) -> Flag:
    text = unread_text(item)
    waiver = next(
        (w for w in waivers if w.rule_id == UNREAD_RULE and _waiver_matches(w, text)), None
    )
    return Flag(
        trajectory=trajectory,
        step=step,
        command_index=command_index,
        command=text,
        policy_version=version,
        rule_id=UNREAD_RULE,
        category="import",
        severity="medium",
        action="review",
        span_start=0,
        span_end=len(text),
        argv=[],
        message=f"Actions not understood: {item.get('reason') or 'nothing could be read'}.",
        status=FlagStatus.DISMISSED if waiver else FlagStatus.OPEN,
        waiver=waiver,
        note=f"waived: {waiver.reason}" if waiver else "",
    )


def scan_job_create(
    *, policy_version: PolicyVersion, user: User | None, task_type: str = ""
) -> ScanJob:
    qs = Trajectory.objects.all()
    if task_type:
        qs = qs.filter(task_type=task_type)
    job = ScanJob(
        policy_version=policy_version, task_type=task_type, total=qs.count(), created_by=user
    )
    job.full_clean()
    job.save()
    return job


def _stall_cutoff() -> datetime:
    return timezone.now() - timedelta(seconds=settings.SAFETY["SCAN_STALL_SECONDS"])


def _claim(job: ScanJob) -> str | None:
    """Take the job for this run, unless a live run (a fresh heartbeat) holds it: a
    redelivered or resumed task never runs beside the one still working. None: not taken."""
    token = uuid.uuid4().hex
    free = (
        ~Q(state=ScanJob.State.RUNNING)
        | Q(heartbeat_at__isnull=True)
        | Q(heartbeat_at__lt=_stall_cutoff())
    )
    taken = (
        ScanJob.objects.filter(pk=job.pk)
        .filter(free)
        .update(state=ScanJob.State.RUNNING, error="", run_token=token, heartbeat_at=timezone.now())
    )
    return token if taken else None


def _still_mine(job: ScanJob, token: str) -> bool:
    """Lock the job row for this chunk's commit; False if another run took the job over."""
    return ScanJob.objects.select_for_update().filter(pk=job.pk, run_token=token).exists()


def _scan_one(job: ScanJob, trajectory_id: int) -> tuple[int, str | None]:
    """(flags created, failure or None) for one trajectory of a rescan, in a savepoint: a
    failure rolls back this trajectory's flags only. A lost connection propagates."""
    try:
        with transaction.atomic():
            result = trajectory_scan(trajectory_id=trajectory_id, policy_version=job.policy_version)
    except TRANSIENT_DB_ERRORS:
        raise
    except Exception as exc:
        logger.exception("rescan #%s: trajectory %s failed", job.pk, trajectory_id)
        return 0, scan_failure_summary(exc)
    if result.flags_refused:
        return result.flags_created, f"{result.flags_refused} findings could not be stored."
    return result.flags_created, None


def _record_failure(job: ScanJob, trajectory_id: int, error: str) -> bool:
    """Record (or update) a failure; True if it is new to the job."""
    updated = ScanFailure.objects.filter(job=job, trajectory_id=trajectory_id).update(
        error=error[:500], attempts=F("attempts") + 1, updated_at=timezone.now()
    )
    if updated:
        return False
    ScanFailure.objects.create(job=job, trajectory_id=trajectory_id, error=error[:500])
    return True


def _retry_failures(job: ScanJob, token: str, chunk: int) -> bool:
    """Scan the job's failed trajectories again; False if another run took the job over."""
    after = 0
    while ids := list(
        job.failures.filter(trajectory_id__gt=after)
        .order_by("trajectory_id")
        .values_list("trajectory_id", flat=True)[:chunk]
    ):
        with transaction.atomic():
            if not _still_mine(job, token):
                return False
            created = fixed = 0
            for pk in ids:
                flags, error = _scan_one(job, pk)
                created += flags
                if error is None:
                    ScanFailure.objects.filter(job=job, trajectory_id=pk).delete()
                    fixed += 1
                else:
                    _record_failure(job, pk, error)
            ScanJob.objects.filter(pk=job.pk).update(
                failed=F("failed") - fixed,
                flags_created=F("flags_created") + created,
                heartbeat_at=timezone.now(),
            )
            _add_to_whole(job, failed=-fixed, flags_created=created)
        after = ids[-1]
    return True


def scan_job_run(*, job_id: int, chunk: int = 50, retry_failed: bool = False) -> ScanJob:
    """Rescan the job's trajectories in id order, ``chunk`` at a time.

    Each chunk's flags and the job's progress commit in one transaction, so a run that dies
    midway (a killed worker, a lost database) leaves both at the last committed chunk, and the
    redelivered task resumes there: ``done`` and ``flags_created`` stay exact, no flag twice.
    A trajectory whose scan fails is recorded (``ScanFailure``), counted in ``failed`` and
    skipped; ``retry_failed`` scans the recorded ones again first. Each committed chunk is a
    heartbeat; a run started while another is alive leaves the job to it.
    """
    job = ScanJob.objects.select_related("policy_version").get(pk=job_id)
    finished = job.state == ScanJob.State.DONE
    if finished and not (retry_failed and job.failed):
        return job
    token = _claim(job)
    if token is None:
        logger.info("rescan #%s is being run by another worker; not started twice", job.pk)
        return job
    qs = _job_trajectories(job)
    job.refresh_from_db()
    # Resume after the trajectories the committed chunks covered; a finished job only retries
    # its failures (trajectories imported since were scanned on import).
    last_id = job.last_id
    if not finished:
        ScanJob.objects.filter(pk=job.pk).update(total=job.done + qs.filter(id__gt=last_id).count())
    try:
        if retry_failed and not _retry_failures(job, token, chunk):
            return job
        while not finished and (ids := list(qs.filter(id__gt=last_id)[:chunk])):
            with transaction.atomic():
                if not _still_mine(job, token):
                    logger.info("rescan #%s was taken over by another run", job.pk)
                    return job
                created = failed = 0
                for pk in ids:
                    flags, error = _scan_one(job, pk)
                    created += flags
                    if error is not None:
                        failed += _record_failure(job, pk, error)
                ScanJob.objects.filter(pk=job.pk).update(
                    done=F("done") + len(ids),
                    flags_created=F("flags_created") + created,
                    failed=F("failed") + failed,
                    last_id=ids[-1],
                    heartbeat_at=timezone.now(),
                )
                _add_to_whole(job, done=len(ids), flags_created=created, failed=failed)
            last_id = ids[-1]
    except Exception as exc:  # report, then let the task framework decide about retries
        logger.exception("rescan #%s stopped", job.pk)
        error = f"Stopped: {scan_failure_summary(exc)} Resume it to continue."
        with contextlib.suppress(DatabaseError):  # the database may be what failed
            stopped = ScanJob.objects.filter(pk=job.pk, run_token=token).update(
                state=ScanJob.State.FAILED, error=error
            )
            if stopped and job.parent_id:
                ScanJob.objects.filter(pk=job.parent_id).update(
                    state=ScanJob.State.FAILED, error=error
                )
        raise
    with transaction.atomic():
        finished = ScanJob.objects.filter(pk=job.pk, run_token=token).update(
            state=ScanJob.State.DONE, finished_at=timezone.now(), heartbeat_at=timezone.now()
        )
        if finished and job.parent_id:
            _finish_whole_if_done(job.parent_id)
    job.refresh_from_db()
    return job


def _job_trajectories(job: ScanJob) -> QuerySet[Trajectory, int]:
    """The ids a job scans, in order: its task type's, within its range if it is a part."""
    qs = Trajectory.objects.order_by("id").values_list("id", flat=True)
    if job.task_type:
        qs = qs.filter(task_type=job.task_type)
    if job.id_from:
        qs = qs.filter(id__gte=job.id_from)
    if job.id_to is not None:
        qs = qs.filter(id__lte=job.id_to)
    return qs


def _add_to_whole(job: ScanJob, **counts: int) -> None:
    """A part's committed progress added to its whole rescan, in the part's transaction (so
    the whole's counts stay exact however its parts stop and resume)."""
    if job.parent_id is None:
        return
    changes: dict[str, Any] = {k: F(k) + v for k, v in counts.items() if v}
    ScanJob.objects.filter(pk=job.parent_id).update(**changes, heartbeat_at=timezone.now())


def _finish_whole_if_done(parent_id: int) -> None:
    """The whole rescan is done once every part is; with its row locked, so of two parts
    finishing at once the later one sees the other's state."""
    parent = ScanJob.objects.select_for_update().filter(pk=parent_id).first()
    if parent is None or parent.parts.exclude(state=ScanJob.State.DONE).exists():
        return
    ScanJob.objects.filter(pk=parent_id).update(
        state=ScanJob.State.DONE, error="", finished_at=timezone.now(), heartbeat_at=timezone.now()
    )


def scan_job_split(*, job_id: int, part_size: int, retry_failed: bool = False) -> list[int]:
    """Split a rescan into parts of ``part_size`` trajectories (ranges of ids, planned once:
    a retried or resumed split finds its parts made) and say which parts to run: those not
    done, and with ``retry_failed`` those done with failures to scan again. The whole job
    runs while they do; the parts add their progress to it."""
    job = ScanJob.objects.get(pk=job_id)
    if job.parent_id is not None:
        raise ValueError(f"rescan #{job.pk} is a part; split its whole instead")
    if not job.parts.exists():
        bounds: list[tuple[int, int]] = []
        count = 0
        for pk in _job_trajectories(job).iterator(chunk_size=10_000):
            if count % part_size == 0:
                bounds.append((pk, pk))
            bounds[-1] = (bounds[-1][0], pk)
            count += 1
        parts = [
            ScanJob(
                policy_version_id=job.policy_version_id,
                task_type=job.task_type,
                created_by_id=job.created_by_id,
                parent=job,
                id_from=first,
                id_to=None if n == len(bounds) - 1 else last,  # the last part: to the end
                total=min(part_size, count - n * part_size),
            )
            for n, (first, last) in enumerate(bounds)
        ]
        ScanJob.objects.bulk_create(parts, ignore_conflicts=True)
        ScanJob.objects.filter(pk=job.pk).update(total=count)
    ScanJob.objects.filter(pk=job.pk).update(
        state=ScanJob.State.RUNNING, error="", heartbeat_at=timezone.now()
    )
    to_run = job.parts.exclude(state=ScanJob.State.DONE)
    if retry_failed:
        to_run = job.parts.filter(~Q(state=ScanJob.State.DONE) | Q(failed__gt=0))
    return list(to_run.order_by("id_from").values_list("pk", flat=True))


def scan_job_resume(*, job: ScanJob) -> None:
    """Check that a job may be resumed (failed, stalled, or done with failures to retry);
    the caller queues it. Raises ValidationError otherwise."""
    if not job.resumable:
        raise ValidationError(
            {"job": [f"Rescan #{job.pk} is {job.shown_state}: nothing to resume."]}
        )


# --- scans the broker could not take (see safety.tasks.enqueue_scan) -------------------------


def scan_mark_pending(*, trajectory_id: int, reason: str) -> None:
    """Record that this trajectory's scan is owed (idempotent; counts the attempts)."""
    updated = PendingScan.objects.filter(trajectory_id=trajectory_id).update(
        reason=reason[:500], attempts=F("attempts") + 1, updated_at=timezone.now()
    )
    if not updated:
        PendingScan.objects.get_or_create(
            trajectory_id=trajectory_id, defaults={"reason": reason[:500], "attempts": 1}
        )


def pending_scans_due(*, limit: int, older_than: float | None = None) -> list[int]:
    """Trajectory ids whose pending scan was last tried more than ``older_than`` seconds ago
    (default ``RESILIENCE["PENDING_SCAN_RETRY_SECONDS"]``), oldest first."""
    if older_than is None:
        older_than = settings.RESILIENCE["PENDING_SCAN_RETRY_SECONDS"]
    cutoff = timezone.now() - timedelta(seconds=older_than)
    return list(
        PendingScan.objects.filter(updated_at__lte=cutoff)
        .order_by("updated_at", "id")
        .values_list("trajectory_id", flat=True)[:limit]
    )


def pending_scans_requeued(*, trajectory_ids: Sequence[int]) -> None:
    """The scans of these trajectories were queued again (they stay pending until done)."""
    PendingScan.objects.filter(trajectory_id__in=list(trajectory_ids)).update(
        attempts=F("attempts") + 1, updated_at=timezone.now()
    )


def scan_done(*, trajectory_id: int) -> None:
    PendingScan.objects.filter(trajectory_id=trajectory_id).delete()


# --- review -------------------------------------------------------------------------------------


@transaction.atomic
def flags_review(
    *,
    flag_ids: Sequence[int],
    status: str,
    user: User,
    note: str = "",
    waive: bool = False,
    waiver_match: str = Waiver.Match.EXACT,
) -> int:
    """Confirm or dismiss flags; a dismissal may create a waiver scoped to the task type."""
    if status not in (FlagStatus.CONFIRMED, FlagStatus.DISMISSED, FlagStatus.OPEN):
        raise ValidationError({"status": [f"unknown status {status!r}"]})
    if waiver_match not in Waiver.Match.values:
        raise ValidationError(
            {"waiver_match": [f"unknown match {waiver_match!r}; one of {Waiver.Match.values}"]}
        )
    flags = list(
        Flag.objects.select_for_update().select_related("trajectory").filter(pk__in=flag_ids)
    )
    now = timezone.now()
    before = {flag.pk: {"status": flag.status, "waiver": flag.waiver_id} for flag in flags}
    for flag in flags:
        flag.status = status
        flag.reviewer = user
        flag.reviewed_at = now
        if note:
            flag.note = note
        if waive and status == FlagStatus.DISMISSED and flag.waiver_id is None:
            waiver = Waiver.objects.filter(
                rule_id=flag.rule_id,
                task_type=flag.trajectory.task_type,
                match=waiver_match,
                pattern=waiver_pattern_for(flag.command, waiver_match),
            ).first()
            if waiver is None:
                waiver = Waiver(
                    rule_id=flag.rule_id,
                    task_type=flag.trajectory.task_type,
                    match=waiver_match,
                    pattern=waiver_pattern_for(flag.command, waiver_match),
                    reason=note or "dismissed in review",
                    created_by=user,
                )
                waiver.full_clean()
                waiver.save()
            flag.waiver = waiver
    Flag.objects.bulk_update(flags, ["status", "reviewer", "reviewed_at", "note", "waiver"])
    audit_record_many(
        action="flag.review",
        items=[
            (flag, before[flag.pk], {"status": flag.status, "waiver": flag.waiver_id})
            for flag in flags
        ],
        context={"note": note[:500]} if note else None,
        user=user,
    )
    return len(flags)
