"""Policies (drafts edited by safety leads, immutable published versions), flags and waivers."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core.immutable import ImmutableModel
from safety.analyzer import ACTIONS, SEVERITIES

# The analyzer's vocabulary (``safety.analyzer.vocabulary``), in its order: INFO = "info", ...
Severity = models.TextChoices("Severity", [(s.upper(), s) for s in SEVERITIES])
Action = models.TextChoices("Action", [(a.upper(), a) for a in ACTIONS])


class Policy(models.Model):
    """A named policy. Its rules are edited as a draft; publishing freezes a version."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    # Everything of the policy document except its rules (command classes, path classes ...).
    base = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.slug


class PolicyRule(models.Model):
    """One rule of a policy's draft, as the declarative dict the analyzer reads."""

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="rules")
    rule_id = models.CharField(max_length=120)
    position = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    definition = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["policy_id", "position", "rule_id"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "rule_id"], name="uniq_policy_rule_id")
        ]

    def __str__(self) -> str:
        return f"{self.policy.slug}:{self.rule_id}"


class PolicyVersion(ImmutableModel):
    """A published, immutable snapshot of a policy document, addressed by its digest."""

    immutable_label = "A published policy version"

    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    digest = models.CharField(max_length=80, editable=False)
    note = models.CharField(max_length=300, blank=True, default="")
    published_at = models.DateTimeField(auto_now_add=True)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["policy_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "number"], name="uniq_policy_version")
        ]

    def __str__(self) -> str:
        return f"{self.policy.slug}@{self.number}"


class FlagStatus(models.TextChoices):
    OPEN = "open"
    CONFIRMED = "confirmed"
    DISMISSED = "dismissed"


class CurrentFlags(models.Manager["Flag"]):
    """Flags of each trajectory's latest scan: what a rescan superseded is left out."""

    def get_queryset(self) -> models.QuerySet[Flag]:
        return super().get_queryset().filter(superseded_at__isnull=True)


class Flag(models.Model):
    """One analyzer finding on one shell command of one step, awaiting or after human review.

    A trajectory's current flags are those of its latest scan; a later scan (a rescan with
    another policy version) supersedes the earlier ones, carrying their decisions to the same
    finding (see ``safety.services.trajectory_scan``). ``Flag.objects`` holds the current flags
    only, ``Flag.all_versions`` every flag ever raised."""

    trajectory = models.ForeignKey(
        "annotations.Trajectory", on_delete=models.CASCADE, related_name="flags"
    )
    step = models.ForeignKey("annotations.Step", on_delete=models.CASCADE, related_name="flags")
    command_index = models.PositiveIntegerField()
    command = models.TextField()
    policy_version = models.ForeignKey(PolicyVersion, on_delete=models.PROTECT, related_name="+")
    rule_id = models.CharField(max_length=120, db_index=True)
    category = models.CharField(max_length=60, db_index=True)
    severity = models.CharField(max_length=10, choices=Severity.choices, db_index=True)
    action = models.CharField(max_length=10, choices=Action.choices)
    span_start = models.PositiveIntegerField()
    span_end = models.PositiveIntegerField()
    argv = models.JSONField(default=list, blank=True)
    message = models.TextField()
    status = models.CharField(
        max_length=10, choices=FlagStatus.choices, default=FlagStatus.OPEN, db_index=True
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True, default="")
    waiver = models.ForeignKey(
        "Waiver", null=True, blank=True, on_delete=models.SET_NULL, related_name="flags"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    superseded_at = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="When a later scan of the trajectory replaced this flag (empty: current).",
    )

    objects = CurrentFlags()
    all_versions: models.Manager[Flag] = models.Manager()

    class Meta:
        ordering = ["-id"]
        default_manager_name = "objects"
        base_manager_name = "all_versions"
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "step",
                    "command_index",
                    "rule_id",
                    "span_start",
                    "span_end",
                    "policy_version",
                ],
                name="uniq_flag_per_finding",
            )
        ]
        # The flag queue: a status (and severity) in id order, read a page at a time.
        indexes = [
            models.Index(fields=["status", "id"], name="flag_status_id"),
            models.Index(fields=["status", "severity", "id"], name="flag_status_severity_id"),
            # A trajectory's current flags, read from the index alone (the list's flag filters
            # and where two filters' sparse sets meet).
            models.Index(
                fields=["trajectory", "status"],
                name="flag_current_trajectory",
                condition=models.Q(superseded_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rule_id} on {self.step}"


class Waiver(models.Model):
    """A reviewed exception: findings of ``rule_id`` whose command matches are auto-dismissed."""

    class Match(models.TextChoices):
        EXACT = "exact", "Exact command"
        PREFIX = "prefix", "Command starts with"
        REGEX = "regex", "Regular expression"

    rule_id = models.CharField(max_length=120, db_index=True)
    task_type = models.CharField(
        max_length=100, blank=True, default="", help_text="Empty: every task type."
    )
    match = models.CharField(max_length=10, choices=Match.choices, default=Match.EXACT)
    pattern = models.TextField()
    reason = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"waiver {self.rule_id} {self.match}:{self.pattern[:40]}"

    def clean(self) -> None:
        """A regular expression must compile: compiled reward models read every waiver of
        their task type, and scans match commands against it."""
        import re

        from django.core.exceptions import ValidationError

        if self.match == self.Match.REGEX:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValidationError({"pattern": [f"not a regular expression: {exc}"]}) from exc


class ScanJob(models.Model):
    """Progress of a bulk rescan, polled by the UI.

    A run holds the job through ``run_token`` and proves it is alive through ``heartbeat_at``
    (each committed chunk); a running job without a heartbeat for
    ``SAFETY["SCAN_STALL_SECONDS"]`` is shown as stalled and may be resumed."""

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    policy_version = models.ForeignKey(PolicyVersion, on_delete=models.PROTECT, related_name="+")
    task_type = models.CharField(max_length=100, blank=True, default="")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    flags_created = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(
        default=0, help_text="Trajectories whose scan failed (listed in the job's failures)."
    )
    last_id = models.PositiveBigIntegerField(
        default=0,
        help_text="The last trajectory a committed chunk covered: a rerun resumes after it.",
    )
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    run_token = models.CharField(max_length=32, blank=True, default="", editable=False)
    # A large rescan is split into parts, each a job over a range of trajectory ids run by its
    # own task, so workers share it; the parts add their progress to this job as they commit.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="parts"
    )
    id_from = models.PositiveBigIntegerField(
        default=0, help_text="A part's first trajectory id (0: from the first)."
    )
    id_to = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="A part's last trajectory id (empty: to the last)."
    )

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["parent", "id_from"], name="uniq_scan_job_part")
        ]

    def __str__(self) -> str:
        part = (
            f" (part {self.id_from}-{self.id_to or ''} of #{self.parent_id})"
            if self.parent_id
            else ""
        )
        return f"rescan #{self.pk} with {self.policy_version_id} ({self.state}){part}"

    @property
    def stalled(self) -> bool:
        """Running, but no committed progress for ``SAFETY["SCAN_STALL_SECONDS"]``: its worker
        was most likely killed (the broker would hand the task out again only after the
        visibility timeout)."""
        from datetime import timedelta

        from django.utils import timezone

        if self.state != self.State.RUNNING:
            return False
        last = self.heartbeat_at or self.created_at
        limit = timedelta(seconds=settings.SAFETY["SCAN_STALL_SECONDS"])
        return last is not None and timezone.now() - last > limit

    @property
    def shown_state(self) -> str:
        return "stalled" if self.stalled else self.state

    @property
    def resumable(self) -> bool:
        """Failed, stalled, or finished with failed trajectories to retry."""
        return (
            self.state == self.State.FAILED
            or self.stalled
            or (self.state == self.State.DONE and self.failed > 0)
        )


class ScanFailure(models.Model):
    """A trajectory a rescan could not scan: counted on the job, retried when it is resumed."""

    job = models.ForeignKey(ScanJob, on_delete=models.CASCADE, related_name="failures")
    trajectory = models.ForeignKey(
        "annotations.Trajectory", on_delete=models.CASCADE, related_name="+"
    )
    error = models.CharField(max_length=500)
    attempts = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job_id", "trajectory_id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "trajectory"], name="uniq_scan_failure")
        ]

    def __str__(self) -> str:
        return f"scan of trajectory {self.trajectory_id} failed in rescan #{self.job_id}"


class PendingScan(models.Model):
    """A scan that could not be queued (the broker was unreachable) and is queued again later.

    Written by the after-import hook when publishing fails, deleted by the scan task when the
    scan is done, so a broker outage delays scans but never loses one."""

    trajectory = models.OneToOneField(
        "annotations.Trajectory", on_delete=models.CASCADE, related_name="pending_scan"
    )
    reason = models.CharField(max_length=500, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["updated_at", "id"]

    def __str__(self) -> str:
        return f"pending scan of trajectory {self.trajectory_id}"
