"""Celery tasks for review. Thin: they take keys and call one function."""

from __future__ import annotations

from core.broker import durable_task


@durable_task("review.refresh_stats", time_limit=900, soft_time_limit=840)
def refresh_stats(key: str) -> float:
    """Recompute one snapshot of hub-wide aggregates; returns the seconds it took."""
    from review.stats import stats_refresh

    return stats_refresh(key=key).seconds


@durable_task("review.run_export", time_limit=3600, soft_time_limit=3540)
def run_export(job_id: int) -> str:
    """Write a background export's file (``review.export_jobs``); at the soft time limit the
    work so far is saved and the task queues itself to continue."""
    from celery.exceptions import SoftTimeLimitExceeded

    from core.broker import publish
    from review.export_jobs import run_export as run

    try:
        return run(job_id)
    except SoftTimeLimitExceeded:
        publish(run_export, job_id)
        return "continued"
