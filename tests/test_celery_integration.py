"""A real Celery worker on a real Redis broker scans a trajectory enqueued after commit."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection, transaction
from kombu import pools as kombu_pools

from annotations.services import trajectory_import
from core.roles import EXPERT
from rewardhub.celery import app as celery_app
from safety.models import Flag
from safety.tasks import scan_trajectory
from tests.factories import CanonicalTrajectoryFactory

ROOT = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("RH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _redis_or_skip() -> None:
    import redis

    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
        client.ping()
        client.flushdb()  # our own test database index: drop stale messages
    except redis.exceptions.ConnectionError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc}")


def _database_url() -> str:
    cfg = connection.settings_dict
    if cfg["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the worker needs the shared PostgreSQL test database (run `make test`)")
    user = cfg.get("USER") or "postgres"
    password = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    host = cfg.get("HOST") or "127.0.0.1"
    port = cfg.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{cfg['NAME']}"


def _reset_producer_pool() -> None:
    """Drop cached producer connections, so the next publish uses the broker now configured."""
    kombu_pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


WORKER_SECRET_KEY = secrets.token_urlsafe(50)


@contextlib.contextmanager
def celery_worker(
    queues: str, log_path: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker process on ``queues`` (Redis broker, this test database), with this process
    publishing to the same broker for the duration; the worker's log goes to ``log_path``."""
    _redis_or_skip()
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
        # a worker outside DEBUG refuses the repository's development key, as gunicorn does
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or WORKER_SECRET_KEY,
        **(env or {}),
    }
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "rewardhub", "worker", "-Q", queues,
         "--pool", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "-l", "info"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    saved = {k: celery_app.conf[k] for k in ("broker_url", "task_always_eager")}
    celery_app.conf.update(broker_url=REDIS_URL, task_always_eager=False)
    _reset_producer_pool()
    try:
        yield proc
    finally:
        celery_app.conf.update(**saved)
        _reset_producer_pool()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    log_path = tmp_path / "worker.log"
    with celery_worker(
        "default,scan,import", log_path, {"CELERY_RESULT_BACKEND": REDIS_URL}
    ) as proc:
        yield proc
    if proc.returncode not in (0, -15):
        print(log_path.read_text(errors="replace")[-4000:])


def _wait_for(predicate, timeout: float = 90.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return False


def test_import_enqueues_scan_after_commit_and_worker_flags_it(worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    record = CanonicalTrajectoryFactory(command="rm -rf ~/")
    with transaction.atomic():
        result = trajectory_import(record=record)
        assert result.status == "imported"
        time.sleep(0.5)
        # Not committed yet: nothing may have reached the worker.
        assert not Flag.objects.filter(trajectory=result.trajectory).exists()
    assert _wait_for(lambda: Flag.objects.filter(trajectory=result.trajectory).exists()), (
        tmp_path / "worker.log"
    ).read_text(errors="replace")[-3000:]
    flag = Flag.objects.filter(trajectory=result.trajectory).first()
    assert flag.action in ("block", "review") and "rm" in flag.argv[0]


def test_worker_scan_is_idempotent(worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = trajectory_import(
        record=CanonicalTrajectoryFactory(command="git push --force origin main")
    )
    assert _wait_for(lambda: Flag.objects.filter(trajectory=result.trajectory).exists()), (
        tmp_path / "worker.log"
    ).read_text(errors="replace")[-3000:]
    count = Flag.objects.filter(trajectory=result.trajectory).count()
    # A redelivered / repeated task must not duplicate flags.
    # A separate client app with a result backend, so the test can wait for the task's answer.
    probe = Celery("probe", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    try:
        outcome = probe.send_task(
            scan_trajectory.name, args=[result.trajectory.pk], queue="scan"
        ).get(timeout=60)
    finally:
        probe.close()
    assert outcome["findings"] >= 1 and outcome["flags_created"] == 0
    assert Flag.objects.filter(trajectory=result.trajectory).count() == count


def test_a_background_export_runs_on_the_worker(worker, tmp_path: Path, make_user) -> None:  # type: ignore[no-untyped-def]
    from annotations import exports
    from review import export_jobs
    from review import selectors as review_selectors
    from review.models import ExportJob, ExportStatus
    from tests.test_review_services import label_all, make_trajectory

    expert = make_user("ellen-export", EXPERT)
    for i in range(3):
        label_all(make_trajectory(2, rollout=f"export-{i}"), expert)
    with transaction.atomic():
        job = export_jobs.start_export(kind="prm", filters={}, user=None)
    assert _wait_for(lambda: ExportJob.objects.get(pk=job.pk).status == ExportStatus.DONE), (
        tmp_path / "worker.log"
    ).read_text(errors="replace")[-3000:]
    job.refresh_from_db()
    expected = "".join(exports.prm_lines(review_selectors.review_trajectories(filters={})))
    path = export_jobs.downloadable(job)
    assert path is not None and (job.done, job.rows) == (3, 3)
    assert path.read_text() == expected
    path.unlink()
