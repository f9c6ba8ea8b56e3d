"""Admin for review queues and assignments."""

from __future__ import annotations

from django.contrib import admin

from core.admin_lists import LargeTableAdmin
from review.models import Assignment, ExportJob, ReviewQueue


@admin.register(ReviewQueue)
class ReviewQueueAdmin(admin.ModelAdmin):
    list_display = [
        "slug",
        "name",
        "strategy",
        "overlap",
        "blind",
        "lock_minutes",
        "active",
        "created_at",
    ]
    list_filter = ["active", "blind", "strategy"]
    search_fields = ["slug", "name"]
    prepopulated_fields = {"slug": ["name"]}
    # Who may work on the queue (review.access); both empty: every reviewer.
    filter_horizontal = ["members", "teams"]


@admin.register(Assignment)
class AssignmentAdmin(LargeTableAdmin):
    list_display = ["id", "queue", "trajectory", "reviewer", "status", "locked_until"]
    list_filter = ["queue", "status"]
    list_select_related = ["queue", "trajectory", "reviewer"]
    changelist_defer = ("trajectory__canonical", "trajectory__outcome", "trajectory__metadata")
    raw_id_fields = ["trajectory", "reviewer"]


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    """Background exports: read-only here. They are started, resumed and deleted from the review
    pages, whose delete also removes the file."""

    list_display = [
        "id",
        "kind",
        "status",
        "done",
        "total",
        "rows",
        "bytes",
        "created_by",
        "created_at",
    ]
    list_filter = ["kind", "status"]
    readonly_fields = [f.name for f in ExportJob._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False
