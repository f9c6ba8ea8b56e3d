from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q
from django.http import HttpRequest

from annotations.models import Trajectory
from core.admin_lists import IndexedValuesFilter, LargeTableAdmin
from safety.models import Flag, PendingScan, Policy, PolicyRule, PolicyVersion, ScanJob, Waiver


class PolicyRuleInline(admin.TabularInline):
    model = PolicyRule
    extra = 0
    fields = ["position", "rule_id", "enabled", "updated_at"]
    readonly_fields = ["rule_id", "updated_at"]
    show_change_link = True


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "updated_at"]
    search_fields = ["slug", "name"]
    inlines = [PolicyRuleInline]


@admin.register(PolicyRule)
class PolicyRuleAdmin(admin.ModelAdmin):
    list_display = ["rule_id", "policy", "position", "enabled", "updated_at", "updated_by"]
    list_filter = ["policy", "enabled"]
    search_fields = ["rule_id"]


@admin.register(PolicyVersion)
class PolicyVersionAdmin(admin.ModelAdmin):
    list_display = ["policy", "number", "digest", "published_at", "published_by", "note"]
    list_filter = ["policy"]
    search_fields = ["digest", "note"]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # published versions are immutable

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # publish from the policy page, which validates the whole document


@admin.register(Flag)
class FlagAdmin(LargeTableAdmin):
    list_display = [
        "id",
        "rule_id",
        "severity",
        "action",
        "status",
        "trajectory",
        "reviewer",
        "created_at",
    ]
    list_filter = [
        "status",
        "severity",
        "action",
        ("category", IndexedValuesFilter),
        "policy_version",
        "superseded_at",
    ]
    # A flag is found by the start of its rule id or of its trajectory's external id: a
    # substring search of commands read every flag with its trajectory (it grew 2x from 10k
    # to 50k trajectories). The flag queue searches commands.
    search_fields = ["rule_id__startswith", "trajectory__external_id__startswith"]
    # Flag.__str__ names its step and the step its trajectory (the rows' accessible labels).
    list_select_related = ["trajectory", "reviewer", "step__trajectory"]
    changelist_defer = (
        "trajectory__canonical",
        "trajectory__outcome",
        "trajectory__metadata",
        "step__reasoning",
        "step__text",
        "step__tool_calls",
        "step__commands",
        "step__tool_results",
        "step__trajectory__canonical",
        "step__trajectory__outcome",
        "step__trajectory__metadata",
    )

    def get_search_results(
        self, request: HttpRequest, queryset: Any, search_term: str
    ) -> tuple[Any, bool]:
        """The start of a rule id, or of a trajectory's external id read from that index first:
        Django's own search joins every trajectory to OR the two (3.6x from S to L)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        trajectories = Trajectory.objects.filter(external_id__startswith=term).values("id")
        return queryset.filter(
            Q(rule_id__startswith=term) | Q(trajectory_id__in=trajectories)
        ), False

    def get_queryset(self, request: HttpRequest) -> Any:
        """Superseded flags too (the admin shows the history), listed as LargeTableAdmin lists:
        with the related rows the labels name and without their JSON documents."""
        qs = Flag.all_versions.select_related(*self.list_select_related)
        qs = qs.defer(*self.changelist_defer)
        ordering = self.get_ordering(request)
        return qs.order_by(*ordering) if ordering else qs

    readonly_fields = [
        "trajectory",
        "step",
        "command_index",
        "command",
        "policy_version",
        "rule_id",
        "category",
        "severity",
        "action",
        "span_start",
        "span_end",
        "argv",
        "message",
        "created_at",
        "superseded_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # scans raise flags; a hand-made one would name no command


@admin.register(Waiver)
class WaiverAdmin(admin.ModelAdmin):
    list_display = ["id", "rule_id", "task_type", "match", "pattern", "active", "created_by"]
    list_filter = ["active", "match", "task_type"]
    search_fields = ["rule_id", "pattern", "reason"]


@admin.register(ScanJob)
class ScanJobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "policy_version",
        "state",
        "done",
        "total",
        "flags_created",
        "failed",
        "created_at",
    ]
    list_filter = ["state"]
    readonly_fields = [
        "done",
        "total",
        "flags_created",
        "failed",
        "error",
        "finished_at",
        "heartbeat_at",
    ]


@admin.register(PendingScan)
class PendingScanAdmin(admin.ModelAdmin):
    """Scans a broker outage left waiting; read-only, with an action to queue them now."""

    list_display = ["trajectory", "attempts", "reason", "created_at", "updated_at"]
    readonly_fields = ["trajectory", "reason", "attempts", "created_at", "updated_at"]
    actions = ["queue_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # deleting one would lose its scan: it goes when the scan is done

    @admin.action(description="Queue the selected scans now")
    def queue_now(self, request: HttpRequest, queryset: Any) -> None:
        from core.broker import publish
        from safety.services import pending_scans_requeued
        from safety.tasks import scan_trajectory

        chosen = list(queryset.values_list("trajectory_id", flat=True))
        queued = []
        for trajectory_id in chosen:
            if not publish(scan_trajectory, trajectory_id):
                break
            queued.append(trajectory_id)
        pending_scans_requeued(trajectory_ids=queued)
        left = len(chosen) - len(queued)
        note = f"; the broker is unreachable, {left} still pending" if left else ""
        self.message_user(request, f"{len(queued)} scans queued{note}.")
