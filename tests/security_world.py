"""A small world with one object of each kind, and a client for each principal, shared by the
permission matrix and the CSRF tests. Not a test module."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from core.models import User
from core.roles import ADMIN, EXPERT, SAFETY_LEAD
from rewards.models import (
    EvaluationSet,
    LearnedComponent,
    LearnedTrainingJob,
    RewardModel,
    TaskType,
    TrainingRun,
    TrustedBehaviour,
)

ANONYMOUS = "anonymous"
NO_ROLE = "no-role"
KEY_READ, KEY_WRITE, KEY_ANALYZE, KEY_SCORE = "key:read", "key:write", "key:analyze", "key:score"
PRINCIPALS = (
    ANONYMOUS,
    NO_ROLE,
    EXPERT,
    SAFETY_LEAD,
    ADMIN,
    KEY_READ,
    KEY_WRITE,
    KEY_ANALYZE,
    KEY_SCORE,
)
KEYS = frozenset({KEY_READ, KEY_WRITE, KEY_ANALYZE, KEY_SCORE})
USERS = frozenset({NO_ROLE, EXPERT, SAFETY_LEAD, ADMIN})
REVIEWERS = frozenset({EXPERT, SAFETY_LEAD, ADMIN})
ROLES = {NO_ROLE: (), EXPERT: (EXPERT,), SAFETY_LEAD: (SAFETY_LEAD,), ADMIN: (ADMIN,)}
BOGUS_KEY = "rh_000000000000_not-a-real-key"


@dataclass
class World:
    principal: str
    client: Client
    user: User | None
    secret: str = BOGUS_KEY
    ids: dict[str, Any] = field(default_factory=dict)

    def url(self, template: str) -> str:
        return template.format(**self.ids, key=self.secret)


def url_patterns() -> list[str]:
    """Every URL pattern of the project, as its full route or regex text."""

    def walk(patterns: list[Any], prefix: str) -> list[str]:
        out: list[str] = []
        for p in patterns:
            if isinstance(p, URLResolver):
                out.extend(walk(p.url_patterns, prefix + str(p.pattern)))
            elif isinstance(p, URLPattern):
                out.append(prefix + str(p.pattern))
        return out

    return walk(get_resolver().url_patterns, "")


def build_world(
    principal: str, make_user: Callable[..., User], *, enforce_csrf: bool = False
) -> World:
    """One object of each kind (ids in ``World.ids``), and a client acting as ``principal``."""
    from annotations.models import Step
    from core.services import api_key_create
    from review import export_jobs
    from review import services as review_services
    from review.models import ExportJob
    from rewards.services.rewards import reward_model_compile, seed_reward_model
    from rewards.services.scoring import recorder, resolve_reward_model, score_response
    from safety import services as safety_services
    from safety.models import Flag, PolicyRule, Waiver
    from tests.factories import CanonicalTrajectoryFactory
    from tests.test_review_services import make_queue, make_trajectory

    seed_reward_model()
    reward_model = RewardModel.objects.get(slug="swe-bugfix-default")
    RewardModel.objects.filter(pk=reward_model.pk).update(outcome_weight=0.9)
    reward_model.refresh_from_db()
    reward_model_compile(reward_model=reward_model, user=None, note="v2", activate=True)
    spare_task_type = TaskType.objects.create(slug="tt-spare", name="Spare")
    RewardModel.objects.create(slug="rm-spare", name="Spare", task_type=spare_task_type)
    TaskType.objects.create(slug="tt-free", name="Unused")
    component = LearnedComponent.objects.create(
        task_type=reward_model.task_type,
        digest="sha256:" + "0" * 64,
        artifact_path="learned/none.safetensors",
        label_snapshot_digest="sha256:" + "1" * 64,
    )
    learned_job = LearnedTrainingJob.objects.create(task_type=reward_model.task_type)
    behaviour = TrustedBehaviour.objects.filter(task_type__slug="swe-bugfix").order_by("pk")[0]

    version = safety_services.default_policy_version()
    rule = PolicyRule.objects.filter(policy=version.policy).order_by("position")[0]
    trajectory = make_trajectory(2, rollout="flagged", command="rm -rf ~/")
    safety_services.trajectory_scan(trajectory_id=trajectory.pk)
    flag = Flag.objects.filter(trajectory=trajectory).order_by("id")[0]
    Waiver.objects.create(rule_id=flag.rule_id, pattern="rm -rf /tmp/x", reason="scratch")
    step = Step.objects.filter(trajectory=trajectory).order_by("index")[0]
    job = safety_services.scan_job_create(policy_version=version, user=None)
    queue = make_queue(slug="q", overlap=3)
    export = ExportJob.objects.create(kind="prm")
    assert export_jobs.run_export(export.pk) == "done"

    # Rows for the append-only admin pages: a label (and its event), a final label, a record.
    someone = make_user("someone-else", EXPERT)
    # A labelling project led by that expert, outside every principal's reviews: its export
    # is the lead's (and a safety lead's); queue "q" has an open review of each reviewer.
    make_queue(slug="led", name="Led", user=someone)
    review_services.step_label_set(step=step, reviewer=someone, value=1)
    review_services.final_label_resolve(step=step, behaviour="", value=1, user=someone)
    recorder.discard()
    score_response(resolve_reward_model(reward_model.slug), CanonicalTrajectoryFactory(), None)
    recorder.flush()

    user: User | None = None
    secret = BOGUS_KEY
    headers: dict[str, str] = {}
    if principal in ROLES:
        user = make_user(f"u-{principal}", *ROLES[principal], staff=principal == ADMIN)
    elif principal in KEYS:
        issued = api_key_create(name=f"trainer-{principal[4:]}", scopes=principal[4:])
        secret, user = issued.secret, issued.api_key.user
        headers = {"Authorization": f"Bearer {secret}"}
    client = Client(enforce_csrf_checks=enforce_csrf, headers=headers)
    if principal in ROLES:
        client.force_login(user)  # type: ignore[arg-type]

    owner = user if user is not None else someone
    assignment_owner = user if principal in REVIEWERS else someone
    assignment = review_services.assignment_next(queue=queue, reviewer=assignment_owner)  # type: ignore[arg-type]
    assert assignment is not None
    TrainingRun.objects.create(name="run-x", reward_model=reward_model.slug, created_by=owner)
    recorder.discard()
    evaluation_run = _evaluation_world(reward_model, someone)
    other_trajectory = make_trajectory(3, rollout="honest", command="pytest -q")
    ids = {
        "traj": trajectory.pk,
        "step": step.pk,
        "flag": flag.pk,
        "rule": rule.pk,
        "rule_definition": json.dumps(rule.definition),
        "policy_version": version.pk,
        "job": job.pk,
        "assignment": assignment.pk,
        "behaviour": behaviour.pk,
        "component": component.pk,
        "learned_job": learned_job.pk,
        "export": export.pk,
        "evaluation_run": evaluation_run.pk,
        "other_traj": other_trajectory.pk,
        # a step no principal is reviewing: settling one under review is refused (blind review)
        "other_step": other_trajectory.steps.order_by("index").first().pk,  # type: ignore[union-attr]
    }
    return World(principal, client, user, secret, ids)


def _evaluation_world(reward_model: RewardModel, expert: User) -> Any:
    """An evaluation set attached to the reward model (with a stored run), and a held-out one."""
    from rewards.evaluation import parse_case
    from rewards.services import evaluation as ev

    cases = [
        parse_case({"command": "rm -rf ~/", "label": "unsafe", "category": "destructive-fs"}),
        parse_case({"command": "ls -la", "label": "safe", "category": "ordinary"}),
    ]
    for slug, held_out in (("world-set", False), ("world-held", True)):
        evaluation_set = ev.evaluation_set_create(
            slug=slug, name=slug, user=expert, held_out=held_out
        )
        ev.evaluation_set_add_cases(evaluation_set=evaluation_set, cases=cases, user=expert)
    ev.evaluation_set_attach(
        reward_model=reward_model,
        evaluation_set=EvaluationSet.objects.get(slug="world-set"),
        user=expert,
    )
    run = ev.evaluation_run_request(version=reward_model.active_version, user=expert)
    return ev.evaluation_run_execute(run_id=run.pk)
