"""Review pages (server-rendered, htmx): list, viewer, labelling, queues, agreement, exports.

Views are thin: parse the request, check the role, call one selector or service, render.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import slug_re
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations import exports
from annotations.importers import FORMATS, iter_records
from annotations.models import Step, Trajectory
from annotations.selectors import FilterError
from annotations.services import trajectory_import
from core.decorators import role_required
from core.params import parse_int
from core.queries import table_size
from core.roles import ADMIN, EXPERT, SAFETY_LEAD, has_role, user_roles
from review import (
    access as review_access,
)
from review import (
    export_jobs,
)
from review import (
    selectors as review_selectors,
)
from review import (
    services as review_services,
)
from review import (
    stats as review_stats,
)
from review.keys import LABEL_KEYS, SHORTCUTS
from review.models import (
    Assignment,
    ExportJob,
    ExportKind,
    QueueStrategy,
    RequiredSteps,
    ReviewQueue,
)
from safety import services as safety_services
from safety.models import Flag, FlagStatus

# Experts label; safety leads label too and also review flags and resolve disagreements.
labeller_only = role_required(EXPERT, SAFETY_LEAD)
lead_only = role_required(SAFETY_LEAD)


def _filters(request: HttpRequest) -> dict[str, str]:
    return {k: v for k in review_selectors.REVIEW_FILTERS if (v := request.GET.get(k, "").strip())}


def _role_flags(request: HttpRequest) -> dict[str, bool]:
    user = request.user
    return {
        "is_lead": has_role(user, SAFETY_LEAD),
        "is_admin": ADMIN in user_roles(user),
    }


@labeller_only
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    context = review_stats.dashboard(user=request.user)
    context.update(_role_flags(request))
    return render(request, "review/dashboard.html", context)


@labeller_only
@require_GET
def trajectory_list(request: HttpRequest) -> HttpResponse:
    filters = _filters(request)
    try:
        page = review_selectors.trajectory_page(
            filters=filters, cursor=request.GET.get("cursor", "")
        )
        errors: dict[str, list[str]] = {}
    except FilterError as exc:
        page, errors = None, exc.errors
    context = {
        "page": page,
        "errors": errors,
        "filters": filters,
        "facets": review_selectors.list_facets(),
        "query": urlencode(filters),
        "cursor": request.GET.get("cursor", ""),
        "export_kinds": ExportKind.choices,
        **_role_flags(request),
    }
    status = 400 if errors else 200
    template = "review/_trajectory_table.html" if request.htmx else "review/trajectory_list.html"
    return render(request, template, context, status=status)


@labeller_only
@require_GET
def trajectory_view(request: HttpRequest, trajectory_id: int) -> HttpResponse:
    get_object_or_404(Trajectory.objects.only("pk"), pk=trajectory_id)
    page = review_selectors.review_page(
        trajectory_id=trajectory_id, user=request.user, queue_slug=request.GET.get("queue", "")
    )
    context = {
        "page": page,
        "values": LABEL_BUTTONS,
        "shortcuts": SHORTCUTS,
        "label_keys": LABEL_KEYS,
        **_role_flags(request),
    }
    return render(request, "review/trajectory.html", context)


@lead_only
@require_GET
def trajectory_history(request: HttpRequest, trajectory_id: int) -> HttpResponse:
    """Who changed which label, when (the LabelEvent audit trail)."""
    trajectory = get_object_or_404(Trajectory.objects.defer("canonical"), pk=trajectory_id)
    events = review_selectors.label_history(trajectory=trajectory)
    return render(
        request,
        "review/history.html",
        {"trajectory": trajectory, "events": events, **_role_flags(request)},
    )


IMPORT_STATUSES = ("imported", "duplicate", "rejected")
LABEL_BUTTONS = ((1, "+1", "trusted"), (0, "0", "neutral"), (-1, "−1", "untrusted"))


@labeller_only
@require_POST
def step_label(request: HttpRequest, step_id: int) -> HttpResponse:
    """Autosave one label or comment (htmx); answers the step's refreshed label panel."""
    step = get_object_or_404(Step.objects.select_related("trajectory"), pk=step_id)
    behaviour = request.POST.get("behaviour", "")
    kwargs: dict[str, Any] = {}
    if "value" in request.POST:
        raw = request.POST["value"]
        try:
            kwargs["value"] = None if raw in ("", "clear") else int(raw)
        except ValueError:
            return HttpResponseBadRequest("value must be 1, 0, -1 or empty")
    if "comment" in request.POST:
        kwargs["comment"] = request.POST["comment"]
    stale = ""
    if "value" in kwargs and "expected" in request.POST:
        # The value this tab showed; another tab (or reviewer session) may have changed it since.
        current = review_selectors.my_label_value(step=step, user=request.user, behaviour=behaviour)
        if request.POST["expected"] != ("" if current is None else str(current)):
            stale = "no label" if current is None else f"{current:+d}".replace("+0", "0")
            kwargs.pop("value")
    try:
        if kwargs:
            review_services.step_label_set(
                step=step,
                reviewer=request.user,  # type: ignore[arg-type]
                behaviour=behaviour,
                allowed_behaviours=review_selectors.behaviour_slugs(
                    task_type=step.trajectory.task_type
                ),
                **kwargs,
            )
    except ValidationError as exc:
        return HttpResponseBadRequest("; ".join(exc.messages))
    assignment_id = request.POST.get("assignment", "")
    if (assignment_pk := parse_int(assignment_id)) is not None:  # autosaves keep the lock
        mine = (
            review_access.assignments_for(request.user)
            .select_related("queue")
            .filter(pk=assignment_pk)
        )
        if (assignment := mine.first()) is not None:
            review_services.assignment_extend(assignment=assignment)
    overall, behaviours = review_selectors.step_label_cells(step=step, user=request.user)
    return render(
        request,
        "review/_labels.html",
        {
            "sv": {
                "step": step,
                "overall": overall,
                "rows": [overall, *behaviours],
                "behaviours_open": behaviour != "" or any(c.value is not None for c in behaviours),
            },
            "values": LABEL_BUTTONS,
            "assignment_id": assignment_id,
            "saved": not stale,
            "stale": stale,
        },
    )


@labeller_only
@require_GET
def queue_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "review/queues.html",
        {"rows": review_selectors.queue_rows(user=request.user), **_role_flags(request)},
    )


def _open_next(request: HttpRequest, queue: ReviewQueue) -> HttpResponse:
    assignment = review_services.assignment_next(queue=queue, reviewer=request.user)  # type: ignore[arg-type]
    if assignment is None:
        messages.info(request, f"Queue “{queue.name}” has nothing left for you. Thank you!")
        return redirect("review:queues")
    url = reverse("review:trajectory", args=[assignment.trajectory_id])
    return redirect(f"{url}?{urlencode({'queue': queue.slug})}")


@labeller_only
@require_POST
def queue_next(request: HttpRequest, slug: str) -> HttpResponse:
    return _open_next(request, review_access.access_queue(request.user, slug))


@labeller_only
@require_POST
def assignment_submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Submit the review and open the next item of the same queue."""
    assignment = review_access.access_assignment(request.user, assignment_id)
    try:
        review_services.assignment_submit(assignment=assignment, reviewer=request.user)  # type: ignore[arg-type]
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        url = reverse("review:trajectory", args=[assignment.trajectory_id])
        return redirect(f"{url}?{urlencode({'queue': assignment.queue.slug})}")
    messages.success(request, f"Submitted {assignment.trajectory}.")
    return _open_next(request, assignment.queue)


@labeller_only
@require_POST
def assignment_reopen(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Reopen a submitted review (its reviewer, or a lead for anyone's), attributed and audited."""
    if has_role(request.user, SAFETY_LEAD):
        assignment = get_object_or_404(
            Assignment.objects.select_related("queue", "trajectory"), pk=assignment_id
        )
    else:
        assignment = review_access.access_assignment(request.user, assignment_id)
    try:
        review_services.assignment_reopen(
            assignment=assignment,
            user=request.user,  # type: ignore[arg-type]
            reason=request.POST.get("reason", ""),
        )
        messages.success(request, f"Review of {assignment.trajectory} reopened.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    url = reverse("review:trajectory", args=[assignment.trajectory_id])
    return redirect(f"{url}?{urlencode({'queue': assignment.queue.slug})}")


@labeller_only
@require_POST
def assignment_release(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = review_access.access_assignment(request.user, assignment_id)
    review_services.assignment_release(assignment=assignment)
    return redirect("review:queues")


@labeller_only
@require_POST
def queue_create(request: HttpRequest) -> HttpResponse:
    """Save the list's current filters as a queue: an expert who runs a labelling project
    creates its queue too."""
    filters = {
        k: v for k in review_selectors.REVIEW_FILTERS if (v := request.POST.get(k, "").strip())
    }
    name = request.POST.get("name", "").strip()[:200]
    try:
        queue = review_services.queue_create(
            slug=review_services.unique_queue_slug(name),
            name=name,
            filters=filters,
            overlap=int(request.POST.get("overlap") or 1),
            blind=request.POST.get("blind") == "on",
            user=request.user,  # type: ignore[arg-type]
            strategy=(
                QueueStrategy.UNCERTAINTY
                if request.POST.get("strategy") == QueueStrategy.UNCERTAINTY
                else QueueStrategy.OLDEST
            ),
            required_steps=request.POST.get("required_steps") or RequiredSteps.ALL,
            sample_every=parse_int(request.POST.get("sample_every") or "10") or 0,
        )
    except (ValueError, ValidationError) as exc:
        text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        messages.error(request, f"Queue not created: {text}")
        return redirect(f"{reverse('review:trajectories')}?{urlencode(filters)}")
    messages.success(request, f"Queue “{queue.name}” created.")
    return redirect(f"{reverse('review:queues')}#queue-{queue.slug}")


@labeller_only
@require_GET
def agreement(request: HttpRequest) -> HttpResponse:
    """Kappas (aggregates only, no one's votes: blind review holds) for every reviewer."""
    context = review_stats.agreement_report(
        queue_slug=request.GET.get("queue", ""),
        task_type=request.GET.get("task_type", ""),
    )
    return render(request, "review/agreement.html", {**context, **_role_flags(request)})


@labeller_only
def disagreements(request: HttpRequest) -> HttpResponse:
    """Steps whose reviewers disagree; a lead sets the final label (POST). An expert sees and
    settles those of a queue they created (review.access.access_led_queue)."""
    queue_slug, task_type = request.GET.get("queue", ""), request.GET.get("task_type", "")
    is_lead = has_role(request.user, SAFETY_LEAD)
    led = None
    if not is_lead or queue_slug:
        led = review_access.access_led_queue(request.user, queue_slug)
    if request.method == "POST":
        step_pk = parse_int(request.POST.get("step", ""))
        if step_pk is None:
            return HttpResponseBadRequest("step: expected a step id")
        step = get_object_or_404(Step, pk=step_pk)
        if (
            not is_lead
            and not Assignment.objects.filter(queue=led, trajectory_id=step.trajectory_id).exists()
        ):
            raise PermissionDenied("That step is not in a queue you lead.")
        if (
            review_access.still_reviewing_trajectories(request.user)
            .filter(trajectory_id=step.trajectory_id)
            .exists()
        ):
            raise PermissionDenied(
                "You are still reviewing this trajectory: submit your review before settling it."
            )
        try:
            review_services.final_label_resolve(
                step=step,
                behaviour=request.POST.get("behaviour", ""),
                value=int(request.POST.get("value", "x")),
                user=request.user,  # type: ignore[arg-type]
                note=request.POST.get("note", ""),
            )
        except ValueError:
            return HttpResponseBadRequest("value: must be 1, 0 or -1")
        except ValidationError as exc:
            return HttpResponseBadRequest(
                "\n".join(f"{k}: {'; '.join(v)}" for k, v in exc.message_dict.items())
            )
        messages.success(request, f"Final label set on {step}.")
        return redirect(f"{reverse('review:disagreements')}?{request.GET.urlencode()}")
    cursor = request.GET.get("cursor", "")
    after = review_stats.parse_disagreement_cursor(cursor) if cursor else None
    if cursor and after is None:
        return HttpResponseBadRequest("cursor: not a cursor of this list")
    page = review_stats.disagreement_page(
        queue_slug=queue_slug, task_type=task_type, after=after, viewer=request.user
    )
    queues = ReviewQueue.objects.order_by("name")
    return render(
        request,
        "review/disagreements.html",
        {
            "rows": page.rows,
            "next_cursor": page.next_cursor,
            "cursor": cursor,
            "query": urlencode(
                {k: v for k, v in (("queue", queue_slug), ("task_type", task_type)) if v}
            ),
            "values": LABEL_BUTTONS,
            "queues": queues if is_lead else queues.filter(created_by=request.user),
            "queue_slug": queue_slug,
            "task_type": task_type,
            "reviewing": review_access.still_reviewing_trajectories(request.user).exists(),
            **_role_flags(request),
        },
    )


def _stream(lines: Any, name: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@lead_only
@require_GET
def export_prm(request: HttpRequest) -> HttpResponse:
    return _hub_export(request, exports.prm_lines, "step-labels-prm.jsonl")


@lead_only
@require_GET
def export_annotators(request: HttpRequest) -> HttpResponse:
    return _hub_export(request, exports.annotator_lines, "step-labels-by-annotator.jsonl")


def _hub_export(request: HttpRequest, lines: Any, name: str) -> HttpResponse:
    """The submitted labels of the list's filtered trajectories, streamed; nothing of what the
    requester is still reviewing (blind review)."""
    try:
        qs = review_selectors.review_trajectories(filters=_filters(request))
    except FilterError as exc:
        return HttpResponseBadRequest(str(exc.errors))
    qs = qs.exclude(pk__in=review_access.still_reviewing_trajectories(request.user))
    return _stream(lines(qs, labels=review_selectors.counted_labels()), name)


@labeller_only
@require_GET
def queue_export(request: HttpRequest, slug: str) -> HttpResponse:
    """A labelling project's labels, for whoever leads it (review.access.access_led_queue): the
    submitted reviews of this queue only, as PRM rows or one row per annotator (``?kind=``)."""
    queue = review_access.access_led_queue(request.user, slug)
    kind = request.GET.get("kind", "prm")
    if kind not in exports.EXPORT_KINDS:
        return HttpResponseBadRequest(f"kind: one of {', '.join(exports.EXPORT_KINDS)}")
    export = review_selectors.queue_export(queue=queue)
    lines = exports.prm_lines if kind == "prm" else exports.annotator_lines
    return _stream(
        lines(export.trajectories, labels=export.labels, finals=export.finals),
        f"{queue.slug}-labels-{kind}.jsonl",
    )


EXPORT_JOBS_SHOWN = 50


@lead_only
@require_http_methods(["GET", "POST"])
def export_job_list(request: HttpRequest) -> HttpResponse:
    """Background exports: start one (POST: the list's filters and a kind), see the recent ones."""
    if request.method == "POST":
        filters = {
            k: v for k in review_selectors.REVIEW_FILTERS if (v := request.POST.get(k, "").strip())
        }
        try:
            job = export_jobs.start_export(
                kind=request.POST.get("kind", ""), filters=filters, user=request.user
            )
        except FilterError as exc:
            return HttpResponseBadRequest(f"filters: {exc.errors}")
        except export_jobs.ExportError as exc:
            return HttpResponseBadRequest(str(exc))
        return redirect("review:export_job", job_id=job.pk)
    jobs = list(ExportJob.objects.select_related("created_by")[:EXPORT_JOBS_SHOWN])
    return render(
        request,
        "review/exports.html",
        {"rows": [_export_row(job) for job in jobs], "kinds": ExportKind.choices,
         **_role_flags(request)},
    )  # fmt: skip


def _export_row(job: ExportJob) -> dict[str, Any]:
    stalled = export_jobs.stalled(job)
    return {
        "job": job,
        "stalled": stalled,
        "can_resume": export_jobs.can_resume(job),
        "active": job.status in ("queued", "running") and not stalled,
        "downloadable": export_jobs.downloadable(job) is not None,
    }


@lead_only
@require_GET
def export_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ExportJob.objects.select_related("created_by"), pk=job_id)
    template = "review/_export_job.html" if request.htmx else "review/export_job.html"
    return render(request, template, {"row": _export_row(job), **_role_flags(request)})


@lead_only
@require_GET
def export_job_download(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ExportJob, pk=job_id)
    path = export_jobs.downloadable(job)
    if path is None:
        raise Http404("this export has no finished file")
    response = StreamingHttpResponse(_file_chunks(path), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{job.file_name}"'
    response["Content-Length"] = str(job.bytes)
    return response


def _file_chunks(path: Any, size: int = 1 << 16) -> Any:
    """The file in pieces, opened only once the response is read and closed when it ends or
    is dropped (a response never read holds no open file)."""
    with open(path, "rb") as handle:
        while piece := handle.read(size):
            yield piece


@lead_only
@require_POST
def export_job_resume(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ExportJob, pk=job_id)
    try:
        export_jobs.resume_export(job)
    except export_jobs.ExportError as exc:
        messages.error(request, str(exc))
    return redirect("review:export_job", job_id=job.pk)


@lead_only
@require_POST
def export_job_delete(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ExportJob, pk=job_id)
    export_jobs.delete_export(job)
    messages.success(request, f"Export {job_id} and its file deleted.")
    return redirect("review:export_jobs")


@labeller_only
@require_POST
def trajectory_labels_to_set(request: HttpRequest, trajectory_id: int) -> HttpResponse:
    """ "Add these step labels to set X": the trajectory with the labels its submitted reviews
    give each step (a lead's final label, else the majority, as the PRM export has them) as a
    step-labels case in a new version of the set."""
    from rewards.models import EvaluationSet
    from rewards.services.evaluation import (
        can_see_held_out,
        case_from_step_labels,
        evaluation_set_add_cases,
    )

    trajectory = get_object_or_404(Trajectory, pk=trajectory_id)
    back = reverse("review:trajectory", args=[trajectory.pk])
    sets = EvaluationSet.objects.all()
    if not can_see_held_out(request.user):
        sets = sets.filter(held_out=False)
    evaluation_set = sets.filter(slug=request.POST.get("set", "")[:100]).first()
    if evaluation_set is None:
        messages.error(request, "set: choose an evaluation set by its slug.")
        return redirect(back)
    rows = list(
        exports.prm_rows(
            Trajectory.objects.filter(pk=trajectory.pk), labels=review_selectors.counted_labels()
        )
    )
    if not rows:
        messages.error(request, "labels: this trajectory has no label of a submitted review yet.")
        return redirect(back)
    try:
        case = case_from_step_labels(trajectory, rows[0]["labels"])
        version = evaluation_set_add_cases(
            evaluation_set=evaluation_set,
            cases=[case],
            user=request.user,  # type: ignore[arg-type]
            note=f"step labels of trajectory {trajectory.pk}",
        )
    except ValidationError as exc:
        for name, errors in exc.message_dict.items():
            messages.error(request, f"{name}: {' '.join(errors)}")
        return redirect(back)
    messages.success(
        request,
        f"Step labels of trajectory {trajectory.pk} added to {evaluation_set.slug} "
        f"v{version.number}.",
    )
    return redirect(back)


@lead_only
@require_POST
def flag_review(request: HttpRequest, flag_id: int) -> HttpResponse:
    """Confirm or dismiss a flag from the trajectory viewer (htmx swaps the flag's badge)."""
    flag = get_object_or_404(Flag, pk=flag_id)
    status = request.POST.get("status", "")
    if status not in (FlagStatus.CONFIRMED, FlagStatus.DISMISSED, FlagStatus.OPEN):
        return HttpResponseBadRequest("status must be confirmed, dismissed or open")
    safety_services.flags_review(
        flag_ids=[flag.pk],
        status=status,
        user=request.user,  # type: ignore[arg-type]
        note=request.POST.get("note", "")[:2000],
    )
    flag.refresh_from_db()
    if request.htmx:
        return render(request, "review/_flag.html", {"flag": flag, "is_lead": True})
    return redirect(reverse("review:trajectory", args=[flag.trajectory_id]) + f"#flag-{flag.pk}")


@labeller_only
def trajectory_upload(request: HttpRequest) -> HttpResponse:
    """Import a file from the browser (drop or pick it): JSON, a JSON array or JSONL in any
    supported format, detected per record; the page lists each record's result and errors."""
    context: dict[str, Any] = {"formats": FORMATS, **_role_flags(request)}
    if request.method != "POST":
        return render(request, "review/import.html", context)
    upload = request.FILES.get("file")
    fmt = request.POST.get("source_format") or "auto"
    task_type = request.POST.get("task_type", "").strip() or None
    errors: dict[str, str] = {}
    if upload is None:
        errors["file"] = "choose or drop a file to import"
    elif upload.size is not None and upload.size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        errors["file"] = f"{upload.size:,} bytes is over the limit of " + (
            f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes"
        )
    if fmt != "auto" and fmt not in FORMATS:
        errors["source_format"] = f"unknown format {fmt!r}"
    if task_type is not None and not slug_re.fullmatch(task_type):
        errors["task_type"] = "letters, digits, - and _ only"
    text = ""
    if not errors and upload is not None:
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            errors["file"] = "the file is not UTF-8 text"
    if "\x00" in text:
        errors["file"] = "the file contains a NUL character"
    if errors:
        return render(request, "review/import.html", {**context, "errors": errors}, status=400)
    parsed = list(iter_records(text))
    limit = settings.REWARDHUB_LIMITS["MAX_BULK_RECORDS"]
    if len(parsed) > limit:
        errors["file"] = f"{len(parsed)} records is over the limit of {limit} per upload"
        return render(request, "review/import.html", {**context, "errors": errors}, status=400)
    results = []
    for record in parsed:
        if record.error is not None:
            results.append({"line": record.line, "status": "rejected", "errors": record.error})
            continue
        result = trajectory_import(
            record=record.record,
            fmt=fmt,
            task_type=task_type,
            imported_by=request.user,  # type: ignore[arg-type]
            line=record.line,
        )
        results.append(
            {
                "line": record.line,
                "status": result.status,
                "format": result.source_format,
                "trajectory": result.trajectory,
                "errors": "; ".join(f"{k}: {' '.join(v)}" for k, v in result.errors.items()),
                "warnings": result.warnings,
            }
        )
    counts = {s: sum(1 for r in results if r["status"] == s) for s in IMPORT_STATUSES}
    context.update(
        results=results,
        counts=counts,
        name=upload.name if upload is not None else "",
        imported_ids=[r["trajectory"].pk for r in results if r.get("trajectory") is not None],
    )
    return render(request, "review/import.html", context)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The start page: links to each area the user's roles open."""
    count, estimated = table_size(Trajectory)
    return render(
        request,
        "home.html",
        {
            "roles": sorted(user_roles(request.user)),
            "trajectory_count": count,
            "trajectory_count_estimated": estimated,
        },
    )
