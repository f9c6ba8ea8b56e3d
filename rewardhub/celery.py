"""The Celery application. Tasks run in-process (eager) when no broker is configured."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from celery import Celery, shared_task
from django.db import InterfaceError, OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rewardhub.settings")

app = Celery("rewardhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A lost connection (a database restart, a failover) is worth retrying; other errors are not.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)


def durable_task(name: str, **options: Any) -> Callable[..., Any]:
    """A task that outlives a killed worker (acknowledged late, so it is redelivered) and a
    database outage (retried with backoff): what it does must be idempotent."""
    return shared_task(
        name=name,
        acks_late=True,
        autoretry_for=TRANSIENT_DB_ERRORS,
        retry_backoff=True,
        **{"max_retries": 3, **options},
    )
