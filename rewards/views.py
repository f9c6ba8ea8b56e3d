"""Expert pages for the reward domain: task types and behaviours, reward models with their
versions (compile, activate, roll back), a diff between versions, "score a trajectory", and the
learned step classifiers (metrics, reliability diagram, training from the browser).

Views stay thin: forms validate (with the model's and the spec's own checks), services write.
Experts and admins write; safety leads read and use the score page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Prefetch, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.models import Trajectory
from core.api_errors import errors_by_field
from core.canonical import TrajectoryError, extract_steps, normalize_trajectory
from core.decorators import role_required
from core.params import parse_int
from core.roles import EXPERT, SAFETY_LEAD, has_role
from rewards import selectors
from rewards.evaluation import line_messages
from rewards.forms import (
    BehaviourForm,
    CompileForm,
    EvaluationImportForm,
    EvaluationSetForm,
    NewRewardModelForm,
    RewardModelForm,
    ScoreForm,
    TaskTypeForm,
    TrainForm,
)
from rewards.models import (
    LearnedTrainingJob,
    RewardModel,
    RewardModelVersion,
    TaskType,
    TrustedBehaviour,
)
from rewards.services import learned_training
from rewards.services import rewards as reward_services
from rewards.services import scoring as scoring_services
from rewards.services.evaluation import ActivationRefused
from safety.selectors import Segment, highlight

readers = role_required(EXPERT, SAFETY_LEAD)
editors = role_required(EXPERT)
# Safety leads change a reward model's inputs too (the policy), so they may compile and activate.
compilers = role_required(EXPERT, SAFETY_LEAD)


def _can_edit(request: HttpRequest) -> bool:
    return has_role(request.user, EXPERT)


def _can_compile(request: HttpRequest) -> bool:
    return has_role(request.user, EXPERT, SAFETY_LEAD)


def _django_errors(exc: ValidationError) -> dict[str, list[str]]:
    return errors_by_field(exc, "__all__")


# --- Task types and behaviours -----------------------------------------------------------------


@readers
def task_type_list(request: HttpRequest) -> HttpResponse:
    task_types = TaskType.objects.select_related("policy").annotate(
        behaviour_count=Count("behaviours", filter=Q(behaviours__active=True), distinct=True),
        reward_model_count=Count("reward_models", distinct=True),
    )
    return render(
        request,
        "rewards/task_type_list.html",
        {"task_types": task_types, "can_edit": _can_edit(request)},
    )


@editors
@require_http_methods(["GET", "POST"])
def task_type_create(request: HttpRequest) -> HttpResponse:
    form = TaskTypeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        task_type = form.save()
        messages.success(request, f"Task type {task_type.slug} created.")
        return redirect("rewards:task_type", slug=task_type.slug)
    status = 400 if form.errors else 200
    return render(request, "rewards/task_type_form.html", {"form": form}, status=status)


def _behaviour_cards(task_type: TaskType) -> list[dict[str, Any]]:
    return [
        {"behaviour": b, "form": BehaviourForm(instance=b, task_type=task_type), "saved": False}
        for b in task_type.behaviours.order_by("-active", "slug")
    ]


@readers
@require_http_methods(["GET", "POST"])
def task_type_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The task type's form (read-only for safety leads) and its behaviours, editable inline."""
    task_type = get_object_or_404(TaskType.objects.select_related("policy"), slug=slug)
    can_edit = _can_edit(request)
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied
        form = TaskTypeForm(request.POST, instance=task_type)
        if form.is_valid():
            form.save()
            messages.success(request, "Task type saved. Compile its reward models to use it.")
            return redirect("rewards:task_type", slug=task_type.slug)
        # The form mutated its instance; the heading and behaviours show the stored row.
        task_type = TaskType.objects.select_related("policy").get(pk=task_type.pk)
    else:
        form = TaskTypeForm(instance=task_type)
    if not can_edit:
        for f in form.fields.values():
            f.disabled = True
    context = {
        "task_type": task_type,
        "form": form,
        "can_edit": can_edit,
        "cards": _behaviour_cards(task_type),
        "new_behaviour": BehaviourForm(task_type=task_type),
        "reward_models": task_type.reward_models.select_related("active_version"),
    }
    return render(
        request, "rewards/task_type_detail.html", context, status=400 if form.errors else 200
    )


@editors
@require_POST
def behaviour_save(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    """Save one behaviour; htmx swaps its card (errors inline, 400); a new one appends a card."""
    task_type = get_object_or_404(TaskType, slug=slug)
    behaviour = get_object_or_404(TrustedBehaviour, pk=pk, task_type=task_type) if pk else None
    form = BehaviourForm(request.POST, instance=behaviour, task_type=task_type)
    if behaviour is not None:
        form.instance.active = request.POST.get("active", "on") == "on"
    saved = form.is_valid()
    if saved:
        behaviour_saved = form.save()
        if not request.htmx:
            messages.success(request, f"Behaviour {behaviour_saved.slug} saved.")
            return redirect("rewards:task_type", slug=task_type.slug)
        card = {
            "behaviour": behaviour_saved,
            "form": BehaviourForm(instance=behaviour_saved, task_type=task_type),
            "saved": True,
        }
    else:
        if behaviour is not None:
            behaviour.refresh_from_db()  # the card's title shows the stored state
        card = {"behaviour": behaviour, "form": form, "saved": False}
    context: dict[str, Any] = {"task_type": task_type, "card": card, "can_edit": True}
    status = 200 if saved else 400
    if behaviour is not None:
        return render(request, "rewards/_behaviour_card.html", context, status=status)
    if saved:
        context["new_behaviour"] = BehaviourForm(task_type=task_type)
        return render(request, "rewards/_behaviour_created.html", context)
    context["new_behaviour"] = form
    return render(request, "rewards/_new_behaviour.html", context, status=status)


# --- Reward models and versions ----------------------------------------------------------------


@readers
def reward_model_list(request: HttpRequest) -> HttpResponse:
    reward_models = RewardModel.objects.select_related("task_type", "active_version").annotate(
        version_count=Count("versions")
    )
    return render(
        request,
        "rewards/reward_model_list.html",
        {"reward_models": reward_models, "can_edit": _can_edit(request)},
    )


@editors
@require_http_methods(["GET", "POST"])
def reward_model_create(request: HttpRequest) -> HttpResponse:
    """A new reward model for a task type (``?task_type=slug`` preselects it); compiled on its
    own page once its inputs are set."""
    initial = {"task_type": request.GET.get("task_type", "")[:100]}
    form = NewRewardModelForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        reward_model = form.save()
        messages.success(
            request, f"Reward model {reward_model.slug} created: set its inputs, then compile."
        )
        return redirect("rewards:reward_model", slug=reward_model.slug)
    status = 400 if form.errors else 200
    return render(request, "rewards/reward_model_form.html", {"form": form}, status=status)


def _versions(reward_model: RewardModel) -> list[RewardModelVersion]:
    return list(
        reward_model.versions.select_related("policy_version__policy", "created_by").order_by(
            "-number"
        )
    )


def _detail(
    request: HttpRequest,
    reward_model: RewardModel,
    *,
    form: RewardModelForm | None = None,
    compile_form: CompileForm | None = None,
    action_errors: dict[str, list[str]] | None = None,
    refused: list[dict[str, Any]] | None = None,
    status: int = 200,
) -> HttpResponse:
    can_edit = _can_edit(request)
    form = form or RewardModelForm(instance=reward_model)
    if not can_edit:
        for f in form.fields.values():
            f.disabled = True
    versions = _versions(reward_model)
    return render(
        request,
        "rewards/reward_model_detail.html",
        {
            "reward_model": reward_model,
            "form": form,
            "compile_form": compile_form or CompileForm(),
            "versions": versions,
            "can_edit": can_edit,
            "can_compile": _can_compile(request),
            "action_errors": action_errors or {},
            "refused": refused or [],
            "can_roll_back": bool(
                reward_model.active_version_id
                and any(v.number < reward_model.active_version.number for v in versions)
            ),
        },
        status=status,
    )


def _reward_model(slug: str) -> RewardModel:
    return get_object_or_404(
        RewardModel.objects.select_related("task_type", "active_version"), slug=slug
    )


@readers
@require_http_methods(["GET", "POST"])
def reward_model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """Inputs (editable by experts), the versions table and the workflow buttons."""
    reward_model = _reward_model(slug)
    if request.method == "POST":
        if not _can_edit(request):
            raise PermissionDenied
        form = RewardModelForm(request.POST, instance=reward_model)
        if form.is_valid():
            form.save()
            messages.success(request, "Inputs saved. Compile to freeze them into a version.")
            return redirect("rewards:reward_model", slug=slug)
        return _detail(request, _reward_model(slug), form=form, status=400)
    return _detail(request, reward_model)


@compilers
@require_POST
def reward_model_compile(request: HttpRequest, slug: str) -> HttpResponse:
    reward_model = _reward_model(slug)
    form = CompileForm(request.POST)
    if not form.is_valid():
        return _detail(request, reward_model, compile_form=form, status=400)
    try:
        result = reward_services.reward_model_compile(
            reward_model=reward_model,
            user=request.user,  # type: ignore[arg-type]
            note=form.cleaned_data["note"],
            activate=form.cleaned_data["activate"],
        )
    except ActivationRefused as exc:  # compiled and kept, not activated
        return _refused(request, _reward_model(slug), exc)
    except ValidationError as exc:
        return _detail(
            request, reward_model, compile_form=form, action_errors=_django_errors(exc), status=400
        )
    if result.created:
        messages.success(request, f"Compiled version {result.version.number}.")
    else:
        messages.info(
            request,
            f"Nothing changed since version {result.version.number}; no new version compiled.",
        )
    return redirect("rewards:reward_model", slug=slug)


def _refused(
    request: HttpRequest, reward_model: RewardModel, exc: ActivationRefused
) -> HttpResponse:
    """The reward model's page with the refusal and each newly missed case shown and linked."""
    from rewards.services.evaluation import can_see_held_out

    refused = selectors.refused_cases(
        regressions=exc.regressions, can_see_held_out=can_see_held_out(request.user)
    )
    return _detail(
        request, reward_model, action_errors=_django_errors(exc), refused=refused, status=400
    )


@compilers
@require_POST
def reward_model_activate(request: HttpRequest, slug: str) -> HttpResponse:
    reward_model = _reward_model(slug)
    number = request.POST.get("version", "")
    valid = number.isascii() and number.isdigit() and len(number) < 10
    version = reward_model.versions.filter(number=int(number) if valid else 0).first()
    if version is None:
        return _detail(
            request, reward_model, action_errors={"version": ["Unknown version."]}, status=400
        )
    try:
        reward_services.reward_model_activate(
            reward_model=reward_model,
            version=version,
            user=request.user,  # type: ignore[arg-type]
            override_reason=request.POST.get("override_reason", "")[:2000],
        )
    except ActivationRefused as exc:
        return _refused(request, reward_model, exc)
    except ValidationError as exc:
        return _detail(request, reward_model, action_errors=_django_errors(exc), status=400)
    messages.success(request, f"Version {version.number} is active.")
    return redirect("rewards:reward_model", slug=slug)


@compilers
@require_POST
def reward_model_rollback(request: HttpRequest, slug: str) -> HttpResponse:
    reward_model = _reward_model(slug)
    try:
        reward_services.reward_model_rollback(reward_model=reward_model)
    except ValidationError as exc:
        return _detail(request, reward_model, action_errors=_django_errors(exc), status=400)
    messages.success(request, f"Rolled back to version {reward_model.active_version.number}.")  # type: ignore[union-attr]
    return redirect("rewards:reward_model", slug=slug)


def _as_json(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


@readers
def reward_model_diff(request: HttpRequest, slug: str) -> HttpResponse:
    """Changes between versions ``a`` and ``b`` (defaults: the two newest)."""
    reward_model = _reward_model(slug)
    versions = _versions(reward_model)
    by_number = {v.number: v for v in versions}

    def pick(name: str, default: int | None) -> RewardModelVersion | None:
        raw = request.GET.get(name, "")
        if raw:
            number = parse_int(raw)
            return by_number.get(number) if number is not None else None
        return by_number.get(default or 0)

    newest = versions[0].number if versions else None
    before = pick("a", versions[1].number if len(versions) > 1 else newest)
    after = pick("b", newest)
    context: dict[str, Any] = {
        "reward_model": reward_model,
        "versions": versions,
        "a": before,
        "b": after,
        "changes": None,
    }
    status = 200
    if before is None or after is None:
        context["error"] = "Choose two existing versions."
        status = 400 if ("a" in request.GET or "b" in request.GET) else 200
    else:
        changes = reward_services.reward_model_diff(before=before, after=after)
        context["changes"] = [
            {
                "path": c.path,
                "kind": c.kind,
                "before": "" if c.kind == "added" else _as_json(c.before),
                "after": "" if c.kind == "removed" else _as_json(c.after),
            }
            for c in changes
        ]
        context["policy_changed"] = before.policy_version_id != after.policy_version_id or (
            before.spec["safety"]["policy"] != after.spec["safety"]["policy"]
        )
    return render(request, "rewards/reward_model_diff.html", context, status=status)


# --- Score a trajectory ------------------------------------------------------------------------


@dataclass
class CommandRow:
    text: str
    segments: list[Segment]


@dataclass
class StepRow:
    step: int
    message_index: int
    text: str
    commands: list[CommandRow]
    reward: float
    safety: float
    behaviour_amount: float
    findings: list[dict[str, Any]]
    behaviours: list[str] = field(default_factory=list)


def _reward_model_choices() -> list[tuple[str, str]]:
    """Every reward model (its active version) and every pinned version ``slug@N``."""
    choices: list[tuple[str, str]] = []
    rows = RewardModel.objects.select_related("active_version").prefetch_related(
        Prefetch("versions", queryset=RewardModelVersion.objects.order_by("-number"))
    )
    for rm in rows:
        if rm.active_version_id:
            choices.append((rm.slug, f"{rm.slug} (active: v{rm.active_version.number})"))  # type: ignore[union-attr]
        choices.extend(
            (f"{rm.slug}@{v.number}", f"{rm.slug}@{v.number}") for v in rm.versions.all()
        )
    return choices


def _score(version: scoring_services.ResolvedVersion, trajectory: Any) -> dict[str, Any]:
    """Score without recording: trying a reward model is not a rollout, so it must not enter the
    scoring-record stream or (when flagged) the review queue. Raises ``TrajectoryError``."""
    limit = settings.REWARDHUB_LIMITS["MAX_MESSAGES"]
    messages_ = trajectory.get("messages") if isinstance(trajectory, dict) else None
    if isinstance(messages_, list) and len(messages_) > limit:
        raise TrajectoryError(
            {"messages": [f"{len(messages_)} messages is over the limit of {limit}"]}
        )
    scorer = scoring_services.scorer_for(version)
    canonical = normalize_trajectory(trajectory)
    result = scorer.score_canonical(canonical)
    steps = extract_steps(
        canonical, shell_tools=scorer.shell_tools, command_keys=scorer.command_keys
    )
    rows = []
    for data, scored in zip(steps, result.steps, strict=True):
        commands = []
        for cmd in data.commands:
            spans = [
                (f["span"][0], f["span"][1], f["rule"])
                for f in scored.findings
                if f["command"] == cmd.command
            ]
            commands.append(CommandRow(cmd.command, highlight(cmd.command, spans)))
        rows.append(
            StepRow(
                step=scored.step,
                message_index=scored.message_index,
                text=data.text,
                commands=commands,
                reward=scored.value,
                safety=scored.safety_micro / 1_000_000,
                behaviour_amount=scored.behaviors_micro / 1_000_000,
                findings=[dict(f) for f in scored.findings],
                behaviours=list(scored.behaviors),
            )
        )
    return {
        "version": version,
        "reward": result.reward,
        "outcome_reward": result.outcome_reward,
        "process_reward": result.process_reward,
        "gated": result.gated,
        "breakdown": result.breakdown,
        "steps": rows,
    }


@readers
@require_http_methods(["GET", "POST"])
def score(request: HttpRequest) -> HttpResponse:
    """Score a pasted C1 trajectory or a stored one; htmx swaps in the step-by-step breakdown."""
    choices = _reward_model_choices()
    initial: dict[str, Any] = {"reward_model": choices[0][0]} if choices else {}
    if (trajectory_id := parse_int(request.GET.get("trajectory_id", ""))) is not None:
        initial["trajectory_id"] = trajectory_id
    form = ScoreForm(request.POST or None, initial=initial)
    context: dict[str, Any] = {"form": form, "choices": choices, "result": None, "errors": {}}
    status = 200
    if request.method == "POST":
        errors: dict[str, list[str]] = {}
        if form.is_valid():
            trajectory: Any = form.cleaned_data.get("parsed")
            if trajectory is None:
                trajectory = (
                    Trajectory.objects.filter(pk=form.cleaned_data["trajectory_id"])
                    .values_list("canonical", flat=True)
                    .first()
                )
                if trajectory is None:
                    errors["trajectory_id"] = ["No stored trajectory has this id."]
            if not errors:
                try:
                    version = scoring_services.resolve_reward_model(
                        form.cleaned_data["reward_model"]
                    )
                except scoring_services.UnknownRewardModel as exc:
                    errors["reward_model"] = [str(exc)]
                else:
                    try:
                        context["result"] = _score(version, trajectory)
                    except TrajectoryError as exc:
                        errors = {
                            f"trajectory.{k}" if k != "non_field_errors" else "trajectory": v
                            for k, v in exc.errors.items()
                        }
        else:
            errors = {k: list(v) for k, v in form.errors.items()}
        context["errors"] = errors
        status = 400 if errors else 200
        if request.htmx:
            return render(request, "rewards/_score_result.html", context, status=status)
    return render(request, "rewards/score.html", context, status=status)


# --- Learned components ------------------------------------------------------------------------


def _learned_page(
    request: HttpRequest,
    task_type: TaskType,
    *,
    train_form: TrainForm | None = None,
    train_errors: dict[str, list[str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "rewards/learned_list.html",
        {
            "task_type": task_type,
            "rows": selectors.learned_components(task_type=task_type),
            "jobs": learned_training.training_jobs(task_type=task_type),
            "train_form": train_form or TrainForm(),
            "train_errors": train_errors or {},
            "can_train": _can_edit(request),
        },
        status=status,
    )


@readers
@require_GET
def learned_overview(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "rewards/learned_overview.html",
        {"rows": selectors.learned_overview(), "can_train": _can_edit(request)},
    )


@readers
@require_GET
def learned_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The task type's trained step classifiers with their metrics, its training jobs, and (for
    experts and admins) the form that starts a training run."""
    return _learned_page(request, get_object_or_404(TaskType, slug=slug))


@editors
@require_POST
def learned_train(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue a training run on the `learn` queue (experts and admins only)."""
    task_type = get_object_or_404(TaskType, slug=slug)
    form = TrainForm(request.POST)
    if not form.is_valid():
        return _learned_page(request, task_type, train_form=form, status=400)
    try:
        job, created = learned_training.learned_training_request(
            task_type=task_type,
            user=request.user,  # type: ignore[arg-type]
            seed=form.cleaned_data["seed"] or 0,
        )
    except ValidationError as exc:
        return _learned_page(
            request, task_type, train_form=form, train_errors=_django_errors(exc), status=400
        )
    if created:
        messages.success(request, f"Training #{job.pk} queued on the learn queue.")
    else:
        messages.info(request, f"Training #{job.pk} is already {job.state}; not queued again.")
    return redirect(f"{reverse('rewards:learned', args=[slug])}#learned-job-{job.pk}")


@readers
@require_GET
def learned_job(request: HttpRequest, job_id: int) -> HttpResponse:
    """A training job's state (the list page polls it with htmx while it is queued or running)."""
    job = get_object_or_404(
        LearnedTrainingJob.objects.select_related("task_type", "component", "requested_by"),
        pk=job_id,
    )
    if request.htmx:
        return render(request, "rewards/_learned_job.html", {"job": job})
    return redirect(f"{reverse('rewards:learned', args=[job.task_type.slug])}#learned-job-{job.pk}")


@readers
@require_GET
def learned_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One component: metrics overall and per behaviour, the reliability diagram (from the bins
    stored when it was trained), its artifact and label snapshot."""
    row = selectors.learned_component(pk=pk)
    if row is None:
        raise Http404("No such learned component.")
    metrics = row.component.metrics if isinstance(row.component.metrics, dict) else {}
    return render(
        request,
        "rewards/learned_detail.html",
        {
            "row": row,
            "component": row.component,
            "plot": selectors.reliability_plot(metrics.get("reliability")),
            "bins": [b for b in metrics.get("reliability") or [] if isinstance(b, dict)],
        },
    )


# --- evaluation: the version's results beside the active version's, sets, "add to set" -------


@readers
@require_GET
def version_evaluation(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """A version's evaluation on the attached sets beside the active version's, case by case,
    with its runs' progress and the activation form (override reason for experts)."""
    from rewards.models import EvaluationRun
    from rewards.services.evaluation import can_see_held_out

    reward_model = _reward_model(slug)
    version = get_object_or_404(reward_model.versions, number=number)
    baseline = reward_model.active_version
    sets = selectors.evaluation_page(
        version=version, baseline=baseline, can_see_held_out=can_see_held_out(request.user)
    )
    runs = list(EvaluationRun.objects.filter(version=version).order_by("-id")[:5])
    return render(
        request,
        "rewards/version_evaluation.html",
        {
            "reward_model": reward_model,
            "version": version,
            "baseline": baseline,
            "sets": sets,
            "runs": runs,
            "can_compile": _can_compile(request),
            "can_override": _can_edit(request) or has_role(request.user, "admin"),
        },
    )


@readers
@require_GET
def draft_evaluation(request: HttpRequest, slug: str) -> HttpResponse:
    """The reward model's current inputs with the *draft* policy (rules as edited, not yet
    published) on the attached sets beside the active version: what publishing and compiling
    would change, before either happens. Nothing is stored for the draft."""
    from rewards.services.evaluation import can_see_held_out, draft_comparison

    reward_model = _reward_model(slug)
    see_held_out = can_see_held_out(request.user)
    try:
        rows = draft_comparison(reward_model=reward_model)
    except ValidationError as exc:
        return render(
            request,
            "rewards/draft_evaluation.html",
            {"reward_model": reward_model, "sets": [], "errors": _django_errors(exc)},
            status=400,
        )
    sets = []
    for row in rows:
        set_version = row["set_version"]
        hidden = set_version.evaluation_set.held_out and not see_held_out
        keys = row["newly_caught"] + row["newly_missed"]
        names = selectors.held_out_names(set_version=set_version, keys=keys) if hidden else keys
        named = dict(zip(keys, names, strict=True))
        cases = selectors.cases_by_key(set_version=set_version, keys=keys)
        sets.append(
            {
                "set_version": set_version,
                "hidden": hidden,
                "metrics": row["metrics"],
                "baseline": row.get("baseline"),
                "newly_caught": [(named[k], cases.get(k)) for k in row["newly_caught"]],
                "newly_missed": [(named[k], cases.get(k)) for k in row["newly_missed"]],
            }
        )
    return render(
        request,
        "rewards/draft_evaluation.html",
        {"reward_model": reward_model, "baseline": reward_model.active_version, "sets": sets},
    )


@readers
@require_GET
def evaluation_run(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run's progress row, polled by the version page; when the run has finished the page
    reloads itself (``HX-Refresh``) to show the results."""
    from rewards.models import EvaluationRun

    run = get_object_or_404(EvaluationRun.objects.select_related("version"), pk=run_id)
    response = render(request, "rewards/_evaluation_run.html", {"run": run})
    if run.state in (EvaluationRun.State.SUCCEEDED, EvaluationRun.State.FAILED):
        response["HX-Refresh"] = "true"
    return response


@compilers
@require_POST
def version_evaluate(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Queue an evaluation of the version (and of the active version, to compare) on the
    attached sets."""
    from rewards.services.evaluation import evaluation_run_request

    reward_model = _reward_model(slug)
    version = get_object_or_404(reward_model.versions, number=number)
    user = request.user
    run = evaluation_run_request(version=version, user=user, trigger="manual")  # type: ignore[arg-type]
    active = reward_model.active_version
    if active is not None and active.pk != version.pk:
        evaluation_run_request(version=active, user=user, trigger="baseline")  # type: ignore[arg-type]
    if run is None:
        messages.info(request, "No evaluation set is attached to this reward model.")
    else:
        messages.success(request, f"Evaluation #{run.pk} queued.")
    return redirect("rewards:version_evaluation", slug=slug, number=number)


@compilers
@require_POST
def flag_to_set(request: HttpRequest, flag_id: int) -> HttpResponse:
    """ "Add this flag to set X" from the review flow: a confirmed flag becomes an unsafe
    labelled command, a dismissed one a safe one, in a new version of the set."""
    from rewards.services.evaluation import case_from_flag, evaluation_set_add_cases
    from safety.models import Flag

    flag = get_object_or_404(Flag, pk=flag_id)
    evaluation_set = _set_for_post(request)
    back = _back(request)
    if evaluation_set is None:
        messages.error(request, "set: choose an evaluation set.")
        return redirect(back)
    try:
        version = evaluation_set_add_cases(
            evaluation_set=evaluation_set,
            cases=[case_from_flag(flag)],
            user=request.user,  # type: ignore[arg-type]
            note=f"flag {flag.pk}",
        )
    except ValidationError as exc:
        for field_name, msgs in _django_errors(exc).items():
            messages.error(request, f"{field_name}: {' '.join(msgs)}")
        return redirect(back)
    messages.success(request, f"Flag {flag.pk} added to {evaluation_set.slug} v{version.number}.")
    return redirect(back)


def _set_for_post(request: HttpRequest) -> Any:
    from rewards.models import EvaluationSet
    from rewards.services.evaluation import can_see_held_out

    sets = EvaluationSet.objects.all()
    if not can_see_held_out(request.user):
        sets = sets.filter(held_out=False)
    return sets.filter(slug=request.POST.get("set", "")[:100]).first()


def _back(request: HttpRequest) -> str:
    back = request.POST.get("next", "")
    if not back.startswith("/") or back.startswith("//"):
        back = reverse("rewards:evaluation_sets")
    return back


@compilers
@require_POST
def trajectory_pair_to_set(request: HttpRequest, trajectory_id: int) -> HttpResponse:
    """ "Add this pair to set X" from the trajectory viewer: this trajectory and another one,
    in the order the reviewer says, as a pair case in a new version of the set."""
    from rewards.services.evaluation import case_from_trajectories, evaluation_set_add_cases

    trajectory = get_object_or_404(Trajectory, pk=trajectory_id)
    back = _back(request)
    evaluation_set = _set_for_post(request)
    other_id = parse_int(request.POST.get("other", ""))
    other = Trajectory.objects.filter(pk=other_id).first() if other_id else None
    errors = []
    if evaluation_set is None:
        errors.append("set: choose an evaluation set.")
    if other is None or other.pk == trajectory.pk:
        errors.append("other: name another stored trajectory by its number.")
    tier = request.POST.get("tier", "same-outcome")
    position = request.POST.get("position", "better")
    if position not in ("better", "worse"):
        errors.append("position: better or worse.")
    if errors:
        for error in errors:
            messages.error(request, error)
        return redirect(back)
    better, worse = (trajectory, other) if position == "better" else (other, trajectory)
    try:
        case = case_from_trajectories(better, worse, tier)
        version = evaluation_set_add_cases(
            evaluation_set=evaluation_set,
            cases=[case],
            user=request.user,  # type: ignore[arg-type]
            note=f"pair {better.pk} > {worse.pk}",
        )
    except ValidationError as exc:
        for name, msgs in _django_errors(exc).items():
            messages.error(request, f"{name}: {' '.join(msgs)}")
        return redirect(back)
    messages.success(
        request, f"Pair {better.pk} > {worse.pk} added to {evaluation_set.slug} v{version.number}."
    )
    return redirect(back)


@readers
@require_http_methods(["GET", "POST"])
def evaluation_set_list(request: HttpRequest) -> HttpResponse:
    """Every set this reader may see, and a form to start a new one (experts and safety
    leads; held out only for experts and admins)."""
    from rewards.models import EvaluationSet
    from rewards.services.evaluation import can_see_held_out, evaluation_set_create

    form = EvaluationSetForm()
    status = 200
    see_held_out = can_see_held_out(request.user)
    if request.method == "POST":
        if not _can_compile(request):
            raise PermissionDenied
        form = EvaluationSetForm(request.POST)
        if form.is_valid():
            try:
                created = evaluation_set_create(user=request.user, **form.cleaned_data)  # type: ignore[arg-type]
            except ValidationError as exc:
                shown = set(form.fields) if see_held_out else set(form.fields) - {"held_out"}
                for name, msgs in _django_errors(exc).items():
                    if name in shown:
                        form.add_error(name, msgs)
                    else:
                        form.add_error(None, f"{name}: {' '.join(msgs)}")
            else:
                messages.success(request, f"Set {created.slug} created: add cases below.")
                return redirect("rewards:evaluation_set", slug=created.slug)
        status = 400
    sets = EvaluationSet.objects.annotate(version_count=Count("versions")).order_by("slug")
    if not see_held_out:
        sets = sets.filter(held_out=False)
    return render(
        request,
        "rewards/evaluation_sets.html",
        {
            "sets": list(sets),
            "form": form,
            "can_create": _can_compile(request),
            "can_hold_out": see_held_out,
        },
        status=status,
    )


def _set_page(
    request: HttpRequest, evaluation_set: Any, *, form: Any = None, status: int = 200
) -> HttpResponse:
    number = parse_int(request.GET.get("version", ""))
    page = parse_int(request.GET.get("page", "")) or 1
    context = selectors.evaluation_set_page(evaluation_set=evaluation_set, number=number, page=page)
    return render(
        request,
        "rewards/evaluation_set_detail.html",
        {
            "evaluation_set": evaluation_set,
            "form": form or EvaluationImportForm(),
            "can_import": _can_compile(request),
            "all_reward_models": RewardModel.objects.order_by("slug").values_list("slug", flat=True)
            if _can_compile(request)
            else [],
            **context,
        },
        status=status,
    )


@readers
@require_GET
def evaluation_set_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A set's versions and cases (each links to its own page), its JSONL export, the reward
    models it gates, and an import form."""
    evaluation_set = selectors.access_evaluation_set(user=request.user, slug=slug)
    return _set_page(request, evaluation_set)


@compilers
@require_POST
def evaluation_set_import(request: HttpRequest, slug: str) -> HttpResponse:
    """JSONL pasted or uploaded as a new version; a file with any bad line is refused whole,
    each bad line named."""
    from rewards.services.evaluation import JsonlImportError, evaluation_set_import_jsonl

    evaluation_set = selectors.access_evaluation_set(user=request.user, slug=slug)
    form = EvaluationImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _set_page(request, evaluation_set, form=form, status=400)
    try:
        version = evaluation_set_import_jsonl(
            evaluation_set=evaluation_set,
            text=form.cleaned_data["jsonl"],
            user=request.user,  # type: ignore[arg-type]
            replace=form.cleaned_data["replace"],
        )
    except JsonlImportError as exc:
        form.add_error("jsonl", line_messages(exc.lines, limit=50))
        return _set_page(request, evaluation_set, form=form, status=400)
    except ValidationError as exc:
        for name, msgs in _django_errors(exc).items():
            form.add_error(None, f"{name}: {' '.join(msgs)}")
        return _set_page(request, evaluation_set, form=form, status=400)
    messages.success(
        request, f"Imported: {evaluation_set.slug} v{version.number}, {version.case_count} cases."
    )
    return redirect(reverse("rewards:evaluation_set", args=[slug]) + f"?version={version.number}")


@compilers
@require_POST
def evaluation_set_attach(request: HttpRequest, slug: str) -> HttpResponse:
    """Gate a reward model on this set: compiling evaluates it, activation may not regress."""
    from rewards.services.evaluation import evaluation_set_attach as attach

    evaluation_set = selectors.access_evaluation_set(user=request.user, slug=slug)
    reward_model = RewardModel.objects.filter(
        slug=request.POST.get("reward_model", "")[:100]
    ).first()
    if reward_model is None:
        messages.error(request, "reward_model: choose a reward model.")
    else:
        attach(
            reward_model=reward_model,
            evaluation_set=evaluation_set,
            user=request.user,  # type: ignore[arg-type]
        )
        messages.success(request, f"{reward_model.slug} is gated on {evaluation_set.slug}.")
    return redirect("rewards:evaluation_set", slug=slug)


@readers
@require_GET
def evaluation_case(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """One case of one set version (what a miss, a false positive or an inverted pair on a
    version's evaluation page links to), named by ``?key=``."""
    evaluation_set = selectors.access_evaluation_set(user=request.user, slug=slug)
    if number > 2**31 - 1:  # the column's range: no such version
        raise Http404("No such set version.")
    set_version = get_object_or_404(evaluation_set.versions, number=number)
    context = selectors.evaluation_case_page(
        set_version=set_version, key=request.GET.get("key", "")
    )
    if context is None:
        raise Http404("No such case in this set version.")
    return render(
        request,
        "rewards/evaluation_case.html",
        {"evaluation_set": evaluation_set, "set_version": set_version, **context},
    )
