"""Safety lead pages: flag queue and review, policy and rule editor, the "try a command" bench."""

from __future__ import annotations

import json
from functools import cache, partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.api_errors import errors_by_field
from core.decorators import role_required
from core.jsonlimits import loads_bounded
from core.params import parse_int
from core.roles import SAFETY_LEAD
from safety import selectors, services
from safety.analyzer import policy as analyzer_policy
from safety.models import (
    Flag,
    FlagStatus,
    Policy,
    PolicyRule,
    PolicyVersion,
    ScanFailure,
    ScanJob,
    Waiver,
)
from safety.tasks import enqueue_pending_scans, queue_scan_job

lead_only = role_required(SAFETY_LEAD)


def _flag_rows(flags: list[Flag]) -> list[dict[str, Any]]:
    return [
        {
            "flag": flag,
            "segments": selectors.highlight(
                flag.command, [(flag.span_start, flag.span_end, flag.rule_id)]
            ),
        }
        for flag in flags
    ]


def _field_messages(exc: ValidationError) -> str:
    """``field: message`` lines for a plain-text 400 (the field named, as the API does)."""
    return "\n".join(
        f"{field}: {message}"
        for field, messages in errors_by_field(exc, "non_field_errors").items()
        for message in messages
    )


@cache
def _rule_language() -> tuple[str, str]:
    """The rule language as the analyzer documents it: its README's section and the full
    reference (the policy module's docstring), read once per process."""
    readme = (Path(analyzer_policy.__file__).resolve().parent / "README.md").read_text("utf-8")
    section = readme.split("## Rule language", 1)[1].split("\n## ", 1)[0].strip()
    return section, (analyzer_policy.__doc__ or "").strip()


@lead_only
def rule_language(request: HttpRequest) -> HttpResponse:
    """The rule language, linked from the rule editor (the docs live beside the analyzer)."""
    summary, reference = _rule_language()
    return render(
        request, "safety/rule_language.html", {"summary": summary, "reference": reference}
    )


@lead_only
def flag_queue(request: HttpRequest) -> HttpResponse:
    filters = {k: v for k in selectors.FLAG_FILTERS if (v := request.GET.get(k, "").strip())}
    filters.setdefault("status", FlagStatus.OPEN)
    page = selectors.flag_page(filters=filters, cursor=request.GET.get("cursor", ""))
    context = {
        "rows": _flag_rows(page.rows),
        "page": page,
        "cursor": request.GET.get("cursor", ""),
        "filters": filters,
        "facets": selectors.flag_facets(),
        "counts": selectors.open_flag_counts(),
        "query": urlencode(filters),
        "pending_scans": selectors.pending_scans(limit=10),
    }
    template = "safety/_flag_table.html" if request.htmx else "safety/flag_queue.html"
    return render(request, template, context)


@lead_only
@require_POST
def flag_bulk_review(request: HttpRequest) -> HttpResponse:
    ids = [pk for raw in request.POST.getlist("flag") if (pk := parse_int(raw)) is not None]
    status = request.POST.get("status", "")
    if not ids:
        return HttpResponseBadRequest(
            "flag: select at least one flag (tick its box, or press x on a row) before "
            "confirming or dismissing."
        )
    try:
        services.flags_review(
            flag_ids=ids,
            status=status,
            user=request.user,  # type: ignore[arg-type]
            note=request.POST.get("note", "")[:2000],
            waive=request.POST.get("waive") == "on",
        )
    except ValidationError as exc:
        return HttpResponseBadRequest(_field_messages(exc))
    # The flash names what was done; ``at`` puts focus back on the row where the reviewer was.
    done = {"confirmed": "Confirmed", "dismissed": "Dismissed"}.get(status, "Reopened")
    messages.success(request, f"{done} {len(ids)} flag{pluralize(len(ids))}.")
    query = request.POST.get("query", "")
    at = parse_int(request.POST.get("at", ""))
    where = f"{query}&at={at}" if at is not None else query
    return redirect(f"{reverse('safety:flags')}?{where}")


@lead_only
@require_http_methods(["GET", "POST"])
def flag_detail(request: HttpRequest, flag_id: int) -> HttpResponse:
    flag = get_object_or_404(
        Flag.objects.select_related("trajectory", "step", "policy_version__policy", "reviewer"),
        pk=flag_id,
    )
    step = flag.step
    siblings = list(Flag.objects.filter(step=step).order_by("command_index", "span_start"))
    commands = []
    for index, entry in enumerate(step.commands or []):
        text = entry.get("command", "") if isinstance(entry, dict) else str(entry)
        spans = [
            (f.span_start, f.span_end, f.rule_id) for f in siblings if f.command_index == index
        ]
        commands.append({"index": index, "segments": selectors.highlight(text, spans)})
    if request.method == "POST":
        status = request.POST.get("status", "")
        try:
            services.flags_review(
                flag_ids=[flag.pk],
                status=status,
                user=request.user,  # type: ignore[arg-type]
                note=request.POST.get("note", "")[:2000],
                waive=request.POST.get("waive") == "on",
                waiver_match=request.POST.get("waiver_match", Waiver.Match.EXACT),
            )
        except ValidationError as exc:
            return HttpResponseBadRequest(_field_messages(exc))
        return redirect("safety:flag", flag_id=flag.pk)
    return render(
        request,
        "safety/flag_detail.html",
        {"flag": flag, "step": step, "commands": commands, "siblings": siblings},
    )


@lead_only
def policy_list(request: HttpRequest) -> HttpResponse:
    if not Policy.objects.exists():
        services.default_policy_version()
    return render(
        request,
        "safety/policy_list.html",
        {
            "policies": selectors.policies_with_versions(),
            "jobs": ScanJob.objects.filter(parent=None)[:10],  # a split rescan's parts are in it
        },
    )


def _rule_context(rule: PolicyRule, text: str | None = None, errors: Any = None) -> dict[str, Any]:
    return {
        "rule": rule,
        "text": text if text is not None else json.dumps(rule.definition, indent=2),
        "errors": errors or {},
    }


def _rule_facets(rules: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The values the index's menus offer: those the draft's rules use."""
    return {
        name: sorted({str(r["rule"].definition.get(name, "")) for r in rules} - {""})
        for name in ("category", "action", "severity")
    }


@lead_only
def policy_detail(request: HttpRequest, slug: str) -> HttpResponse:
    policy = get_object_or_404(Policy, slug=slug)
    rules = [_rule_context(rule) for rule in policy.rules.order_by("position")]
    return render(
        request,
        "safety/policy_detail.html",
        {
            "policy": policy,
            "rules": rules,
            "rule_facets": _rule_facets(rules),
            "versions": policy.versions.order_by("-number"),
            "new_rule": {"text": "", "errors": {}},
        },
    )


def _parse_definition(text: str) -> tuple[Any, dict[str, list[str]]]:
    try:
        return loads_bounded(text, max_depth=settings.REWARDHUB_LIMITS["MAX_JSON_DEPTH"]), {}
    except json.JSONDecodeError as exc:
        return None, {
            "definition": [f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
        }
    except ValueError as exc:  # nested too deeply (JsonTooDeep)
        return None, {"definition": [str(exc)]}


@lead_only
@require_POST
def rule_save(request: HttpRequest, slug: str, rule_pk: int | None = None) -> HttpResponse:
    """Save one rule (htmx swaps the rule's card, errors inline); new rules append a card."""
    policy = get_object_or_404(Policy, slug=slug)
    rule = get_object_or_404(PolicyRule, pk=rule_pk, policy=policy) if rule_pk else None
    text = request.POST.get("definition", "")
    definition, errors = _parse_definition(text)
    saved: PolicyRule | None = None
    if not errors:
        try:
            saved = services.policy_rule_save(
                policy=policy,
                definition=definition,
                user=request.user,  # type: ignore[arg-type]
                rule=rule,
                enabled=request.POST.get("enabled", "on") == "on",
            )
        except ValidationError as exc:
            errors = errors_by_field(exc, "definition")
    if rule is None and saved is None:
        status = 400 if errors else 200
        return render(
            request,
            "safety/_new_rule.html",
            {"policy": policy, "new_rule": {"text": text, "errors": errors}},
            status=status,
        )
    target = saved or rule
    assert target is not None
    context = _rule_context(target, None if saved else text, errors)
    context["policy"] = policy
    context["saved"] = saved is not None
    template = "safety/_rule_card.html"
    if rule is None:
        # A new rule: answer with a fresh card list entry and an empty new-rule form.
        context["new_rule"] = {"text": "", "errors": {}}
        template = "safety/_rule_created.html"
    return render(request, template, context, status=400 if errors else 200)


@lead_only
@require_POST
def policy_publish(request: HttpRequest, slug: str) -> HttpResponse:
    policy = get_object_or_404(Policy, slug=slug)
    try:
        services.policy_publish(
            policy=policy,
            user=request.user,  # type: ignore[arg-type]
            note=request.POST.get("note", ""),
            require_change=True,
        )
    except ValidationError as exc:
        raised = getattr(exc, "error_dict", {}).get("policy", [])
        unchanged = [e for e in raised if e.code == "unchanged"]
        if unchanged:  # not a mistake: said on the page, as a publish is
            messages.info(request, unchanged[0].message)
            return redirect("safety:policy", slug=policy.slug)
        errors = errors_by_field(exc, "policy")
        rules = [_rule_context(rule) for rule in policy.rules.order_by("position")]
        return render(
            request,
            "safety/policy_detail.html",
            {
                "policy": policy,
                "rules": rules,
                "rule_facets": _rule_facets(rules),
                "versions": policy.versions.order_by("-number"),
                "new_rule": {"text": "", "errors": {}},
                "publish_errors": errors,
            },
            status=400,
        )
    return redirect("safety:policy", slug=policy.slug)


@lead_only
@require_POST
def rescan(request: HttpRequest, version_pk: int) -> HttpResponse:
    version = get_object_or_404(PolicyVersion, pk=version_pk)
    job = services.scan_job_create(
        policy_version=version,
        user=request.user,  # type: ignore[arg-type]
        task_type=request.POST.get("task_type", "")[:100],
    )
    transaction.on_commit(partial(queue_scan_job, job.pk))  # fails the job if the broker is down
    return redirect("safety:scan_job", job_id=job.pk)


@lead_only
def scan_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ScanJob.objects.select_related("policy_version__policy"), pk=job_id)
    template = "safety/_scan_progress.html" if request.htmx else "safety/scan_job.html"
    failures = (
        ScanFailure.objects.filter(Q(job=job) | Q(job__parent=job)).order_by("trajectory_id")[:50]
        if job.failed
        else []
    )
    return render(request, template, {"job": job, "failures": failures})


@lead_only
@require_POST
def scan_job_resume(request: HttpRequest, job_id: int) -> HttpResponse:
    """Resume a failed or stalled rescan where it stopped, retrying its failed trajectories."""
    job = get_object_or_404(ScanJob, pk=job_id)
    try:
        services.scan_job_resume(job=job)
    except ValidationError as exc:
        return HttpResponseBadRequest("; ".join(exc.messages))
    transaction.on_commit(partial(queue_scan_job, job.pk, retry_failed=True))
    return redirect("safety:scan_job", job_id=job.pk)


@lead_only
@require_POST
def pending_scans_queue(request: HttpRequest) -> HttpResponse:
    """Queue every pending (failed or never queued) import scan again, now."""
    transaction.on_commit(partial(enqueue_pending_scans, limit=10_000, older_than=0.0))
    return redirect("safety:flags")


# Commands one "try" analyses; the page says when it left some out.
BENCH_MAX_COMMANDS = 100


def _analysed(analyzer: Any, commands: list[str]) -> list[dict[str, Any]]:
    """Each command's verdict, findings and marked spans, as the bench shows them."""
    results = []
    for command in commands:
        analysis = analyzer.analyze(command)
        spans = [(f.span[0], f.span[1], f.rule) for f in analysis.findings]
        results.append(
            {
                "command": command,
                "verdict": analysis.verdict,
                "findings": analysis.findings,
                "segments": selectors.highlight(command, spans),
            }
        )
    return results


@lead_only
@require_POST
def policy_try(request: HttpRequest, slug: str) -> HttpResponse:
    """Try a few commands against the unpublished draft (parsed, never executed)."""
    policy = get_object_or_404(Policy, slug=slug)
    lines = [c for c in request.POST.get("commands", "").splitlines() if c.strip()]
    commands = lines[:BENCH_MAX_COMMANDS]
    errors: dict[str, list[str]] = {}
    results: list[dict[str, Any]] = []
    if not commands:
        errors["commands"] = ["Enter at least one command to try against the draft."]
    else:
        try:
            results = _analysed(services.draft_analyzer(policy), commands)
        except ValidationError as exc:
            errors = errors_by_field(exc, "policy")
    context = {"results": results, "errors": errors, "draft_errors": errors}
    if len(lines) > len(commands):
        context["truncated"] = (
            f"Only the first {len(commands)} of {len(lines)} commands were analysed."
        )
    return render(request, "safety/_draft_try.html", context, status=400 if errors else 200)


@lead_only
@require_http_methods(["GET", "POST"])
def bench(request: HttpRequest) -> HttpResponse:
    """Try commands against a policy version and see the spans behind each finding."""
    versions = PolicyVersion.objects.select_related("policy").order_by("policy__slug", "-number")
    if not versions.exists():
        services.default_policy_version()
    context: dict[str, Any] = {"versions": versions, "results": None, "errors": {}}
    if request.method == "POST":
        text = request.POST.get("commands", "")
        workspace = request.POST.get("workspace", "").strip()
        version = versions.filter(pk=parse_int(request.POST.get("version", "")) or 0).first()
        if version is None:
            version = services.default_policy_version()
        lines = [line for line in text.splitlines() if line.strip()]
        commands = lines[:BENCH_MAX_COMMANDS]
        if len(lines) > len(commands):
            context["truncated"] = (
                f"Only the first {len(commands)} of {len(lines)} commands were analysed."
            )
        if not commands:
            context["errors"]["commands"] = ["Enter at least one command."]
        else:
            analyzer = services.analyzer_for(version, [workspace] if workspace else None)
            context["results"] = _analysed(analyzer, commands)
        context.update(
            {"text": text, "workspace": workspace, "version": version.pk if version else None}
        )
        if request.htmx:
            return render(request, "safety/_bench_results.html", context)
    return render(request, "safety/bench.html", context)
