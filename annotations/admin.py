from __future__ import annotations

from django.contrib import admin

from annotations.models import FinalLabel, LabelEvent, Step, StepLabel, Trajectory
from core import outcomes
from core.admin_lists import IndexedValuesFilter, LargeTableAdmin

# The JSON of the step and trajectory a label row names: not read for a changelist.
_STEP_JSON = (
    "step__reasoning",
    "step__text",
    "step__tool_calls",
    "step__commands",
    "step__tool_results",
    "step__trajectory__canonical",
    "step__trajectory__outcome",
    "step__trajectory__metadata",
)


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    can_delete = False
    fields = ["index", "message_index", "text", "commands"]
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


class OutcomeFilter(admin.SimpleListFilter):
    """The ``resolved`` verdict, worded as every page words it (``core.outcomes``)."""

    title = "outcome"
    parameter_name = "outcome"
    _VALUES = {"resolved": True, "not-resolved": False, "none": None}

    def lookups(self, request, model_admin):  # type: ignore[no-untyped-def]
        return [(key, outcomes.OUTCOME_WORDS[value]) for key, value in self._VALUES.items()]

    def queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        if self.value() not in self._VALUES:
            return queryset
        value = self._VALUES[self.value()]
        return (
            queryset.filter(resolved__isnull=True)
            if value is None
            else queryset.filter(resolved=value)
        )


@admin.register(Trajectory)
class TrajectoryAdmin(LargeTableAdmin):
    list_display = [
        "id",
        "external_id",
        "task_type",
        "source_format",
        "outcome_verdict",
        "step_count",
        "command_count",
        "created_at",
    ]
    list_filter = [
        ("source_format", IndexedValuesFilter),
        ("task_type", IndexedValuesFilter),
        OutcomeFilter,
        "created_at",
    ]
    # A trajectory is found by the start of its external id or digest, read from their
    # indexes: a substring search read every trajectory (50 ms at 50k, growing with the hub).
    # The review list searches trajectories' text; the task type is a filter here.
    search_fields = ["external_id__startswith", "digest__startswith"]
    readonly_fields = ["digest", "canonical", "source_format", "created_at", "imported_by"]
    inlines = [StepInline]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False  # trajectories come through the importers, which build their C1 document

    @admin.display(description="outcome", ordering="resolved")
    def outcome_verdict(self, obj: Trajectory) -> str:
        return outcomes.outcome_word(obj.resolved)

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        # The canonical JSON is read only by the change page (one deferred load there).
        return super().get_queryset(request).defer("canonical")


@admin.register(Step)
class StepAdmin(LargeTableAdmin):
    list_display = ["id", "trajectory", "index", "message_index", "short_text"]
    list_filter = [
        ("trajectory__source_format", IndexedValuesFilter),
        ("trajectory__task_type", IndexedValuesFilter),
    ]
    # Steps are found by their trajectory's external id (its start, from its index): a search
    # of the steps' text read the whole step table (2 s at 1M steps). The review list searches
    # the text, by its full-text index.
    search_fields = ["trajectory__external_id__startswith"]
    list_select_related = ["trajectory"]
    changelist_defer = ("trajectory__canonical", "trajectory__outcome", "trajectory__metadata")
    readonly_fields = ["trajectory", "index", "message_index"]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False  # steps are read from their trajectory's document at import

    @admin.display(description="text")
    def short_text(self, obj: Step) -> str:
        return (obj.text or obj.reasoning)[:80]


# --- Expert review ------------------------------------------------------------------------------


@admin.register(StepLabel)
class StepLabelAdmin(LargeTableAdmin):
    """Read-only: labels change only through the review pages, which record every change
    (``LabelEvent`` and the audit log) under the reviewer's own name."""

    list_display = ["id", "step", "reviewer", "behaviour", "value", "updated_at"]
    list_filter = ["value", ("behaviour", IndexedValuesFilter)]
    list_select_related = ["step__trajectory", "reviewer"]
    changelist_defer = _STEP_JSON
    raw_id_fields = ["step", "reviewer"]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(LabelEvent)
class LabelEventAdmin(LargeTableAdmin):
    """The audit trail is read-only: it records, nobody edits it."""

    list_display = ["id", "step", "reviewer", "behaviour", "old_value", "new_value", "created_at"]
    list_select_related = ["step__trajectory", "reviewer"]
    changelist_defer = _STEP_JSON
    readonly_fields = [f.name for f in LabelEvent._meta.fields]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(FinalLabel)
class FinalLabelAdmin(LargeTableAdmin):
    list_display = ["id", "step", "behaviour", "value", "resolved_by", "resolved_at"]
    list_select_related = ["step__trajectory", "resolved_by"]
    changelist_defer = _STEP_JSON
    raw_id_fields = ["step"]
