"""Celery tasks for the rewardhub app. Thin: they take ids and call one service."""

from __future__ import annotations

from typing import Any

from core.broker import durable_task


@durable_task(
    "rewardhub.train_learned_component",
    time_limit=3600,
    soft_time_limit=3500,
)
def train_learned_component(
    task_type_id: int,
    seed: int = 0,
    encoder: dict[str, Any] | None = None,
    job_id: int | None = None,
) -> dict[str, Any]:
    """Train the task type's step classifier; idempotent (the artifact is content-addressed).
    With ``job_id``, the job row (polled by the learned-components page) follows its state."""
    from rewards.services.learned_training import learned_training_run

    component = learned_training_run(
        task_type_id=task_type_id, seed=seed, encoder=encoder, job_id=job_id
    )
    return {"id": component.pk, "digest": component.digest, "auc": component.metrics.get("auc")}


@durable_task(
    "rewardhub.refresh_step_uncertainty",
    time_limit=3600,
    soft_time_limit=3500,
)
def refresh_step_uncertainty(component_id: int, limit: int | None = None) -> int:
    """Recompute a component's uncertainty on unlabelled steps (upserts: idempotent)."""
    from rewards.models import LearnedComponent
    from rewards.services.active_learning import learned_uncertainty_refresh

    component = LearnedComponent.objects.select_related("task_type").get(pk=component_id)
    return learned_uncertainty_refresh(component=component, limit=limit)


@durable_task(
    "rewardhub.score_learned",
    max_retries=5,
    time_limit=300,
    soft_time_limit=270,
)
def score_learned(scoring_id: str, version_id: int, trajectory: dict[str, Any]) -> dict[str, Any]:
    """The learned part a score request left out: score it and rewrite the scoring record
    (idempotent: only a record still ``pending`` changes)."""
    from rewards.services.learned_scoring import learned_scoring_complete

    record = learned_scoring_complete(
        scoring_id=scoring_id, version_id=version_id, trajectory=trajectory
    )
    if record is None:
        return {"scoring_id": scoring_id, "learned_status": None}
    return {
        "scoring_id": scoring_id,
        "learned_status": record.learned_status,
        "reward": record.reward,
        "provisional_reward": record.provisional_reward,
    }


@durable_task(
    "rewardhub.evaluate_reward_version",
    time_limit=3600,
    soft_time_limit=3500,
)
def evaluate_reward_version(run_id: int) -> dict[str, Any]:
    """Evaluate a compiled version on its run's sets (idempotent: results are unique per
    version and set version, and reused)."""
    from rewards.services.evaluation import evaluation_run_execute

    run = evaluation_run_execute(run_id=run_id)
    return {"id": run.pk, "state": run.state, "done": run.done, "total": run.total}
