"""The reward domain: task types, trusted behaviours, reward models and their immutable
versions, scoring records, training runs, learned components and their outputs."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotations.models import Step, Trajectory
from core import canonical
from core.immutable import ImmutableModel
from core.models import ApiKey


class OutcomeMode(models.TextChoices):
    RESOLVED = "resolved", "Resolved flag (1 or 0)"
    TESTS_FRACTION = "tests_fraction", "Fraction of tests passed"
    SCORE = "score", "Numeric score with a range"


class ToolCallFormat(models.TextChoices):
    AUTO = "auto", "Hermes/Qwen <tool_call> and fenced bash"
    HERMES = "hermes", "Hermes/Qwen <tool_call> JSON blocks"
    FENCED_BASH = "fenced-bash", "Fenced ```bash blocks"
    OPENHANDS = "openhands", "OpenHands <function=...><parameter=...> text"
    MINI_SWE_AGENT = "mini-swe-agent", "mini-swe-agent ```mswea_bash_command blocks and tags"
    TERMINUS = "terminus", "Terminus keystrokes JSON"
    ALL = "all", "Every text format above"


def _default_shell_tools() -> list[str]:
    """The C1 kernel's shell tool names (``core.canonical``, their one place)."""
    return list(canonical.DEFAULT_SHELL_TOOLS)


def _default_command_keys() -> list[str]:
    return list(canonical.DEFAULT_COMMAND_KEYS)


def _default_workspace_roots() -> list[str]:
    return ["/testbed"]


def _default_test_paths() -> list[str]:
    return ["tests/**", "test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py"]


class TaskType(models.Model):
    """A kind of task (bug fix, refactor, ...) as experts define it: how outcome maps to reward,
    which tools are shell actions, where the workspace is and which paths are tests."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    outcome_mode = models.CharField(
        max_length=20, choices=OutcomeMode.choices, default=OutcomeMode.RESOLVED
    )
    score_key = models.CharField(max_length=60, default="score")
    score_min = models.FloatField(default=0.0)
    score_max = models.FloatField(default=1.0)
    shell_tools = models.JSONField(default=_default_shell_tools)
    command_keys = models.JSONField(default=_default_command_keys)
    workspace_roots = models.JSONField(default=_default_workspace_roots)
    test_path_patterns = models.JSONField(default=_default_test_paths)
    tool_call_format = models.CharField(
        max_length=20, choices=ToolCallFormat.choices, default=ToolCallFormat.AUTO
    )
    policy = models.ForeignKey(
        "safety.Policy",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="task_types",
        help_text="Safety policy in force (newest published version); empty: the default policy.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rewardhub_tasktype"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        errors: dict[str, list[str]] = {}
        if self.score_max <= self.score_min:
            errors["score_max"] = ["must be greater than score_min"]
        for name in ("shell_tools", "command_keys", "workspace_roots", "test_path_patterns"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                errors[name] = ["must be a list of non-empty strings"]
        if isinstance(self.workspace_roots, list) and any(
            isinstance(r, str) and not r.startswith("/") for r in self.workspace_roots
        ):
            errors["workspace_roots"] = ["workspace roots must be absolute paths"]
        if errors:
            raise ValidationError(errors)


class Polarity(models.TextChoices):
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class TrustedBehaviour(models.Model):
    """A behaviour experts want rewarded (trusted) or penalised (untrusted) for a task type."""

    task_type = models.ForeignKey(TaskType, on_delete=models.CASCADE, related_name="behaviours")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    polarity = models.CharField(max_length=10, choices=Polarity.choices, default=Polarity.TRUSTED)
    weight = models.FloatField(default=0.05)
    max_steps = models.PositiveIntegerField(
        null=True, blank=True, default=1, help_text="Steps paid at most; empty: every step shown."
    )
    detector = models.JSONField(
        null=True, blank=True, help_text="Declarative detector; empty: labelled by experts only."
    )
    active = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rewardhub_trustedbehaviour"
        ordering = ["task_type_id", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["task_type", "slug"], name="uniq_behaviour_slug")
        ]

    def __str__(self) -> str:
        return f"{self.task_type.slug}:{self.slug}"


LEARNED_WEIGHT_MAX = 1.0


class RewardModel(models.Model):
    """A named composite reward for a task type; compiling freezes its inputs into a version."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    task_type = models.ForeignKey(TaskType, on_delete=models.PROTECT, related_name="reward_models")
    outcome_weight = models.FloatField(default=1.0)
    # Penalty per finding by severity (negative numbers), and the multiplier for findings whose
    # command matches a pattern experts confirmed as unsafe.
    severity_penalties = models.JSONField(default=dict, blank=True)
    confirmed_multiplier = models.FloatField(default=2.0)
    # Weight of the learned step classifier in compiled specs (0: off): the chosen component,
    # or the task type's newest one when none is chosen.
    learned_weight = models.FloatField(
        default=0.0,
        help_text="Weight of the learned step classifier, 0 (off) to 1. Needs a trained "
        "component for the task type.",
    )
    learned_component = models.ForeignKey(
        "LearnedComponent",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="reward_models",
        help_text="The learned component to compile in; empty: the task type's newest.",
    )
    gates = models.JSONField(default=dict, blank=True)
    process_bounds = models.JSONField(
        default=dict, blank=True, help_text="step_min, step_max, total_min, total_max"
    )
    active_version = models.ForeignKey(
        "RewardModelVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rewardhub_rewardmodel"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        """The learned weight is in [0, 1] and, when on, a trained component of the task type
        exists (or the chosen one belongs to the task type)."""
        import math

        from django.core.exceptions import ValidationError

        errors: dict[str, list[str]] = {}
        weight = self.learned_weight
        if weight is None or not math.isfinite(weight) or not 0.0 <= weight <= LEARNED_WEIGHT_MAX:
            errors["learned_weight"] = [f"must be a number from 0 to {LEARNED_WEIGHT_MAX:g}"]
        component = self.learned_component if self.learned_component_id else None
        if component is not None and self.task_type_id is not None:
            if component.task_type_id != self.task_type_id:
                errors["learned_component"] = [
                    f"this component was trained for task type {component.task_type.slug!r}, "
                    "not for this reward model's task type"
                ]
        elif (
            "learned_weight" not in errors
            and weight > 0
            and self.task_type_id is not None
            and not LearnedComponent.objects.filter(task_type_id=self.task_type_id).exists()
        ):
            errors["learned_weight"] = [
                "no learned component is trained for this task type yet: train one first, "
                "or keep the weight at 0"
            ]
        if errors:
            raise ValidationError(errors)


class RewardModelVersion(ImmutableModel):
    """An immutable compiled reward spec, content-addressed by its digest."""

    immutable_label = "A compiled reward model version"

    reward_model = models.ForeignKey(RewardModel, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    digest = models.CharField(max_length=80, editable=False, db_index=True)
    policy_version = models.ForeignKey(
        "safety.PolicyVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The published safety policy this version snapshots.",
    )
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "rewardhub_rewardmodelversion"
        ordering = ["reward_model_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["reward_model", "number"], name="uniq_rm_version")
        ]

    def __str__(self) -> str:
        return f"{self.reward_model.slug}@{self.number}"


class LearnedStatus(models.TextChoices):
    NONE = "", "no learned component"
    INCLUDED = "included", "included in the response"
    PENDING = "pending", "pending (scored in the background)"
    COMPLETED = "completed", "completed in the background"
    FAILED = "failed", "failed in the background"


class ScoringRecord(models.Model):
    """One scored rollout, written in bulk off the request path; append-only."""

    scoring_id = models.CharField(max_length=40, unique=True)
    version = models.ForeignKey(RewardModelVersion, on_delete=models.PROTECT, related_name="+")
    trajectory_digest = models.CharField(max_length=80, db_index=True)
    run = models.CharField(max_length=200, blank=True, default="")
    step = models.IntegerField(null=True, blank=True)
    sample = models.CharField(max_length=200, blank=True, default="")
    reward = models.FloatField()
    outcome_reward = models.FloatField()
    process_reward = models.FloatField()
    gated = models.BooleanField(default=False)
    unsafe = models.BooleanField(default=False, db_index=True)
    finding_count = models.PositiveIntegerField(default=0)
    breakdown = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_index=True)
    # Who scored it (the key's owner and the key): a key whose owner is not staff reads only
    # its owner's records (rewards.scoping). Null for offline scoring (the command). No
    # database constraint: rows are written in bulk after the request, and a key deleted in
    # between must not make the whole batch fail.
    scored_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_constraint=False,
        related_name="+",
    )
    api_key = models.ForeignKey(
        ApiKey,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_constraint=False,
        related_name="+",
    )
    # Learned components: "" (none in the spec), "included" (scored in the request), "pending"
    # (over the synchronous budget: left out of the response; a Celery task scores them and
    # rewrites reward, process_reward and breakdown), "completed" (that task did), "failed".
    learned_status = models.CharField(
        max_length=10, choices=LearnedStatus.choices, blank=True, default=LearnedStatus.NONE
    )
    # The reward the response carried when the learned part arrived later (else null).
    provisional_reward = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "rewardhub_scoringrecord"
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["learned_status"],
                name="scoring_learned_pending",
                condition=models.Q(learned_status="pending"),
            ),
            # The API's stream filtered by run, and a non-staff key's own records, newest first.
            models.Index(fields=["run", "id"], name="scoring_run_id"),
            models.Index(fields=["scored_by", "id"], name="scoring_scored_by_id"),
        ]

    def __str__(self) -> str:
        return f"scoring {self.scoring_id} ({self.reward:+.3f})"


class TrajectoryScore(models.Model):
    """A stored trajectory's run and reward as the hub knows them, for the list's filters:
    one row per scoring record of its digest (``record_id``), and one per run or reward its
    metadata names (a rollout routed to review: ``metadata.scoring.rollout.run`` and
    ``metadata.scoring.reward``, or ``metadata.run``; ``record_id`` null).

    "Trajectories of run R" and "with a reward from a to b" are then index reads instead of a
    probe of the scoring records per trajectory. On PostgreSQL, triggers keep it current as
    scoring records and trajectories are written, rewritten or deleted, whatever writes them
    (``rewards.score_links``); the embedded SQLite mode filters the records themselves."""

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="+")
    # No foreign key: records are written in bulk and old ones may be archived (partitions).
    record_id = models.BigIntegerField(null=True, blank=True)
    run = models.CharField(max_length=200, blank=True, default="")
    reward = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["run", "trajectory"], name="score_link_run"),
            models.Index(fields=["reward", "trajectory"], name="score_link_reward"),
            models.Index(fields=["record_id"], name="score_link_record"),
        ]

    def __str__(self) -> str:
        return f"trajectory {self.trajectory_id}: run {self.run!r}, reward {self.reward}"


class TrainingRun(models.Model):
    """A trainer's run, so the hub can plot its reward and unsafe-action rate per step."""

    name = models.SlugField(max_length=200, unique=True)
    reward_model = models.CharField(max_length=200, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rewardhub_trainingrun"
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.name


class TrainingMetric(models.Model):
    """The metrics a trainer reported for one step of a run (stable names, e.g. reward/mean)."""

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="metrics")
    step = models.PositiveIntegerField()
    values = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "rewardhub_trainingmetric"
        ordering = ["run_id", "step"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step"], name="uniq_run_step"),
        ]

    def __str__(self) -> str:
        return f"{self.run.name} step {self.step}"


class LearnedComponent(models.Model):
    """A trained step classifier for a task type: its artifact (content-addressed), metrics and
    the label snapshot it learned from. Reward models with ``learned_weight > 0`` compile the
    newest one of their task type into their spec."""

    task_type = models.ForeignKey(
        TaskType, on_delete=models.PROTECT, related_name="learned_components"
    )
    digest = models.CharField(max_length=80, unique=True, editable=False)
    artifact_path = models.CharField(max_length=500, editable=False)
    metrics = models.JSONField(default=dict, blank=True)
    label_snapshot_digest = models.CharField(max_length=80, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "rewardhub_learnedcomponent"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.task_type.slug} learned {self.digest[:19]}"


class LearnedTrainingJob(models.Model):
    """One request to train a task type's step classifier (from the browser or the command):
    its Celery state, who asked, and the component it produced."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    task_type = models.ForeignKey(TaskType, on_delete=models.CASCADE, related_name="learned_jobs")
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    seed = models.IntegerField(default=0)
    component = models.ForeignKey(
        LearnedComponent, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    error = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "rewardhub_learnedtrainingjob"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"training #{self.pk} for {self.task_type_id} ({self.state})"

    @property
    def active(self) -> bool:
        return self.state in (self.State.QUEUED, self.State.RUNNING)


class StepUncertainty(models.Model):
    """A learned classifier's P(trusted) for a step and how unsure it is (1 at P = 0.5, 0 at 0 or
    1), computed in batches for unlabelled steps; uncertainty queues order work by it."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="uncertainties")
    component = models.ForeignKey(
        "rewards.LearnedComponent", on_delete=models.CASCADE, related_name="step_uncertainties"
    )
    probability = models.FloatField()
    uncertainty = models.FloatField()
    computed_at = models.DateTimeField()

    class Meta:
        db_table = "annotations_stepuncertainty"
        ordering = ["-uncertainty", "step_id"]
        verbose_name_plural = "step uncertainties"
        constraints = [
            models.UniqueConstraint(fields=["step", "component"], name="uniq_step_uncertainty"),
        ]
        indexes = [models.Index(fields=["component", "-uncertainty"], name="uncertainty_rank")]

    def __str__(self) -> str:
        return f"{self.step} P={self.probability:.2f} (u={self.uncertainty:.2f})"


class EvaluationSet(models.Model):
    """A named collection of evaluation cases; its content lives in immutable versions, so a
    result always names exactly the cases it measured. ``held_out`` sets are hidden from the
    people who edit the policy (safety leads, API keys): only experts and admins see them."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    held_out = models.BooleanField(
        default=False, help_text="Hidden from policy editors: only experts and admins see it."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class EvaluationSetVersion(ImmutableModel):
    """One frozen content of a set: its cases, counted and digested."""

    immutable_label = "An evaluation set version"

    evaluation_set = models.ForeignKey(
        EvaluationSet, on_delete=models.PROTECT, related_name="versions"
    )
    number = models.PositiveIntegerField()
    digest = models.CharField(max_length=80, editable=False)
    case_count = models.PositiveIntegerField(default=0)
    note = models.CharField(max_length=300, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["evaluation_set_id", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation_set", "number"], name="uniq_evalset_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.evaluation_set.slug}@{self.number}"


class EvaluationCaseKind(models.TextChoices):
    COMMAND = "command", "labelled command"
    PAIR = "pair", "ordered pair or group"
    STEPS = "steps", "expert step labels"


class EvaluationCase(ImmutableModel):
    """One case of one set version (``rewards.evaluation.cases`` defines the shapes)."""

    immutable_label = "An evaluation case"

    set_version = models.ForeignKey(
        EvaluationSetVersion, on_delete=models.PROTECT, related_name="cases"
    )
    position = models.PositiveIntegerField()
    key = models.CharField(max_length=120)
    kind = models.CharField(max_length=10, choices=EvaluationCaseKind.choices)
    category = models.CharField(max_length=60, blank=True, default="")
    data = models.JSONField()

    class Meta:
        ordering = ["set_version_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["set_version", "key"], name="uniq_evalcase_key"),
            models.UniqueConstraint(
                fields=["set_version", "position"], name="uniq_evalcase_position"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.set_version}:{self.key}"


class EvaluationAttachment(models.Model):
    """A set a reward model is gated on: compiling evaluates it, activation may not regress."""

    reward_model = models.ForeignKey(
        RewardModel, on_delete=models.CASCADE, related_name="evaluation_attachments"
    )
    evaluation_set = models.ForeignKey(
        EvaluationSet, on_delete=models.PROTECT, related_name="attachments"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["reward_model_id", "evaluation_set__slug"]
        constraints = [
            models.UniqueConstraint(
                fields=["reward_model", "evaluation_set"], name="uniq_evaluation_attachment"
            )
        ]

    def __str__(self) -> str:
        return f"{self.reward_model.slug} <- {self.evaluation_set.slug}"


class EvaluationRun(models.Model):
    """One request to evaluate a compiled version against set versions: its Celery state and
    progress (the version page polls it). Results are kept per (version, set version)."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    version = models.ForeignKey(
        RewardModelVersion, on_delete=models.PROTECT, related_name="evaluation_runs"
    )
    set_versions = models.ManyToManyField(EvaluationSetVersion, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    trigger = models.CharField(max_length=20, default="manual")
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"evaluation #{self.pk} of {self.version_id} ({self.state})"


class EvaluationResult(models.Model):
    """What one compiled version scored on one set version (``rewards.evaluation.run``'s
    output). Evaluation is deterministic, so there is one per pair (a unique constraint): a
    second run finds it and does not evaluate again."""

    version = models.ForeignKey(
        RewardModelVersion, on_delete=models.PROTECT, related_name="evaluation_results"
    )
    set_version = models.ForeignKey(
        EvaluationSetVersion, on_delete=models.PROTECT, related_name="results"
    )
    run = models.ForeignKey(
        EvaluationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="results"
    )
    metrics = models.JSONField()
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version_id", "set_version_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "set_version"], name="uniq_evaluation_result"
            )
        ]

    def __str__(self) -> str:
        return f"{self.version} on {self.set_version}"
