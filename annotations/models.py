"""Trajectories as imported (canonical C1 form) and their steps, one per assistant message."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from rewardhub.immutable import ImmutableModel


class Trajectory(models.Model):
    """One agent rollout. The canonical JSON is the source of truth; other columns index it."""

    external_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    task_type = models.CharField(max_length=100, blank=True, default="", db_index=True)
    source_format = models.CharField(max_length=32, db_index=True)
    digest = models.CharField(max_length=80, unique=True, editable=False)
    canonical = models.JSONField()
    outcome = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    resolved = models.BooleanField(null=True, db_index=True)
    message_count = models.PositiveIntegerField(default=0)
    step_count = models.PositiveIntegerField(default=0)
    command_count = models.PositiveIntegerField(default=0)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="imported_trajectories",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "trajectories"

    def __str__(self) -> str:
        return self.external_id or f"trajectory {self.pk}"


class Step(models.Model):
    """One assistant message with the shell commands it ran and the tool results answering it."""

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    message_index = models.PositiveIntegerField()
    reasoning = models.TextField(blank=True, default="")
    text = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(default=list, blank=True)
    commands = models.JSONField(
        default=list, blank=True, help_text="Shell actions: [{tool_call_id, tool_name, command}]"
    )
    tool_results = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["trajectory_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["trajectory", "index"], name="uniq_step_index"),
        ]

    def __str__(self) -> str:
        return f"{self.trajectory} step {self.index}"


# --- Expert review: queues, assignments, step labels and their audit trail ----------------------


class LabelValue(models.IntegerChoices):
    TRUSTED = 1, "+1 trusted"
    NEUTRAL = 0, "0 neutral"
    UNTRUSTED = -1, "-1 untrusted"


class QueueStrategy(models.TextChoices):
    OLDEST = "oldest", "oldest first"
    UNCERTAINTY = "uncertainty", "most uncertain steps first (active learning)"


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
        "rewardhub.LearnedComponent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="review_queues",
        help_text="Uncertainty queues: the classifier whose doubts route work; empty: the newest "
        "one of the task type in the filters.",
    )
    steps_per_item = models.PositiveSmallIntegerField(
        default=3, help_text="Uncertainty queues: the most uncertain steps to label per trajectory."
    )
    # Who may see, claim and label the queue's items (annotations.review_access); both empty:
    # every reviewer. Leads and admins manage every queue.
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="review_queues"
    )
    teams = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="review_queues",
        help_text="Members of these groups belong to the queue too.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(condition=models.Q(overlap__gte=1), name="queue_overlap_gte_1")
        ]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

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
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "trajectory", "reviewer"], name="uniq_assignment_per_reviewer"
            )
        ]
        indexes = [models.Index(fields=["queue", "status", "locked_until"])]

    def __str__(self) -> str:
        return f"{self.queue} · {self.trajectory} · {self.reviewer}"


class StepLabel(models.Model):
    """A reviewer's current label on a step: overall (behaviour "") or for one trusted behaviour."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="labels")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="step_labels"
    )
    behaviour = models.SlugField(
        max_length=100, blank=True, default="", help_text="Empty: the overall label."
    )
    value = models.SmallIntegerField(choices=LabelValue.choices, null=True, blank=True)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["step_id", "behaviour", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["step", "reviewer", "behaviour"], name="uniq_label_per_reviewer"
            ),
            models.CheckConstraint(
                condition=models.Q(value__in=[-1, 0, 1]) | models.Q(value__isnull=True),
                name="label_value_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.step} {self.behaviour or 'overall'}={self.value} by {self.reviewer_id}"


class LabelEvent(ImmutableModel):
    """Audit trail: one row per change of a label or comment (who, what, when). Append-only;
    each change also appears in the audit log as ``label.set`` pointing at its row."""

    immutable_label = "A label event"

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="label_events")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    behaviour = models.SlugField(max_length=100, blank=True, default="")
    old_value = models.SmallIntegerField(null=True, blank=True)
    new_value = models.SmallIntegerField(null=True, blank=True)
    old_comment = models.TextField(blank=True, default="")
    new_comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        what = self.behaviour or "overall"
        return f"{self.reviewer_id} {what} {self.old_value}->{self.new_value}"


class FinalLabel(models.Model):
    """A lead's resolution of a disagreement: the label exports use for that step and behaviour."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="final_labels")
    behaviour = models.SlugField(max_length=100, blank=True, default="")
    value = models.SmallIntegerField(choices=LabelValue.choices)
    note = models.TextField(blank=True, default="")
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["step_id", "behaviour"]
        constraints = [
            models.UniqueConstraint(fields=["step", "behaviour"], name="uniq_final_label")
        ]

    def __str__(self) -> str:
        return f"{self.step} {self.behaviour or 'overall'} final={self.value}"


class StepUncertainty(models.Model):
    """A learned classifier's P(trusted) for a step and how unsure it is (1 at P = 0.5, 0 at 0 or
    1), computed in batches for unlabelled steps; uncertainty queues order work by it."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="uncertainties")
    component = models.ForeignKey(
        "rewardhub.LearnedComponent", on_delete=models.CASCADE, related_name="step_uncertainties"
    )
    probability = models.FloatField()
    uncertainty = models.FloatField()
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["-uncertainty", "step_id"]
        verbose_name_plural = "step uncertainties"
        constraints = [
            models.UniqueConstraint(fields=["step", "component"], name="uniq_step_uncertainty"),
        ]
        indexes = [models.Index(fields=["component", "-uncertainty"], name="uncertainty_rank")]

    def __str__(self) -> str:
        return f"{self.step} P={self.probability:.2f} (u={self.uncertainty:.2f})"
