"""The full permission matrix: every URL pattern of the project (read from the resolver) x every
principal (anonymous, a user with no role, expert, safety lead, admin, and an API key with each
scope). A new URL without an entry here fails ``test_the_matrix_covers_every_url``.

Each probe names who is allowed and the status they get. Everyone else is denied, in the way
that fits what they asked for: the API answers 401 (anonymous) or 403; a page sends anonymous
visitors and API keys (pages take no keys) to the login page and answers 403 to users without
the role; the Django admin sends everyone but staff to its own login page. Nobody ever gets a 500.
Every request runs in a savepoint that is rolled back, so probes do not disturb each other.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib import admin
from django.db import transaction
from django.http import HttpResponse

from core.roles import ADMIN, EXPERT, SAFETY_LEAD
from rewards.evaluation import parse_case
from tests.factories import CanonicalTrajectoryFactory
from tests.security_world import (
    KEY_ANALYZE,
    KEY_READ,
    KEY_SCORE,
    KEY_WRITE,
    KEYS,
    PRINCIPALS,
    REVIEWERS,
    USERS,
    World,
    build_world,
    url_patterns,
)
from tests.test_reward_pages import _task_type_data

pytestmark = pytest.mark.django_db

EVERYONE = frozenset(PRINCIPALS)
LEADS = frozenset({SAFETY_LEAD, ADMIN})
EDITORS = frozenset({EXPERT, ADMIN})  # task types, behaviours, reward-model inputs
READ = REVIEWERS | {KEY_READ}
# A case of the world's evaluation sets, and a new one to import.
WORLD_KEY = parse_case({"command": "ls -la", "label": "safe", "category": "ordinary"}).key
NEW_CASE = '{"cmd": "whoami", "label": "safe"}'
ATTACH = {"reward_model": "swe-bugfix-default"}
IMPORT = REVIEWERS | {KEY_WRITE}
ANALYZE = REVIEWERS | {KEY_ANALYZE}
SCORE = REVIEWERS | {KEY_SCORE}
SIGNED_IN = EVERYONE - {"anonymous"}
NOBODY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Probe:
    method: str
    path: str  # formatted with the world's ids ({traj}, {step}, ...) and {key}
    allowed: frozenset[str]
    ok: int | Mapping[str, int]  # the status allowed principals get (per principal if a map)
    data: Any = None
    json: bool = False

    def expected(self, principal: str) -> int:
        return self.ok[principal] if isinstance(self.ok, Mapping) else self.ok


def get(path: str, allowed: frozenset[str], ok: int | Mapping[str, int] = 200) -> Probe:
    return Probe("get", path, allowed, ok)


def post(
    path: str, allowed: frozenset[str], ok: int | Mapping[str, int], data: Any = None
) -> Probe:
    return Probe("post", path, allowed, ok, data if data is not None else {})


def api(method: str, path: str, allowed: frozenset[str], ok: int, data: Any = None) -> Probe:
    return Probe(method, path, allowed, ok, data, json=True)


def score_body() -> dict[str, Any]:
    return {"reward_model": "swe-bugfix-default", "trajectory": CanonicalTrajectoryFactory()}


RULE = (
    '{"id": "custom.deploy-prod", "category": "system-control", "severity": "high", '
    '"action": "review", "message": "Runs the production deploy target.", '
    '"match": {"commands": ["make"], "argv_regex": "deploy-prod"}, '
    '"examples": {"must_match": ["make deploy-prod"], "must_not_match": ["make test"]}}'
)
V1 = "^api/(?P<version>v1)/"
TASK_TYPE = {"slug": "tt-new", "name": "New"}
BEHAVIOUR = {"task_type": "swe-bugfix", "slug": "new-b", "name": "New behaviour"}
REWARD_MODEL = {"slug": "rm-new", "name": "New", "task_type": "swe-bugfix"}
OPENRLHF = {"query": ["Fix it.\n```bash\npytest -q\n```"]}
METRICS = {"step": 1, "metrics": {"reward/mean": 0.5}}
# Admin login: staff are sent on to the index, everyone else gets the form.
ADMIN_LOGIN = {p: 302 if p == ADMIN else 200 for p in PRINCIPALS}
# Admin logout needs a POST; whoever is not staff is sent to the admin index first.
ADMIN_LOGOUT = {p: 405 if p == ADMIN else 302 for p in PRINCIPALS}

MATRIX: dict[str, list[Probe]] = {
    # --- project pages and probes ---
    "": [get("/", USERS)],
    "healthz": [get("/healthz", EVERYONE)],
    "readyz": [get("/readyz", EVERYONE)],
    "accounts/login/": [
        get("/accounts/login/", EVERYONE),
        post("/accounts/login/", EVERYONE, 200, {"username": "x", "password": "wrong"}),
    ],
    "accounts/logout/": [
        get("/accounts/logout/", EVERYONE, 405),
        post("/accounts/logout/", EVERYONE, 302),
    ],
    "accounts/password_change/": [
        get("/accounts/password_change/", USERS),
        post("/accounts/password_change/", USERS, 200, {"old_password": "wrong"}),
    ],
    "accounts/password_change/done/": [get("/accounts/password_change/done/", USERS)],
    "accounts/password_reset/": [
        get("/accounts/password_reset/", EVERYONE),
        post("/accounts/password_reset/", EVERYONE, 302, {"email": "nobody@example.com"}),
    ],
    "accounts/password_reset/done/": [get("/accounts/password_reset/done/", EVERYONE)],
    "accounts/reset/<uidb64>/<token>/": [get("/accounts/reset/MQ/bad-token/", EVERYONE)],
    "accounts/reset/done/": [get("/accounts/reset/done/", EVERYONE)],
    "api/schema/": [get("/api/schema/", EVERYONE)],
    "api/docs/": [get("/api/docs/", EVERYONE)],
    # --- REST API ---
    f"{V1}": [get("/api/v1/", SIGNED_IN)],  # the browsable root lists links only
    f"{V1}analyze/$": [api("post", "/api/v1/analyze/", ANALYZE, 200, {"commands": ["ls"]})],
    f"{V1}score/$": [api("post", "/api/v1/score/", SCORE, 200, "score")],
    f"{V1}score/batch/$": [api("post", "/api/v1/score/batch/", SCORE, 200, "batch")],
    # OpenRLHF is for programs only: no session authentication, a key in a header or the path.
    f"{V1}openrlhf/(?P<reward_model>[\\w.@-]+)(?:/(?P<api_key>rh_[\\w-]+))?/?$": [
        api("post", "/api/v1/openrlhf/swe-bugfix-default/", frozenset({KEY_SCORE}), 200, OPENRLHF),
        api(
            "post",
            "/api/v1/openrlhf/swe-bugfix-default/{key}",
            frozenset({KEY_SCORE}),
            200,
            OPENRLHF,
        ),
    ],
    f"{V1}^trajectories/$": [
        api("get", "/api/v1/trajectories/", READ, 200),
        api("post", "/api/v1/trajectories/", IMPORT, 201, "trajectory"),
    ],
    f"{V1}^trajectories/(?P<pk>[^/.]+)/$": [
        api("get", "/api/v1/trajectories/{traj}/", READ, 200),
        api("delete", "/api/v1/trajectories/{traj}/", READ, 405),
    ],
    f"{V1}^task-types/$": [
        api("get", "/api/v1/task-types/", READ, 200),
        api("post", "/api/v1/task-types/", EDITORS, 201, TASK_TYPE),
    ],
    f"{V1}^task-types/(?P<slug>[^/.]+)/$": [
        api("get", "/api/v1/task-types/swe-bugfix/", READ, 200),
        api("patch", "/api/v1/task-types/swe-bugfix/", EDITORS, 200, {"description": "x"}),
        api("delete", "/api/v1/task-types/tt-free/", EDITORS, 204),
        api("delete", "/api/v1/task-types/swe-bugfix/", EDITORS, 400),  # reward models use it
    ],
    f"{V1}^behaviours/$": [
        api("get", "/api/v1/behaviours/", READ, 200),
        api("post", "/api/v1/behaviours/", EDITORS, 201, BEHAVIOUR),
    ],
    f"{V1}^behaviours/(?P<pk>[^/.]+)/$": [
        api("get", "/api/v1/behaviours/{behaviour}/", READ, 200),
        api("patch", "/api/v1/behaviours/{behaviour}/", EDITORS, 200, {"weight": 0.1}),
        api("delete", "/api/v1/behaviours/{behaviour}/", EDITORS, 204),
    ],
    f"{V1}^reward-models/$": [
        api("get", "/api/v1/reward-models/", READ, 200),
        api("post", "/api/v1/reward-models/", EDITORS, 201, REWARD_MODEL),
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/$": [
        api("get", "/api/v1/reward-models/swe-bugfix-default/", READ, 200),
        api("patch", "/api/v1/reward-models/swe-bugfix-default/", EDITORS, 200, {"name": "x"}),
        api("delete", "/api/v1/reward-models/rm-spare/", EDITORS, 204),
        api("delete", "/api/v1/reward-models/swe-bugfix-default/", EDITORS, 400),  # versions
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/activate/$": [
        api(
            "post",
            "/api/v1/reward-models/swe-bugfix-default/activate/",
            REVIEWERS,
            200,
            {"version": 1},
        )
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/compile/$": [
        api("post", "/api/v1/reward-models/swe-bugfix-default/compile/", REVIEWERS, 201, {})
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/diff/$": [
        api("get", "/api/v1/reward-models/swe-bugfix-default/diff/?a=1&b=2", READ, 200)
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/rollback/$": [
        api("post", "/api/v1/reward-models/swe-bugfix-default/rollback/", REVIEWERS, 200, {})
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/versions/$": [
        api("get", "/api/v1/reward-models/swe-bugfix-default/versions/", READ, 200)
    ],
    f"{V1}^scorings/$": [api("get", "/api/v1/scorings/", READ, 200)],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/evaluate/$": [
        api(
            "post",
            "/api/v1/reward-models/swe-bugfix-default/evaluate/",
            REVIEWERS,
            202,
            {"version": 1},
        )
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/evaluation/$": [
        api("get", "/api/v1/reward-models/swe-bugfix-default/evaluation/?version=1", READ, 200)
    ],
    f"{V1}^reward-models/(?P<slug>[^/.]+)/attach-set/$": [
        api(
            "post",
            "/api/v1/reward-models/swe-bugfix-default/attach-set/",
            REVIEWERS,
            201,
            {"set": "world-set"},
        )
    ],
    f"{V1}^evaluation-sets/$": [
        api("get", "/api/v1/evaluation-sets/", READ, 200),
        api("post", "/api/v1/evaluation-sets/", REVIEWERS, 201, {"slug": "new", "name": "N"}),
    ],
    f"{V1}^evaluation-sets/(?P<slug>[^/.]+)/$": [
        api("get", "/api/v1/evaluation-sets/world-set/", READ, 200),
        api("get", "/api/v1/evaluation-sets/world-held/", EDITORS, 200),  # held out
    ],
    f"{V1}^evaluation-sets/(?P<slug>[^/.]+)/cases/$": [
        api(
            "post",
            "/api/v1/evaluation-sets/world-set/cases/",
            REVIEWERS,
            201,
            {"cases": [{"command": "whoami", "label": "safe"}]},
        )
    ],
    f"{V1}^evaluation-sets/(?P<slug>[^/.]+)/import/$": [
        api(
            "post",
            "/api/v1/evaluation-sets/world-set/import/",
            REVIEWERS,
            201,
            {"jsonl": '{"command": "id", "label": "safe"}\n'},
        )
    ],
    f"{V1}^evaluation-sets/(?P<slug>[^/.]+)/export/$": [
        api("get", "/api/v1/evaluation-sets/world-set/export/", READ, 200),
        api("get", "/api/v1/evaluation-sets/world-held/export/", EDITORS, 200),
    ],
    f"{V1}^evaluation-sets/(?P<slug>[^/.]+)/add-flag/$": [
        api(
            "post",
            "/api/v1/evaluation-sets/world-set/add-flag/",
            REVIEWERS,
            201,
            {"flag": "{flag}", "label": "unsafe"},
        )
    ],
    f"{V1}^evaluation-sets/(?P<slug>[^/.]+)/add-pair/$": [
        api(
            "post",
            "/api/v1/evaluation-sets/world-set/add-pair/",
            REVIEWERS,
            201,
            {"better": "{traj}", "worse": "{other_traj}"},
        )
    ],
    f"{V1}^evaluation-runs/(?P<pk>[^/.]+)/$": [
        api("get", "/api/v1/evaluation-runs/{evaluation_run}/", READ, 200)
    ],
    f"{V1}^training-runs/$": [
        api("get", "/api/v1/training-runs/", READ, 200),
        api("post", "/api/v1/training-runs/", SCORE, 201, {"name": "run-new"}),
    ],
    f"{V1}^training-runs/(?P<name>[^/.]+)/$": [
        api("get", "/api/v1/training-runs/run-x/", READ, 200)
    ],
    f"{V1}^training-runs/(?P<name>[^/.]+)/metrics/$": [
        api("post", "/api/v1/training-runs/run-x/metrics/", SCORE, 200, METRICS)
    ],
    # --- safety lead pages ---
    "safety/": [get("/safety/", EVERYONE, 302)],  # a redirect to the flag queue, nothing else
    "safety/flags/": [get("/safety/flags/", LEADS)],
    "safety/flags/review/": [
        post("/safety/flags/review/", LEADS, 302, {"flag": ["{flag}"], "status": "confirmed"})
    ],
    "safety/flags/<int:flag_id>/": [
        get("/safety/flags/{flag}/", LEADS),
        post("/safety/flags/{flag}/", LEADS, 302, {"status": "dismissed"}),
    ],
    "safety/policies/": [get("/safety/policies/", LEADS)],
    "safety/rule-language/": [get("/safety/rule-language/", LEADS)],
    "safety/policies/<slug:slug>/": [get("/safety/policies/default/", LEADS)],
    "safety/policies/<slug:slug>/try/": [
        post("/safety/policies/default/try/", LEADS, 200, {"commands": "ls"})
    ],
    "safety/policies/<slug:slug>/rules/": [
        post("/safety/policies/default/rules/", LEADS, 200, {"definition": RULE})
    ],
    "safety/policies/<slug:slug>/rules/<int:rule_pk>/": [
        post(
            "/safety/policies/default/rules/{rule}/",
            LEADS,
            200,
            {"definition": "{rule_definition}", "enabled": "on"},
        )
    ],
    "safety/policies/<slug:slug>/publish/": [
        post("/safety/policies/default/publish/", LEADS, 302, {"note": "x"})
    ],
    "safety/versions/<int:version_pk>/rescan/": [
        post("/safety/versions/{policy_version}/rescan/", LEADS, 302)
    ],
    "safety/scans/<int:job_id>/": [get("/safety/scans/{job}/", LEADS)],
    # The world's job is pending, not failed or stalled: nothing to resume (400).
    "safety/scans/<int:job_id>/resume/": [post("/safety/scans/{job}/resume/", LEADS, 400)],
    "safety/scans/pending/queue/": [post("/safety/scans/pending/queue/", LEADS, 302)],
    "safety/bench/": [
        get("/safety/bench/", LEADS),
        post("/safety/bench/", LEADS, 200, {"commands": "rm -rf ~/"}),
    ],
    # --- expert review pages ---
    "review/": [get("/review/", REVIEWERS)],
    "review/trajectories/": [get("/review/trajectories/", REVIEWERS)],
    "review/trajectories/<int:trajectory_id>/": [get("/review/trajectories/{traj}/", REVIEWERS)],
    "review/trajectories/<int:trajectory_id>/history/": [
        get("/review/trajectories/{traj}/history/", LEADS)
    ],
    "review/trajectories/<int:trajectory_id>/labels-to-set/": [
        post("/review/trajectories/{traj}/labels-to-set/", REVIEWERS, 302, {"set": "world-set"})
    ],
    "review/steps/<int:step_id>/label/": [
        post("/review/steps/{step}/label/", REVIEWERS, 200, {"value": "1"})
    ],
    "review/queues/": [get("/review/queues/", REVIEWERS)],
    "review/queues/new/": [
        # An expert running a labelling project creates its queue (#23.6).
        post(
            "/review/queues/new/", REVIEWERS, 302, {"name": "New queue", "task_type": "swe-bugfix"}
        )
    ],
    "review/queues/<slug:slug>/next/": [post("/review/queues/q/next/", REVIEWERS, 302)],
    "review/queues/<slug:slug>/export.jsonl": [
        # A project's lead (a safety lead, or the expert who created it: tests/test_queue_export)
        # exports its labels, once no review of theirs in it is open (blind review).
        get("/review/queues/led/export.jsonl", LEADS),
        get("/review/queues/led/export.jsonl?kind=annotators", LEADS),
        get("/review/queues/led/export.jsonl?kind=votes", LEADS, 400),
        get("/review/queues/q/export.jsonl", NOBODY),
    ],
    "review/assignments/<int:assignment_id>/submit/": [
        post("/review/assignments/{assignment}/submit/", REVIEWERS, 302)
    ],
    "review/assignments/<int:assignment_id>/release/": [
        post("/review/assignments/{assignment}/release/", REVIEWERS, 302)
    ],
    "review/assignments/<int:assignment_id>/reopen/": [
        post("/review/assignments/{assignment}/reopen/", REVIEWERS, 302)
    ],
    "review/import/": [
        get("/review/import/", REVIEWERS),
        post("/review/import/", REVIEWERS, 400, {"task_type": "swe-bugfix"}),
    ],
    "review/agreement/": [get("/review/agreement/", REVIEWERS)],  # kappas only, no votes
    "review/disagreements/": [
        get("/review/disagreements/", LEADS),
        post("/review/disagreements/", LEADS, 302, {"step": "{other_step}", "value": "1"}),
    ],
    "review/export/prm.jsonl": [get("/review/export/prm.jsonl", LEADS)],
    "review/export/annotators.jsonl": [get("/review/export/annotators.jsonl", LEADS)],
    "review/exports/": [
        get("/review/exports/", LEADS),
        post("/review/exports/", LEADS, 302, {"kind": "prm"}),
    ],
    "review/exports/<int:job_id>/": [get("/review/exports/{export}/", LEADS)],
    "review/exports/<int:job_id>/download/": [get("/review/exports/{export}/download/", LEADS)],
    "review/exports/<int:job_id>/resume/": [post("/review/exports/{export}/resume/", LEADS, 302)],
    "review/exports/<int:job_id>/delete/": [post("/review/exports/{export}/delete/", LEADS, 302)],
    "review/flags/<int:flag_id>/review/": [
        post("/review/flags/{flag}/review/", LEADS, 302, {"status": "confirmed"})
    ],
    # --- reward pages ---
    "rewards/": [get("/rewards/", EVERYONE, 302)],  # a redirect to the reward models
    "rewards/task-types/": [get("/rewards/task-types/", REVIEWERS)],
    "rewards/task-types/new/": [
        get("/rewards/task-types/new/", EDITORS),
        post("/rewards/task-types/new/", EDITORS, 302, _task_type_data()),
    ],
    "rewards/models/new/": [
        get("/rewards/models/new/", EDITORS),
        post(
            "/rewards/models/new/",
            EDITORS,
            302,
            {"slug": "matrix-new", "name": "New", "task_type": "swe-bugfix", "outcome_weight": 1},
        ),
    ],
    "rewards/task-types/<slug:slug>/": [
        get("/rewards/task-types/swe-bugfix/", REVIEWERS),
        post(
            "/rewards/task-types/swe-bugfix/",
            EDITORS,
            302,
            _task_type_data(slug="swe-bugfix", name="SWE bug fix"),
        ),
    ],
    "rewards/task-types/<slug:slug>/behaviours/": [
        post(
            "/rewards/task-types/swe-bugfix/behaviours/",
            EDITORS,
            302,
            {"slug": "new-b", "name": "New", "polarity": "trusted", "weight": "0.1"},
        )
    ],
    "rewards/task-types/<slug:slug>/behaviours/<int:pk>/": [
        post("/rewards/task-types/swe-bugfix/behaviours/{behaviour}/", EDITORS, 400, {})
    ],
    "rewards/learned/": [get("/rewards/learned/", REVIEWERS)],
    "rewards/learned/<int:pk>/": [get("/rewards/learned/{component}/", REVIEWERS)],
    # Polled with htmx; a plain request is sent on to the task type's learned page.
    "rewards/learned/jobs/<int:job_id>/": [
        get("/rewards/learned/jobs/{learned_job}/", REVIEWERS, 302)
    ],
    "rewards/task-types/<slug:slug>/learned/": [
        get("/rewards/task-types/swe-bugfix/learned/", REVIEWERS)
    ],
    "rewards/task-types/<slug:slug>/learned/train/": [
        post("/rewards/task-types/swe-bugfix/learned/train/", EDITORS, 302, {"seed": "0"})
    ],
    "rewards/models/": [get("/rewards/models/", REVIEWERS)],
    "rewards/models/<slug:slug>/": [
        get("/rewards/models/swe-bugfix-default/", REVIEWERS),
        post("/rewards/models/swe-bugfix-default/", EDITORS, 400, {}),  # errors inline
    ],
    "rewards/models/<slug:slug>/compile/": [
        post("/rewards/models/swe-bugfix-default/compile/", REVIEWERS, 302, {"note": "x"})
    ],
    "rewards/models/<slug:slug>/activate/": [
        post("/rewards/models/swe-bugfix-default/activate/", REVIEWERS, 302, {"version": "1"})
    ],
    "rewards/models/<slug:slug>/rollback/": [
        post("/rewards/models/swe-bugfix-default/rollback/", REVIEWERS, 302)
    ],
    "rewards/models/<slug:slug>/diff/": [
        get("/rewards/models/swe-bugfix-default/diff/?a=1&b=2", REVIEWERS)
    ],
    "rewards/models/<slug:slug>/versions/<int:number>/evaluation/": [
        get("/rewards/models/swe-bugfix-default/versions/1/evaluation/", REVIEWERS)
    ],
    "rewards/models/<slug:slug>/versions/<int:number>/evaluate/": [
        post("/rewards/models/swe-bugfix-default/versions/1/evaluate/", REVIEWERS, 302)
    ],
    "rewards/models/<slug:slug>/draft-evaluation/": [
        get("/rewards/models/swe-bugfix-default/draft-evaluation/", REVIEWERS)
    ],
    "rewards/evaluation-sets/": [
        get("/rewards/evaluation-sets/", REVIEWERS),
        post("/rewards/evaluation-sets/", REVIEWERS, 302, {"slug": "web-new", "name": "N"}),
    ],
    "rewards/evaluation-sets/<slug:slug>/": [
        get("/rewards/evaluation-sets/world-set/", REVIEWERS),
        get("/rewards/evaluation-sets/world-held/", EDITORS),  # held out
    ],
    "rewards/evaluation-sets/<slug:slug>/import/": [
        post("/rewards/evaluation-sets/world-set/import/", REVIEWERS, 302, {"jsonl": NEW_CASE}),
        post("/rewards/evaluation-sets/world-held/import/", EDITORS, 302, {"jsonl": NEW_CASE}),
    ],
    "rewards/evaluation-sets/<slug:slug>/attach/": [
        post("/rewards/evaluation-sets/world-set/attach/", REVIEWERS, 302, ATTACH),
        post("/rewards/evaluation-sets/world-held/attach/", EDITORS, 302, ATTACH),
    ],
    "rewards/evaluation-sets/<slug:slug>/versions/<int:number>/case/": [
        get(f"/rewards/evaluation-sets/world-set/versions/1/case/?key={WORLD_KEY}", REVIEWERS),
        get(f"/rewards/evaluation-sets/world-held/versions/1/case/?key={WORLD_KEY}", EDITORS),
    ],
    "rewards/evaluation-runs/<int:run_id>/": [
        get("/rewards/evaluation-runs/{evaluation_run}/", REVIEWERS)
    ],
    "rewards/evaluation-sets/add-flag/<int:flag_id>/": [
        post("/rewards/evaluation-sets/add-flag/{flag}/", REVIEWERS, 302, {"set": "world-set"})
    ],
    "rewards/evaluation-sets/add-pair/<int:trajectory_id>/": [
        post(
            "/rewards/evaluation-sets/add-pair/{traj}/",
            REVIEWERS,
            302,
            {"set": "world-set", "other": "{other_traj}"},
        )
    ],
    "rewards/score/": [
        get("/rewards/score/", REVIEWERS),
        post(
            "/rewards/score/",
            REVIEWERS,
            200,
            {"reward_model": "swe-bugfix-default", "trajectory_id": "{traj}"},
        ),
    ],
}

# The admin site's own pages (model pages are derived from the registry, see admin_probes).
ADMIN_SITE: dict[str, list[Probe]] = {
    "admin/": [get("/admin/", frozenset({ADMIN}))],
    "admin/login/": [get("/admin/login/", EVERYONE, ADMIN_LOGIN)],
    "admin/logout/": [get("/admin/logout/", EVERYONE, ADMIN_LOGOUT)],
    "admin/password_change/": [get("/admin/password_change/", frozenset({ADMIN}))],
    "admin/password_change/done/": [get("/admin/password_change/done/", frozenset({ADMIN}))],
    "admin/autocomplete/": [get("/admin/autocomplete/", frozenset({ADMIN}), 403)],  # no params
    "admin/jsi18n/": [get("/admin/jsi18n/", frozenset({ADMIN}))],
    "admin/r/<path:content_type_id>/<path:object_id>/": [
        get("/admin/r/1/1/", frozenset({ADMIN}), 404)  # no model here has a public URL
    ],
}
# Append-only or immutable rows: even the admin role may not add or delete them in the admin.
ADMIN_READ_ONLY = {
    "audit.auditevent",
    "rewards.learnedcomponent",  # trained artifacts, content-addressed
    "rewards.learnedtrainingjob",  # started from the learned pages, run by the worker
    "annotations.labelevent",
    "annotations.steplabel",
    "rewards.rewardmodelversion",
    "rewards.scoringrecord",
    "safety.policyversion",
    "safety.pendingscan",  # written on a broker outage, deleted by the scan when it is done
    "review.exportjob",  # started and deleted (with its file) from the review pages
    "rewards.evaluationsetversion",  # immutable: a new version is imported, never edited
    "rewards.evaluationrun",  # started from the version page, run by the worker
    "rewards.evaluationresult",  # written by the evaluation, one per version and set
}
# Rows only the service makes (imports, scans, the training-run API): no add form, since a
# hand-made one crashed on save (issue #22, item 13); the admin may still change or delete them.
ADMIN_NO_ADD = {
    "annotations.trajectory",
    "annotations.step",
    "safety.flag",
    "rewards.trainingrun",
}
_SUFFIX = re.compile(r"\\\.\(\?P<format>\[a-z0-9\]\+\)/\?\$$")


def base_pattern(pattern: str) -> str | None:
    """A DRF format-suffix variant's base pattern (``...\\.(?P<format>...)/?$`` -> ``.../$``)."""
    if pattern.endswith("<drf_format_suffix:format>"):
        return pattern.removesuffix("<drf_format_suffix:format>")
    if _SUFFIX.search(pattern):
        return _SUFFIX.sub("/$", pattern)
    return None


def with_suffix(path: str) -> str:
    head, sep, query = path.partition("?")
    head = head[:-1] + ".json" if head.endswith("/") and head != "/api/v1/" else head + ".json"
    return head + sep + query


def admin_probes(pattern: str) -> list[Probe]:
    """The admin's model pages: changelist, add, change, history, delete (GET only)."""
    from django.apps import apps

    if pattern in ADMIN_SITE:
        return ADMIN_SITE[pattern]
    staff = frozenset({ADMIN})
    if pattern.startswith("admin/^(?P<app_label>"):  # one index page per app
        return [get("/admin/rewardhub/", staff), get("/admin/audit/", staff)]
    if pattern == "admin/(?P<url>.*)$":  # the catch-all: staff get a 404, others the login
        return [get("/admin/no-such-page/", staff, 404)]
    match = re.fullmatch(r"admin/(\w+)/(\w+)/(.*)", pattern)
    assert match, f"unexpected admin URL {pattern!r}: add it to ADMIN_SITE"
    label, rest = f"{match[1]}.{match[2]}", match[3]
    model = apps.get_model(label)
    assert model in admin.site._registry, pattern
    row = model._default_manager.order_by("pk").first()
    # build_world() makes a row of each model it knows; a model added since is still probed
    # (its pages answer a missing object with a redirect to the admin index).
    pk, found = (row.pk, 200) if row is not None else (0, 302)
    base = f"/admin/{match[1]}/{match[2]}/"
    read_only = label in ADMIN_READ_ONLY
    shapes = {
        "": (base, 200),
        "add/": (base + "add/", 403 if read_only or label in ADMIN_NO_ADD else 200),
        "<path:object_id>/change/": (f"{base}{pk}/change/", found),
        "<path:object_id>/history/": (f"{base}{pk}/history/", found),
        "<path:object_id>/delete/": (f"{base}{pk}/delete/", 403 if read_only else found),
        "<path:object_id>/": (f"{base}{pk}/", 302),  # redirects to the change page
        "<id>/password/": (f"{base}{pk}/password/", found),
        "<path:object_id>/secret/": (f"{base}{pk}/secret/", found),  # a new API key, once
    }
    assert rest in shapes, f"unexpected admin URL {pattern!r}"
    path, ok = shapes[rest]
    return [get(path, staff, ok)]


def probes_for(pattern: str) -> list[Probe]:
    if pattern.startswith("admin/"):
        return admin_probes(pattern)
    base = base_pattern(pattern)
    if base is not None:
        return [
            Probe(p.method, with_suffix(p.path), p.allowed, p.ok, p.data, p.json)
            for p in MATRIX[base]
        ]
    return MATRIX[pattern]


BODIES = {
    "score": score_body,
    "batch": lambda: {
        "reward_model": "swe-bugfix-default",
        "trajectories": [CanonicalTrajectoryFactory()],
    },
    "trajectory": lambda: CanonicalTrajectoryFactory(),
}


def _fill(data: Any, world: World) -> Any:
    if isinstance(data, str):
        if data in BODIES:
            return BODIES[data]()
        return world.url(data) if re.fullmatch(r"\{\w+\}", data) else data
    if isinstance(data, dict):
        return {k: _fill(v, world) for k, v in data.items()}
    if isinstance(data, list):
        return [_fill(v, world) for v in data]
    return data


def send(world: World, probe: Probe, **extra: str) -> HttpResponse:
    path = world.url(probe.path)
    method = getattr(world.client, probe.method)
    if probe.method == "get":
        return method(path, **extra)
    data = _fill(probe.data, world)
    if probe.json:
        return method(path, json.dumps(data), content_type="application/json", **extra)
    return method(path, data, **extra)


def denied_as_expected(world: World, probe: Probe, response: HttpResponse) -> bool:
    status, principal = response.status_code, world.principal
    location = response.get("Location", "")
    if probe.path.startswith("/admin/"):
        return status == 302 and location.startswith("/admin/login/")
    if probe.path.startswith("/api/"):
        return status == 401 if principal == "anonymous" else status in (401, 403)
    if principal == "anonymous" or principal in KEYS:
        return status == 302 and location.startswith("/accounts/login/")
    return status == 403


def test_the_matrix_covers_every_url(db: None) -> None:
    """Every URL pattern has probes, and every probe belongs to a URL that exists."""
    patterns = url_patterns()
    missing = []
    for pattern in patterns:
        try:
            assert probes_for(pattern)
        except (KeyError, AssertionError) as exc:
            missing.append(f"{pattern}  ({exc!r})")
    assert not missing, "URLs without a matrix entry:\n" + "\n".join(missing)
    stale = set(MATRIX) - set(patterns)
    assert not stale, f"matrix entries for URLs that no longer exist: {sorted(stale)}"
    assert set(ADMIN_SITE) <= set(patterns)


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_every_url_for_every_principal(principal: str, make_user, recorder) -> None:  # type: ignore[no-untyped-def]
    world = build_world(principal, make_user)
    cookies = copy.deepcopy(world.client.cookies)
    failures, count = [], 0
    for pattern in url_patterns():
        for probe in probes_for(pattern):
            count += 1
            world.client.cookies = copy.deepcopy(cookies)  # a logout is rolled back too
            with transaction.atomic():
                response = send(world, probe)
                if getattr(response, "streaming", False):
                    b"".join(response.streaming_content)  # type: ignore[attr-defined]
                transaction.set_rollback(True)
            status = response.status_code
            where = f"{probe.method.upper()} {world.url(probe.path)} -> {status}"
            if status >= 500:
                failures.append(f"server error: {where}")
            elif principal in probe.allowed:
                if status != probe.expected(principal):
                    failures.append(f"allowed, expected {probe.expected(principal)}: {where}")
            elif not denied_as_expected(world, probe, response):
                failures.append(f"should be denied: {where}")
    assert count > 250
    assert not failures, f"{principal}:\n" + "\n".join(failures)
