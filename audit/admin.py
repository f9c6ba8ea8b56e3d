from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the log is appended to by the code, never written from the admin.

    Label changes are here too (``label.set``), each pointing at its ``LabelEvent`` row, the
    per-trajectory label history that the review pages show.
    """

    list_display = ["created_at", "action", "object_type", "object_repr", "actor", "via", "ip"]
    list_filter = ["action", "object_type", "via", "created_at"]
    search_fields = ["actor", "object_repr", "object_id", "request_id", "action"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
