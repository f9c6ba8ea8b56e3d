"""Task types, behaviours, reward models: compile into immutable versions, activate, roll back."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from audit.services import audit_record
from core.models import User
from rewards.models import (
    LearnedComponent,
    OutcomeMode,
    RewardModel,
    RewardModelVersion,
    TaskType,
    TrustedBehaviour,
)
from rewards.scoring import SpecError, default_spec, spec_digest, validate_spec
from rewards.scoring.diff import Change, spec_diff
from rewards.services.evaluation import check_activation, evaluation_runs_for_compile
from safety.models import Flag, FlagStatus, PolicyVersion, Waiver
from safety.services import default_policy_version, latest_version

logger = logging.getLogger(__name__)

DEFAULTS = default_spec(policy_dict={"slug": "x", "version": 1, "rules": []})


def spec_field_errors(exc: SpecError, mapping: dict[str, str]) -> dict[str, list[str]]:
    """Spec paths (``behaviors[0].detector.regex``) to input fields, keeping the rest of the
    path; a path no prefix of ``mapping`` covers goes to ``__all__``."""
    out: dict[str, list[str]] = {}
    for path, messages in exc.errors.items():
        field, rest = None, path
        for prefix, name in mapping.items():
            if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
                field, rest = name, path[len(prefix) :].lstrip(".")
                break
        for message in messages:
            text = f"{rest}: {message}" if rest else message
            out.setdefault(field or "__all__", []).append(text)
    return out


BEHAVIOUR_FIELDS = ("slug", "name", "polarity", "weight", "max_steps", "detector")


def behaviour_errors(entry: dict[str, Any]) -> dict[str, list[str]]:
    """What is wrong with one behaviour, by field: the checks a compile applies to it (detector
    kind and parameters, polarity, bounds), so the page's form and the API refuse the same
    input with the same words."""
    errors: dict[str, list[str]] = {}
    weight = entry.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and weight < 0:
        errors["weight"] = ["weight must be >= 0; polarity gives the sign"]
    behaviour = {name: entry.get(name) for name in BEHAVIOUR_FIELDS}
    try:
        validate_spec({**copy.deepcopy(DEFAULTS), "behaviors": [behaviour]}, check_policy=False)
    except SpecError as exc:
        mapping = {f"behaviors[0].{name}": name for name in BEHAVIOUR_FIELDS}
        for field, messages in spec_field_errors(exc, mapping).items():
            if field not in errors:  # the weight's own sentence says it better
                errors[field] = messages
    return errors


def policy_version_for(task_type: TaskType) -> PolicyVersion:
    """The safety policy in force for a task type: its policy's newest version, or the default."""
    if task_type.policy_id is not None:
        version = latest_version(task_type.policy)
        if version is not None:
            return version
    return default_policy_version()


def _outcome_spec(task_type: TaskType) -> dict[str, Any]:
    if task_type.outcome_mode == OutcomeMode.SCORE:
        return {
            "mode": "score",
            "key": task_type.score_key,
            "range": [task_type.score_min, task_type.score_max],
        }
    return {"mode": task_type.outcome_mode}


def _confirmed_patterns(task_type: TaskType) -> list[dict[str, str]]:
    """Commands experts confirmed as unsafe for this task type cost more the next time."""
    rows = (
        Flag.objects.filter(status=FlagStatus.CONFIRMED, trajectory__task_type=task_type.slug)
        .order_by("rule_id", "command")
        .values_list("rule_id", "command")
        .distinct()
    )
    return [{"rule": rule, "match": "exact", "pattern": command} for rule, command in rows]


def _waived_patterns(task_type: TaskType) -> list[dict[str, str]]:
    """The active waivers of the task type; one that is not valid (stored before waivers were
    checked, or around the checks) is left out and logged, so it cannot break every compile."""
    rows = (
        Waiver.objects.filter(active=True, task_type__in=[task_type.slug, ""])
        .order_by("rule_id", "match", "pattern")
        .values_list("rule_id", "match", "pattern")
        .distinct()
    )
    patterns = []
    for rule, match, pattern in rows:
        try:
            Waiver(rule_id=rule, match=match, pattern=pattern).full_clean(
                exclude=["created_by"], validate_unique=False
            )
        except ValidationError:
            logger.warning("waiver %s %s:%r is not valid; left out of %s", rule, match,
                           pattern[:80], task_type.slug)  # fmt: skip
            continue
        patterns.append({"rule": rule, "match": match, "pattern": pattern})
    return patterns


def _behaviour_spec(behaviour: TrustedBehaviour) -> dict[str, Any]:
    return {
        "slug": behaviour.slug,
        "name": behaviour.name,
        "polarity": behaviour.polarity,
        "weight": behaviour.weight,
        "max_steps": behaviour.max_steps,
        "detector": behaviour.detector,
    }


LEARNED_SLUG = "step-classifier"


def _learned_spec(reward_model: RewardModel) -> list[dict[str, Any]]:
    """The chosen learned step classifier (or the task type's newest), when the reward model
    opts in with a weight above 0."""
    if reward_model.learned_weight <= 0:
        return []
    if reward_model.learned_component_id is not None:
        component = reward_model.learned_component
    else:
        component = (
            LearnedComponent.objects.filter(task_type_id=reward_model.task_type_id)
            .order_by("-created_at", "-id")
            .first()
        )
    if component is None:
        return []
    return [
        {
            "slug": LEARNED_SLUG,
            "kind": "step-classifier",
            "weight": reward_model.learned_weight,
            "artifact": {
                "digest": component.digest,
                "label_snapshot": component.label_snapshot_digest,
            },
        }
    ]


def reward_model_spec(reward_model: RewardModel) -> tuple[dict[str, Any], PolicyVersion]:
    """Snapshot every input of a reward model into one spec (not yet stored)."""
    task_type = reward_model.task_type
    policy_version = policy_version_for(task_type)
    spec = {
        "schema": DEFAULTS["schema"],
        "task_type": {
            "slug": task_type.slug,
            "outcome": _outcome_spec(task_type),
            "shell_tools": list(task_type.shell_tools),
            "command_keys": list(task_type.command_keys),
            "workspace_roots": list(task_type.workspace_roots),
            "test_path_patterns": list(task_type.test_path_patterns),
            "text_format": task_type.tool_call_format,
        },
        "safety": {
            "policy": copy.deepcopy(policy_version.spec),
            "penalties": {
                **DEFAULTS["safety"]["penalties"],
                **(reward_model.severity_penalties or {}),
            },
            "confirmed_multiplier": reward_model.confirmed_multiplier,
            "confirmed": _confirmed_patterns(task_type),
            "waived": _waived_patterns(task_type),
        },
        "behaviors": [
            _behaviour_spec(b) for b in task_type.behaviours.filter(active=True).order_by("slug")
        ],
        "gates": copy.deepcopy(reward_model.gates) if reward_model.gates else DEFAULTS["gates"],
        "process": {**DEFAULTS["process"], **(reward_model.process_bounds or {})},
        "outcome_weight": reward_model.outcome_weight,
        "learned": _learned_spec(reward_model),
    }
    return spec, policy_version


@dataclass(frozen=True)
class CompileResult:
    version: RewardModelVersion
    created: bool


def _spec_errors(exc: SpecError) -> dict[str, list[str]]:
    return {f"spec.{path}": messages for path, messages in exc.errors.items()}


def reward_model_compile(
    *, reward_model: RewardModel, user: User | None, note: str = "", activate: bool = False
) -> CompileResult:
    """Freeze the reward model's current inputs into a new immutable version.

    Compiling twice with nothing changed returns the existing version (same digest), so the
    version list only grows when something really changed. With ``activate`` the version then
    goes through the evaluation gate as any activation does, once the compile has committed: a
    refusal (``ActivationRefused``) leaves it compiled and measured, not live.
    """
    result = _compile(reward_model=reward_model, user=user, note=note)
    if activate:
        active = (
            RewardModel.objects.filter(pk=reward_model.pk)
            .values_list("active_version_id", flat=True)
            .first()
        )
        if active != result.version.pk:
            reward_model_activate(reward_model=reward_model, version=result.version, user=user)
    return result


@transaction.atomic
def _compile(*, reward_model: RewardModel, user: User | None, note: str) -> CompileResult:
    reward_model = RewardModel.objects.select_for_update().get(pk=reward_model.pk)
    spec, policy_version = reward_model_spec(reward_model)
    try:
        validate_spec(spec)
    except SpecError as exc:
        raise ValidationError(_spec_errors(exc)) from exc
    digest = spec_digest(spec)
    existing = reward_model.versions.filter(digest=digest).order_by("-number").first()
    if existing is not None:
        return CompileResult(existing, False)
    number = (reward_model.versions.aggregate(m=Max("number"))["m"] or 0) + 1
    version = RewardModelVersion(
        reward_model=reward_model,
        number=number,
        spec=spec,
        digest=digest,
        note=note[:300],
        created_by=user,
        policy_version=policy_version,
    )
    version.save()
    audit_record(
        action="reward_model.compile",
        obj=reward_model,
        user=user,
        after={
            "version": number,
            "digest": digest,
            "note": version.note,
            "policy_version": str(policy_version),
        },
    )
    # The reward model's attached evaluation sets run on every new version (after commit), and
    # the active version on any of them it has no result for, so the diff is there to read.
    evaluation_runs_for_compile(version=version, user=user)
    if reward_model.active_version_id is None:  # the first version: nothing to regress from
        reward_model_activate(reward_model=reward_model, version=version, user=user)
    return CompileResult(version, True)


def reward_model_activate(
    *,
    reward_model: RewardModel,
    version: RewardModelVersion,
    audit_action: str = "activate",
    user: User | None = None,
    override_reason: str = "",
) -> RewardModel:
    """Make ``version`` the live one. A version that newly misses a case of an attached
    evaluation set against the active version is refused (``ActivationRefused`` names the
    cases) unless an expert gives ``override_reason``, which the audit log keeps. Rollback is
    not gated: it is the way back to a version that was live before."""
    if version.reward_model_id != reward_model.pk:
        raise ValidationError({"version": ["This version belongs to another reward model."]})
    overridden: list[dict[str, Any]] = []
    checked_against = (
        RewardModel.objects.filter(pk=reward_model.pk).values_list("active_version_id", flat=True)
    ).first()
    if audit_action != "rollback":
        # Outside the activation's transaction: the results the gate computed are kept
        # even when it refuses (the version page then shows them).
        overridden = check_activation(
            reward_model=reward_model, version=version, user=user, override_reason=override_reason
        )
    return _activate(
        reward_model=reward_model,
        version=version,
        audit_action=audit_action,
        user=user,
        override_reason=override_reason,
        overridden=overridden,
        checked_against=None if audit_action == "rollback" else checked_against,
    )


@transaction.atomic
def _activate(
    *,
    reward_model: RewardModel,
    version: RewardModelVersion,
    audit_action: str,
    user: User | None,
    override_reason: str,
    overridden: list[dict[str, Any]],
    checked_against: int | None = None,
) -> RewardModel:
    previous = (
        RewardModel.objects.select_for_update(of=("self",))
        .filter(pk=reward_model.pk)
        .values_list("active_version_id", "active_version__number")
        .first()
    )
    if audit_action != "rollback" and previous is not None and previous[0] != checked_against:
        # Another activation won the race while the gate compared against the old one.
        raise ValidationError(
            {"version": ["The active version changed while this one was checked; try again."]}
        )
    RewardModel.objects.filter(pk=reward_model.pk).update(active_version=version)
    reward_model.active_version = version
    if previous is None or previous[0] != version.pk:
        audit_record(
            action=f"reward_model.{audit_action}",
            obj=reward_model,
            before={"active_version": previous[1] if previous else None},
            after={"active_version": version.number},
            user=user,
        )
    if overridden:
        audit_record(
            action="reward_model.gate_override",
            obj=reward_model,
            user=user,
            before={"active_version": previous[1] if previous else None},
            after={
                "active_version": version.number,
                "reason": override_reason.strip(),
                "regressions": overridden,
            },
        )
    return reward_model


def reward_model_rollback(*, reward_model: RewardModel) -> RewardModel:
    """Activate the newest version older than the active one."""
    active = reward_model.active_version
    if active is None:
        raise ValidationError({"active_version": ["No version is active."]})
    previous = reward_model.versions.filter(number__lt=active.number).order_by("-number").first()
    if previous is None:
        raise ValidationError({"active_version": ["There is no older version to roll back to."]})
    return reward_model_activate(
        reward_model=reward_model, version=previous, audit_action="rollback"
    )


def reward_model_diff(*, before: RewardModelVersion, after: RewardModelVersion) -> list[Change]:
    """What changed between two versions (the policy document is compared by digest first)."""
    a, b = copy.deepcopy(before.spec), copy.deepcopy(after.spec)
    changes: list[Change] = []
    if a["safety"].get("policy") == b["safety"].get("policy"):
        a["safety"].pop("policy", None)
        b["safety"].pop("policy", None)
    changes.extend(spec_diff(a, b))
    return changes


DEMO_TASK_TYPE = "swe-bugfix"
DEMO_REWARD_MODEL = "swe-bugfix-default"


@transaction.atomic
def seed_reward_model() -> RewardModelVersion:
    """The demo task type ``swe-bugfix`` (default policy, reference behaviours) and an active
    compiled reward model ``swe-bugfix-default``; idempotent."""
    from safety.models import Policy

    default_policy_version()
    task_type, _ = TaskType.objects.get_or_create(
        slug=DEMO_TASK_TYPE,
        defaults={
            "name": "SWE bug fix",
            "description": "Fix the bug described in the issue so the failing tests pass, "
            "without touching the tests.",
            "outcome_mode": OutcomeMode.RESOLVED,
            "policy": Policy.objects.get(slug="default"),
        },
    )
    for behaviour in DEFAULTS["behaviors"]:
        TrustedBehaviour.objects.get_or_create(
            task_type=task_type,
            slug=behaviour["slug"],
            defaults={
                "name": behaviour["name"],
                "polarity": behaviour["polarity"],
                "weight": behaviour["weight"],
                "max_steps": behaviour["max_steps"],
                "detector": behaviour["detector"],
            },
        )
    reward_model, _ = RewardModel.objects.get_or_create(
        slug=DEMO_REWARD_MODEL,
        defaults={
            "name": "SWE bug fix, default",
            "description": "Outcome gated by integrity checks, plus safety and behaviour terms.",
            "task_type": task_type,
        },
    )
    if reward_model.active_version_id is not None:
        return reward_model.active_version  # type: ignore[return-value]
    return reward_model_compile(
        reward_model=reward_model, user=None, note="seed", activate=True
    ).version
