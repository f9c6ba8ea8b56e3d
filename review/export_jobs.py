"""Background step-label exports: a whole hub's labels written to a file by a Celery task, with
progress, resume after any failure, and a download when done.

Why a job: streaming an export in one request (``review.views.export_prm``) is fine for a
filtered subset, but the whole labelled hub takes minutes, longer than a request should live.

How a run stays correct when it dies anywhere: the export is cut into chunks by trajectory id
(``annotations.exports.export_chunks``). Each chunk is written under a lock on the job's row at
the offset the row records, flushed to disk, and only then is the row advanced (cursor, file
length, counts) in the same transaction. A run that starts again, by a redelivered task or
a resume, cuts the file back to the recorded length and continues after the recorded cursor:
the file never holds a chunk twice or a part of one. Each run takes the job over with a new
token; a run whose token is no longer the job's stops at its next chunk, so two runs never
write one file.
"""

from __future__ import annotations

import logging
import os
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations.exports import EXPORT_KINDS, export_chunks, labelled_count
from core.broker import TRANSIENT_DB_ERRORS, publish
from review import selectors as review_selectors
from review.access import still_reviewing_trajectories
from review.models import ExportJob, ExportStatus

logger = logging.getLogger(__name__)


class ExportError(ValueError):
    """A request the export cannot take (unknown kind, bad filters, a job in the wrong state)."""


def export_root() -> Path:
    return Path(settings.EXPORTS["ROOT"])


def export_path(job: ExportJob) -> Path:
    """The job's file: named by its id, never by anything a user typed."""
    return export_root() / f"{int(job.pk)}.jsonl"


def start_export(*, kind: str, filters: dict[str, str], user: Any) -> ExportJob:
    """Record an export of the labelled trajectories matching ``filters`` and queue it."""
    if kind not in EXPORT_KINDS:
        raise ExportError(f"kind must be one of {', '.join(EXPORT_KINDS)}")
    review_selectors.review_trajectories(filters=filters)  # FilterError names a bad filter
    job = ExportJob.objects.create(kind=kind, filters=dict(filters), created_by=user)
    transaction.on_commit(lambda: _queue(job.pk))
    return job


def resume_export(job: ExportJob) -> ExportJob:
    """Queue a failed or stalled job again; it continues after its last saved chunk."""
    if not can_resume(job):
        raise ExportError(f"export {job.pk} is {job.status}; only a failed or stalled one resumes")
    ExportJob.objects.filter(pk=job.pk).update(status=ExportStatus.QUEUED, error="")
    transaction.on_commit(lambda: _queue(job.pk))
    job.refresh_from_db()
    return job


def delete_export(job: ExportJob) -> None:
    """Remove the job and its file (a run still going stops at its next chunk)."""
    path = export_path(job)
    job.delete()
    path.unlink(missing_ok=True)


def stalled(job: ExportJob) -> bool:
    """A queued or running job that has saved nothing for ``RH_EXPORT_STALL_SECONDS``: its
    worker died or its message was lost."""
    if job.status not in (ExportStatus.QUEUED, ExportStatus.RUNNING):
        return False
    last = job.heartbeat_at or job.started_at or job.created_at
    return timezone.now() - last > timedelta(seconds=settings.EXPORTS["STALL_SECONDS"])


def can_resume(job: ExportJob) -> bool:
    return job.status == ExportStatus.FAILED or stalled(job)


def downloadable(job: ExportJob) -> Path | None:
    """The finished file, if it is there whole; None otherwise."""
    path = export_path(job)
    if job.status != ExportStatus.DONE or not path.is_file():
        return None
    return path if path.stat().st_size == job.bytes else None


def _queue(job_id: int) -> None:
    from review.tasks import run_export

    if not publish(run_export, job_id):  # the page shows it as stalled and offers a resume
        logger.warning("export %s not queued: the broker is unavailable", job_id)


def run_export(job_id: int) -> str:
    """Write (or continue writing) the job's file; returns what became of the run:
    ``done``, ``failed``, ``superseded`` (another run took the job over) or ``gone``."""
    token = uuid.uuid4().hex
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            return "gone"
        if job.status == ExportStatus.DONE:
            return "done"
        now = timezone.now()
        job.runner = token
        job.status = ExportStatus.RUNNING
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.attempts += 1
        job.error = ""
        job.save(
            update_fields=["runner", "status", "started_at", "heartbeat_at", "attempts", "error"]
        )
    try:
        return _write(job, token)
    except Exception as exc:
        if isinstance(exc, (*TRANSIENT_DB_ERRORS, SoftTimeLimitExceeded)):
            raise  # the task runs it again, continuing after the last saved chunk
        logger.exception("export %s failed", job_id)
        ExportJob.objects.filter(pk=job_id, runner=token).update(
            status=ExportStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        return "failed"


def _write(job: ExportJob, token: str) -> str:
    path = export_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    qs = review_selectors.review_trajectories(filters=job.filters)
    if job.created_by_id is not None:
        # blind review: nothing of what the job's owner is still reviewing
        qs = qs.exclude(pk__in=still_reviewing_trajectories(job.created_by))
    if not path.exists() or path.stat().st_size < job.bytes:
        # The file is gone or shorter than what was saved (a new disk, a cleaned folder):
        # start over rather than leave a hole.
        ExportJob.objects.filter(pk=job.pk, runner=token).update(last_id=0, bytes=0, done=0, rows=0)
        job.last_id = job.bytes = job.done = job.rows = 0
    if job.total is None:
        job.total = labelled_count(qs, labels=review_selectors.counted_labels())
        ExportJob.objects.filter(pk=job.pk, runner=token).update(total=job.total)
    with open(path, "ab") as handle:
        handle.truncate(job.bytes)
        labels = review_selectors.counted_labels()  # submitted reviews' labels, as the pages
        for chunk in export_chunks(qs, kind=job.kind, after=job.last_id, labels=labels):
            data = chunk.text.encode("utf-8")
            with transaction.atomic():
                row = (
                    ExportJob.objects.select_for_update()
                    .filter(pk=job.pk)
                    .values("runner", "bytes")
                    .first()
                )
                if row is None:
                    return "gone"
                if row["runner"] != token:
                    return "superseded"
                handle.truncate(row["bytes"])
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                ExportJob.objects.filter(pk=job.pk).update(
                    last_id=chunk.last_id,
                    bytes=F("bytes") + len(data),
                    done=F("done") + chunk.trajectories,
                    rows=F("rows") + chunk.rows,
                    heartbeat_at=timezone.now(),
                )
    finished = ExportJob.objects.filter(pk=job.pk, runner=token).update(
        status=ExportStatus.DONE, finished_at=timezone.now(), heartbeat_at=timezone.now()
    )
    return "done" if finished else "superseded"
