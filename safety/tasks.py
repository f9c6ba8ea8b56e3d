"""Celery tasks for the safety domain. Thin: they take ids and call one service."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready
from django.conf import settings

from core.broker import durable_task, publish
from safety import services
from safety.models import PolicyVersion, ScanJob

logger = logging.getLogger(__name__)


@durable_task(
    "safety.scan_trajectory",
    retry_backoff_max=60,
    max_retries=5,
)
def scan_trajectory(trajectory_id: int, policy_version_id: int | None = None) -> dict[str, int]:
    """Scan one trajectory; idempotent, so a redelivered message is harmless."""
    version = (
        PolicyVersion.objects.select_related("policy").get(pk=policy_version_id)
        if policy_version_id
        else None
    )
    # A failed scan is left pending with its reason (shown on the flag queue), never silent.
    result = services.trajectory_scan_or_pending(
        trajectory_id=trajectory_id, policy_version=version
    )
    if result is None:
        return {"commands": 0, "findings": 0, "flags_created": 0, "failed": 1}
    return {
        "commands": result.commands,
        "findings": result.findings,
        "flags_created": result.flags_created,
        "failed": int(bool(result.flags_refused)),
    }


@durable_task(
    "safety.run_scan_job",
    time_limit=3600,
    soft_time_limit=3500,
)
def run_scan_job(job_id: int, retry_failed: bool = False) -> int:
    """Bulk rescan with progress stored on the job row (``retry_failed``: its failed
    trajectories are scanned again first). A rescan of more than
    ``SAFETY["SCAN_PART_SIZE"]`` trajectories is split into parts, each queued as this task
    on its own, so every scan worker takes a share; each part adds its progress to the whole."""
    size = settings.SAFETY["SCAN_PART_SIZE"]
    job = ScanJob.objects.filter(pk=job_id).values("parent_id", "total").first()
    if job is None:
        return 0
    split = job["parent_id"] is None and (
        ScanJob.objects.filter(parent_id=job_id).exists() or (size and job["total"] > size)
    )
    if not split:
        return services.scan_job_run(job_id=job_id, retry_failed=retry_failed).done
    parts = services.scan_job_split(job_id=job_id, part_size=size, retry_failed=retry_failed)
    for part in parts:
        if not (
            publish(run_scan_job, part, retry_failed=True)
            if retry_failed
            else publish(run_scan_job, part)
        ):
            ScanJob.objects.filter(pk=job_id).update(
                state=ScanJob.State.FAILED,
                error="Not all parts were queued: the task broker is unreachable. Resume it.",
            )
            break
    return 0


def enqueue_scan(trajectory_id: int) -> None:
    """After-import hook: called by the importer once the import's transaction commits.

    Never fails the import: if the broker is down the scan is recorded as pending
    (``PendingScan``) and queued again later; after a successful publish, scans left pending
    by an earlier outage are queued too (``enqueue_pending_scans``)."""
    if publish(scan_trajectory, trajectory_id):
        enqueue_pending_scans()
    else:
        services.scan_mark_pending(
            trajectory_id=trajectory_id, reason="the task broker was unreachable"
        )
        logger.warning("scan of trajectory %s is pending: the task broker is unreachable",
                       trajectory_id)  # fmt: skip


def enqueue_pending_scans(limit: int = 500, older_than: float | None = None) -> int:
    """Queue pending scans last tried more than ``older_than`` seconds ago (default:
    ``RESILIENCE["PENDING_SCAN_RETRY_SECONDS"]``); returns how many were queued."""
    due = services.pending_scans_due(limit=limit, older_than=older_than)
    queued = []
    for trajectory_id in due:
        if not publish(scan_trajectory, trajectory_id):
            break
        queued.append(trajectory_id)
    if queued:
        services.pending_scans_requeued(trajectory_ids=queued)
        logger.info("queued %d pending scans again", len(queued))
    return len(queued)


def queue_scan_job(job_id: int, retry_failed: bool = False) -> None:
    """Queue a bulk rescan (or its resumption); if the broker is down, the job fails at once
    with a clear reason."""
    if retry_failed:
        queued = publish(run_scan_job, job_id, retry_failed=True)
    else:
        queued = publish(run_scan_job, job_id)
    if not queued:
        ScanJob.objects.filter(pk=job_id).update(
            state=ScanJob.State.FAILED,
            error="Not started: the task broker is unreachable. Start the rescan again later.",
        )


@worker_ready.connect
def _enqueue_pending_on_start(sender: Any = None, **kwargs: Any) -> None:
    """A scan worker that starts means the broker is back: queue what an outage left pending."""
    queues = getattr(getattr(getattr(sender, "app", None), "amqp", None), "queues", None)
    if queues is None or "scan" not in (getattr(queues, "consume_from", None) or {}):
        return
    try:
        enqueue_pending_scans(limit=10_000, older_than=0.0)
    except Exception:  # the database may be down too; the next import or worker retries
        logger.exception("could not queue pending scans at worker start")
