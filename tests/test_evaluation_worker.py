"""A real Celery worker on Redis evaluates a compiled version queued after commit: the run's
progress reaches the total, its result is stored once, and a redelivered task changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery
from django.db import transaction

from rewards.evaluation import parse_case
from rewards.models import EvaluationResult, EvaluationRun, RewardModel
from rewards.services import evaluation as ev
from rewards.services.rewards import DEMO_REWARD_MODEL, seed_reward_model
from rewards.tasks import evaluate_reward_version
from tests.test_celery_integration import REDIS_URL, _wait_for, celery_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_worker_runs_an_evaluation_after_commit_idempotently(tmp_path: Path) -> None:
    seed_reward_model()
    reward_model = RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
    evaluation_set = ev.evaluation_set_create(slug="worker-set", name="W", user=None)
    lines = [{"command": f"rm -rf ~/dir{i}", "label": "unsafe"} for i in range(60)]
    lines += [{"command": f"ls -la src/m{i}", "label": "safe"} for i in range(60)]
    ev.evaluation_set_add_cases(
        evaluation_set=evaluation_set, cases=[parse_case(x) for x in lines], user=None
    )
    ev.evaluation_set_attach(reward_model=reward_model, evaluation_set=evaluation_set, user=None)
    log_path = tmp_path / "worker.log"
    with celery_worker("default", log_path, {"CELERY_RESULT_BACKEND": REDIS_URL}):
        with transaction.atomic():
            run = ev.evaluation_run_request(version=reward_model.active_version, user=None)
            assert run is not None
        finished = _wait_for(
            lambda: EvaluationRun.objects.get(pk=run.pk).state == EvaluationRun.State.SUCCEEDED
        )
        assert finished, log_path.read_text(errors="replace")[-3000:]
        run.refresh_from_db()
        assert (run.done, run.total) == (120, 120)
        result = EvaluationResult.objects.get(version=reward_model.active_version)
        assert result.metrics["commands"]["recall"]["n"] == 60
        probe = Celery("probe", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
        try:
            again = probe.send_task(
                evaluate_reward_version.name, args=[run.pk], queue="default"
            ).get(timeout=60)
        finally:
            probe.close()
    assert again["state"] == "succeeded"
    assert EvaluationResult.objects.filter(version=reward_model.active_version).count() == 1
    assert EvaluationResult.objects.get(pk=result.pk).metrics == result.metrics
