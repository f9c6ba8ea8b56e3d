from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from rewardhub.models import (
    ApiKey,
    ApiKeyScope,
    LearnedComponent,
    LearnedTrainingJob,
    RewardModel,
    RewardModelVersion,
    ScoringRecord,
    TaskType,
    TrainingMetric,
    TrainingRun,
    TrustedBehaviour,
    User,
)
from rewardhub.services import api_key_create, api_key_revoke


@admin.register(User)
class RewardHubUserAdmin(UserAdmin):
    list_display = [
        "username",
        "email",
        "is_service_account",
        "is_staff",
        "is_active",
        "last_login",
    ]
    list_filter = ["is_service_account", "is_staff", "is_active", "groups"]
    fieldsets = (*UserAdmin.fieldsets, ("RewardHub", {"fields": ("is_service_account",)}))


class ApiKeyForm(forms.ModelForm):
    """Scopes and reward models as checkboxes (the model's ``clean()`` checks both)."""

    scopes = forms.MultipleChoiceField(
        choices=ApiKeyScope.choices, widget=forms.CheckboxSelectMultiple
    )
    reward_models = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Restrict the key to these reward models (scoring and reads); none: all.",
    )

    class Meta:
        model = ApiKey
        fields = ["name", "user", "scopes", "reward_models", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        slugs = RewardModel.objects.order_by("slug").values_list("slug", flat=True)
        known = {*slugs, *(self.instance.reward_models or [])}
        self.fields["reward_models"].choices = [(s, s) for s in sorted(known)]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "user", "scope_list", "created_at", "last_used_at", "active"]
    list_filter = ["revoked_at", "created_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["prefix", "key_digest", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    form = ApiKeyForm

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return ["name", "user", "scopes", "reward_models", "expires_at"]
        return ["name", "user", "scopes", "reward_models", "expires_at", *self.readonly_fields]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = api_key_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            user=form.cleaned_data["user"],
            expires_at=form.cleaned_data.get("expires_at"),
            reward_models=form.cleaned_data.get("reward_models") or [],
        )
        obj.pk = issued.api_key.pk
        messages.warning(request, f"New API key (shown once, copy it now): {issued.secret}")

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes or [])

    @admin.display(boolean=True)
    def active(self, obj: ApiKey) -> bool:
        return obj.is_active

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


# --- Reward domain --------------------------------------------------------------------------


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
class ScoringRecordAdmin(ReadOnlyAdmin):
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
    list_filter = ["unsafe", "gated", "version__reward_model", "created_at"]
    search_fields = ["scoring_id", "run", "trajectory_digest"]
    list_select_related = ["version__reward_model"]
    date_hierarchy = "created_at"


class TrainingMetricInline(admin.TabularInline):
    model = TrainingMetric
    extra = 0
    can_delete = False
    fields = ["step", "values", "created_at"]
    readonly_fields = fields


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = ["name", "reward_model", "created_by", "created_at", "updated_at"]
    search_fields = ["name", "reward_model"]
    readonly_fields = ["created_by", "created_at", "updated_at"]
    inlines = [TrainingMetricInline]
