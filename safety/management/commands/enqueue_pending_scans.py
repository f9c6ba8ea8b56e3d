"""Queue the scans a broker outage left pending (also done by a starting scan worker)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from safety.models import PendingScan
from safety.tasks import enqueue_pending_scans


class Command(BaseCommand):
    help = "Queue pending safety scans again (those the broker could not take at import time)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=10_000)

    def handle(self, *args: Any, **options: Any) -> None:
        queued = enqueue_pending_scans(limit=options["limit"], older_than=0.0)
        left = PendingScan.objects.count()
        self.stdout.write(f"queued {queued} pending scans; {left} pending until their scan runs")
