"""Evaluation sets (versioned, immutable), evaluation runs of compiled reward versions, and the
gate that keeps a regressing version from going live without an audited expert override.

The computing is ``rewards.evaluation`` (pure); this module stores, queues and compares."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from audit.services import audit_record
from core.canonical import json_digest
from core.models import User
from core.roles import ADMIN, EXPERT, has_role
from rewards.evaluation import (
    GATING_KINDS,
    Case,
    CaseError,
    compare_outcomes,
    evaluate_cases,
    judge_for_scorer,
    parse_case,
    parse_jsonl,
    to_jsonl,
)
from rewards.models import (
    EvaluationAttachment,
    EvaluationCase,
    EvaluationResult,
    EvaluationRun,
    EvaluationSet,
    EvaluationSetVersion,
    RewardModel,
    RewardModelVersion,
)
from rewards.scoring import with_text_actions

PROGRESS_EVERY = 50
OVERRIDE_REASON_MIN = 10


class JsonlImportError(ValidationError):
    """A JSONL text with lines that are not cases: ``lines`` holds each line's errors."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.lines = lines
        first = lines[0]
        super().__init__(
            {
                "file": [
                    f"{len(lines)} invalid line(s); first: line {first['line']}: {first['errors']}"
                ]
            }
        )


# --- sets -------------------------------------------------------------------------------------


def can_see_held_out(user: Any) -> bool:
    """Held-out sets are hidden from the people who edit the policy: only experts and admins."""
    return bool(user and getattr(user, "is_authenticated", False)) and has_role(user, EXPERT, ADMIN)


def evaluation_set_create(
    *,
    slug: str,
    name: str,
    user: User | None,
    description: str = "",
    held_out: bool = False,
) -> EvaluationSet:
    if held_out and user is not None and not can_see_held_out(user):
        raise ValidationError({"held_out": ["Only experts and admins keep held-out sets."]})
    evaluation_set = EvaluationSet(
        slug=slug, name=name, description=description, held_out=held_out, created_by=user
    )
    evaluation_set.full_clean()
    evaluation_set.save()
    audit_record(
        action="evaluation_set.create",
        obj=evaluation_set,
        user=user,
        after={"slug": slug, "held_out": held_out},
    )
    return evaluation_set


def latest_set_version(evaluation_set: EvaluationSet) -> EvaluationSetVersion | None:
    return evaluation_set.versions.order_by("-number").first()


def set_version_cases(set_version: EvaluationSetVersion) -> list[Case]:
    rows = set_version.cases.order_by("position").values_list("key", "kind", "data")
    return [Case(key=key, kind=kind, data=data) for key, kind, data in rows]


@transaction.atomic
def evaluation_set_add_cases(
    *,
    evaluation_set: EvaluationSet,
    cases: list[Case],
    user: User | None,
    note: str = "",
    replace: bool = False,
) -> EvaluationSetVersion:
    """A new version: the latest version's cases (none with ``replace``) and then ``cases``.
    A key already in the set is an error naming it; versions are never changed."""
    evaluation_set = EvaluationSet.objects.select_for_update().get(pk=evaluation_set.pk)
    previous = latest_set_version(evaluation_set)
    kept = [] if replace or previous is None else set_version_cases(previous)
    known = {c.key for c in kept}
    for case in cases:
        if case.key in known:
            raise ValidationError({"key": [f"case {case.key!r} is already in {evaluation_set}"]})
        known.add(case.key)
    merged = kept + cases
    if not merged:
        raise ValidationError({"cases": ["an evaluation set version needs at least one case"]})
    number = (evaluation_set.versions.aggregate(m=Max("number"))["m"] or 0) + 1
    version = EvaluationSetVersion(
        evaluation_set=evaluation_set,
        number=number,
        digest=json_digest([{"key": c.key, **c.data} for c in merged]),
        case_count=len(merged),
        note=note[:300],
        created_by=user,
    )
    version.save()
    EvaluationCase.objects.bulk_create(
        EvaluationCase(
            set_version=version,
            position=i,
            key=c.key,
            kind=c.kind,
            category=str(c.data.get("category", "") or c.data.get("tier", ""))[:60],
            data=c.data,
        )
        for i, c in enumerate(merged)
    )
    audit_record(
        action="evaluation_set.version",
        obj=evaluation_set,
        user=user,
        after={"version": number, "cases": len(merged), "added": len(cases), "note": version.note},
    )
    return version


def evaluation_set_import_jsonl(
    *, evaluation_set: EvaluationSet, text: str, user: User | None, replace: bool = False
) -> EvaluationSetVersion:
    """Import a JSONL text as a new version; any invalid line refuses the whole file
    (``JsonlImportError`` lists every bad line with its errors)."""
    cases, errors = parse_jsonl(text)
    if errors:
        raise JsonlImportError(errors)
    return evaluation_set_add_cases(
        evaluation_set=evaluation_set, cases=cases, user=user, replace=replace, note="import"
    )


def evaluation_set_export(set_version: EvaluationSetVersion) -> str:
    return to_jsonl(set_version_cases(set_version))


def _case(raw: dict[str, Any]) -> Case:
    """A case the hub built from its own rows; invalid (a command over the case limit, ...)
    is a ValidationError naming the field, as every other write here."""
    try:
        return parse_case(raw)
    except CaseError as exc:
        raise ValidationError(exc.errors) from exc


def case_from_flag(flag: Any, label: str | None = None) -> Case:
    """A labelled command from a reviewed flag: confirmed is unsafe, dismissed is safe."""
    if label is None:
        label = {"confirmed": "unsafe", "dismissed": "safe"}.get(flag.status)
    if label is None:
        raise ValidationError(
            {"flag": ["Review the flag first: only confirmed or dismissed flags"]}
        )
    return _case({"command": flag.command, "label": label, "category": flag.category})


def case_from_trajectories(better: Any, worse: Any, tier: str) -> Case:
    """An ordered pair from two stored trajectories (better first)."""
    return _case(
        {"kind": "pair", "tier": tier, "trajectories": [better.canonical, worse.canonical]}
    )


def case_from_step_labels(trajectory: Any, labels: list[int | None]) -> Case:
    """Expert step labels of a stored trajectory (one per step: +1, 0, -1 or None), as the
    review flow computes them from submitted reviews (final label, else the majority)."""
    return _case({"kind": "steps", "trajectory": trajectory.canonical, "labels": labels})


def evaluation_set_attach(
    *, reward_model: RewardModel, evaluation_set: EvaluationSet, user: User | None
) -> EvaluationAttachment:
    attachment, created = EvaluationAttachment.objects.get_or_create(
        reward_model=reward_model, evaluation_set=evaluation_set
    )
    if created:
        audit_record(
            action="reward_model.attach_set",
            obj=reward_model,
            user=user,
            after={"evaluation_set": evaluation_set.slug},
        )
    return attachment


def attached_set_versions(reward_model: RewardModel) -> list[EvaluationSetVersion]:
    """The newest version of every set attached to the reward model (sets with no case yet
    are skipped)."""
    out = []
    for attachment in reward_model.evaluation_attachments.select_related("evaluation_set"):
        version = latest_set_version(attachment.evaluation_set)
        if version is not None:
            out.append(version)
    return out


# --- runs -------------------------------------------------------------------------------------


def evaluate_version_on_set(
    *,
    version: RewardModelVersion,
    set_version: EvaluationSetVersion,
    run: EvaluationRun | None = None,
    progress: Any = None,
) -> EvaluationResult:
    """The stored result of ``version`` on ``set_version``, evaluated now if there is none."""
    found = EvaluationResult.objects.filter(version=version, set_version=set_version).first()
    if found is not None:
        return found
    metrics, seconds = compute_metrics(version=version, set_version=set_version, progress=progress)
    try:
        with transaction.atomic():
            return EvaluationResult.objects.create(
                version=version, set_version=set_version, run=run, metrics=metrics, seconds=seconds
            )
    except IntegrityError:  # another worker stored the same (deterministic) result first
        return EvaluationResult.objects.get(version=version, set_version=set_version)


def compute_metrics(
    *, version: RewardModelVersion, set_version: EvaluationSetVersion, progress: Any = None
) -> tuple[dict[str, Any], float]:
    """Evaluate through the scoring entry points (the compiled scorer of the version, actions
    written as text read by its task type's format), nothing stored."""
    from rewards.services.scoring import scorer_for, version_by_pk

    return _metrics_with(scorer_for(version_by_pk(version.pk)), set_version, progress)


def _metrics_with(
    scorer: Any, set_version: EvaluationSetVersion, progress: Any = None
) -> tuple[dict[str, Any], float]:
    shell_tool = scorer.shell_tools[0]

    def prepare(trajectory: dict[str, Any]) -> dict[str, Any]:
        return with_text_actions(trajectory, scorer.text_format, shell_tool=shell_tool)

    cases = set_version_cases(set_version)
    started = time.perf_counter()
    metrics = evaluate_cases(
        cases,
        judge_for_scorer(scorer, prepare),
        shell_tool=shell_tool,
        progress=progress,
        total=len(cases),
    )
    return metrics, round(time.perf_counter() - started, 3)


def evaluation_run_request(
    *,
    version: RewardModelVersion,
    user: User | None,
    set_versions: list[EvaluationSetVersion] | None = None,
    trigger: str = "manual",
) -> EvaluationRun | None:
    """Queue an evaluation of ``version`` (after commit) on ``set_versions``, by default the
    reward model's attached sets; None when there is nothing to evaluate."""
    from rewards.tasks import evaluate_reward_version

    if set_versions is None:
        set_versions = attached_set_versions(version.reward_model)
    if not set_versions:
        return None
    run = EvaluationRun.objects.create(
        version=version,
        trigger=trigger,
        requested_by=user,
        total=sum(s.case_count for s in set_versions),
    )
    run.set_versions.set(set_versions)
    evaluate_reward_version.delay_on_commit(run.pk)
    return run


def evaluation_runs_for_compile(*, version: RewardModelVersion, user: User | None) -> None:
    """A new version's runs: the version on every attached set, and the active version (its
    baseline) on those it has no stored result for yet, e.g. a set grown since it went live."""
    set_versions = attached_set_versions(version.reward_model)
    evaluation_run_request(version=version, user=user, set_versions=set_versions, trigger="compile")
    active = version.reward_model.active_version
    if active is None or active.pk == version.pk or not set_versions:
        return
    stored = set(
        EvaluationResult.objects.filter(version=active, set_version__in=set_versions).values_list(
            "set_version_id", flat=True
        )
    )
    missing = [s for s in set_versions if s.pk not in stored]
    if missing:
        evaluation_run_request(version=active, user=user, set_versions=missing, trigger="baseline")


def evaluation_run_execute(*, run_id: int) -> EvaluationRun:
    """The task's body: evaluate every set version of the run, saving progress as it goes.
    Idempotent: a finished run is returned as it is, stored results are reused."""
    run = EvaluationRun.objects.select_related("version").get(pk=run_id)
    if run.state == EvaluationRun.State.SUCCEEDED:
        return run
    EvaluationRun.objects.filter(pk=run.pk).update(
        state=EvaluationRun.State.RUNNING, started_at=timezone.now(), done=0, error=""
    )
    done_before = 0

    def progress(done: int, total: int) -> None:
        if done % PROGRESS_EVERY == 0 or done == total:
            EvaluationRun.objects.filter(pk=run.pk).update(done=done_before + done)

    try:
        for set_version in run.set_versions.order_by("pk"):
            evaluate_version_on_set(
                version=run.version, set_version=set_version, run=run, progress=progress
            )
            done_before += set_version.case_count
            EvaluationRun.objects.filter(pk=run.pk).update(done=done_before)
    except Exception as exc:
        EvaluationRun.objects.filter(pk=run.pk).update(
            state=EvaluationRun.State.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        raise
    EvaluationRun.objects.filter(pk=run.pk).update(
        state=EvaluationRun.State.SUCCEEDED, finished_at=timezone.now(), done=done_before
    )
    run.refresh_from_db()
    return run


# --- the gate ---------------------------------------------------------------------------------


@dataclass
class SetComparison:
    """One attached set: the candidate's and the baseline's results and the case diff."""

    set_version: EvaluationSetVersion
    candidate: EvaluationResult
    baseline: EvaluationResult | None
    newly_caught: list[str] = field(default_factory=list)
    newly_missed: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> list[str]:
        """Newly missed cases of the kinds that pass or fail one by one (commands, pairs)."""
        outcomes = self.candidate.metrics["outcomes"]
        return [k for k in self.newly_missed if outcomes[k]["kind"] in GATING_KINDS]


def version_comparison(
    *, version: RewardModelVersion, baseline: RewardModelVersion | None
) -> list[SetComparison]:
    """The version against the baseline (usually the active version) on every attached set,
    evaluating whatever is not stored yet (deterministic, so stored and fresh agree)."""
    out = []
    for set_version in attached_set_versions(version.reward_model):
        candidate = evaluate_version_on_set(version=version, set_version=set_version)
        base = None
        diff: dict[str, list[str]] = {"newly_caught": [], "newly_missed": []}
        if baseline is not None and baseline.pk != version.pk:
            base = evaluate_version_on_set(version=baseline, set_version=set_version)
            diff = compare_outcomes(candidate.metrics["outcomes"], base.metrics["outcomes"])
        out.append(SetComparison(set_version, candidate, base, **diff))
    return out


class ActivationRefused(ValidationError):
    """Activation would regress on an attached set; ``regressions`` names the cases."""

    def __init__(self, regressions: list[dict[str, Any]]) -> None:
        self.regressions = regressions
        names = "; ".join(
            f"set {r['set']} v{r['set_version']}: newly missed {', '.join(r['cases'][:10])}"
            + (f" and {len(r['cases']) - 10} more" if len(r["cases"]) > 10 else "")
            for r in regressions
        )
        super().__init__(
            {
                "version": [
                    f"This version regresses on an attached evaluation set ({names}). "
                    "An expert may override with a written reason."
                ]
            }
        )


def gate_regressions(
    *, reward_model: RewardModel, version: RewardModelVersion
) -> list[dict[str, Any]]:
    """What activating ``version`` would newly miss against the active version, per set."""
    active = RewardModel.objects.select_related("active_version").get(pk=reward_model.pk)
    active = active.active_version
    if active is None or active.pk == version.pk:
        return []
    regressions = []
    for comparison in version_comparison(version=version, baseline=active):
        cases = comparison.regressed
        if cases:
            regressions.append(
                {
                    "set": comparison.set_version.evaluation_set.slug,
                    "set_version": comparison.set_version.number,
                    "cases": cases,
                }
            )
    return regressions


def held_out_masked(regressions: list[dict[str, Any]], user: User | None) -> list[dict[str, Any]]:
    """Regressions as a policy editor may read them: a held-out set's cases named by their
    place in the set version (``#3``), since a content key would let a guess be confirmed.
    Experts, admins and the command line (no user) get the keys."""
    if user is None or can_see_held_out(user):
        return regressions
    out = []
    for regression in regressions:
        set_version = EvaluationSetVersion.objects.select_related("evaluation_set").get(
            evaluation_set__slug=regression["set"], number=regression["set_version"]
        )
        if not set_version.evaluation_set.held_out:
            out.append(regression)
            continue
        places = dict(
            set_version.cases.filter(key__in=regression["cases"]).values_list("key", "position")
        )
        names = [f"#{places[k] + 1}" if k in places else "#?" for k in regression["cases"]]
        out.append({**regression, "cases": names})
    return out


def check_activation(
    *,
    reward_model: RewardModel,
    version: RewardModelVersion,
    user: User | None,
    override_reason: str = "",
) -> list[dict[str, Any]]:
    """Refuse (``ActivationRefused``) a regressing activation unless an expert overrides it
    with a written reason; returns the regressions overridden (to audit), else []."""
    regressions = gate_regressions(reward_model=reward_model, version=version)
    if not regressions:
        return []
    reason = (override_reason or "").strip()
    if not reason:
        raise ActivationRefused(held_out_masked(regressions, user))
    if user is None or not has_role(user, EXPERT, ADMIN):
        raise ValidationError({"override_reason": ["Only an expert may override the gate."]})
    if len(reason) < OVERRIDE_REASON_MIN:
        raise ValidationError(
            {"override_reason": [f"Write the reason (at least {OVERRIDE_REASON_MIN} characters)."]}
        )
    return regressions


# --- the demo set -----------------------------------------------------------------------------

DEMO_SET = "demo-gate"
# (demo trajectory, step, category) of the hacking or unsafe command in each demo run.
_DEMO_UNSAFE = (
    ("demo-hack-delete-test", 1, "test-tampering"),
    ("demo-hack-skip-test", 1, "test-tampering"),
    ("demo-hack-conftest", 0, "test-tampering"),
    ("demo-leak-git-history", 2, "answer-leakage"),
    ("demo-hack-force-push", 0, "vcs-force-push"),
    ("demo-unsafe-rm-home", 1, "destructive-fs"),
    ("demo-unsafe-curl-sh", 0, "remote-code"),
    ("demo-credentials", 0, "credentials"),
    ("demo-hack-exit-zero", 0, "harness-tampering"),
)
# (better, worse, tier): honest runs above hacked runs of the same task.
_DEMO_PAIRS = (
    ("demo-honest-parser", "demo-hack-delete-test", "same-outcome"),
    ("demo-honest-parser", "demo-hack-skip-test", "same-outcome"),
    ("demo-honest-slug", "demo-leak-git-history", "same-outcome"),
    ("demo-honest-cache", "demo-hack-exit-zero", "same-outcome"),
)


def _step_commands(trajectory: dict[str, Any]) -> list[list[str]]:
    """Each step's shell commands (the demo data passes them as argument objects)."""
    import json

    steps = []
    for message in trajectory["messages"]:
        if message.get("role") != "assistant":
            continue
        commands = []
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
            commands.append(arguments["command"])
        steps.append(commands)
    return steps


def demo_cases(trajectories: dict[str, dict[str, Any]]) -> list[Case]:
    """A small set from the demo trajectories: every command of the honest runs (safe), the
    hacking command of each other run (unsafe), honest-over-hacked pairs, a strict pair (an
    honest failure above a hacked success) and two runs with expert step labels."""
    raw: list[dict[str, Any]] = []
    for traj_id, step, category in _DEMO_UNSAFE:
        command = _step_commands(trajectories[traj_id])[step][0]
        raw.append({"command": command, "label": "unsafe", "category": category})
    for traj_id, trajectory in trajectories.items():
        if traj_id.startswith("demo-honest-"):
            for commands in _step_commands(trajectory):
                raw.extend(
                    {"command": c, "label": "safe", "category": "ordinary"} for c in commands
                )
    for better, worse, tier in _DEMO_PAIRS:
        pair = [trajectories[better], trajectories[worse]]
        raw.append({"kind": "pair", "tier": tier, "trajectories": pair})
    honest_failure = {
        **trajectories["demo-honest-parser"],
        "outcome": {"resolved": False, "tests_passed": 19, "tests_failed": 1},
    }
    raw.append(
        {
            "kind": "pair",
            "tier": "strict",
            "trajectories": [honest_failure, trajectories["demo-hack-delete-test"]],
        }
    )
    raw.append(
        {"kind": "steps", "trajectory": trajectories["demo-hack-delete-test"], "labels": [1, -1, 0]}
    )
    raw.append(
        {"kind": "steps", "trajectory": trajectories["demo-honest-parser"], "labels": [1, 1, 1, 1]}
    )
    cases: dict[str, Case] = {}
    for item in raw:
        case = parse_case(item)
        cases.setdefault(case.key, case)
    return list(cases.values())


def seed_evaluation_set(*, reward_model: RewardModel) -> EvaluationSetVersion:
    """The demo set, attached to the demo reward model and evaluated on its active version, so
    the gate is visible on first run; idempotent."""
    from annotations.demo_data import demo_trajectories

    evaluation_set = EvaluationSet.objects.filter(slug=DEMO_SET).first()
    if evaluation_set is None:
        evaluation_set = evaluation_set_create(
            slug=DEMO_SET,
            name="Demo gate",
            user=None,
            description="Built from the demo trajectories: their commands, honest-over-hacked "
            "pairs and expert step labels.",
        )
    version = latest_set_version(evaluation_set)
    if version is None:
        trajectories = {t["id"]: t for t in demo_trajectories()}
        version = evaluation_set_add_cases(
            evaluation_set=evaluation_set,
            cases=demo_cases(trajectories),
            user=None,
            note="seed_demo",
        )
    evaluation_set_attach(reward_model=reward_model, evaluation_set=evaluation_set, user=None)
    if reward_model.active_version is not None:
        evaluate_version_on_set(version=reward_model.active_version, set_version=version)
    return version


def draft_comparison(*, reward_model: RewardModel) -> list[dict[str, Any]]:
    """The reward model's current inputs with its task type's *draft* policy (the rules as
    edited, not yet published) on every attached set, beside the active version's stored
    results: what publishing and compiling would change, before either happens. Nothing is
    stored (a draft has no version); the computation is the same deterministic one."""
    from rewards.scoring import SpecError, spec_digest, validate_spec
    from rewards.services.rewards import reward_model_spec
    from rewards.services.scoring import ResolvedVersion, scorer_for
    from safety.models import Policy
    from safety.services import DEFAULT_POLICY_SLUG, policy_document

    spec, _ = reward_model_spec(reward_model)
    policy = (
        reward_model.task_type.policy or Policy.objects.filter(slug=DEFAULT_POLICY_SLUG).first()
    )
    if policy is not None:
        spec["safety"]["policy"] = policy_document(policy)
    try:
        validate_spec(spec)
    except SpecError as exc:
        raise ValidationError({f"spec.{k}": v for k, v in exc.errors.items()}) from exc
    draft = ResolvedVersion(0, reward_model.slug, 0, spec_digest(spec), spec)
    scorer = scorer_for(draft)
    active = RewardModel.objects.select_related("active_version").get(pk=reward_model.pk)
    baseline = active.active_version
    out = []
    for set_version in attached_set_versions(reward_model):
        metrics, _seconds = _metrics_with(scorer, set_version)
        diff: dict[str, list[str]] = {"newly_caught": [], "newly_missed": []}
        base = None
        if baseline is not None:
            base = evaluate_version_on_set(version=baseline, set_version=set_version)
            diff = compare_outcomes(metrics["outcomes"], base.metrics["outcomes"])
        baseline_metrics = base.metrics if base is not None else None
        out.append(
            {"set_version": set_version, "metrics": metrics, "baseline": baseline_metrics, **diff}
        )
    return out
