from __future__ import annotations

from rest_framework import serializers

from annotations.importers import FORMATS
from annotations.models import Step, Trajectory
from core.outcomes import RESOLVED_HELP


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = Step
        fields = [
            "index",
            "message_index",
            "reasoning",
            "text",
            "tool_calls",
            "commands",
            "tool_results",
        ]


class TrajectoryListSerializer(serializers.ModelSerializer):
    class Meta:
        model = Trajectory
        fields = [
            "id",
            "external_id",
            "task_type",
            "source_format",
            "digest",
            "outcome",
            "resolved",
            "message_count",
            "step_count",
            "command_count",
            "created_at",
        ]
        extra_kwargs = {"resolved": {"help_text": RESOLVED_HELP}}


class TrajectoryDetailSerializer(TrajectoryListSerializer):
    steps = StepSerializer(many=True, read_only=True)

    class Meta(TrajectoryListSerializer.Meta):
        fields = [*TrajectoryListSerializer.Meta.fields, "metadata", "canonical", "steps"]


class TrajectoryImportInputSerializer(serializers.Serializer):
    """Query options for an import; the body is one record or a list of records."""

    format = serializers.ChoiceField(choices=["auto", *FORMATS], default="auto")
    task_type = serializers.SlugField(required=False, allow_blank=True, max_length=100)
    # The uploaded file's name (or path): what it says when the content does not (an instance
    # id, aider's workspace), as for import_trajectories. Only read as text, never opened.
    source = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class ImportResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["imported", "duplicate", "rejected"])
    index = serializers.IntegerField(required=False)
    id = serializers.IntegerField(required=False)
    external_id = serializers.CharField(required=False)
    digest = serializers.CharField(required=False)
    source_format = serializers.CharField(required=False)
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), required=False
    )
    warnings = serializers.ListField(child=serializers.CharField(), required=False)
