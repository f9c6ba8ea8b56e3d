"""Review queues and their assignments: who reviews which trajectory, locked until when."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models import Trajectory


class QueueStrategy(models.TextChoices):
    OLDEST = "oldest", "oldest first"
    UNCERTAINTY = "uncertainty", "most uncertain steps first (active learning)"


class RequiredSteps(models.TextChoices):
    """Which steps a reviewer must label before submitting (200-step traces are heavy)."""

    ALL = "all", "every step"
    FLAGGED = "flagged", "steps with findings or routed as uncertain"
    SAMPLED = "sampled", "steps with findings or routed as uncertain, plus a sample of the rest"


class ReviewQueue(models.Model):
    """A saved trajectory filter that reviewers pull work from, with overlap and blind review.

    With the ``uncertainty`` strategy (active learning) it hands out first the trajectories
    whose unlabelled steps the learned classifier is least sure about, and each assignment
    names the steps to label (``Assignment.focus_steps``), so each new label teaches the most.
    """

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    filters = models.JSONField(
        default=dict, blank=True, help_text="Same keys as the trajectory list's filters."
    )
    overlap = models.PositiveSmallIntegerField(
        default=1, help_text="Independent reviews wanted per trajectory (k)."
    )
    blind = models.BooleanField(
        default=True, help_text="Hide other reviewers' labels until a reviewer submits."
    )
    lock_minutes = models.PositiveIntegerField(default=30)
    active = models.BooleanField(default=True)
    strategy = models.CharField(
        max_length=12, choices=QueueStrategy.choices, default=QueueStrategy.OLDEST
    )
    learned_component = models.ForeignKey(
        "rewards.LearnedComponent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="review_queues",
        help_text="Uncertainty queues: the classifier whose doubts route work; empty: the newest "
        "one of the task type in the filters.",
    )
    required_steps = models.CharField(
        max_length=8,
        choices=RequiredSteps.choices,
        default=RequiredSteps.ALL,
        help_text="Which steps need a label before a review can be submitted.",
    )
    sample_every = models.PositiveSmallIntegerField(
        default=10,
        help_text="Sampled: about one in this many of the other steps needs a label too.",
    )
    steps_per_item = models.PositiveSmallIntegerField(
        default=3, help_text="Uncertainty queues: the most uncertain steps to label per trajectory."
    )
    # Who may see, claim and label the queue's items (review.access); both empty:
    # every reviewer. Leads and admins manage every queue.
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="review_queues",
        db_table="annotations_reviewqueue_members",
    )
    teams = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="review_queues",
        db_table="annotations_reviewqueue_teams",
        help_text="Members of these groups belong to the queue too.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotations_reviewqueue"
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(condition=models.Q(overlap__gte=1), name="queue_overlap_gte_1")
        ]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        if self.sample_every < 1:
            raise ValidationError({"sample_every": ["must be at least 1"]})
        if self.strategy != QueueStrategy.UNCERTAINTY:
            return
        task_type = (self.filters or {}).get("task_type") if isinstance(self.filters, dict) else ""
        errors: dict[str, list[str]] = {}
        if self.learned_component_id is None and not task_type:
            errors["strategy"] = [
                "an uncertainty queue needs a task_type filter or a learned component"
            ]
        elif (
            self.learned_component_id is not None
            and task_type
            and (trained_for := self.learned_component.task_type.slug) != task_type
        ):
            errors["learned_component"] = [
                f"this component was trained for {trained_for!r}, "
                f"not for the queue's task type {task_type!r}"
            ]
        if self.steps_per_item < 1:
            errors["steps_per_item"] = ["must be at least 1"]
        if self.overlap != 1:
            errors["overlap"] = ["an uncertainty queue routes each step to one reviewer: use 1"]
        if errors:
            raise ValidationError(errors)


class AssignmentStatus(models.TextChoices):
    IN_PROGRESS = "in_progress", "in progress"
    SUBMITTED = "submitted"
    RELEASED = "released"


class Assignment(models.Model):
    """One reviewer's claim on one trajectory of a queue; locked to them until ``locked_until``."""

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="assignments")
    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="assignments")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_assignments"
    )
    status = models.CharField(
        max_length=12, choices=AssignmentStatus.choices, default=AssignmentStatus.IN_PROGRESS
    )
    locked_until = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Uncertainty queues: the steps routed to this reviewer, most uncertain first, with the
    # classifier's P(trusted) when routed: [{"step": index, "p": 0.52}, ...]. Empty: every step.
    focus_steps = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "annotations_assignment"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "trajectory", "reviewer"], name="uniq_assignment_per_reviewer"
            )
        ]
        indexes = [
            models.Index(fields=["queue", "status", "locked_until"]),
            # The newest submission: part of what agreement snapshots were computed from.
            models.Index(fields=["submitted_at"], name="assignment_submitted_at"),
        ]

    def __str__(self) -> str:
        return f"{self.queue} · {self.trajectory} · {self.reviewer}"


class StatsSnapshot(models.Model):
    """An aggregate over the whole hub (dashboard plots, an agreement report), computed by the
    Celery task ``review.refresh_stats`` and read by the pages, which show when it was computed.

    ``stamp`` records what the inputs looked like (newest ids) when it was computed: a page that
    finds them changed asks for a refresh and shows this one meanwhile (see ``review.stats``)."""

    key = models.CharField(max_length=250, unique=True)
    data = models.JSONField(default=dict)
    stamp = models.CharField(max_length=250, blank=True, default="")
    computed_at = models.DateTimeField()
    seconds = models.FloatField(default=0.0, help_text="How long the computation took.")
    refreshing_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.key} at {self.computed_at:%Y-%m-%d %H:%M:%S}"


class ExportKind(models.TextChoices):
    PRM = "prm", "PRM JSONL (one row per labelled trajectory)"
    ANNOTATORS = "annotators", "per annotator JSONL (one row per trajectory and reviewer)"


class ExportStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ExportJob(models.Model):
    """A step-label export written to a file by a Celery task (``review.run_export``), for
    exports too large to stream in one request.

    Resumable: after each chunk of trajectories the file is flushed and ``last_id`` (the keyset
    cursor) and ``bytes`` (the file's length at that point) are saved together, so a run that
    dies anywhere continues from the last saved chunk, cutting off what it wrote after it."""

    kind = models.CharField(max_length=12, choices=ExportKind.choices)
    filters = models.JSONField(
        default=dict, blank=True, help_text="Same keys as the trajectory list's filters."
    )
    status = models.CharField(
        max_length=8, choices=ExportStatus.choices, default=ExportStatus.QUEUED
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last saved chunk: a running job silent for long has died."
    )
    total = models.PositiveIntegerField(
        null=True, blank=True, help_text="Labelled trajectories matching the filters at the start."
    )
    done = models.PositiveIntegerField(default=0, help_text="Trajectories written so far.")
    rows = models.PositiveIntegerField(default=0, help_text="JSONL lines written so far.")
    last_id = models.BigIntegerField(default=0, help_text="Keyset cursor: last trajectory written.")
    bytes = models.BigIntegerField(default=0, help_text="File length at the last saved chunk.")
    attempts = models.PositiveSmallIntegerField(default=0)
    runner = models.CharField(
        max_length=32, blank=True, default="", help_text="The run that owns the job (a token)."
    )
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"export {self.pk} ({self.kind}, {self.status})"

    @property
    def file_name(self) -> str:
        """The download's name (the stored file is named by the job's id)."""
        return f"step-labels-{self.kind}-{self.pk}.jsonl"
