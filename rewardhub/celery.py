"""The Celery application. Tasks run in-process (eager) when no broker is configured."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rewardhub.settings")

app = Celery("rewardhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_repository_secret_key(**_: object) -> None:
    """A worker, like a served process, refuses to run outside DEBUG with a secret key written
    in the repository (``rewardhub.checks``). Celery logs and swallows a signal handler's
    exceptions, so it stops the process with a message instead."""
    from django.core.exceptions import ImproperlyConfigured

    from rewardhub.checks import refuse_repository_secret_key as refuse

    try:
        refuse()
    except ImproperlyConfigured as exc:
        raise SystemExit(f"rewardhub: refusing to start the worker: {exc}") from None
