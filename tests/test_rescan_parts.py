"""A large rescan is split into parts over ranges of trajectory ids, each its own task, so scan
workers share it (issue #25). Each trajectory is scanned once, the whole's counts are the sum
of what its parts committed, and a part that stops resumes where it committed."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import pytest
from django.db import OperationalError

from safety import services, tasks
from safety.models import Flag, ScanJob
from tests.test_scan_failures import _import

pytestmark = pytest.mark.django_db


@pytest.fixture
def parts_of_two(settings):  # type: ignore[no-untyped-def]
    settings.SAFETY = {**settings.SAFETY, "SCAN_PART_SIZE": 2}


def _hub(n: int) -> list[int]:
    """``n`` trajectories, every other one with a command the default policy flags, each
    scanned once as its import would."""
    ids = [_import([f"rm -rf ~/ # {i}" if i % 2 == 0 else f"ls -la # {i}"]) for i in range(n)]
    for pk in ids:
        services.trajectory_scan(trajectory_id=pk)
    return ids


def _flag_sets(version: Any) -> Counter[int]:
    """How many flags of this version each trajectory holds (one per finding)."""
    rows = Flag.all_versions.filter(policy_version=version).values_list("trajectory", flat=True)
    return Counter(rows)


def test_a_large_rescan_runs_in_parts_that_add_up(parts_of_two) -> None:  # type: ignore[no-untyped-def]
    ids = _hub(7)
    version = services.default_policy_version()
    before = _flag_sets(version)
    job = services.scan_job_create(policy_version=version, user=None)
    tasks.run_scan_job(job.pk)  # splits, and queues each part (eager here: runs them at once)
    job.refresh_from_db()
    parts = list(job.parts.order_by("id_from"))
    assert [(p.id_from, p.id_to) for p in parts] == [
        (ids[0], ids[1]), (ids[2], ids[3]), (ids[4], ids[5]), (ids[6], None),
    ]  # fmt: skip
    assert all(p.state == ScanJob.State.DONE for p in parts)
    assert [p.done for p in parts] == [2, 2, 2, 1]
    assert job.state == ScanJob.State.DONE
    assert (job.total, job.done, job.failed) == (7, 7, 0)
    assert job.flags_created == sum(p.flags_created for p in parts)
    assert _flag_sets(version) == before  # scanned again, nothing doubled
    assert set(before) == {i for n, i in enumerate(ids) if n % 2 == 0}


def test_a_part_that_stops_resumes_and_the_whole_stays_exact(parts_of_two, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ids = _hub(7)
    version = services.default_policy_version()
    flags_before = _flag_sets(version)
    Flag.all_versions.filter(policy_version=version).delete()  # so the rescan creates them
    job = services.scan_job_create(policy_version=version, user=None)
    real_scan = services.trajectory_scan
    broken = {ids[3]}

    def scan(*, trajectory_id: int, **kwargs: Any) -> services.ScanResult:
        if trajectory_id in broken:
            raise OperationalError("server closed the connection unexpectedly")
        return real_scan(trajectory_id=trajectory_id, **kwargs)

    monkeypatch.setattr(services, "trajectory_scan", scan)
    parts = services.scan_job_split(job_id=job.pk, part_size=2)
    for part in parts:
        with contextlib.suppress(OperationalError):  # the task framework retries it: below
            services.scan_job_run(job_id=part, chunk=1)
    job.refresh_from_db()
    assert job.state == ScanJob.State.FAILED and job.done == 6  # ids[2] committed, ids[3] not
    assert job.resumable
    stopped = ScanJob.objects.get(parent=job, id_from=ids[2])
    assert (stopped.state, stopped.done, stopped.last_id) == (ScanJob.State.FAILED, 1, ids[2])

    broken.clear()  # the database is back: the retried task splits again and runs what is left
    tasks.run_scan_job(job.pk)
    job.refresh_from_db()
    assert job.parts.count() == 4  # planned once
    assert job.state == ScanJob.State.DONE
    assert (job.total, job.done, job.failed) == (7, 7, 0)
    assert _flag_sets(version) == flags_before and flags_before
    assert job.flags_created == sum(flags_before.values())
    # A part delivered twice (a redelivered message) changes nothing.
    services.scan_job_run(job_id=stopped.pk, chunk=1)
    tasks.run_scan_job(job.pk)
    job.refresh_from_db()
    assert (job.done, job.flags_created) == (7, sum(flags_before.values()))


def test_the_whole_is_done_only_when_its_last_part_is(parts_of_two) -> None:  # type: ignore[no-untyped-def]
    _hub(5)
    version = services.default_policy_version()
    job = services.scan_job_create(policy_version=version, user=None)
    parts = services.scan_job_split(job_id=job.pk, part_size=2)
    assert services.scan_job_split(job_id=job.pk, part_size=2) == parts  # a retried split
    for part in parts:
        job.refresh_from_db()
        assert job.state == ScanJob.State.RUNNING
        services.scan_job_run(job_id=part)
    job.refresh_from_db()
    assert job.state == ScanJob.State.DONE and job.done == 5


def test_a_small_rescan_stays_one_task(parts_of_two) -> None:  # type: ignore[no-untyped-def]
    _hub(2)
    job = services.scan_job_create(policy_version=services.default_policy_version(), user=None)
    tasks.run_scan_job(job.pk)
    job.refresh_from_db()
    assert job.state == ScanJob.State.DONE and job.done == 2 and not job.parts.exists()


def test_a_part_cannot_be_split() -> None:
    _hub(1)
    job = services.scan_job_create(policy_version=services.default_policy_version(), user=None)
    ScanJob.objects.filter(pk=job.pk).update(total=5)
    services.scan_job_split(job_id=job.pk, part_size=1)
    part = job.parts.get()
    with pytest.raises(ValueError, match="is a part"):
        services.scan_job_split(job_id=part.pk, part_size=1)
