"""Two real Celery workers on a real Redis broker share a rescan split into parts (issue #25):
every trajectory scanned once, the whole's counts exact, both workers given parts."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from safety import services
from safety.models import Flag, ScanJob
from safety.tasks import queue_scan_job
from tests.test_celery_integration import _wait_for, celery_worker
from tests.test_scan_failures import _import

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_two_workers_share_a_split_rescan(tmp_path: Path) -> None:
    ids = [_import([f"rm -rf ~/ # {i}" if i % 2 == 0 else f"ls # {i}"]) for i in range(12)]
    version = services.default_policy_version()
    before = Counter(
        Flag.all_versions.filter(policy_version=version).values_list("trajectory", flat=True)
    )
    Flag.all_versions.filter(policy_version=version).delete()
    job = services.scan_job_create(policy_version=version, user=None)
    env = {"RH_SCAN_PART_SIZE": "2"}
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    with celery_worker("scan", logs[0], env), celery_worker("scan", logs[1], env):
        # both workers listen before the job is queued: a worker that starts late finds the
        # parts already taken by the other (the split is what is under test, not start-up)
        ready = _wait_for(
            lambda: all(" ready." in log.read_text(errors="replace") for log in logs), timeout=90
        )
        assert ready, "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
        queue_scan_job(job.pk)
        done = _wait_for(
            lambda: ScanJob.objects.get(pk=job.pk).state == ScanJob.State.DONE, timeout=180
        )
        assert done, "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
    job.refresh_from_db()
    parts = list(job.parts.all())
    assert len(parts) == 6 and all(p.state == ScanJob.State.DONE for p in parts)
    assert (job.total, job.done, job.failed) == (12, 12, 0)
    after = Counter(
        Flag.all_versions.filter(policy_version=version).values_list("trajectory", flat=True)
    )
    assert after == before and set(after) == set(ids[::2])
    assert job.flags_created == sum(after.values())
    # Each worker ran parts (a part is the task with a part's id; the split is the job's).
    ran = [
        set(re.findall(r"safety\.run_scan_job\[[^\]]+\] received", log.read_text(errors="replace")))
        for log in logs
    ]
    assert all(ran), [len(r) for r in ran]
