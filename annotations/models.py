"""Trajectories as imported (canonical C1 form) and their steps, one per assistant message."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models

from core.immutable import ImmutableModel


class Trajectory(models.Model):
    """One agent rollout. The canonical JSON is the source of truth; other columns index it."""

    external_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    task_type = models.CharField(max_length=100, blank=True, default="")
    source_format = models.CharField(max_length=32)
    digest = models.CharField(max_length=80, unique=True, editable=False)
    canonical = models.JSONField()
    outcome = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    resolved = models.BooleanField(null=True)
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
        # Lists filter on these and page by id (newest first): each filter is one index range
        # read in page order, whatever the table holds.
        indexes = [
            models.Index(fields=["task_type", "id"], name="trajectory_task_type_id"),
            models.Index(fields=["source_format", "id"], name="trajectory_source_format_id"),
            models.Index(fields=["resolved", "id"], name="trajectory_resolved_id"),
        ]

    def __str__(self) -> str:
        return self.external_id or f"trajectory {self.pk}"


class TrajectorySearch(models.Model):
    """A trajectory's words for the list's search: its id and task type, every step's text,
    reasoning, commands, tool calls and tool output, and the findings flagged on it.

    On PostgreSQL a full-text vector (``simple`` configuration, no positions) under a GIN
    index, written by triggers as trajectories, steps and flags are inserted (migration
    ``0008_trajectory_search``), so every way of writing them keeps it current. Unused
    elsewhere: the embedded SQLite mode searches the columns themselves."""

    trajectory = models.OneToOneField(
        Trajectory, on_delete=models.CASCADE, primary_key=True, related_name="search"
    )
    vector = SearchVectorField(null=True)

    class Meta:
        verbose_name_plural = "trajectory search vectors"

    def __str__(self) -> str:
        return f"search vector of trajectory {self.trajectory_id}"


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
        indexes = [
            # A reviewer's labels by time: the dashboard's "today" and "per day" counts.
            models.Index(fields=["reviewer", "updated_at"], name="label_reviewer_updated"),
        ]
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


class LabelTally(models.Model):
    """The reviewers' votes on one step and label (overall or one behaviour): how many gave +1, 0
    and -1, recounted by the label service with every change (``review.services``), so the
    disagreements and their count are read from an index instead of from every label.

    ``split``: more than one distinct value. ``resolved``: a lead set the final label. The
    trajectory and step index are the step's, copied so disagreements come in page order."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="tallies")
    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="+")
    step_index = models.PositiveIntegerField()
    behaviour = models.SlugField(max_length=100, blank=True, default="")
    trusted = models.PositiveIntegerField(default=0)
    neutral = models.PositiveIntegerField(default=0)
    untrusted = models.PositiveIntegerField(default=0)
    split = models.BooleanField(default=False)
    resolved = models.BooleanField(default=False)

    class Meta:
        ordering = ["trajectory_id", "step_index", "behaviour"]
        constraints = [
            models.UniqueConstraint(fields=["step", "behaviour"], name="uniq_label_tally")
        ]
        indexes = [
            models.Index(
                fields=["resolved", "trajectory", "step_index", "behaviour"],
                name="tally_disagreements",
                condition=models.Q(split=True),
            ),
            # The labelled trajectories (a tally with a vote), read from the index alone.
            models.Index(
                fields=["trajectory"],
                name="tally_voted_trajectory",
                condition=models.Q(trusted__gt=0)
                | models.Q(neutral__gt=0)
                | models.Q(untrusted__gt=0),
            ),
        ]

    def __str__(self) -> str:
        votes = f"+1 x{self.trusted}, 0 x{self.neutral}, -1 x{self.untrusted}"
        return f"step {self.step_id} {self.behaviour or 'overall'}: {votes}"
