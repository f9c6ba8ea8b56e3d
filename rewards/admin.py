"""Admin for the reward domain: task types, behaviours, reward models and what they produce."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.admin_lists import IndexedValuesFilter, LargeTableAdmin
from rewards.evaluation import Case, line_messages, parse_jsonl
from rewards.models import (
    EvaluationAttachment,
    EvaluationCase,
    EvaluationResult,
    EvaluationRun,
    EvaluationSet,
    EvaluationSetVersion,
    LearnedComponent,
    LearnedTrainingJob,
    RewardModel,
    RewardModelVersion,
    ScoringRecord,
    TaskType,
    TrainingMetric,
    TrainingRun,
    TrustedBehaviour,
)


class TrustedBehaviourInline(admin.TabularInline):
    model = TrustedBehaviour
    extra = 0
    fields = ["slug", "name", "polarity", "weight", "max_steps", "active"]


@admin.register(TaskType)
class TaskTypeAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "outcome_mode", "tool_call_format", "policy", "updated_at"]
    list_filter = ["outcome_mode", "tool_call_format", "policy"]
    search_fields = ["slug", "name", "description"]
    inlines = [TrustedBehaviourInline]


@admin.register(TrustedBehaviour)
class TrustedBehaviourAdmin(admin.ModelAdmin):
    list_display = ["slug", "task_type", "polarity", "weight", "max_steps", "active"]
    list_filter = ["task_type", "polarity", "active"]
    search_fields = ["slug", "name", "description"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """For immutable or append-only rows: viewable, never edited in the admin."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class EvaluationAttachmentInline(admin.TabularInline):
    """The evaluation sets this reward model's versions are gated on."""

    model = EvaluationAttachment
    extra = 0
    fields = ["evaluation_set", "created_at"]
    readonly_fields = ["created_at"]


@admin.register(RewardModel)
class RewardModelAdmin(admin.ModelAdmin):
    """``RewardModel.clean()`` checks the learned weight (0..1, a trained component of the task
    type) and the chosen component, as the API and the pages do."""

    list_display = [
        "slug",
        "name",
        "task_type",
        "active_version",
        "outcome_weight",
        "learned_weight",
        "updated_at",
    ]
    list_filter = ["task_type"]
    search_fields = ["slug", "name"]
    list_select_related = ["task_type", "active_version"]
    readonly_fields = ["active_version"]
    inlines = [EvaluationAttachmentInline]


@admin.register(LearnedComponent)
class LearnedComponentAdmin(ReadOnlyAdmin):
    list_display = ["digest", "task_type", "created_at", "label_snapshot_digest"]
    list_filter = ["task_type"]
    search_fields = ["digest", "label_snapshot_digest"]
    list_select_related = ["task_type"]


@admin.register(LearnedTrainingJob)
class LearnedTrainingJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "task_type", "state", "seed", "requested_by", "created_at"]
    list_filter = ["state", "task_type"]
    list_select_related = ["task_type", "requested_by"]


@admin.register(RewardModelVersion)
class RewardModelVersionAdmin(ReadOnlyAdmin):
    list_display = [
        "reward_model",
        "number",
        "digest",
        "policy_version",
        "created_by",
        "created_at",
    ]
    list_filter = ["reward_model"]
    search_fields = ["digest", "note"]


@admin.register(ScoringRecord)
class ScoringRecordAdmin(LargeTableAdmin, ReadOnlyAdmin):
    list_display = [
        "scoring_id",
        "version",
        "run",
        "step",
        "reward",
        "gated",
        "unsafe",
        "created_at",
    ]
    list_filter = [
        "unsafe",
        "gated",
        "version__reward_model",
        ("run", IndexedValuesFilter),
        "created_at",
    ]
    # A record is found by the start of its scoring id or trajectory digest, read from their
    # indexes (a substring search read every record: 0.7 s at 250k); a run is a filter, read
    # newest first from its (run, id) index.
    search_fields = ["scoring_id__startswith", "trajectory_digest__startswith"]
    list_select_related = ["version__reward_model"]
    # A version's compiled spec is a large JSON document: not read for a changelist.
    changelist_defer = ("breakdown", "version__spec")


# The change page shows the newest steps only: an inline of every step (a long run reports tens
# of thousands) made a page of megabytes and a form over the admin's field-count limit.
ADMIN_RUN_STEPS = 20


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = ["name", "reward_model", "created_by", "created_at", "updated_at"]
    search_fields = ["name", "reward_model"]
    readonly_fields = ["created_by", "created_at", "updated_at", "newest_steps"]

    @admin.display(description="metrics")
    def newest_steps(self, obj: TrainingRun) -> str:
        if obj.pk is None:
            return "-"
        rows = TrainingMetric.objects.filter(run=obj).order_by("-step")
        newest = list(rows.values_list("step", "values")[:ADMIN_RUN_STEPS])
        if not newest:
            return "no steps reported"
        shown = format_html_join(
            "", "<tr><td>{}</td><td>{}</td></tr>", ((s, json.dumps(v)) for s, v in newest)
        )
        return format_html(
            "<p>{} steps reported; the newest {} (the whole series: the API's run detail)</p>"
            "<table><tr><th>step</th><th>metrics</th></tr>{}</table>",
            rows.count(),
            len(newest),
            shown,
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # trainers create runs through the API, which bounds config and metrics


class EvaluationSetAdminForm(forms.ModelForm):
    import_jsonl = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Cases to add as a new version, one JSON object per line.",
    )

    class Meta:
        model = EvaluationSet
        fields = ["slug", "name", "description", "held_out"]

    def clean_import_jsonl(self) -> list[Case]:
        cases, errors = parse_jsonl(self.cleaned_data.get("import_jsonl") or "")
        if errors:
            raise forms.ValidationError(line_messages(errors, limit=50))
        return cases


class EvaluationSetVersionInline(admin.TabularInline):
    model = EvaluationSetVersion
    extra = 0
    fields = ["number", "case_count", "digest", "note", "created_by", "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(EvaluationSet)
class EvaluationSetAdmin(admin.ModelAdmin):
    """Sets and their versions; pasting JSONL adds a new version (versions never change)."""

    form = EvaluationSetAdminForm
    list_display = ["slug", "name", "held_out", "updated_at"]
    list_filter = ["held_out"]
    search_fields = ["slug", "name"]
    inlines = [EvaluationSetVersionInline]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        from rewards.services.evaluation import evaluation_set_add_cases

        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        cases = form.cleaned_data.get("import_jsonl") or []
        if cases:
            evaluation_set_add_cases(
                evaluation_set=obj,
                cases=cases,
                user=request.user,  # type: ignore[arg-type]
                note="admin import",
            )


class EvaluationCaseInline(admin.TabularInline):
    model = EvaluationCase
    extra = 0
    fields = ["position", "key", "kind", "category", "data"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(EvaluationSetVersion)
class EvaluationSetVersionAdmin(ReadOnlyAdmin):
    list_display = ["evaluation_set", "number", "case_count", "created_at"]
    list_filter = ["evaluation_set"]
    fields = ["evaluation_set", "number", "case_count", "digest", "note", "created_by"]
    readonly_fields = fields
    inlines = [EvaluationCaseInline]


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "version", "trigger", "state", "done", "total", "created_at"]
    list_filter = ["state", "trigger"]
    fields = ["version", "trigger", "state", "done", "total", "error", "requested_by"]
    readonly_fields = fields


@admin.register(EvaluationResult)
class EvaluationResultAdmin(ReadOnlyAdmin):
    list_display = ["version", "set_version", "seconds", "created_at"]
    fields = ["version", "set_version", "run", "seconds", "metrics"]
    readonly_fields = fields
