from __future__ import annotations

from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from core.outcomes import RESOLVED_HELP
from rewards.models import (
    EvaluationSet,
    LearnedComponent,
    RewardModel,
    RewardModelVersion,
    TaskType,
    TrustedBehaviour,
)
from safety.models import Policy


class TaskTypeSerializer(serializers.ModelSerializer):
    policy = serializers.SlugRelatedField(
        slug_field="slug", queryset=Policy.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = TaskType
        fields = [
            "id",
            "slug",
            "name",
            "description",
            "outcome_mode",
            "score_key",
            "score_min",
            "score_max",
            "shell_tools",
            "command_keys",
            "workspace_roots",
            "test_path_patterns",
            "tool_call_format",
            "policy",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance = TaskType(**{**self._current(), **attrs})
        from django.core.exceptions import ValidationError as DjangoValidationError

        try:
            instance.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs

    def _current(self) -> dict[str, Any]:
        if self.instance is None:
            return {}
        return {
            f: getattr(self.instance, f)
            for f in self.Meta.fields
            if f not in ("id", "created_at", "updated_at")
        }


class TrustedBehaviourSerializer(serializers.ModelSerializer):
    task_type = serializers.SlugRelatedField(slug_field="slug", queryset=TaskType.objects.all())

    class Meta:
        model = TrustedBehaviour
        fields = [
            "id",
            "task_type",
            "slug",
            "name",
            "description",
            "polarity",
            "weight",
            "max_steps",
            "detector",
            "active",
            "updated_at",
        ]
        read_only_fields = ["id", "updated_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The checks the behaviour form runs (``behaviour_errors``), on the behaviour as it
        will be stored (an update keeps the fields it does not send, a create takes defaults)."""
        from rewards.services.rewards import BEHAVIOUR_FIELDS, behaviour_errors

        if self.instance is not None:
            current = {n: getattr(self.instance, n) for n in BEHAVIOUR_FIELDS}
        else:  # what the row will hold: the model's defaults for what is not sent
            meta = TrustedBehaviour._meta
            current = {n: meta.get_field(n).get_default() for n in BEHAVIOUR_FIELDS}
        errors = behaviour_errors({**current, **attrs})
        if errors:
            all_ = errors.pop("__all__", None)
            raise serializers.ValidationError(
                {**errors, **({"non_field_errors": all_} if all_ else {})}
            )
        return attrs


class RewardModelVersionSerializer(serializers.ModelSerializer):
    reward_model = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    policy = serializers.SerializerMethodField()

    class Meta:
        model = RewardModelVersion
        fields = ["id", "reward_model", "number", "digest", "policy", "note", "created_at"]
        read_only_fields = fields

    def get_policy(self, obj: RewardModelVersion) -> str | None:
        return str(obj.policy_version) if obj.policy_version_id else None


class RewardModelVersionDetailSerializer(RewardModelVersionSerializer):
    class Meta(RewardModelVersionSerializer.Meta):
        fields = [*RewardModelVersionSerializer.Meta.fields, "spec"]
        read_only_fields = fields


class RewardModelSerializer(serializers.ModelSerializer):
    task_type = serializers.SlugRelatedField(slug_field="slug", queryset=TaskType.objects.all())
    active_version = serializers.SerializerMethodField()
    learned_component = serializers.SlugRelatedField(
        slug_field="digest",
        queryset=LearnedComponent.objects.all(),
        allow_null=True,
        required=False,
        help_text="Digest of the learned component to compile in; null: the task type's newest.",
    )

    class Meta:
        model = RewardModel
        fields = [
            "id",
            "slug",
            "name",
            "description",
            "task_type",
            "outcome_weight",
            "severity_penalties",
            "confirmed_multiplier",
            "learned_weight",
            "learned_component",
            "gates",
            "process_bounds",
            "active_version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "active_version", "created_at", "updated_at"]

    def get_active_version(self, obj: RewardModel) -> int | None:
        return obj.active_version.number if obj.active_version_id else None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The model's own checks (learned weight range, a trained component for the task
        type), so the API, the admin and the pages agree; errors name the field."""
        from django.core.exceptions import ValidationError as DjangoValidationError

        names = ("task_type", "learned_weight", "learned_component")
        current = {n: getattr(self.instance, n) for n in names} if self.instance else {}
        values = {**current, **{n: attrs[n] for n in names if n in attrs}}
        try:
            RewardModel(**values).clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs


class CompileInputSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=300)
    activate = serializers.BooleanField(required=False, default=False)


class ActivateInputSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)
    override_reason = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="An expert's written reason to activate a version that regresses on an "
        "attached evaluation set (kept in the audit log).",
    )


@extend_schema_field(OpenApiTypes.OBJECT)
class ParsedJSONField(serializers.Field):
    """A value the JSON parser already decoded, passed on as is.

    DRF's JSONField re-serialises its value to prove it is JSON, which for a trajectory costs as
    much as a fifth of scoring it; the scorer's own validation names any bad field anyway.
    """

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


# --- C1 and C2 as the API docs show them (documentation only: the scorer validates input) ---


class C1FunctionDoc(serializers.Serializer):
    name = serializers.CharField(help_text="Tool name, e.g. bash (the task type's shell tools).")
    arguments = serializers.JSONField(
        help_text='A JSON string (OpenAI) or an object, e.g. {"command": "pytest -q"}.'
    )


class C1ToolCallDoc(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField(default="function")
    function = C1FunctionDoc()


class C1MessageDoc(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant", "tool"])
    content = serializers.CharField(allow_blank=True, required=False)
    reasoning_content = serializers.CharField(
        required=False, help_text="Interleaved thinking, kept."
    )
    tool_calls = C1ToolCallDoc(many=True, required=False)
    tool_call_id = serializers.CharField(required=False, help_text="On tool messages.")


class C1OutcomeDoc(serializers.Serializer):
    resolved = serializers.BooleanField(required=False, help_text=RESOLVED_HELP)
    tests_passed = serializers.IntegerField(required=False)
    tests_failed = serializers.IntegerField(required=False)
    score = serializers.FloatField(required=False, help_text="In [0, 1].")


class C1TrajectoryDoc(serializers.Serializer):
    """C1, the canonical trajectory: OpenAI chat-completions messages (every importer converts
    into it). A step is one assistant message, numbered from 0."""

    id = serializers.CharField(required=False)
    task_type = serializers.CharField(required=False)
    messages = C1MessageDoc(many=True)
    outcome = C1OutcomeDoc(required=False, help_text="The environment's verdict.")
    patch = serializers.CharField(
        required=False, help_text="C1 1.1: the final change of the workspace as git diff prints it."
    )
    metadata = serializers.DictField(
        required=False, help_text="workspace: the checkout's root (a string or a list of roots)."
    )


@extend_schema_field(C1TrajectoryDoc)
class C1TrajectoryField(ParsedJSONField):
    """A C1 trajectory, parsed as is (see ParsedJSONField); the docs show its shape."""


class C2FindingDoc(serializers.Serializer):
    rule = serializers.CharField(help_text="e.g. fs.delete-outside-workspace")
    category = serializers.CharField()
    severity = serializers.CharField(help_text="info, low, medium, high or critical.")
    action = serializers.CharField(help_text="allow, review or block.")
    command = serializers.CharField()
    span = serializers.ListField(
        child=serializers.IntegerField(), help_text="[start, end) of the match in the command."
    )
    message = serializers.CharField()


class C2StepDoc(serializers.Serializer):
    step = serializers.IntegerField()
    message_index = serializers.IntegerField()
    reward = serializers.FloatField()
    findings = C2FindingDoc(many=True)
    behaviors = serializers.ListField(child=serializers.CharField())


class C2RewardModelRefDoc(serializers.Serializer):
    slug = serializers.CharField()
    version = serializers.IntegerField()
    digest = serializers.CharField()


class C2ScoreResponseDoc(serializers.Serializer):
    """C2's answer: reward == outcome contribution + process_reward."""

    reward = serializers.FloatField()
    outcome_reward = serializers.FloatField()
    process_reward = serializers.FloatField()
    gated = serializers.BooleanField()
    steps = C2StepDoc(many=True)
    findings = serializers.ListField(
        child=serializers.DictField(), help_text="Every finding, each with its step."
    )
    breakdown = serializers.DictField(help_text="Each part of the reward, as the README explains.")
    reward_model = C2RewardModelRefDoc()
    scoring_id = serializers.CharField()
    learned_status = serializers.CharField(
        required=False, help_text="With learned components: included or pending."
    )


class C2BatchResponseDoc(serializers.Serializer):
    results = C2ScoreResponseDoc(many=True, help_text="In the order of the trajectories.")


# The scoring record's step column is a 32-bit integer.
STEP_MIN, STEP_MAX = -(2**31), 2**31 - 1


class RolloutSerializer(serializers.Serializer):
    """C2's optional rollout tag, checked before scoring because it is stored with the record:
    one ``step`` out of the column's range would make a whole batch of records unwritable.
    ``run`` and ``sample`` are text (numbers are taken as text), stored cut to 200 characters;
    other keys are kept as sent."""

    run = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    sample = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    step = serializers.IntegerField(
        required=False, allow_null=True, min_value=STEP_MIN, max_value=STEP_MAX
    )


def checked_rollout(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with ``step`` as an integer; raises ``ValidationError`` naming the field."""
    check = RolloutSerializer(data=value)
    check.is_valid(raise_exception=True)
    if "step" in check.validated_data:
        return {**value, "step": check.validated_data["step"]}
    return value


class ScoreInputSerializer(serializers.Serializer):
    reward_model = serializers.CharField(
        max_length=200, help_text="A slug (its active version) or slug@N (version N)."
    )
    trajectory = C1TrajectoryField()
    rollout = serializers.DictField(required=False)

    def validate_rollout(self, value: dict[str, Any]) -> dict[str, Any]:
        return checked_rollout(value)


def checked_rollouts(value: list[Any]) -> list[dict[str, Any]]:
    """A list of C2 rollout tags (one per item; null: none), each checked by ``checked_rollout``;
    errors name the item (``rollouts.3.step``)."""
    out: list[dict[str, Any]] = []
    errors: dict[str, Any] = {}
    for i, item in enumerate(value):
        if item is None:
            out.append({})
            continue
        if not isinstance(item, dict):
            errors[str(i)] = ["expected an object or null"]
            continue
        try:
            out.append(checked_rollout(item))
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {"": exc.detail}
            for key, messages in detail.items():
                errors[f"{i}.{key}"] = messages
    if errors:
        raise serializers.ValidationError(errors)
    return out


class BatchScoreInputSerializer(serializers.Serializer):
    reward_model = serializers.CharField(max_length=200)
    trajectories = serializers.ListField(child=C1TrajectoryField(), allow_empty=False)
    # Added to C2: one rollout tag per trajectory (or null), stored with each record.
    rollouts = serializers.ListField(child=serializers.JSONField(allow_null=True), required=False)

    def validate_rollouts(self, value: list[Any]) -> list[dict[str, Any]]:
        return checked_rollouts(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        n = len(attrs["trajectories"])
        if "rollouts" in attrs and len(attrs["rollouts"]) != n:
            raise serializers.ValidationError({"rollouts": [f"must have {n} items"]})
        return attrs


class ScoredTextField(serializers.CharField):
    """Text that is only scored, never stored as text: NUL characters and unpaired surrogates
    are allowed (DRF's CharField refuses them), as in the score API's trajectories."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            v
            for v in self.validators
            if not isinstance(
                v, ProhibitNullCharactersValidator | ProhibitSurrogateCharactersValidator
            )
        ]


class OpenRLHFInputSerializer(serializers.Serializer):
    query = serializers.ListField(child=ScoredTextField(allow_blank=True, trim_whitespace=False))
    prompts = serializers.ListField(
        child=ScoredTextField(allow_blank=True, trim_whitespace=False), required=False
    )
    labels = serializers.ListField(child=serializers.JSONField(allow_null=True), required=False)
    # Added to C3: one rollout tag per sample (or null), as C2's rollout.
    rollouts = serializers.ListField(child=serializers.JSONField(allow_null=True), required=False)

    def validate_rollouts(self, value: list[Any]) -> list[dict[str, Any]]:
        return checked_rollouts(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        n = len(attrs["query"])
        for name in ("prompts", "labels", "rollouts"):
            if name in attrs and len(attrs[name]) != n:
                raise serializers.ValidationError({name: [f"must have {n} items, like query"]})
        return attrs


# --- evaluation sets ---


class EvaluationSetSerializer(serializers.ModelSerializer):
    latest_version = serializers.SerializerMethodField()

    class Meta:
        model = EvaluationSet
        fields = ["id", "slug", "name", "description", "held_out", "latest_version", "created_at"]
        read_only_fields = ["id", "latest_version", "created_at"]

    def get_latest_version(self, obj: EvaluationSet) -> dict[str, Any] | None:
        versions = getattr(obj, "prefetched_versions", None)
        version = versions[0] if versions else None
        if version is None:
            return None
        return {"number": version.number, "cases": version.case_count, "digest": version.digest}


class EvaluationCasesInputSerializer(serializers.Serializer):
    cases = serializers.ListField(
        child=ParsedJSONField(), min_length=1, max_length=10_000, help_text="Cases, one per item."
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=300)
    replace = serializers.BooleanField(required=False, default=False)


class EvaluationImportInputSerializer(serializers.Serializer):
    jsonl = serializers.CharField(
        max_length=50_000_000, trim_whitespace=False, help_text="One case per line (JSONL)."
    )
    replace = serializers.BooleanField(required=False, default=False)


class FlagToSetInputSerializer(serializers.Serializer):
    flag = serializers.IntegerField(min_value=1)
    label = serializers.ChoiceField(choices=["unsafe", "safe"], required=False)


class EvaluateInputSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)
    sets = serializers.ListField(
        child=serializers.SlugField(max_length=100),
        required=False,
        max_length=20,
        help_text="sets to evaluate on as well as the attached ones (their newest versions)",
    )


class AttachSetInputSerializer(serializers.Serializer):
    set = serializers.SlugField(max_length=100)


class PairToSetInputSerializer(serializers.Serializer):
    better = serializers.IntegerField(min_value=1, help_text="the better stored trajectory's id")
    worse = serializers.IntegerField(min_value=1, help_text="the worse stored trajectory's id")
    tier = serializers.ChoiceField(choices=["same-outcome", "strict"], default="same-outcome")
