"""Scans on PostgreSQL that used to fail or mislead (issue #22, items 1 to 3): analyzer output
that jsonb refuses, one bad trajectory in a rescan, rescans with a new version, killed workers."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from annotations.services import trajectory_import
from safety import services
from safety.analyzer.resolve import SHOWN_DYN
from safety.models import Flag, FlagStatus, PendingScan, Policy, ScanJob
from tests.factories import bash_call

pytestmark = pytest.mark.django_db

# Each of these makes the analyzer report `analyzer.dynamic-flags`, whose argv held the
# analyzer's internal placeholder for an unknown value ("\x00?\x00"): jsonb refuses \u0000.
DYNAMIC = ["sudo chown $(whoami) /data/db", "chmod $MODE /etc/passwd", "rm $FLAGS /home/x"]


def _trajectory(commands: list[str], **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix it."},
    ]
    for i, command in enumerate(commands):
        messages.append({"role": "assistant", "tool_calls": [bash_call(f"c{i}", command)]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return {"messages": messages, "metadata": {"workspace": "/testbed"}, **extra}


def _import(commands: list[str], **extra: Any) -> int:
    result = trajectory_import(record=_trajectory(commands, **extra))
    assert result.status == "imported", result.errors
    return result.trajectory.pk


def test_the_import_scan_stores_flags_for_commands_with_dynamic_flags(
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    """The whole path: import, the after-commit scan task (eager), flags in jsonb."""
    services.default_policy_version()
    with django_capture_on_commit_callbacks(execute=True):
        trajectory_id = _import([*DYNAMIC, "rm -rf ~/"])
    flags = Flag.objects.filter(trajectory_id=trajectory_id)
    dynamic = flags.filter(rule_id="analyzer.dynamic-flags")
    assert dynamic.count() == 3
    assert {f.command_index for f in flags} >= {0}  # every step has its flags
    assert {f.step.index for f in flags} == {0, 1, 2, 3}
    for flag in dynamic:
        # The analyzer gives the unknown value out as its printable placeholder: never NUL,
        # nor the storage boundary's U+FFFD for one that leaked.
        assert all("\x00" not in arg for arg in flag.argv)
        assert SHOWN_DYN in "".join(flag.argv) and "\ufffd" not in "".join(flag.argv)
    assert not PendingScan.objects.filter(trajectory_id=trajectory_id).exists()


def test_text_the_database_cannot_store_is_replaced_at_the_storage_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the analyzer hands over (NUL, unpaired surrogates in any field), flags store."""
    trajectory_id = _import(["ls -la"])
    # Duck-typed like the analyzer's Finding (only its attributes are read).
    weird = SimpleNamespace(
        rule="x.weird\x00",
        category="cat\ud800",
        severity="high",
        action="review",
        span=(0, 2),
        message="message with \x00 and \udfff",
        argv=["ls", "\x00?\x00", "\ud83d"],
        command="ls -la",
    )

    def command_findings(self: Any, analysis: Any) -> Any:
        return [weird]  # what the scan's reading of each command hands over

    monkeypatch.setattr(type(services.analyzer_for(services.default_policy_version())),
                        "command_findings", command_findings)  # fmt: skip
    result = services.trajectory_scan(trajectory_id=trajectory_id)
    assert result.flags_created == 1 and result.flags_refused == 0
    flag = Flag.objects.get(trajectory_id=trajectory_id)
    assert flag.argv == ["ls", "\ufffd?\ufffd", "\ufffd"]
    assert flag.rule_id == "x.weird\ufffd" and flag.category == "cat\ufffd"
    assert flag.message == "message with \ufffd and \ufffd"


def test_a_rescan_keeps_going_past_a_trajectory_that_fails(
    monkeypatch: pytest.MonkeyPatch, client: Client, safety_lead, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    version = services.default_policy_version()
    ids = [_import([f"rm -rf ~/ # {i}"]) for i in range(5)]
    bad = ids[2]
    real_scan = services.trajectory_scan

    def scan(*, trajectory_id: int, **kwargs: Any) -> services.ScanResult:
        if trajectory_id == bad:
            raise RuntimeError("analyzer blew up on this one")
        return real_scan(trajectory_id=trajectory_id, **kwargs)

    monkeypatch.setattr(services, "trajectory_scan", scan)
    job = services.scan_job_create(policy_version=version, user=None)
    services.scan_job_run(job_id=job.pk, chunk=2)
    job.refresh_from_db()
    assert job.state == ScanJob.State.DONE
    assert (job.done, job.failed, job.total) == (5, 1, 5)
    flagged = set(Flag.objects.filter(policy_version=version).values_list("trajectory", flat=True))
    assert flagged == set(ids) - {bad}
    failure = job.failures.get()
    assert failure.trajectory_id == bad and "RuntimeError" in failure.error

    # The page says so and offers a retry; once the cause is gone the retry scans it.
    client.force_login(safety_lead)
    page = client.get(f"/safety/scans/{job.pk}/").content.decode()
    assert "1 failed" in page and f"/safety/scans/{job.pk}/resume/" in page
    monkeypatch.setattr(services, "trajectory_scan", real_scan)
    with django_capture_on_commit_callbacks(execute=True):  # eager Celery: runs on commit
        assert client.post(f"/safety/scans/{job.pk}/resume/").status_code == 302
    job.refresh_from_db()
    assert job.state == ScanJob.State.DONE and job.failed == 0 and not job.failures.exists()
    assert Flag.objects.filter(trajectory_id=bad).exists()


def test_a_database_error_names_no_sql_and_the_job_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import DataError

    version = services.default_policy_version()
    ids = [_import([f"rm -rf ~/ # {i}"]) for i in range(3)]
    real_scan = services.trajectory_scan

    def scan(*, trajectory_id: int, **kwargs: Any) -> services.ScanResult:
        if trajectory_id == ids[1]:
            raise DataError('unsupported Unicode escape sequence\nCONTEXT: COPY "safety_flag"')
        return real_scan(trajectory_id=trajectory_id, **kwargs)

    monkeypatch.setattr(services, "trajectory_scan", scan)
    job = services.scan_job_create(policy_version=version, user=None)
    services.scan_job_run(job_id=job.pk)
    job.refresh_from_db()
    failure = job.failures.get()
    assert "safety_flag" not in failure.error and "COPY" not in failure.error
    assert "could not be stored" in failure.error


def test_a_failed_import_scan_is_left_pending_and_shown(
    monkeypatch: pytest.MonkeyPatch, client: Client, safety_lead, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    services.default_policy_version()

    def scan(**kwargs: Any) -> services.ScanResult:
        raise RuntimeError("analyzer blew up")

    monkeypatch.setattr(services, "trajectory_scan", scan)
    with django_capture_on_commit_callbacks(execute=True):
        trajectory_id = _import(["rm -rf ~/"])
    pending = PendingScan.objects.get(trajectory_id=trajectory_id)
    assert "RuntimeError" in pending.reason
    client.force_login(safety_lead)
    page = client.get("/safety/flags/").content.decode()
    assert "1 trajectory scan failed or waits" in page and "RuntimeError" in page


def test_a_stalled_rescan_says_so_and_resumes(
    client: Client, safety_lead, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.SAFETY = {**settings.SAFETY, "SCAN_STALL_SECONDS": 60}
    version = services.default_policy_version()
    ids = [_import([f"rm -rf ~/ # {i}"]) for i in range(3)]
    job = services.scan_job_create(policy_version=version, user=None)
    # What a worker killed after the first trajectory leaves: running, no heartbeat for long.
    ScanJob.objects.filter(pk=job.pk).update(
        state=ScanJob.State.RUNNING,
        done=1,
        last_id=ids[0],
        heartbeat_at=timezone.now() - timedelta(seconds=61),
    )
    client.force_login(safety_lead)
    page = client.get(f"/safety/scans/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-state="stalled"' in page and "resume" in page.lower()

    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/safety/scans/{job.pk}/resume/").status_code == 302
    job.refresh_from_db()
    assert job.state == ScanJob.State.DONE and job.done == 3


def test_a_live_rescan_is_not_run_twice(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SAFETY = {**settings.SAFETY, "SCAN_STALL_SECONDS": 60}
    version = services.default_policy_version()
    _import(["rm -rf ~/"])
    job = services.scan_job_create(policy_version=version, user=None)
    ScanJob.objects.filter(pk=job.pk).update(
        state=ScanJob.State.RUNNING, heartbeat_at=timezone.now(), run_token="someone-else"
    )
    services.scan_job_run(job_id=job.pk)  # a duplicate delivery while the first run is alive
    job.refresh_from_db()
    assert job.state == ScanJob.State.RUNNING and job.done == 0
    assert not Flag.objects.exists()


# --- item 2: what a rescan does with earlier decisions -------------------------------------------


def _publish_again(note: str) -> Any:
    return services.policy_publish(policy=Policy.objects.get(slug="default"), user=None, note=note)


def test_a_rescan_carries_decisions_and_supersedes_the_earlier_flags(expert) -> None:  # type: ignore[no-untyped-def]
    v1 = services.default_policy_version()
    trajectory_id = _import(["git push --force origin main", "rm -rf ~/"])
    services.trajectory_scan(trajectory_id=trajectory_id)
    push = Flag.objects.get(trajectory_id=trajectory_id, category="vcs-destruction")
    services.flags_review(flag_ids=[push.pk], status="confirmed", user=expert, note="hack")
    before = Flag.objects.filter(trajectory_id=trajectory_id).count()

    v2 = _publish_again("same rules, new version")
    job = services.scan_job_create(policy_version=v2, user=None)
    services.scan_job_run(job_id=job.pk)

    current = Flag.objects.filter(trajectory_id=trajectory_id)
    assert current.count() == before  # one flag per finding, not two
    assert set(current.values_list("policy_version", flat=True)) == {v2.pk}
    carried = current.get(category="vcs-destruction")
    assert (carried.status, carried.reviewer, carried.note) == ("confirmed", expert, "hack")
    assert not current.filter(category="vcs-destruction", status=FlagStatus.OPEN).exists()
    # The v1 flags are kept, superseded: out of the queue, still in the history.
    old = Flag.all_versions.filter(trajectory_id=trajectory_id, policy_version=v1)
    assert old.count() == before and all(f.superseded_at is not None for f in old)
    assert Flag.all_versions.get(pk=push.pk).status == "confirmed"

    # Scanning with v1 again makes v1's flags the current ones, decisions intact.
    services.trajectory_scan(trajectory_id=trajectory_id, policy_version=v1)
    assert set(current.values_list("policy_version", flat=True)) == {v1.pk}
    assert current.count() == before


def test_a_routed_rollout_with_dynamic_flags_is_flagged(
    reward_model, recorder, key_client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    """Scored, routed to review (it has findings), imported and scanned after commit."""
    body = {"reward_model": reward_model.slug, "trajectory": _trajectory(DYNAMIC)}
    assert key_client("score").post("/api/v1/score/", body, format="json").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        recorder.flush()
    flags = Flag.objects.filter(trajectory__metadata__has_key="scoring")
    assert flags.filter(rule_id="analyzer.dynamic-flags").count() == 3
    assert not PendingScan.objects.exists()
