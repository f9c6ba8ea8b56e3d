"""Reads for the learned-component pages: components with their metrics and where they are
used, training jobs, and the reliability diagram laid out for a server-rendered SVG; and how
imports read a task type's actions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Prefetch

from core.actions import ActionReading
from rewards.evaluation.metrics import wilson
from rewards.learned.metrics import MIN_HELD_OUT_PER_CLASS, MIN_HELD_OUT_STEPS, labels_needed
from rewards.models import (
    LearnedComponent,
    LearnedTrainingJob,
    RewardModel,
    TaskType,
    TrainingMetric,
    TrainingRun,
)


def training_run_steps(
    *, run: TrainingRun, after_step: int | None, limit: int
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` reported steps of ``run`` past ``after_step``, in step order, and the
    step to continue after when there are more (keyset on the run's unique (run, step))."""
    rows = TrainingMetric.objects.filter(run=run).order_by("step")
    if after_step is not None:
        rows = rows.filter(step__gt=after_step)
    page = list(rows.values_list("step", "values")[: limit + 1])
    more = len(page) > limit
    steps = [{"step": step, "metrics": values} for step, values in page[:limit]]
    return steps, (steps[-1]["step"] if more and steps else None)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class BehaviourMetrics:
    name: str
    n: int | None
    positives: int | None
    auc: float | None
    accuracy: float | None
    ece: float | None


@dataclass
class ComponentRow:
    component: LearnedComponent
    auc: float | None
    accuracy: float | None
    ece: float | None
    labelled_steps: int | None
    trajectories: int | None
    behaviours: list[BehaviourMetrics]
    status: str  # "newest" (what reward models without a chosen component compile) or "older"
    used_by: list[str] = field(default_factory=list)  # "slug vN (active)", "slug (chosen)"
    summary: dict[str, Any] = field(default_factory=dict)
    auc_ci: tuple[float, float] | None = None
    accuracy_ci: tuple[float, float] | None = None
    held_out: int | None = None  # held-out steps with an overall label
    held_out_positives: int | None = None
    # More labelled steps a trustworthy reading needs (0: enough; None: counts unknown).
    labels_needed: int | None = None
    min_held_out: int = MIN_HELD_OUT_STEPS
    min_per_class: int = MIN_HELD_OUT_PER_CLASS

    @property
    def too_few(self) -> bool:
        return bool(self.labels_needed)

    @property
    def held_out_negatives(self) -> int | None:
        if self.held_out is None or self.held_out_positives is None:
            return None
        return self.held_out - self.held_out_positives


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        lo, hi = _number(value[0]), _number(value[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None


def _row(
    component: LearnedComponent, newest_id: int | None, usage: dict[str, list[str]]
) -> ComponentRow:
    m = component.metrics if isinstance(component.metrics, dict) else {}
    targets = m.get("targets") if isinstance(m.get("targets"), dict) else {}
    behaviours = [
        BehaviourMetrics(
            name=str(name),
            n=_int(t.get("n")),
            positives=_int(t.get("positives")),
            auc=_number(t.get("auc")),
            accuracy=_number(t.get("accuracy")),
            ece=_number(t.get("ece")),
        )
        for name, t in sorted(targets.items())
        if name != "overall" and isinstance(t, dict)
    ]
    train, val = _int(m.get("train_steps")), _int(m.get("val_steps"))
    overall = targets.get("overall") if isinstance(targets.get("overall"), dict) else {}
    held_out, held_pos = _int(overall.get("n")), _int(overall.get("positives"))
    accuracy = _number(m.get("accuracy"))
    accuracy_ci = _interval(overall.get("accuracy_ci"))
    if accuracy_ci is None and accuracy is not None and held_out:
        accuracy_ci = wilson(round(accuracy * held_out), held_out)
    needed = None
    if held_out is not None and held_pos is not None and train is not None and val:
        needed = labels_needed(held_out, held_pos, val / (train + val))
    return ComponentRow(
        component=component,
        auc=_number(m.get("auc")),
        accuracy=accuracy,
        ece=_number(m.get("ece")),
        labelled_steps=(train or 0) + (val or 0) if train is not None or val is not None else None,
        trajectories=_int(m.get("trajectories")),
        behaviours=behaviours,
        status="newest" if component.pk == newest_id else "older",
        used_by=usage.get(component.digest, []),
        summary={
            "train_steps": train,
            "val_steps": val,
            "val_trajectories": _int(m.get("val_trajectories")),
            "epochs": _int(m.get("epochs")),
            "best_epoch": _int(m.get("best_epoch")),
            "val_loss": _number(m.get("loss/val")),
        },
        auc_ci=_interval(overall.get("auc_ci")),
        accuracy_ci=accuracy_ci,
        held_out=held_out,
        held_out_positives=held_pos,
        labels_needed=needed,
    )


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(task_type_id: int, newest_digest: str | None) -> dict[str, list[str]]:
    """Digest -> where it is used: active reward-model versions that compiled it in, and
    reward models that chose it (or, with a weight and no choice, take the newest)."""
    usage: dict[str, list[str]] = {}
    models = RewardModel.objects.filter(task_type_id=task_type_id).select_related(
        "active_version", "learned_component"
    )
    for rm in models:
        version = rm.active_version
        for comp in (version.spec.get("learned") or []) if version is not None else []:
            digest = (comp.get("artifact") or {}).get("digest") if isinstance(comp, dict) else None
            if digest:
                usage.setdefault(digest, []).append(f"{rm.slug} v{version.number} (active)")
        if rm.learned_weight > 0:
            chosen = rm.learned_component.digest if rm.learned_component else newest_digest
            how = "chosen" if rm.learned_component else "newest"
            if chosen:
                usage.setdefault(chosen, []).append(
                    f"{rm.slug} (weight {rm.learned_weight:g}, {how}; compiles next)"
                )
    return usage


def learned_components(*, task_type: TaskType) -> list[ComponentRow]:
    """The task type's trained components, newest first, with metrics and where they are used."""
    components = list(
        LearnedComponent.objects.filter(task_type=task_type).order_by("-created_at", "-id")
    )
    newest = components[0] if components else None
    usage = _usage(task_type.pk, newest.digest if newest else None)
    return [_row(c, newest.pk if newest else None, usage) for c in components]


def learned_component(*, pk: int) -> ComponentRow | None:
    component = LearnedComponent.objects.select_related("task_type").filter(pk=pk).first()
    if component is None:
        return None
    newest_id = (
        LearnedComponent.objects.filter(task_type_id=component.task_type_id)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )
    newest_digest = component.digest if newest_id == component.pk else None
    if newest_digest is None:
        newest_digest = (
            LearnedComponent.objects.filter(pk=newest_id).values_list("digest", flat=True).first()
        )
    return _row(component, newest_id, _usage(component.task_type_id, newest_digest))


def learned_overview() -> list[dict[str, Any]]:
    """Every task type with its component count, newest component and newest training job."""
    task_types = TaskType.objects.annotate(
        component_count=Count("learned_components", distinct=True),
    ).prefetch_related(
        Prefetch(
            "learned_components",
            queryset=LearnedComponent.objects.order_by("-created_at", "-id"),
            to_attr="components_newest_first",
        ),
        Prefetch(
            "learned_jobs",
            queryset=LearnedTrainingJob.objects.order_by("-id"),
            to_attr="jobs_newest_first",
        ),
    )
    rows = []
    for t in task_types.order_by("slug"):
        newest = t.components_newest_first[0] if t.components_newest_first else None
        rows.append(
            {
                "task_type": t,
                "count": t.component_count,
                "newest": _row(newest, newest.pk, {}) if newest else None,
                "job": t.jobs_newest_first[0] if t.jobs_newest_first else None,
            }
        )
    return rows


# --- Reliability diagram ------------------------------------------------------------------------

PLOT = 360
PAD = 40


def _x(p: float) -> float:
    return round(PAD + (PLOT - 2 * PAD) * min(max(p, 0.0), 1.0), 1)


def _y(p: float) -> float:
    return round(PLOT - PAD - (PLOT - 2 * PAD) * min(max(p, 0.0), 1.0), 1)


def reliability_plot(rows: Any) -> dict[str, Any]:
    """Equal-width bins of P(trusted) on held-out steps: a bar per bin up to the observed share
    of trusted steps, a dot at (mean predicted P, observed share), and the diagonal a perfectly
    calibrated classifier would follow. Coordinates only; the template escapes every label."""
    bins = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        lo, hi, count = _number(row.get("lo")), _number(row.get("hi")), _int(row.get("count"))
        mean_p, observed = _number(row.get("mean_p")), _number(row.get("observed"))
        if lo is None or hi is None or not count or mean_p is None or observed is None:
            continue
        bins.append(
            {
                "x": _x(lo) + 1,
                "w": max(_x(hi) - _x(lo) - 2, 1),
                "y": _y(observed),
                "h": round(_y(0) - _y(observed), 1),
                "cx": _x(mean_p),
                "cy": _y(observed),
                "r": round(min(3 + count**0.5, 9), 1),
                "label": f"P(trusted) {lo:.1f}–{hi:.1f}: {count} steps, mean predicted "
                f"{mean_p:.2f}, observed {observed:.2f}",
            }
        )
    ticks = [{"v": f"{v:.1f}", "x": _x(v), "y": _y(v)} for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    return {
        "size": PLOT,
        "pad": PAD,
        "inner": PLOT - 2 * PAD,
        "x0": _x(0),
        "x1": _x(1),
        "y0": _y(0),
        "y1": _y(1),
        "bins": bins,
        "points": " ".join(f"{b['cx']},{b['cy']}" for b in bins),
        "ticks": ticks,
        "mid": round(PLOT / 2, 1),
        "bottom": PLOT - 6,
    }


def action_reading(task_type_slug: str) -> ActionReading | None:
    """How imports read the actions of this task type's trajectories (None: no such type).

    Registered with the import service in ``RewardsConfig.ready``."""
    task_type = TaskType.objects.filter(slug=task_type_slug).first()
    if task_type is None:
        return None

    def strings(value: Any) -> tuple[str, ...]:
        return (
            tuple(v for v in value if isinstance(v, str) and v) if isinstance(value, list) else ()
        )

    return ActionReading(
        shell_tools=strings(task_type.shell_tools) or ActionReading.shell_tools,
        command_keys=strings(task_type.command_keys) or ActionReading.command_keys,
        text_format=task_type.tool_call_format or "auto",
        workspace_roots=strings(task_type.workspace_roots),
    )


def _named(key: str, cases: dict[str, Any], hidden: bool) -> tuple[str, Any]:
    """A case as a reader may see it: its key and row, or, in a held-out set hidden from the
    reader, its place in the set version (a content key would let a guess be confirmed)."""
    case = cases.get(key)
    if not hidden:
        return key, case
    return (f"#{case.position + 1}" if case is not None else "#?"), None


def evaluation_page(*, version: Any, baseline: Any, can_see_held_out: bool) -> list[dict[str, Any]]:
    """Per attached set: the version's stored result beside the baseline's, and the cases
    each newly catches or misses (with their content unless the set is held out from this
    reader). Stored results only: a page never evaluates."""
    from rewards.evaluation import compare_outcomes
    from rewards.models import EvaluationCase, EvaluationResult
    from rewards.services.evaluation import attached_set_versions

    set_versions = attached_set_versions(version.reward_model)
    wanted = [version.pk] + ([baseline.pk] if baseline is not None else [])
    results = {
        (r.version_id, r.set_version_id): r
        for r in EvaluationResult.objects.filter(
            version_id__in=wanted, set_version__in=set_versions
        )
    }
    out = []
    for set_version in set_versions:
        hidden = set_version.evaluation_set.held_out and not can_see_held_out
        mine = results.get((version.pk, set_version.pk))
        base = results.get((baseline.pk, set_version.pk)) if baseline is not None else None
        diff: dict[str, list[str]] = {"newly_caught": [], "newly_missed": []}
        if mine is not None and base is not None and baseline.pk != version.pk:
            diff = compare_outcomes(mine.metrics["outcomes"], base.metrics["outcomes"])
        keys = diff["newly_caught"] + diff["newly_missed"]
        if mine is not None:
            keys += [m["key"] for m in mine.metrics["misses"] + mine.metrics["false_positives"]]
            keys += [p["key"] for p in mine.metrics["inverted_pairs"]]
        cases = {
            c.key: c
            for c in EvaluationCase.objects.filter(set_version=set_version, key__in=set(keys))
        }
        out.append(
            {
                "set_version": set_version,
                "hidden": hidden,
                "result": mine,
                "baseline": base,
                "newly_caught": [_named(k, cases, hidden) for k in diff["newly_caught"]],
                "newly_missed": [_named(k, cases, hidden) for k in diff["newly_missed"]],
                "cases": cases,
                "history": evaluation_history_plot(
                    reward_model=version.reward_model, set_version=set_version
                ),
                "reliability": step_reliability_plot(mine.metrics) if mine is not None else None,
            }
        )
    return out


PLOT_W, PLOT_H, PLOT_PAD = 420, 180, 34


def _y(value: float) -> float:
    """A rate in [0, 1] as the plot's y coordinate (1 at the top)."""
    return round(PLOT_PAD / 2 + (1 - value) * (PLOT_H - PLOT_PAD * 1.5), 1)


def evaluation_history_plot(*, reward_model: Any, set_version: Any) -> dict[str, Any]:
    """Recall, FPR and pair accuracy of every evaluated version on one set version, as plot
    coordinates (the template draws them as SVG)."""
    from rewards.models import EvaluationResult

    rows = list(
        EvaluationResult.objects.filter(set_version=set_version, version__reward_model=reward_model)
        .select_related("version")
        .order_by("version__number")
    )
    span = max(len(rows) - 1, 1)
    xs = [round(PLOT_PAD + i * (PLOT_W - PLOT_PAD * 1.5) / span, 1) for i in range(len(rows))]
    series = []
    for name, path, color in (
        ("recall", ("commands", "recall"), 1),
        ("false-positive rate", ("commands", "fpr"), 2),
        ("pair accuracy", ("pairs", "accuracy"), 3),
    ):
        dots = [
            (x, _y(row.metrics[path[0]][path[1]]["rate"]))
            for x, row in zip(xs, rows, strict=True)
            if row.metrics[path[0]][path[1]]["rate"] is not None
        ]
        if dots:
            points = " ".join(f"{x},{y}" for x, y in dots)
            series.append({"name": name, "color": color, "points": points, "dots": dots})
    return {
        "w": PLOT_W,
        "h": PLOT_H,
        "pad": PLOT_PAD,
        "series": series,
        "labels": [(x, f"v{row.version.number}") for x, row in zip(xs, rows, strict=True)],
        "y1": _y(1.0),
        "y0": _y(0.0),
    }


def step_reliability_plot(metrics: dict[str, Any]) -> dict[str, Any]:
    """Step rewards against the share experts labelled trusted, per reward bin, as plot
    coordinates: x is the bin's mean reward (scaled to the bins' range), y the share."""
    points = metrics.get("steps", {}).get("reliability") or []
    if not points:
        return {"w": PLOT_W, "h": PLOT_H, "pad": PLOT_PAD, "dots": [], "points": ""}
    lo = min(p["mean_reward"] for p in points)
    hi = max(p["mean_reward"] for p in points)
    width = (hi - lo) or 1.0
    dots = [
        (
            round(PLOT_PAD + (p["mean_reward"] - lo) / width * (PLOT_W - PLOT_PAD * 1.5), 1),
            _y(p["trusted_share"]),
            p,
        )
        for p in points
    ]
    return {
        "w": PLOT_W,
        "h": PLOT_H,
        "pad": PLOT_PAD,
        "dots": dots,
        "points": " ".join(f"{x},{y}" for x, y, _ in dots),
        "lo": lo,
        "hi": hi,
        "y1": _y(1.0),
        "y0": _y(0.0),
    }


# --- evaluation sets in the browser -------------------------------------------------------------

CASES_PER_PAGE = 50


def access_evaluation_set(*, user: Any, slug: str) -> Any:
    """The one lookup pages use for a set: 404 when there is none, 403 saying why when it is
    held out from this reader (they edit the policy)."""
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    from rewards.models import EvaluationSet
    from rewards.services.evaluation import can_see_held_out

    evaluation_set = EvaluationSet.objects.filter(slug=slug[:100]).first()
    if evaluation_set is None:
        raise Http404("No such evaluation set.")
    if evaluation_set.held_out and not can_see_held_out(user):
        raise PermissionDenied("This evaluation set is held out: only experts and admins see it.")
    return evaluation_set


def evaluation_set_page(*, evaluation_set: Any, number: int | None, page: int) -> dict[str, Any]:
    """A set's versions, one version's cases a page at a time, and the reward models it gates."""
    from rewards.models import EvaluationCase

    versions = list(evaluation_set.versions.order_by("-number"))
    chosen = next((v for v in versions if v.number == number), None) if number else None
    chosen = chosen or (versions[0] if versions else None)
    pages = 1
    cases: list[Any] = []
    if chosen is not None:
        pages = max(1, -(-chosen.case_count // CASES_PER_PAGE))
        page = min(max(page, 1), pages)
        start = (page - 1) * CASES_PER_PAGE
        cases = list(
            EvaluationCase.objects.filter(
                set_version=chosen, position__gte=start, position__lt=start + CASES_PER_PAGE
            ).order_by("position")
        )
    attached = evaluation_set.attachments.select_related("reward_model").order_by(
        "reward_model__slug"
    )
    return {
        "versions": versions,
        "version": chosen,
        "cases": cases,
        "page": page,
        "pages": pages,
        "reward_models": [a.reward_model for a in attached],
    }


def _trajectory_steps(trajectory: dict[str, Any], labels: list[Any] | None) -> list[dict[str, Any]]:
    """Each step's text and shell commands (with the expert label of a step-labels case)."""
    from core.canonical import extract_steps

    rows = []
    for step in extract_steps(trajectory):
        rows.append(
            {
                "index": step.index,
                "text": (step.text or step.reasoning or "")[:2000],
                "commands": [c.command for c in step.commands],
                "tools": [
                    str((call.get("function") or {}).get("name", ""))
                    for call in step.tool_calls
                    if not any(c.tool_call_id == call.get("id") for c in step.commands)
                ],
                "label": labels[step.index]
                if labels is not None and step.index < len(labels)
                else None,
            }
        )
    return rows


def evaluation_case_page(*, set_version: Any, key: str) -> dict[str, Any] | None:
    """One case, readable: a command with its label, a pair's trajectories best first, or a
    trajectory's steps beside their expert labels; None when the version has no such key."""
    case = set_version.cases.filter(key=key[:120]).first()
    if case is None:
        return None
    trajectories: list[dict[str, Any]] = []
    if case.kind == "pair":
        for rank, trajectory in enumerate(case.data["trajectories"]):
            trajectories.append(
                {
                    "rank": rank,
                    "id": trajectory.get("id", ""),
                    "outcome": trajectory.get("outcome"),
                    "steps": _trajectory_steps(trajectory, None),
                }
            )
    elif case.kind == "steps":
        trajectory = case.data["trajectory"]
        trajectories.append(
            {
                "rank": None,
                "id": trajectory.get("id", ""),
                "outcome": trajectory.get("outcome"),
                "steps": _trajectory_steps(trajectory, case.data["labels"]),
            }
        )
    return {"case": case, "trajectories": trajectories}


def refused_cases(
    *, regressions: list[dict[str, Any]], can_see_held_out: bool, limit: int = 50
) -> list[dict[str, Any]]:
    """A refused activation's regressions, each case with its row (to show and link it), the
    content left out of a held-out set the reader may not see."""
    from rewards.models import EvaluationCase, EvaluationSetVersion

    out = []
    for regression in regressions:
        set_version = (
            EvaluationSetVersion.objects.select_related("evaluation_set")
            .filter(evaluation_set__slug=regression["set"], number=regression["set_version"])
            .first()
        )
        if set_version is None:
            continue
        keys = regression["cases"][:limit]
        rows = {
            c.key: c for c in EvaluationCase.objects.filter(set_version=set_version, key__in=keys)
        }
        out.append(
            {
                "set_version": set_version,
                "hidden": set_version.evaluation_set.held_out and not can_see_held_out,
                "cases": [(key, rows.get(key)) for key in keys],
                "more": max(0, len(regression["cases"]) - limit),
            }
        )
    return out


def held_out_names(*, set_version: Any, keys: list[str]) -> list[str]:
    """Case keys of a held-out set as a reader who may not see it gets them: their places."""
    cases = {c.key: c for c in set_version.cases.filter(key__in=keys)}
    return [_named(key, cases, True)[0] for key in keys]


def cases_by_key(*, set_version: Any, keys: list[str]) -> dict[str, Any]:
    return {c.key: c for c in set_version.cases.filter(key__in=keys)}
