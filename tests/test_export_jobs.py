"""Background exports (review.export_jobs): the file holds exactly what the streaming export
gives, a run that dies anywhere resumes without a duplicated or half line, a newer run takes
the job over, and only safety leads start, see, resume, download or delete them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from annotations import exports
from review import export_jobs
from review.models import ExportJob, ExportStatus
from tests.test_review_pages import logged_in
from tests.test_review_services import label_all, make_trajectory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def export_root(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.EXPORTS = {**settings.EXPORTS, "ROOT": str(tmp_path / "exports")}
    return tmp_path / "exports"


@pytest.fixture
def labelled_hub(expert, monkeypatch: pytest.MonkeyPatch) -> list[int]:  # type: ignore[no-untyped-def]
    """Seven labelled trajectories and two unlabelled ones, exported two at a time."""
    monkeypatch.setattr(exports, "CHUNK", 2)
    ids = []
    for i in range(9):
        trajectory = make_trajectory(2, rollout=f"r{i}", resolved=i % 2 == 0)
        if i not in (3, 6):
            label_all(trajectory, expert)
            ids.append(trajectory.pk)
    return ids


def _streamed(client: Client, url: str, **params: str) -> bytes:
    return b"".join(client.get(url, params).streaming_content)


def _start(client: Client, kind: str = "prm", **filters: str) -> ExportJob:
    response = client.post("/review/exports/", {"kind": kind, **filters})
    assert response.status_code == 302, response.content
    return ExportJob.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1]))


@pytest.mark.parametrize(
    ("kind", "stream_url"),
    [("prm", "/review/export/prm.jsonl"), ("annotators", "/review/export/annotators.jsonl")],
)
def test_the_file_holds_what_the_stream_gives(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, django_capture_on_commit_callbacks, kind, stream_url
) -> None:
    logged_in(client, safety_lead)
    with django_capture_on_commit_callbacks(execute=True):  # in-process Celery runs it
        job = _start(client, kind)
    job.refresh_from_db()
    assert job.status == ExportStatus.DONE, job.error
    assert (job.total, job.done) == (7, 7)
    streamed = _streamed(client, stream_url)
    assert streamed and job.rows == len(streamed.splitlines())
    assert job.bytes == len(streamed)

    response = client.get(f"/review/exports/{job.pk}/download/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{job.file_name}"'
    assert b"".join(response.streaming_content) == streamed
    page = client.get(f"/review/exports/{job.pk}/").content.decode()
    assert "7</strong> of 7 labelled trajectories" in page and "Download" in page


def test_filters_are_those_of_the_list(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, django_capture_on_commit_callbacks
) -> None:
    logged_in(client, safety_lead)
    with django_capture_on_commit_callbacks(execute=True):
        job = _start(client, "prm", resolved="true")
    job.refresh_from_db()
    rows = [json.loads(line) for line in export_jobs.export_path(job).read_bytes().splitlines()]
    assert [r["id"] for r in rows] == ["r0", "r2", "r4", "r8"]
    assert job.filters == {"resolved": "true"}
    assert _streamed(client, "/review/export/prm.jsonl", resolved="true") == (
        export_jobs.export_path(job).read_bytes()
    )


class _Crash(BaseException):
    """What a killed process looks like to the code that was running: nothing after it runs."""


def _dying_after(chunks: int, garbage: bytes) -> object:
    """``export_chunks`` that dies after ``chunks`` saved chunks, having written ``garbage``
    to the file as a run killed between its write and its save would have."""
    real = exports.export_chunks

    def chunks_then_die(
        qs, *, kind: str, after: int = 0, labels=None
    ) -> Iterator[exports.ExportChunk]:  # type: ignore[no-untyped-def]
        for n, chunk in enumerate(real(qs, kind=kind, after=after, labels=labels)):
            if n == chunks:
                job = ExportJob.objects.get()
                with open(export_jobs.export_path(job), "ab") as handle:
                    handle.write(garbage)
                raise _Crash
            yield chunk

    return chunks_then_die


def test_a_killed_run_is_taken_over_and_leaves_no_trace(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged_in(client, safety_lead)
    job = _start(client, "prm")  # not run: on_commit callbacks are not executed here
    monkeypatch.setattr(export_jobs, "export_chunks", _dying_after(2, b'{"half a li'))
    with pytest.raises(_Crash):
        export_jobs.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == ExportStatus.RUNNING and (job.done, job.attempts) == (4, 1)
    path = export_jobs.export_path(job)
    assert path.stat().st_size == job.bytes + len(b'{"half a li')

    monkeypatch.setattr(export_jobs, "export_chunks", exports.export_chunks)
    assert export_jobs.run_export(job.pk) == "done"  # a redelivered task, say
    job.refresh_from_db()
    assert (job.status, job.done, job.attempts) == (ExportStatus.DONE, 7, 2)
    assert path.read_bytes() == _streamed(client, "/review/export/prm.jsonl")


def test_a_failed_run_says_why_and_resumes_from_the_page(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks,
) -> None:  # fmt: skip
    logged_in(client, safety_lead)
    job = _start(client, "annotators")

    def broken(qs, *, kind: str, after: int = 0, labels=None) -> Iterator[exports.ExportChunk]:  # type: ignore[no-untyped-def]
        yield from exports.export_chunks(qs, kind=kind, after=after, labels=labels)
        raise ValueError("disk full")

    monkeypatch.setattr(export_jobs, "export_chunks", broken)
    assert export_jobs.run_export(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == ExportStatus.FAILED and job.error == "ValueError: disk full"
    page = client.get(f"/review/exports/{job.pk}/").content.decode()
    assert "ValueError: disk full" in page and "Resume" in page and "Download" not in page
    assert client.get(f"/review/exports/{job.pk}/download/").status_code == 404

    monkeypatch.setattr(export_jobs, "export_chunks", exports.export_chunks)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/review/exports/{job.pk}/resume/").status_code == 302
    job.refresh_from_db()
    assert job.status == ExportStatus.DONE and job.error == ""
    assert export_jobs.export_path(job).read_bytes() == _streamed(
        client, "/review/export/annotators.jsonl"
    )


def test_a_newer_run_takes_the_job_over(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged_in(client, safety_lead)
    job = _start(client, "prm")
    real = exports.export_chunks

    def another_run_starts(
        qs, *, kind: str, after: int = 0, labels=None
    ) -> Iterator[exports.ExportChunk]:  # type: ignore[no-untyped-def]
        for n, chunk in enumerate(real(qs, kind=kind, after=after, labels=labels)):
            if n == 1:
                ExportJob.objects.filter(pk=job.pk).update(runner="newer")
            yield chunk

    monkeypatch.setattr(export_jobs, "export_chunks", another_run_starts)
    assert export_jobs.run_export(job.pk) == "superseded"
    job.refresh_from_db()
    assert job.done == 2 and job.status == ExportStatus.RUNNING  # the newer run owns the rest


def test_a_silent_job_shows_as_stalled_and_resumes(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, settings, django_capture_on_commit_callbacks
) -> None:
    logged_in(client, safety_lead)
    job = _start(client, "prm")  # its message was lost: the job stays queued
    page = client.get(f"/review/exports/{job.pk}/").content.decode()
    assert "stalled" not in page and "every 2s" in page
    ExportJob.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.EXPORTS["STALL_SECONDS"] + 1)
    )
    page = client.get("/review/exports/").content.decode()
    assert "stalled" in page and "Resume" in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/review/exports/{job.pk}/resume/")
    job.refresh_from_db()
    assert job.status == ExportStatus.DONE


def test_a_finished_job_cannot_be_resumed_and_deletes_with_its_file(  # type: ignore[no-untyped-def]
    client: Client, safety_lead, labelled_hub, django_capture_on_commit_callbacks
) -> None:
    logged_in(client, safety_lead)
    with django_capture_on_commit_callbacks(execute=True):
        job = _start(client, "prm")
    response = client.post(f"/review/exports/{job.pk}/resume/", follow=True)
    assert "only a failed or stalled one resumes" in response.content.decode()
    path = export_jobs.export_path(ExportJob.objects.get(pk=job.pk))
    assert path.exists()
    assert client.post(f"/review/exports/{job.pk}/delete/").status_code == 302
    assert not path.exists() and not ExportJob.objects.filter(pk=job.pk).exists()
    assert export_jobs.run_export(job.pk) == "gone"


def test_bad_requests_name_what_is_wrong(client: Client, safety_lead) -> None:  # type: ignore[no-untyped-def]
    logged_in(client, safety_lead)
    response = client.post("/review/exports/", {"kind": "csv"})
    assert response.status_code == 400
    assert b"kind must be one of prm, annotators" in response.content
    response = client.post("/review/exports/", {"kind": "prm", "flagged": "x"})
    assert response.status_code == 400 and b"flagged" in response.content
    assert client.get("/review/exports/999999/").status_code == 404
    assert client.get("/review/exports/999999/download/").status_code == 404
    assert client.delete("/review/exports/").status_code == 405
    assert not ExportJob.objects.exists()


def test_only_safety_leads_touch_exports(client: Client, expert, safety_lead) -> None:  # type: ignore[no-untyped-def]
    job = ExportJob.objects.create(kind="prm", created_by=safety_lead)
    urls = [f"/review/exports/{job.pk}/", f"/review/exports/{job.pk}/download/", "/review/exports/"]
    assert client.get(urls[0]).status_code == 302  # anonymous: to the sign-in page
    logged_in(client, expert)
    for url in urls:
        assert client.get(url).status_code == 403, url
    for url in ("/review/exports/", f"/review/exports/{job.pk}/resume/",
                f"/review/exports/{job.pk}/delete/"):  # fmt: skip
        assert client.post(url, {"kind": "prm"}).status_code == 403, url
    assert ExportJob.objects.count() == 1
